"""`toolnexus models` against two stub providers, one of them down: the table, aliases,
context windows and prices, the disk cache and its TTL, and `model_names` for `/model`
completion in the chat."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.support.cli_helpers import CLI
from tests.support.net_servers import dead_port
from tests.support.pty_screen import PtySession
from tests.support.stub_provider import (
    Reply,
    StubProvider,
    anthropic_models,
    openai_models,
    openai_stream,
)

LISTED = {
    "router/m": {
        "context_length": 128000,
        "pricing": {"prompt": "0.0000025", "completion": "0.00001"},
    },
    "llama-m": {"meta": {"n_ctx": 4096, "n_ctx_train": 32768}},
}


@pytest.fixture
def user(tmp_path: Path, stub: StubProvider) -> CLI:
    """Providers "up" (the stub) and "down" (nothing listens), a model entry with an alias."""
    stub.models = openai_models(["router/m", "llama-m"], LISTED)
    cli = CLI(tmp_path)
    cli.write_config(f"""\
default_model = "fast"

[providers.up]
base_url = "{stub.base_url}"

[providers.down]
base_url = "http://127.0.0.1:{dead_port()}/v1"

[models.fast]
provider = "up"
model = "router/m"
aliases = ["f"]
""")
    return cli


def cache_file(cli: CLI) -> Path:
    return cli.root / "cache" / "toolnexus" / "models.json"


def model_lists(stub: StubProvider) -> int:
    return sum(1 for r in stub.lookups if r.path == "/v1/models")


def test_the_table_in_a_terminal_with_one_provider_down(user):
    session = PtySession(user, "models", rows=20, cols=160)
    try:
        session.child.expect(pexpect.EOF)
        session.child.close()
        assert session.child.exitstatus == 0
        lines = session.term.lines()
    finally:
        session.close()
    assert lines[0].split() == [
        "PROVIDER",
        "MODEL",
        "ALIASES",
        "CONTEXT",
        "$/M",
        "IN",
        "$/M",
        "OUT",
    ]
    assert lines[1].split() == ["up", "router/m", "fast,", "f", "128,000", "2.50", "10.00"]
    assert lines[2].split() == ["up", "llama-m", "4,096"]
    note = "unreachable: could not connect to http://127.0.0.1:"
    assert lines[3].startswith("down ") and lines[3].index(note) == lines[0].index("MODEL")
    assert not any(line.strip() for line in lines[4:])


def test_the_list_is_cached_an_hour_and_refresh_asks_again(user, stub):
    first = user.call("models", "--json")
    assert first.code == 0, first
    up, down = first.json
    assert (up["provider"], up["reachable"], up["cached"]) == ("up", True, False)
    assert up["models"][0] == {
        "id": "router/m",
        "context_window": 128000,
        "input_price": 2.5,
        "output_price": 10.0,
        "aliases": ["fast", "f"],
    }
    assert (down["reachable"], down["models"]) == (False, [])
    assert "could not connect" in down["error"]
    assert stat.S_IMODE(cache_file(user).stat().st_mode) == 0o600

    second = user.call("models", "--json")
    assert second.json[0]["cached"] is True and second.json[0]["models"] == up["models"]
    assert model_lists(stub) == 1, "the cache was not used"
    assert user.call("models", "--refresh").code == 0
    assert model_lists(stub) == 2

    data = json.loads(cache_file(user).read_text())
    data["providers"]["up"]["fetched_at"] = time.time() - 3601  # an hour old
    cache_file(user).write_text(json.dumps(data))
    assert user.call("models").code == 0
    assert model_lists(stub) == 3


def test_one_provider_only_and_unknown_names(user, stub):
    r = user.call("models", "--provider", "up")
    assert r.code == 0 and "down" not in r.stdout and "router/m" in r.stdout
    r = user.call("models", "--provider", "nope")
    assert r.code == 2 and r.stderr.startswith("error: no provider named 'nope'")


def test_all_down_is_exit_1_and_nothing_configured_is_exit_2(user, stub, tmp_path):
    stub.close()
    r = user.call("models")
    assert r.code == 1 and r.stdout.count("unreachable: ") == 2 and r.stderr == ""
    r = CLI(tmp_path / "nobody").call("models")
    assert r.code == 2 and "run 'toolnexus setup'" in r.stderr


def test_a_hostile_list_cannot_reach_the_terminal(user, stub):
    stub.models = openai_models(["evil\x1b]52;c;aGk=\x07name"])
    r = user.call("models", "--provider", "up")
    assert r.code == 0 and "\x1b" not in r.stdout and "evil^[]52;c;aGk=^Gname" in r.stdout
    stub.models = None
    stub.handler = lambda rec: Reply.raw(
        [b"<html>no</html>"], chunked=False, headers={"Content-Type": "text/html"}
    )
    r = user.call("models", "--provider", "up", "--refresh")
    assert r.code == 1 and "unreachable: the reply from" in r.stdout and "is not JSON" in r.stdout


def test_anthropic_style_gets_its_own_key_and_no_other_provider_does(tmp_path):
    with StubProvider() as local, StubProvider() as anthropic:
        local.models = openai_models(["local-m"])
        anthropic.models = anthropic_models(["claude-x"])
        cli = CLI(tmp_path)
        cli.write_config(f"""\
