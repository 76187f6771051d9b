"""`toolnexus ask` in a real pseudo-terminal: live rendering, and Ctrl-C mid-stream."""

from __future__ import annotations

import io
import re

import pexpect

from tests.support import cli_helpers, pty_screen
from tests.support.cli_helpers import STUB_MODEL, plain
from tests.support.stub_provider import openai_stream

stub = cli_helpers.stub  # the one that answers by default, not conftest.py's

SGR = re.compile(r"\x1b\[([0-9;]*)m")
KEY = "sk-test-SECRET-1234567890"


def spawn(cli, *args: str, env: dict | None = None) -> pexpect.spawn:
    child = pty_screen.spawn(cli, *args, rows=40, cols=100, timeout=15, env=env)
    child.logfile_read = io.StringIO()  # everything the terminal showed (escape codes too)
    return child


def finish(child: pexpect.spawn) -> tuple[int, str]:
    """Wait for the end: the exit code and the whole screen output."""
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.logfile_read.getvalue()


def colours(screen: str) -> set[int]:
    """The SGR colour parameters used (30-38, 40-48, 90-107)."""
    codes = {int(p) for params in SGR.findall(screen) for p in params.split(";") if p}
    return {c for c in codes if 30 <= c <= 48 or 90 <= c <= 107}


def test_ask_renders_markdown_and_a_footer(cli, stub):
    def answer(rec):
        key = rec.headers["authorization"].removeprefix("Bearer ")
        return openai_stream(
            f"Here is **bold** text and `code`, key {key}.", reasoning="Thinking it over."
        )

    stub.handler = answer
    env = {"TOOLNEXUS_API_KEY": KEY}
    code, screen = finish(spawn(cli, "ask", "hi", "--id", "pty-1", env=env))
    text = plain(screen)
    assert code == 0, text
    assert "Here is bold text and code" in text  # rendered: no Markdown markers
    assert "**bold**" not in text and "`code`" not in text
    assert "\x1b[1m" in screen or re.search(r"\x1b\[[0-9;]*\b1\b[0-9;]*m", screen)  # bold
    assert "Thinking it over." in text  # reasoning is shown (dimmed)
    footer = [line for line in text.splitlines() if STUB_MODEL in line]
    assert footer and "tokens" in footer[-1] and "pty-1" in footer[-1]
    assert KEY not in screen

    # NO_COLOR: still rendered, but without colours
    code, screen = finish(spawn(cli, "ask", "hi", env={**env, "NO_COLOR": "1"}))
    assert code == 0 and "Here is bold text" in plain(screen)
    assert not colours(screen), screen


def test_ctrl_c_mid_stream_keeps_the_partial_answer(cli, stub):
    words = " ".join(f"word{i}" for i in range(300))
    stub.handler = lambda rec: openai_stream(words, pause=0.05)
    child = spawn(cli, "ask", "count slowly", "--id", "cut")
    child.expect("word5 ")  # the answer is streaming
    child.sendintr()
    code, output = finish(child)
    screen = " ".join(plain(output).split())
    assert code == 130, screen
    assert "interrupted" in screen

    saved = cli.thread("cut")
    assert [m["role"] for m in saved] == ["user", "assistant"]
    assert saved[0]["content"] == "count slowly"
    partial = saved[1]
    assert partial["interrupted"] is True
    assert partial["content"].startswith("word0 word1 word2 word3 word4 word5")
    assert len(partial["content"]) < len(words)  # it really stopped mid-stream
    assert partial["content"] in screen  # what was saved is what was on screen


def test_an_interrupted_ask_says_how_to_go_on_with_its_config(cli, stub):
    """Repro: `toolnexus ask --config "my configs/work.toml" ...` stopped with Ctrl-C said
    the partial answer was saved in a thread, and nothing of the --config without which
    `ask --id` looks for the thread (and the endpoint) elsewhere."""
    config = cli.root / "my configs" / "work.toml"
    config.parent.mkdir()
    config.write_text("max_turns = 5\n")
    config.chmod(0o600)
    words = " ".join(f"word{i}" for i in range(300))
    stub.handler = lambda rec: openai_stream(words, pause=0.05)
    child = spawn(cli, "ask", "count slowly", "--id", "cut", "--config", str(config))
    child.expect("word5 ")
    child.sendintr()
    code, output = finish(child)
    screen = " ".join(plain(output).split())
    assert code == 130, screen
    assert (
        f"interrupted: the partial answer is saved in thread cut (to go on: toolnexus ask "
        f"--id cut --config '{config}' \"...\")"
    ) in screen


def test_a_cut_off_answer_says_so_under_it(cli, stub):
    stub.handler = lambda rec: openai_stream(
        "Roses are red, violets", finish="length", usage=(42, 7)
    )
    code, screen = finish(spawn(cli, "ask", "a poem"))
    text = " ".join(plain(screen).split())
    assert code == 0, text
    assert "42 prompt tokens · 7 completion tokens" in text
    assert "cut off at max_tokens" in text
