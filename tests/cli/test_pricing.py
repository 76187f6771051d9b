"""What tokens cost: the arithmetic, exact to the cent-fraction, and prices in the config."""

from __future__ import annotations

import pytest

from tests.support.stub_provider import Reply, openai_text
from toolnexus import RunResult
from toolnexus.context.pricing import Price, cost, thread_cost, turn_cost
from toolnexus_cli.config.file import load_config
from toolnexus_cli.config.resolve import resolve_target
from toolnexus_cli.errors import UsageError

GPT = Price(input=2.5, output=10, cached_input=1.25)
CLAUDE = Price(input=3, output=15, cached_input=0.3)  # cache writes at 3 x 1.25


def test_uncached_input_and_output_at_their_prices():
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    assert cost(usage, GPT) == 0.0075  # (1000 x 2.5 + 500 x 10) / 1e6


def test_cached_input_is_part_of_the_prompt_at_its_own_price():
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "cached_tokens": 200}
    assert cost(usage, GPT) == 0.00725  # (800 x 2.5 + 200 x 1.25 + 500 x 10) / 1e6


def test_cache_writes_default_to_the_input_price_times_1_25():
    # Anthropic: 50 after the breakpoint, 1000 read from the cache, 200 written to it
    usage = {
        "prompt_tokens": 1250,
        "completion_tokens": 7,
        "cached_tokens": 1000,
        "cache_write_tokens": 200,
    }
    # (50 x 3 + 1000 x 0.3 + 200 x 3.75 + 7 x 15) / 1e6 = (150 + 300 + 750 + 105) / 1e6
    assert cost(usage, CLAUDE) == 0.001305
    given = Price(input=3, output=15, cached_input=0.3, cache_write=6)  # the 1-hour rate
    assert cost(usage, given) == 0.001755  # 750 -> 1200


def test_without_a_cached_price_cached_tokens_cost_the_input_price():
    usage = {"prompt_tokens": 1000, "completion_tokens": 0, "cached_tokens": 400}
    assert cost(usage, Price(input=2, output=8)) == 0.002


def test_a_usage_that_does_not_add_up_costs_no_negative_input():
    usage = {"prompt_tokens": 10, "completion_tokens": 0, "cached_tokens": 50}
    assert cost(usage, GPT) == 0.0000625  # 50 x 1.25; the 10 are inside the 50


def test_no_usage_costs_nothing():
    assert cost({}, GPT) == 0.0


def test_a_turn_and_a_thread():
    result = RunResult(usage={"prompt_tokens": 2000, "completion_tokens": 100})
    assert turn_cost(result, GPT) == 0.006
    thread = {"prompt_tokens": 2_000_000, "completion_tokens": 100_000, "cached_tokens": 1_000_000}
    assert thread_cost(thread, GPT) == 4.75  # 2.5 + 1.25 + 1.0


@pytest.mark.parametrize("bad", [-1, True, "2.5"])
def test_a_price_is_a_number_of_0_or_more(bad):
    with pytest.raises(ValueError, match="USD per million tokens"):
        Price(input=bad, output=1)


# ----------------------------------------------------------------------------- the config


def target_of(tmp_path, text: str, model: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return resolve_target(load_config(str(path)), model=model)


MODELS = """\
[providers.mine]
base_url = "http://127.0.0.1:9/v1"
style = "anthropic"

[models.deep]
provider = "mine"
model = "claude-x"
price = { input = 3, output = 15, cached_input = 0.3 }

[models.plain]
provider = "mine"
model = "claude-y"
prompt_cache = false
"""


def test_a_models_price_and_prompt_cache_reach_the_target(tmp_path):
    deep = target_of(tmp_path, MODELS, "deep")
    assert deep.price == Price(input=3, output=15, cached_input=0.3)
    assert deep.prompt_cache is True  # on by default
    plain = target_of(tmp_path, MODELS, "plain")
    assert plain.price is None and plain.prompt_cache is False


def test_prompt_cache_on_a_provider_holds_for_its_models_unless_a_model_says_otherwise(tmp_path):
    text = MODELS.replace('style = "anthropic"\n', 'style = "anthropic"\nprompt_cache = false\n')
    text += '\n[models.cached]\nprovider = "mine"\nmodel = "z"\nprompt_cache = true\n'
    assert target_of(tmp_path, text, "deep").prompt_cache is False
    assert target_of(tmp_path, text, "cached").prompt_cache is True


@pytest.mark.parametrize(
    ("price", "line", "said"),
    [
        ("{ input = 3, outptu = 15 }", 8, "did you mean 'models.deep.price.output'?"),
        (
            "{ input = 3, output = -15 }",
            8,
            "'models.deep.price.output' must be a number of USD per million tokens, 0 or more",
        ),
        ("{ input = true, output = 15 }", 8, "'models.deep.price.input' must be a number"),
        ("{ input = 3 }", 8, "'models.deep.price' needs output too"),
        ('"cheap"', 8, "'models.deep.price' must be a table of USD per million tokens"),
    ],
)
def test_a_bad_price_is_one_line_naming_the_file_line_and_key(tmp_path, price, line, said):
    text = MODELS.replace("{ input = 3, output = 15, cached_input = 0.3 }", price)
    with pytest.raises(UsageError) as info:
        target_of(tmp_path, text, "deep")
    message = str(info.value)
    assert f"config.toml:{line}:" in message and said in message, message
    assert "\n" not in message


# ----------------------------------------------------------------------------- through ask


PRICED = """\
[providers.local]
base_url = "{url}"
style = "openai"

[models.priced]
provider = "local"
model = "m"
price = {{ input = 2, output = 10 }}
"""


def test_ask_shows_what_a_turn_and_its_thread_cost(cli, stub):
    stub.handler = lambda rec: Reply.json(openai_text("hi", usage=(1000, 100)))
    cli.write_config(PRICED.format(url=stub.base_url))
    first = cli.call("ask", "--model", "priced", "--id", "t-1", "--json", "one")
    assert first.code == 0, first
    assert first.json["cost"] == pytest.approx(0.003)  # 1,000 x $2/M + 100 x $10/M
    second = cli.call("ask", "--model", "priced", "--id", "t-1", "-v", "two")
    assert second.code == 0, second
    assert "$0.0030" in second.stderr and "thread t-1 $0.0060" in second.stderr