[providers.local]
base_url = "{local.base_url}"
[providers.anth]
base_url = "{anthropic.url}"
style = "anthropic"
""")
        cli.keys_file.write_text(json.dumps({"anth": "sk-ant-stored"}))
        r = cli.call("models", env={"TOOLNEXUS_API_KEY": "sk-everywhere"})
        assert r.code == 0, r
        assert "claude-x" in r.stdout and "local-m" in r.stdout
        sent = anthropic.lookups[0].headers
        assert sent["x-api-key"] == "sk-ant-stored" and "anthropic-version" in sent
        assert "authorization" not in local.lookups[0].headers
        assert "sk-" not in r.stdout + r.stderr


@pytest.fixture
def as_user(user: CLI, monkeypatch: pytest.MonkeyPatch) -> Iterator[CLI]:
    """This process sees `user`'s directories (for the in-process completion list)."""
    for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(key, user.env[key])
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    yield user


def test_model_names_for_chat_completion_come_from_the_cache(as_user, stub):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from toolnexus_cli.chat.commands import COMMANDS
    from toolnexus_cli.chat.terminal import prompt_session
    from toolnexus_cli.config.file import load_config
    from toolnexus_cli.config.models import model_names

    config = load_config()
    assert model_names(config) == ["fast", "f"]  # nothing cached yet, and no request made
    assert stub.lookups == []
    assert as_user.call("models").code == 0
    names = model_names(config)
    assert names == ["fast", "f", "up:router/m", "up:llama-m", "router/m", "llama-m"]
    stub.close()
    assert model_names(config) == names  # the network is never asked

    # The chat's prompt offers them after "/model ", and commands at the start.
    completer = prompt_session(COMMANDS, names).completer
    for text, offered in (("/model up:ro", ["up:router/m"]), ("/mode", ["/model", "/mode"])):
        found = completer.get_completions(Document(text, len(text)), CompleteEvent())
        assert [c.text for c in found] == offered


