"""The chat's conveniences in a real pseudo-terminal against the stub endpoint (issue 17,
"Chat features"): /copy, /fork and /edit last, !command, vi keys, themes, resizing."""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import cli_helpers
from tests.cli_helpers import CLI
from tests.pty_screen import PtySession, opener
from tests.stub_provider import Recorded, Reply, openai_stream
from tests.test_chat_pty import COLS, ROWS, WAIT_S, Chat, conversation, numbered_answers

cli = cli_helpers.cli  # fixture

LONG_LINE = "x = [" + ", ".join(str(n) for n in range(60)) + "]  # wider than the screen"
SECOND_BLOCK = f"def f(a):\n\treturn a  \n\n\n{LONG_LINE}\n"  # a tab, trailing spaces, blanks
ANSWER = ("Two blocks.\n\n```sh\necho one\n```\n\nAnd:\n\n```python\n" + SECOND_BLOCK
          + "```\n\nDone.")


class FeatureChat(Chat):
    """A Chat whose terminal may answer OSC 11 with `background` ("rgb:RRRR/GGGG/BBBB")."""

    def __init__(self, cli: CLI, *args: str, background: str | None = None) -> None:
        PtySession.__init__(self, cli, "chat", *args, rows=ROWS, cols=COLS, timeout=WAIT_S,
                            background=background)
        self.prompts = 0
        self.wait_prompt()


@pytest.fixture
def open_chat(cli: CLI) -> Iterator[Callable[..., FeatureChat]]:
    yield from opener(lambda *args, **kw: FeatureChat(cli, *args, **kw))


def only_on_path(cli: CLI, scripts: dict[str, str]) -> Path:
    """PATH holds only a folder of these shell scripts (and /bin for their shell)."""
    folder = cli.root / "bin"
    folder.mkdir(exist_ok=True)
    for name, body in scripts.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    cli.env["PATH"] = f"{folder}{os.pathsep}/bin"
    return folder


# ----------------------------------------------------------------------------- /copy


def test_copy_code_2_puts_exactly_the_second_block_on_the_native_clipboard(stub, cli,
                                                                           open_chat):
    clipboard = cli.root / "clipboard"
    only_on_path(cli, {"xclip": f'cat > "{clipboard}"'})
    stub.handler = lambda request: openai_stream(ANSWER)
    chat = open_chat()
    chat.say("show me code")
    chat.say("/copy code 2")
    assert clipboard.read_bytes() == SECOND_BLOCK.encode()
    assert "copied code block 2 of 2 (xclip)" in chat.term.text()
    chat.say("/copy code")  # the last block by default
    assert clipboard.read_bytes() == SECOND_BLOCK.encode()
    chat.say("/copy code 1")
    assert clipboard.read_bytes() == b"echo one\n"
    chat.say("/copy")
    assert clipboard.read_bytes() == ANSWER.encode()
    assert "copied the last answer (xclip)" in chat.term.text()
    chat.say("/copy code 3")
    assert "the last answer has 2 code blocks" in chat.term.text()
    assert "]52;" not in chat.term.raw_text()


def test_copy_without_a_clipboard_tool_writes_osc_52(stub, cli, open_chat):
    only_on_path(cli, {})
    stub.handler = lambda request: openai_stream(ANSWER)
    chat = open_chat()
    chat.say("show me code")
    chat.say("/copy code 2")
    encoded = base64.b64encode(SECOND_BLOCK.encode()).decode()
    assert f"\x1b]52;c;{encoded}\x07" in chat.term.raw_text()
    assert "copied code block 2 of 2 (OSC 52)" in chat.term.text()
