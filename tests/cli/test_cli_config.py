"""Config precedence, config errors, `config path|show|init`, keys, and no key leaking anywhere."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path

import pexpect

from tests.support.cli_helpers import ENTRY
from tests.support.stub_provider import (
    Reply,
    anthropic_stream,
    llama_models,
    openai_models,
    openai_stream,
)

EXAMPLE = Path(__file__).parents[2] / "toolnexus_cli" / "config" / "config.example.toml"
KEY = "sk-test-SECRET-1234567890"


def answer_by_style(rec):
    if rec.path.endswith("/messages"):
        return anthropic_stream("ok")
    return openai_stream("ok")


def one_error_line(result) -> str:
    assert result.code == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result
    assert lines[0].startswith("error:")
    return lines[0]


def test_precedence_flags_over_env_over_config(bare_cli, stub):
    stub.handler = answer_by_style
    bare_cli.write_config(f"""\
default_model = "fast"
system = "config system"

[providers.stubby]
base_url = "{stub.url}/cfg"
api_key_env = "STUBBY_KEY"
headers = {{ "X-Team" = "blue" }}

[models.fast]
provider = "stubby"
model = "cfg-model"
aliases = ["f"]
request_params = {{ temperature = 0.2, max_tokens = 64 }}

[models.deep]
provider = "stubby"
model = "deep-model"
""")
    provider_key = {"STUBBY_KEY": "sk-stubby-var"}

    # the config file alone: default model, its provider, key variable, headers, params
    r = bare_cli.call("ask", "hi", env=provider_key)
    assert r.code == 0 and r.stdout == "ok\n", r
    req = stub.requests[-1]
    assert req.path == "/cfg/chat/completions"
    assert req.json["model"] == "cfg-model"
    assert req.headers["authorization"] == "Bearer sk-stubby-var"
    assert req.headers["x-team"] == "blue"
    assert req.json["temperature"] == 0.2 and req.json["max_tokens"] == 64
    assert req.json["messages"][0] == {"role": "system", "content": "config system"}

    # the environment beats the file
    env = {
        **provider_key,
        "TOOLNEXUS_MODEL": "deep",
        "TOOLNEXUS_BASE_URL": f"{stub.url}/env",
        "TOOLNEXUS_STYLE": "anthropic",
        "TOOLNEXUS_API_KEY": "sk-toolnexus-var",
    }
    r = bare_cli.call("ask", "hi", env=env)
    assert r.code == 0 and r.stdout == "ok\n", r
    req = stub.requests[-1]
    assert req.path == "/env/v1/messages"
    assert req.json["model"] == "deep-model"
    assert req.headers["x-api-key"] == "sk-toolnexus-var"
    assert "temperature" not in req.json  # deep has no request_params

    # flags beat the environment; an alias finds its model
    r = bare_cli.call(
        "ask",
        "hi",
        "-m",
        "f",
        "--base-url",
        f"{stub.url}/flag",
        "--style",
        "openai",
        "-s",
        "flag system",
        env=env,
    )
    assert r.code == 0 and r.stdout == "ok\n", r
    req = stub.requests[-1]
    assert req.path == "/flag/chat/completions"
    assert req.json["model"] == "cfg-model" and req.json["temperature"] == 0.2
    assert req.headers["authorization"] == "Bearer sk-toolnexus-var"
    assert req.json["messages"][0] == {"role": "system", "content": "flag system"}

    # provider:model picks a provider with any model name, without the model's params
    r = bare_cli.call("ask", "hi", "-m", "stubby:raw-model", env=provider_key)
    assert r.code == 0, r
    req = stub.requests[-1]
    assert req.path == "/cfg/chat/completions" and req.json["model"] == "raw-model"
    assert "temperature" not in req.json


def test_no_config_and_a_local_server_needs_no_key(bare_cli, stub):
    r = bare_cli.call("ask", "hi", "--base-url", stub.base_url, "-m", "local-model")
    assert r.code == 0, r
    req = stub.requests[-1]
    assert req.path == "/v1/chat/completions"  # the default style is openai
    assert req.json["model"] == "local-model"
    assert "authorization" not in req.headers
    assert [m["role"] for m in req.json["messages"]] == ["user"]  # no default system prompt


def test_nothing_configured_says_what_to_set(bare_cli):
    line = one_error_line(bare_cli.call("ask", "hi"))
    for what in (
        "toolnexus setup",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "--base-url",
    ):
        assert what in line
    assert line.index("toolnexus setup") < line.index("OPENAI_API_KEY")


def test_a_base_url_alone_uses_the_one_model_its_server_serves(bare_cli, stub):
    """Repro: `toolnexus ask --base-url http://127.0.0.1:8080/v1 hi` against llama.cpp,
    which serves one model, said "no model given: pass -m MODEL ...". Now that model is
    used; a server that serves several names them in the error."""
    qwen = "qwen2.5-coder-0.5b-instruct"
    stub.models = Reply.json(llama_models(qwen))
    r = bare_cli.call("ask", "hi", "--base-url", stub.base_url)
    assert r.code == 0, r
    assert stub.requests[-1].json["model"] == qwen
    stub.models = openai_models(["llama3.2", "qwen3"])
    line = one_error_line(bare_cli.call("ask", "hi", "--base-url", stub.base_url))
    assert (
        f"no model given, and {stub.base_url} serves 2 models (llama3.2, qwen3): pass "
        "-m MODEL" in line
    )
    assert len(stub.requests) == 1


def test_config_errors_name_the_file_the_line_and_the_key(bare_cli, stub):
    path = bare_cli.config_file
    bare_cli.write_config('# my config\nsystem = "hi"\ndefualt_model = "fast"\n')
    line = one_error_line(bare_cli.call("ask", "hi"))
    assert f"{path}:3" in line
    assert "defualt_model" in line and "did you mean 'default_model'" in line

    # a nested key, with the same key in an earlier table: the line is the offending one
    bare_cli.write_config('[providers.one]\nstyle = "openai"\n\n[providers.two]\nstyle = 3\n')
    line = one_error_line(bare_cli.call("ask", "hi"))
    assert f"{path}:5" in line and "providers.two.style" in line and "string" in line

    bare_cli.write_config('[providers.one]\nbase_url = "http://x"\nbase_ur = "http://y"\n')
    line = one_error_line(bare_cli.call("config", "show"))  # every command checks the file
    assert f"{path}:3" in line and "did you mean 'providers.one.base_url'" in line

    bare_cli.write_config('system = "hi"\n\n[ui\nmarkdown = true\n')
    line = one_error_line(bare_cli.call("ask", "hi"))
    assert str(path) in line and "line 3" in line

    bare_cli.write_config('default_model = "x"\n[models.x]\nprovider = "nowhere"\n')
    line = one_error_line(bare_cli.call("ask", "hi"))
    assert str(path) in line and "nowhere" in line and "[providers.nowhere]" in line

    line = one_error_line(bare_cli.call("ask", "hi", "--config", str(bare_cli.root / "no.toml")))
    assert "no.toml" in line
    assert not stub.requests


def test_config_path_show_and_init(bare_cli):
    assert bare_cli.call("config", "path").stdout == f"{bare_cli.config_file}\n"
    elsewhere = bare_cli.root / "elsewhere.toml"
    r = bare_cli.call("config", "path", env={"TOOLNEXUS_CONFIG": str(elsewhere)})
    assert r.stdout == f"{elsewhere}\n"

    r = bare_cli.call("config", "init")
    assert r.code == 0 and str(bare_cli.config_file) in r.stdout, r
    example = EXAMPLE.read_text(encoding="utf-8")
    assert bare_cli.config_file.read_text(encoding="utf-8") == example
    shown = bare_cli.call("config", "show")  # the example is a valid config
    assert shown.code == 0 and 'default_model = "fast"' in shown.stdout, shown
    assert "max_tokens = 8192" in shown.stdout  # settings are not mistaken for secrets
    tools = bare_cli.call("tools")  # tools are opt-in: the written config turns none on
    assert tools.code == 0 and "no tools" in tools.stdout and "read_file" not in tools.stdout
    uncommented = "\n".join(
        line.removeprefix("# ") for line in example.splitlines() if line.startswith("# builtins")
    )
    assert uncommented.startswith("builtins = [")  # shown, commented out

    # init never overwrites by accident
    bare_cli.config_file.write_text("""\
