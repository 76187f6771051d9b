"""A budget (--max-cost, [limits] max_cost): each model call's worst case is checked before
it is made, a run that would pass the budget stops with one line and its thread kept, and a
model without a price says the budget cannot be held. Against the loopback stub."""

from __future__ import annotations

import pytest

from tests.support.stub_provider import Recorded, Reply, openai_stream
from toolnexus.budget import Budget, BudgetExceeded, call_worst_case
from toolnexus.context.pricing import Price

# $2 per million prompt tokens, $10 per million completion tokens
PRICED = """\
[providers.local]
base_url = "{url}"
style = "openai"

[models.priced]
provider = "local"
model = "m"
price = {{ input = 2, output = 10 }}
{extra}"""

ADD = '''
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


def test_a_budget_holds_what_is_spent_and_refuses_a_call_that_could_pass_it():
    budget = Budget(0.01)
    budget.check(0.01)  # exactly what is left fits
    budget.spend(0.008)
    assert budget.left == pytest.approx(0.002)
    with pytest.raises(BudgetExceeded) as raised:
        budget.check(0.003)
    assert "the budget of $0.0100 would be passed: $0.0080 spent" in str(raised.value)


def test_a_calls_worst_case_is_its_prompt_and_its_whole_reply_limit():
    price = Price(input=2, output=10)
    assert call_worst_case(1000, 100, price) == pytest.approx(0.003)
    assert call_worst_case(0, None, price) == pytest.approx(4096 * 10 / 1e6)  # no limit set


@pytest.mark.parametrize("bad", [0, -1.0, True, "1"])
def test_a_budget_is_a_positive_number_of_usd(bad):
    with pytest.raises(ValueError):
        Budget(bad)


def expensive_call_then_answer(stub):
    """The first model call asks for `add` and reports 2,000 prompt and 100 completion
    tokens ($0.005 at the price above); any later call answers."""

    def handler(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("add", {"a": 1, "b": 2})], usage=(2000, 100))
        return openai_stream("three")

    stub.handler = handler


def test_max_cost_stops_a_run_before_the_call_that_could_pass_it(cli, stub, tmp_path):
    """Repro: with a priced model, `toolnexus ask --max-cost 0.0052 -o max_tokens 10
    --functions add.py "add 1 and 2"`; the first call costs $0.005, so the second (at least
    its reply limit of 10 tokens and the prompt) could pass the budget: one line says so and
    how to go on, and the thread keeps the call's result."""
    functions = tmp_path / "add.py"
    functions.write_text(ADD, encoding="utf-8")
    cli.write_config(PRICED.format(url=stub.base_url, extra=""))
    expensive_call_then_answer(stub)

    result = cli.call(
        "ask",
        "--model",
        "priced",
        "--id",
        "t-budget",
        "--max-cost",
        "0.0052",
        "-o",
        "max_tokens",
        "10",
        "--functions",
        str(functions),
        "add 1 and 2",
    )

    assert result.code != 0, result
    assert len(stub.requests) == 1  # the second call was never made
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert errors == [
        "error: the budget of $0.0052 would be passed: $0.0050 spent, and the next model call "
        + errors[0].split("the next model call ", 1)[1].split(";")[0]
        + "; the thread is kept: --id t-budget with a larger --max-cost goes on"
    ]
    kept = cli.thread("t-budget")
    assert [m["role"] for m in kept] == ["user", "assistant", "tool"]
    assert kept[-1]["content"] == "3"

    stub.handler = lambda request: openai_stream("three")
    again = cli.call("ask", "--model", "priced", "--id", "t-budget", "--max-cost", "1", "go on")
    assert again.code == 0, again
    assert again.stdout == "three\n"
    sent = stub.requests[-1].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]


def test_the_config_sets_the_budget_and_the_flag_beats_it(cli, stub, tmp_path):
    """Repro: `[limits] max_cost = 0.0052` in the config stops the same run; `--max-cost 1`
    on the command line lets it finish."""
    functions = tmp_path / "add.py"
    functions.write_text(ADD, encoding="utf-8")
    cli.write_config(PRICED.format(url=stub.base_url, extra="\n[limits]\nmax_cost = 0.0052\n"))
    expensive_call_then_answer(stub)
    args = ("ask", "--model", "priced", "-o", "max_tokens", "10", "--functions", str(functions))

    stopped = cli.call(*args, "add 1 and 2")
    assert stopped.code != 0 and "the budget of $0.0052 would be passed" in stopped.stderr

    expensive_call_then_answer(stub)
    stub.requests.clear()
    finished = cli.call(*args, "--max-cost", "1", "add 1 and 2")
    assert finished.code == 0, finished
    assert finished.stdout == "three\n"


def test_a_model_without_a_price_says_the_budget_cannot_be_enforced(cli, stub):
    """Repro: `toolnexus ask --max-cost 0.01 hi` with a model the config gives no price:
    a line on stderr says the budget cannot be enforced for it, and the answer comes."""
    result = cli.call("ask", "--max-cost", "0.01", "hi")
    assert result.code == 0, result
    assert "the budget of $0.01 cannot be enforced" in result.stderr
    assert "no price is known for" in result.stderr


@pytest.mark.parametrize("value", ["0", "-2", "nan"])
def test_a_bad_max_cost_is_one_line(cli, value):
    result = cli.call("ask", "--max-cost", value, "hi")
    assert result.code != 0
    assert "--max-cost must be a number of USD above 0" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_footer_shows_the_running_cost_against_the_budget(cli, stub):
    """Repro: `toolnexus ask -v --max-cost 1 --model priced hi`: the footer ends with
    "$0.0030 of $1.00 budget" (1,000 prompt and 100 completion tokens at $2 and $10/M)."""
    cli.write_config(PRICED.format(url=stub.base_url, extra=""))
    stub.handler = lambda request: openai_stream("hi", usage=(1000, 100))
    result = cli.call("ask", "-v", "--max-cost", "1", "--model", "priced", "hi")
    assert result.code == 0, result
    assert "$0.0030 of $1.00 budget" in result.stderr
