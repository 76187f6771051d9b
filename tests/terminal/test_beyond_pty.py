"""What a person sees of attachments and reasoning in a real pseudo-terminal: `/attach` and
a pasted image path in the chat, images a tool returned in its panel, and "reasoned for N
tokens" (tests/support/pty_screen.py; every wait is on the screen)."""

from __future__ import annotations

import base64
import io
import json

import pexpect

from tests.support import pty_screen
from tests.support.cli_helpers import plain
from tests.support.stub_provider import LlamaCppLike, openai_stream, png_bytes

PNG = png_bytes(4, 3)
IMAGE_PART = {
    "type": "image_url",
    "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
}


def test_attach_in_chat_sends_the_image_with_the_next_message(stub, cli, open_chat):
    (cli.home / "cat.png").write_bytes(PNG)
    stub.handler = lambda rec: openai_stream("A grey cat.", reasoning_tokens=42)
    chat = open_chat("--reasoning", "low", "-o", "temperature", "0.5")
    chat.say("/attach cat.png")
    assert "[attached image 4x3 png]" in chat.term.lines()
    assert stub.requests == []  # queued, not sent
    chat.say("what is it?")
    body = stub.requests[0].json
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "what is it?"}, IMAGE_PART]}
    ]
    assert body["reasoning_effort"] == "low" and body["temperature"] == 0.5
    chat.wait_text("reasoned for 42 tokens")

    chat.say("and now?")  # an attachment goes once
    assert stub.requests[1].json["messages"][-1] == {"role": "user", "content": "and now?"}

    chat.say("/attach nothing.png")
    assert any(
        line.startswith("error: cannot attach") and "nothing.png" in line
        for line in chat.term.lines()
    )


def test_an_image_for_a_text_only_llama_cpp_model_is_not_attached(stub, cli, open_chat):
    """Repro: in a chat with llama.cpp serving a text-only model, `/attach cat.png` and
    "what is it?" came back as "HTTP 500: image input is not supported", the question lost
    with it. Its server says so in /props (asked once, the first time an image comes):
    /attach now says so in one line and the next message goes without the image."""
    (cli.home / "cat.png").write_bytes(PNG)
    stub.handler = LlamaCppLike(answer="No picture, then.")
    chat = open_chat()
    chat.say("/attach cat.png")
    said = "this model does not take images (its server says so): not attached"
    assert said in chat.term.lines()
    chat.say("/attach cat.png")
    assert chat.term.lines().count(said) == 2
    assert sum(1 for r in stub.lookups if r.path == "/props") == 1  # asked once
    chat.say("what is it?")
    chat.wait_text("No picture, then.")
    assert stub.requests[0].json["messages"][-1] == {"role": "user", "content": "what is it?"}
    assert "500" not in chat.term.text()


def test_a_pasted_image_path_offers_to_attach_it(stub, cli, open_chat):
    (cli.home / "cat.png").write_bytes(PNG)
    stub.handler = lambda rec: openai_stream("A grey cat.")
    chat = open_chat()
    chat.send_line(f"'{cli.home / 'cat.png'}'")  # as a terminal pastes a dropped file
    chat.wait_text("attach cat.png? [Y/n]")
    chat.child.send("\r")  # Enter: yes
    chat.wait_prompt()
    assert "[attached image 4x3 png]" in chat.term.lines()
    chat.say("what is it?")
    assert stub.requests[0].json["messages"][-1]["content"][1] == IMAGE_PART

    chat.send_line("cat.png")
    chat.wait_text("attach cat.png? [Y/n]", 2)
    chat.child.send("n")  # no: the line goes as text
    chat.wait_prompt()
    assert stub.requests[1].json["messages"][-1] == {"role": "user", "content": "cat.png"}


TOOLS = f'''
from toolnexus import ToolResult
from toolnexus.content import Attachment

def snapshot(name: str) -> ToolResult:
    """Take a picture."""
    return ToolResult("took " + name, attachments=[Attachment.from_bytes({PNG!r})])
'''


def test_ask_shows_a_tool_returned_image_and_the_reasoning_tokens(stub, cli, tmp_path):
    tools = tmp_path / "camera.py"
    tools.write_text(TOOLS)

    def handler(rec):
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("snapshot", {"name": "desk"})])
        return openai_stream("A desk.", reasoning_tokens=7)

    stub.handler = handler
    child = pty_screen.spawn(
        cli, "ask", "--functions", str(tools), "shoot", rows=40, cols=100, timeout=15
    )
    child.logfile_read = io.StringIO()
    child.expect(pexpect.EOF)
    child.close()
    screen = plain(child.logfile_read.getvalue())
    assert child.exitstatus == 0, screen
    panel = screen[screen.index("✓ snapshot") :]
    assert "took desk" in panel and "[image 4x3 png]" in panel
    assert "reasoned for 7 tokens" in screen


def test_ask_schema_on_a_terminal_prints_the_document_pretty(stub, cli):
    stub.handler = lambda rec: openai_stream('{"name": "Ada", "age": 36}')
    child = pty_screen.spawn(
        cli, "ask", "who?", "--schema", "name, age int", rows=40, cols=100, timeout=15
    )
    child.logfile_read = io.StringIO()
    child.expect(pexpect.EOF)
    child.close()
    screen = child.logfile_read.getvalue().replace("\r\n", "\n")
    assert child.exitstatus == 0, screen
    assert screen == json.dumps({"name": "Ada", "age": 36}, indent=2) + "\n"