store = "postgresql://alice:pg-SECRET-pw@db.example:5432/threads"
[providers.corp]
base_url = "https://llm.corp.example/v1"
api_key_env = "CORP_KEY"
headers = { Authorization = "Bearer hdr-SECRET-token", "X-Trace" = "trace-SECRET" }
""")
    shown = bare_cli.call("config", "show")
    assert shown.code == 0, shown
    assert "SECRET" not in shown.stdout
    assert "db.example:5432/threads" in shown.stdout and "CORP_KEY" in shown.stdout
    assert "llm.corp.example" in shown.stdout

    refused = bare_cli.call("config", "init")
    assert refused.code == 2 and "--force" in refused.stderr, refused
    assert "SECRET" in bare_cli.config_file.read_text(encoding="utf-8")  # untouched
    forced = bare_cli.call("config", "init", "--force")
    assert forced.code == 0, forced
    assert bare_cli.config_file.read_text(encoding="utf-8") == example


def test_keys_set_stores_a_0600_file_used_for_its_provider(bare_cli, stub):
    bare_cli.write_config(
        f'default_model = "stubby:m1"\n[providers.stubby]\nbase_url = "{stub.base_url}"\n'
    )
    child = pexpect.spawn(
        ENTRY[0],
        [*ENTRY[1:], "keys", "set", "stubby"],
        env=bare_cli.env,
        encoding="utf-8",
        timeout=15,
        cwd=str(bare_cli.home),
    )
    child.expect("API key for stubby")
    child.sendline(KEY)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert KEY not in child.before  # not echoed
    assert stat.S_IMODE(bare_cli.keys_file.stat().st_mode) == 0o600
    assert json.loads(bare_cli.keys_file.read_text()) == {"stubby": KEY}

    listed = bare_cli.call("keys", "list")
    assert listed.stdout == "stubby\n"

    r = bare_cli.call("ask", "hi")
    assert r.code == 0, r
    assert stub.requests[-1].headers["authorization"] == f"Bearer {KEY}"

    removed = bare_cli.call("keys", "rm", "stubby")
    assert removed.code == 0 and KEY not in removed.stdout, removed
    assert json.loads(bare_cli.keys_file.read_text()) == {}


def test_api_key_cmd_and_its_failure(bare_cli, stub):
    bare_cli.write_config(f"""\
