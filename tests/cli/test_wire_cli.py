"""The CLI knows the styles from the library's registry: `--style responses` works, its key
comes from the style's variable, and an unknown style lists every style."""

from __future__ import annotations

from tests.support.stub_provider import responses_stream


def test_ask_on_the_responses_style_uses_its_key_variable(cli, stub):
    key = "sk-responses-key-123456"
    stub.handler = lambda rec: responses_stream("Hello from responses.")
    done = cli.call("ask", "--style", "responses", "hi", env={"OPENAI_API_KEY": key})
    assert done.code == 0, done
    assert done.stdout == "Hello from responses.\n"
    assert stub.requests[0].path == "/v1/responses"
    assert stub.requests[0].headers["authorization"] == f"Bearer {key}"


def test_an_unknown_style_names_every_style(cli):
    done = cli.call("ask", "--style", "gemini", "hi")
    assert done.code != 0 and "Traceback" not in done.stderr
    assert all(name in done.stderr for name in ("openai", "anthropic", "responses"))