def test_a_bare_model_name_is_looked_up_among_the_configured_providers(tmp_path):
    """Repro: the setup wrote a provider for a local llama.cpp serving gemma-3-270m, and
    `toolnexus models` lists it; yet `ask -m gemma-3-270m hi` said "no model endpoint is
    configured: set OPENAI_API_KEY ...". Now a bare name goes to the one provider there
    is; with several, to the one that serves it, found in the models cache first, then in
    their lists; a name several serve, or none, is one error naming the candidates."""
    with StubProvider() as one, StubProvider() as two:
        one.models = openai_models(["gemma-3-270m", "shared-m"])
        two.models = openai_models(["qwen2.5-coder", "shared-m"])
        one.handler = lambda rec: openai_stream(f"one serves {rec.json['model']}")
        two.handler = lambda rec: openai_stream(f"two serves {rec.json['model']}")
        cli = CLI(tmp_path)
        config = f'default_model = "one:shared-m"\n[providers.one]\nbase_url = "{one.base_url}"\n'
        cli.write_config(config)
        r = cli.call("ask", "-m", "gemma-3-270m", "hi")
        assert (r.code, r.stdout) == (0, "one serves gemma-3-270m\n"), r
        assert len(one.lookups) == 1  # its list, to check the name (cached from now on)

        cli.write_config(config + f'[providers.two]\nbase_url = "{two.base_url}"\n')
        r = cli.call("ask", "-m", "qwen2.5-coder", "hi")
        assert (r.code, r.stdout) == (0, "two serves qwen2.5-coder\n"), r
        assert (len(one.lookups), len(two.lookups)) == (1, 1)  # both lists, now cached
        r = cli.call("ask", "-m", "gemma-3-270m", "hi")
        assert (r.code, r.stdout) == (0, "one serves gemma-3-270m\n"), r
        assert (len(one.lookups), len(two.lookups)) == (1, 1)  # from the cache

        r = cli.call("ask", "-m", "shared-m", "hi")
        assert r.code == 2 and r.stderr == (
            "error: 'shared-m' is served by one, two: name one, e.g. -m one:shared-m "
            "(/model one:shared-m in the chat)\n"
        ), r
        r = cli.call("ask", "-m", "gemma-3-27m", "hi")
        assert r.code == 2 and r.stderr.startswith(
            "error: no configured provider lists a model named 'gemma-3-27m'; did you mean "
            "'gemma-3-270m'?; 'toolnexus models' lists what each serves"
        ), r
        assert len(one.requests) == 2 and len(two.requests) == 1


def test_nothing_configured_points_to_setup_first(tmp_path):
    """Repro: on a fresh machine, `toolnexus ask hi` said to set a key variable or to run
    `config init` and edit the file; the setup that finds local servers went unmentioned."""
    r = CLI(tmp_path).call("ask", "hi")
    assert r.code == 2 and r.stderr.startswith(
        "error: no model endpoint is configured: run 'toolnexus setup'"
    ), r


def test_near_names_are_prefixes_then_substrings_then_close_spellings():
    from toolnexus_cli.config.models import near_names

    served = ["qwen2.5-coder-7b", "gemma-3-270m-it", "gemma-3-270m", "llama-3.2-1b"]
    assert near_names("gemma", served) == ["gemma-3-270m", "gemma-3-270m-it"]
    assert near_names("Coder", served) == ["qwen2.5-coder-7b"]  # inside it, case aside
    assert near_names("gemma-3-27m", served) == ["gemma-3-270m", "gemma-3-270m-it"]
    assert near_names("lama", served) == ["llama-3.2-1b"]
    assert near_names("mistral", served) == []
    assert near_names("gemma-3-270m", ["gemma-3-270m"]) == []  # itself is no suggestion


def test_ask_with_a_model_the_provider_does_not_list_says_what_it_may_have_meant(tmp_path):
    """Repro: `ask -m gemma hi` against a llama.cpp serving gemma-3-270m answered with
    no word about the name. Now stderr says "did you mean 'gemma-3-270m'?" and the
    endpoint is still asked for the name as given."""
    with StubProvider() as local:
        local.models = openai_models(["gemma-3-270m"])
        local.handler = lambda rec: openai_stream(f"asked for {rec.json['model']}")
        cli = CLI(tmp_path)
        cli.write_config(f'[providers.local]\nbase_url = "{local.base_url}"\n')
        r = cli.call("ask", "-m", "gemma", "hi")
        assert (r.code, r.stdout) == (0, "asked for gemma\n"), r
        assert r.stderr == (
            "note: 'gemma' is not a model the config or the model lists know; did you "
            "mean 'gemma-3-270m'? (the endpoint is asked for it as given)\n"
        ), r
        r = cli.call("ask", "-m", "gemma-3-270m", "hi")
        assert (r.code, r.stderr) == (0, ""), r
        assert len(local.lookups) == 1  # asked once, then the cache