default_model = "vault:m1"
[providers.vault]
base_url = "{stub.base_url}"
api_key_cmd = "printf sk-from-the-vault"

[providers.broken]
base_url = "{stub.base_url}"
api_key_cmd = "echo locked >&2; exit 3"
""")
    r = bare_cli.call("ask", "hi")
    assert r.code == 0, r
    assert stub.requests[-1].headers["authorization"] == "Bearer sk-from-the-vault"

    asked = len(stub.requests)
    line = one_error_line(bare_cli.call("ask", "hi", "-m", "broken:m1"))
    assert "api_key_cmd" in line and "broken" in line and "exit 3" in line
    assert len(stub.requests) == asked


def _split_key_stream(text_pieces: list[str], reasoning: str) -> Reply:
    """A chat.completion.chunk stream whose text arrives in exactly these pieces."""
    base = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "stub-model",
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": reasoning}),
        *(chunk({"content": piece}) for piece in text_pieces),
        chunk({}, "stop"),
    ]
    return Reply.sse(events, done=True)


def test_no_key_leaks_into_output_errors_or_the_thread_file(cli, stub):
    """An endpoint that echoes the key back everywhere it can."""

    def echo_key(rec):
        key = rec.headers.get("authorization", "").removeprefix("Bearer ")
        messages = rec.json["messages"]
        if "fail" in messages[-1].get("content", ""):
            return Reply.error(401, f"Incorrect API key provided: {key}")
        if messages[-1]["role"] == "tool":  # the key split across three deltas
            return _split_key_stream(
                ["Your key is ", key[:7], key[7:15], key[15:] + " indeed."], reasoning=f"echo {key}"
            )
        return openai_stream(reasoning=f"the key {key}", tool_calls=[("lookup", {"key": key})])

    stub.handler = echo_key
    env = {"TOOLNEXUS_API_KEY": KEY}
    outputs = []
    for args in (["-v"], ["--json"], ["--events"]):
        r = cli.call("ask", "hi", "--id", "leaky", *args, env=env)
        assert r.code == 0, r
        outputs.append(r)
    assert outputs[0].stdout.startswith("Your key is ")  # the answer still arrives
    assert outputs[0].stdout.endswith(" indeed.\n")
    assert "lookup" in outputs[0].stderr  # tool activity was shown, without the key
    for args in ([], ["--json"], ["--events"]):
        r = cli.call("ask", "fail", "--id", "leaky", *args, env=env)
        assert r.code == 1 and "Incorrect API key" in r.stderr, r
        outputs.append(r)
    assert stub.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    for r in outputs:
        assert KEY not in r.stdout and KEY not in r.stderr, r
        assert KEY[3:] not in r.stdout + r.stderr  # not even a recognisable part
    shown = cli.call("threads", "show", "leaky", "--json")
    assert shown.code == 0 and "Your key is" in shown.stdout and KEY not in shown.stdout
    assert KEY.encode() not in cli.db_bytes()


def test_keys_set_for_an_unknown_provider_names_the_known_ones(bare_cli):
    line = one_error_line(bare_cli.call("keys", "set", "opnai", input="sk-x\n"))
    assert "unknown provider 'opnai'" in line and "did you mean 'openai'?" in line
    assert "openai, anthropic, openrouter, ollama" in line
    assert not bare_cli.keys_file.exists()  # nothing asked, nothing stored


def test_enumerated_settings_are_checked_like_keys(bare_cli):
    path = bare_cli.config_file
    bare_cli.write_config('system = "hi"\n[ui]\ncode_theme = "monokia"\n')
    line = one_error_line(bare_cli.call("config", "show"))
    assert f"{path}:3" in line and "'ui.code_theme' = 'monokia'" in line
    assert "did you mean 'monokai'?" in line

    bare_cli.write_config('[providers.mine]\nbase_url = "http://x"\nstyle = "antropic"\n')
    line = one_error_line(bare_cli.call("ask", "hi"))
    assert f"{path}:3" in line and "did you mean 'anthropic'?" in line

    bare_cli.write_config('[ui]\ncode_theme = "dracula"\n')  # any Pygments style will do
    assert bare_cli.call("config", "show").code == 0


SHOWN_CONFIG = """\
system = "emoji 🙂, an escape \\u001b[31m and a DEL \\u007f"
store = "postgresql://alice:pg-SECRET-pw@db.example:5432/threads"

