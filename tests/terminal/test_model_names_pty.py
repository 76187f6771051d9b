"""Model names in the chat, in a real pseudo-terminal against stub endpoints: a name no
provider lists gets the names it may have meant, and a provider the models cache never
listed is asked before a name is taken as served by one provider only."""

from __future__ import annotations

from tests.support.chat_session import CTRL_D, Chat
from tests.support.cli_helpers import CLI
from tests.support.stub_provider import StubProvider, openai_models


def configured(cli: CLI, providers: dict[str, StubProvider], default: str) -> None:
    """The config file names the providers; no TOOLNEXUS_* variable stands in for it."""
    for variable in ("TOOLNEXUS_BASE_URL", "TOOLNEXUS_MODEL"):
        cli.env.pop(variable, None)
    cli.write_config(
        f'default_model = "{default}"\n'
        + "".join(
            f'[providers.{name}]\nbase_url = "{stub.base_url}"\n'
            for name, stub in providers.items()
        )
    )


def screen_of(chat: Chat) -> str:
    """The screen and its scrollback as one line (long notes wrap)."""
    return " ".join(chat.term.text().split())


def test_model_gemma_suggests_the_model_the_server_serves(stub, cli, open_chat):
    """Repro: a local llama.cpp serves gemma-3-270m; in the chat, `/model gemma` said
    nothing of the name, and every later request asked for a model named "gemma". Now
    the chat says "did you mean 'gemma-3-270m'?", and so does `chat --model gemma`
    when it opens."""
    stub.models = openai_models(["gemma-3-270m"])
    configured(cli, {"local": stub}, "gemma-3-270m")
    chat = open_chat()
    chat.say("/model gemma")
    assert (
        "'gemma' is not a model the config or the model lists know; "
        "did you mean 'gemma-3-270m'?" in screen_of(chat)
    ), screen_of(chat)
    chat.say("/model gemma-3-270m")  # a name it lists: no note
    assert "is not a model" not in screen_of(chat).split("/model gemma-3-270m")[-1]
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0

    chat = open_chat("--model", "gemma")
    assert "did you mean 'gemma-3-270m'?" in screen_of(chat), screen_of(chat)


def test_a_provider_added_by_hand_is_asked_before_a_name_is_taken_as_unambiguous(
    stub, cli, open_chat
):
    """Repro: `toolnexus models` cached the list of the one provider there was, "one",
    serving shared-m. A second provider, "two", serving shared-m as well, was then added
    to the config by hand. In the chat, `/model shared-m` went silently to one: the
    cache knew nothing of two, until `toolnexus models --refresh`. Now a provider the
    cache never listed is asked first, and the name is said to be served by both."""
    stub.models = openai_models(["shared-m"])
    configured(cli, {"one": stub}, "one:shared-m")
    assert cli.call("models").code == 0  # one's list, cached
    with StubProvider() as two:
        two.models = openai_models(["shared-m", "two-only"])
        configured(cli, {"one": stub, "two": two}, "one:shared-m")
        chat = open_chat()
        chat.say("/model shared-m")
        screen = screen_of(chat)
        assert "'shared-m' is served by one, two: name one, e.g. -m one:shared-m" in screen
        assert len(two.lookups) == 1, "two's list was not asked for"
        chat.say("/model two:shared-m")
        assert f"model: shared-m ({two.base_url})" in screen_of(chat)
        chat.child.send(CTRL_D)
        assert chat.exit_code() == 0
