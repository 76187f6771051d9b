"""What goes on the wire, through the real `toolnexus` command against the stub: a key or
header that could smuggle a header is refused before any connection, naming where it came
from; the key command is one line and is killed whole on its timeout; a run has an overall
deadline; a reply that is not an answer is one clear error line, never an empty success;
and commands that make no model call never import the HTTP stack."""

from __future__ import annotations

import pytest

from tests.support.stub_provider import Reply, openai_stream
from tests.support.waiting import running_with, wait_until

INJECTED = "sk-good\r\nX-Injected: 1"


def error_line(result, code: int) -> str:
    """The one line a failed command printed (nothing on stdout, no traceback)."""
    assert result.code == code, result
    assert result.stdout == "", result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result
    return lines[0]


def provider_config(stub, **settings: str) -> str:
    lines = [f"{key} = {value}" for key, value in settings.items()]
    return (
        'default_model = "vault:m1"\n[providers.vault]\n'
        f'base_url = "{stub.base_url}"\n' + "\n".join(lines) + "\n"
    )


# ----------------------------------------------------------------------------- keys, headers


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "TOOLNEXUS_API_KEY"])
def test_a_key_with_a_line_break_from_the_environment_is_refused(cli, stub, variable):
    line = error_line(cli.call("ask", "hi", env={variable: INJECTED}), 2)
    assert f"the key from ${variable} contains a line break" in line
    assert "X-Injected" not in line and "sk-good" not in line
    assert stub.requests == []


def test_a_stored_key_with_a_control_character_is_refused(bare_cli, stub):
    bare_cli.config_dir.mkdir(parents=True)
    bare_cli.keys_file.write_text('{"vault": "sk-\\u0007bell"}', encoding="utf-8")
    bare_cli.write_config(provider_config(stub))
    line = error_line(bare_cli.call("ask", "hi"), 2)
    assert "the key from the keys file" in line and "control character (0x07)" in line
    assert stub.requests == []


def test_a_config_header_with_a_line_break_is_refused(bare_cli, stub):
    bare_cli.write_config(
        provider_config(stub) + '[providers.vault.headers]\nX-Org = "acme\\nX-Injected: 1"\n'
    )
    line = error_line(bare_cli.call("ask", "hi", env={"OPENAI_API_KEY": "sk-fine"}), 2)
    assert "providers.vault.headers.X-Org" in line and "line break" in line
    assert stub.requests == []


def test_key_command_output_loses_one_trailing_newline(bare_cli, stub):
    stub.handler = lambda rec: openai_stream("ok")
    bare_cli.write_config(provider_config(stub, api_key_cmd='"echo sk-from-the-vault"'))
    result = bare_cli.call("ask", "hi")
    assert result.code == 0 and result.stdout == "ok\n", result
    assert stub.requests[0].headers["authorization"] == "Bearer sk-from-the-vault"


def test_key_command_printing_two_lines_is_refused(bare_cli, stub):
    bare_cli.write_config(provider_config(stub, api_key_cmd="\"printf 'sk-one\\\\nsk-two\\\\n'\""))
    line = error_line(bare_cli.call("ask", "hi"), 2)
    assert "api_key_cmd for vault printed more than one line" in line
    assert "sk-one" not in line and stub.requests == []


def test_key_command_is_killed_whole_on_its_timeout(bare_cli, stub, tmp_path):
    started, marker = tmp_path / "started", f"key-{id(tmp_path)}-42"
    command = f'"TOOLNEXUS_TEST_MARK=key-{id(tmp_path)}-$((6*7)) sleep 120 & touch {started}; wait"'
    bare_cli.write_config(provider_config(stub, api_key_cmd=command, api_key_cmd_timeout="1"))
    line = error_line(bare_cli.run("ask", "hi"), 2)
    assert "api_key_cmd for vault took over 1 s" in line and stub.requests == []
    assert started.exists()
    wait_until(lambda: not running_with(marker), "the key command's child to be killed")


# ----------------------------------------------------------------------------- endpoints


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://127.0.0.1:99999/v1", "invalid port"),
        ("127.0.0.1:8080/v1", "must start with http:// or https://"),
    ],
)
def test_a_bad_base_url_is_one_line(bare_cli, url, words):
    line = error_line(bare_cli.call("ask", "hi", "--base-url", url, "-m", "m"), 2)
    assert words in line


def test_an_html_page_is_named_and_never_an_empty_success(cli, stub):
    stub.handler = lambda rec: Reply.raw(
        [b"<html>It works!</html>"], chunked=False, headers={"Content-Type": "text/html"}
    )
    line = error_line(cli.call("ask", "hi"), 1)
    assert "the endpoint answered with an HTML page (is the base URL right?" in line


def test_an_empty_body_is_an_error(cli, stub):
    stub.handler = lambda rec: Reply.raw([], chunked=False)
    line = error_line(cli.call("ask", "hi"), 1)
    assert "empty" in line


def test_a_redirect_names_its_location(cli, stub):
    stub.handler = lambda rec: Reply.raw(
        [], status=301, chunked=False, headers={"Location": "https://new.example/v1"}
    )
    line = error_line(cli.call("ask", "hi"), 1)
    assert "redirect (HTTP 301) to https://new.example/v1" in line
    assert len(stub.requests) == 1


def test_a_server_dripping_keep_alives_forever_ends_at_the_configured_timeout(cli, stub):
    stub.handler = lambda rec: Reply.raw([b": keep-alive\n\n"] * 100_000, pause=0.05)
    cli.write_config("timeout = 1\n")
    line = error_line(cli.call("ask", "hi"), 1)
    assert "timed out after 1 s" in line and "'timeout'" in line


def test_the_timeout_setting_must_be_positive(cli):
    cli.write_config("timeout = 0\n")
    line = error_line(cli.call("ask", "hi"), 2)
    assert "'timeout' must be a number of seconds above 0" in line


# ----------------------------------------------------------------------------- start-up


def imported_packages(result) -> set[str]:
    return {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["config", "show"],
        ["threads", "list"],
        ["keys", "list"],
    ],
    ids=lambda args: " ".join(args),
)
def test_commands_without_a_model_call_never_import_httpx2(cli, args):
    result = cli.run_fresh(*args, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.code == 0, result
    imported = imported_packages(result)
    assert "typer" in imported  # the profile is there
    assert not imported & {"httpx2", "httpcore2", "anyio", "h11", "truststore"}


def test_a_piped_ask_does_import_httpx2(cli, stub):
    stub.handler = lambda rec: openai_stream("fast")
    result = cli.run_fresh("ask", "hi", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.code == 0 and result.stdout == "fast\n", result
    assert "httpx2" in imported_packages(result)