[approval.commands]
"git status*" = "allow"

[approval.hosts]
"localhost:11434" = "allow"

[approval.paths]

[providers.corp]
base_url = "https://llm.corp.example/v1"
api_key_cmd = "pass show corp-SECRET"
headers = { Authorization = "Bearer hdr-SECRET-token" }

[models."gpt-4.1"]
provider = "corp"
model = "openai/gpt-4.1"
aliases = ["g", "four one"]
request_params = { temperature = 0.5, stop = ["END"] }
"""


def test_config_show_prints_toml_that_reads_back_with_secrets_masked(bare_cli):
    """The newcomer's steps: `toolnexus config show > backup.toml`, then load it (or
    `python -c "import tomllib; tomllib.load(open('backup.toml', 'rb'))"`): refused at
    `approval.commands.git status* = "allow"`, a key TOML only reads quoted."""
    bare_cli.write_config(SHOWN_CONFIG)
    shown = bare_cli.call("config", "show")
    assert shown.code == 0, shown
    assert "SECRET" not in shown.stdout and "\x1b" not in shown.stdout, shown.stdout
    read = tomllib.loads(shown.stdout)
    written = tomllib.loads(SHOWN_CONFIG)
    written["store"] = "postgresql://alice:***@db.example:5432/threads"
    written["providers"]["corp"]["api_key_cmd"] = "***"
    written["providers"]["corp"]["headers"]["Authorization"] = "***"
    assert read == written


def test_the_idle_timeout_is_a_setting_and_a_flag(cli, stub):
    """Repro: a local server on a slow machine reads in a long prompt for over a minute;
    every `ask` ended in "sent nothing for 60 s (idle timeout)", and nothing could change
    the 60. Now `idle_timeout` in the config (top level or per provider) sets it, and
    --idle-timeout beats that; the error names both."""
    stub.handler = lambda rec: Reply.hang() if rec.method == "POST" else Reply.error(404, "no")
    cli.write_config("idle_timeout = 0.2\n")
    r = cli.call("ask", "hi")
    assert r.code == 1, r
    assert (
        "sent nothing for 0.2 s (idle timeout): the server may be busy ('idle_timeout' "
        "in the config file, or --idle-timeout, waits longer)" in r.stderr
    )
    r = cli.call("ask", "hi", "--idle-timeout", "0.3")
    assert r.code == 1 and "sent nothing for 0.3 s (idle timeout)" in r.stderr, r
    line = one_error_line(cli.call("ask", "hi", "--idle-timeout", "0"))
    assert "--idle-timeout must be a number of seconds above 0 and at most 86400" in line
    cli.write_config("idle_timeout = -1\n")
    line = one_error_line(cli.call("ask", "hi"))
    assert "'idle_timeout' must be a number of seconds above 0" in line


def test_retries_is_a_setting(cli, stub):
    """`retries` says how many times a failed model call is tried again (2 by default);
    `ask -v` names each retry with its count."""
    stub.handler = lambda rec: (
        Reply.error(503, "busy") if rec.method == "POST" else Reply.error(404, "no")
    )
    cli.write_config("retries = 0\n")
    r = cli.call("ask", "hi")
    assert r.code == 1 and len(stub.requests) == 1, r
    cli.write_config("retries = 3\n")
    r = cli.call("ask", "-v", "hi")
    assert r.code == 1 and len(stub.requests) == 1 + 4, r
    for n in (1, 2, 3):
        assert f"[retry] the server answered 503: retry {n} of 3 in " in r.stderr, r
    cli.write_config("retries = 11\n")
    line = one_error_line(cli.call("ask", "hi"))
    assert "'retries' must be a whole number from 0 to 10" in line


def test_a_providers_dialect_picks_the_variant_whatever_its_host(bare_cli, stub):
    """Repro: OpenRouter behind a company gateway (a base URL that is not openrouter.ai) was
    asked to reason in plain chat completions' words. `dialect = "openrouter"` on the
    provider speaks OpenRouter's (`reasoning: {"effort": ...}`); a misspelt one is one
    line naming the choices."""
    stub.handler = lambda rec: openai_stream("ok")
    path = bare_cli.config_file
    bare_cli.write_config(f"""\
default_model = "gw:some/model"

[providers.gw]
base_url = "{stub.base_url}"
style = "openai"
dialect = "openrouter"
""")
    r = bare_cli.call("ask", "hi", "--reasoning", "high")
    assert r.code == 0, r
    assert stub.requests[-1].json["reasoning"] == {"effort": "high"}
    assert "reasoning_effort" not in stub.requests[-1].json
    bare_cli.write_config(f'[providers.gw]\nbase_url = "{stub.base_url}"\ndialect = "openruter"\n')
    line = one_error_line(bare_cli.call("ask", "hi", "-m", "gw:some/model"))
    assert f"{path}:3" in line and "did you mean 'openrouter'?" in line
