"""A budget in the chat, in a real pseudo-terminal against the stub: the footer shows what was
spent against it, a turn whose model call could pass it stops with one line and the chat goes
on, and a model without a price says at start that the budget cannot be enforced."""

from __future__ import annotations

from tests.support.chat_session import conversation
from tests.support.stub_provider import openai_stream

PRICED = """\
[providers.local]
base_url = "{url}"
style = "openai"

[models.priced]
provider = "local"
model = "m"
price = {{ input = 2, output = 10 }}
"""


def test_the_chat_stops_a_turn_that_could_pass_the_budget(stub, cli, open_chat):
    """Repro: `toolnexus chat --model priced --max-cost 0.0052 -o max_tokens 30` (prices
    $2 and $10 per million tokens); the first answer reports 2,000 prompt and 100 completion
    tokens ($0.005): its footer says "$0.0050 of $0.0052 budget". The second question stops
    before the model is called (its 30 reply tokens alone could cost $0.0003, and $0.0002
    is left), with one red line, and the chat goes on."""
    cli.write_config(PRICED.format(url=stub.base_url))
    stub.handler = lambda request: openai_stream("first answer", usage=(2000, 100))
    chat = open_chat("--model", "priced", "--max-cost", "0.0052", "-o", "max_tokens", "30")

    chat.say("one")
    assert "$0.0050of$0.0052budget" in "".join(chat.term.text().split()), chat.term.text()
    chat.say("two")

    chat.wait_text("error: the budget of $0.0052 would be passed")
    assert len([r for r in stub.requests if r.method == "POST"]) == 1, chat.term.text()
    errors = [line for line in chat.term.lines() if "budget of $0.0052 would be passed" in line]
    assert len(errors) == 1, chat.term.text()
    assert "Traceback" not in chat.term.text()
    assert conversation(stub.requests[0])[-1] == ("user", "one")


def test_a_model_without_a_price_says_the_budget_cannot_be_enforced(stub, cli, open_chat):
    """Repro: `toolnexus chat --max-cost 1` with a model the config gives no price: the
    start of the chat says the budget of $1 cannot be enforced for it."""
    stub.handler = lambda request: openai_stream("hi")
    chat = open_chat("--max-cost", "1")
    text = "".join(chat.term.text().split())
    assert "nopriceisknownforstub-model:thebudgetof$1cannotbeenforced" in text, text
