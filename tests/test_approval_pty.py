"""Approving tool calls in `toolnexus chat --builtins`, in a real pseudo-terminal against the
stub endpoint (issue 7, acceptance point 3): yes, no, always.

pexpect runs the real console script. Its output is also fed to pyte, a terminal emulator,
which answers prompt_toolkit's cursor-position requests as a real terminal would and keeps
the screen for the assertions. Every step waits with expect() on the text it needs (the
approval question, an answer, the next input prompt): nothing sleeps and hopes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pyte
import pytest

from tests.stub_provider import Recorded, Reply, StubProvider, openai_stream

ROWS, COLS = 40, 120
EXE = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "toolnexus"
QUESTION = re.escape("[y]es / [n]o / [a]lways (this session):")
PANEL_TITLE = "approve this tool call?"
INPUT_PROMPT = "›"


class Screen:
    """pexpect's logfile_read: a virtual terminal with scrollback."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.screen = pyte.HistoryScreen(COLS, ROWS, history=10_000)
        self.screen.write_process_input = child.send  # type: ignore[method-assign]
        self.stream = pyte.Stream(self.screen)

    def write(self, data: str) -> None:
        self.stream.feed(data)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        history = ["".join(row[x].data for x in range(COLS)).rstrip()
                   for row in self.screen.history.top]
        return "\n".join(history + [line.rstrip() for line in self.screen.display])


class Chat:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.child = pexpect.spawn(str(EXE), ["chat", *args], env=env, dimensions=(ROWS, COLS),
                                   encoding="utf-8", codec_errors="replace", timeout=10)
        self.screen = Screen(self.child)
        self.child.logfile_read = self.screen
        self.expect(INPUT_PROMPT)

    def expect(self, pattern: str) -> None:
        try:
            self.child.expect(pattern)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            raise AssertionError(f"no {pattern!r} ({type(exc).__name__}); the screen:\n"
                                 + self.screen.text()) from None

    def send_line(self, text: str) -> None:
        self.child.send(text + "\r")

    def say(self, text: str, answer: str) -> None:
        """Send a message that needs no approval; wait for the answer and the next prompt."""
        self.send_line(text)
        self.expect(re.escape(answer))
        self.expect(INPUT_PROMPT)

    def approve(self, command: str, reply: str) -> None:
        """Wait for the question about `command` (if given) and give `reply`."""
        if command:
            self.expect(re.escape(f"bash: {command}"))
        self.expect(QUESTION)
        self.send_line(reply)

    def questions(self) -> int:
        return self.screen.text().count(PANEL_TITLE)

    def close(self) -> None:
        if self.child.isalive():
            self.child.sendeof()
            try:
                self.child.expect(pexpect.EOF, timeout=5)
            except pexpect.TIMEOUT:
                self.child.terminate(force=True)
        self.child.close()


@pytest.fixture
def stub() -> Iterator[StubProvider]:
    with StubProvider() as s:
        yield s


@pytest.fixture
def open_chat(tmp_path: Path, stub: StubProvider) -> Iterator[Callable[..., Chat]]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.startswith(("TOOLNEXUS_", "XDG_"))}
    env.update(
        HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        TOOLNEXUS_BASE_URL=stub.base_url, TOOLNEXUS_MODEL="stub-model",
        TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8",
        COLUMNS=str(COLS), LINES=str(ROWS),
    )
    env.pop("NO_COLOR", None)
    chats: list[Chat] = []

    def start(*args: str) -> Chat:
        chats.append(Chat(env, *args))
        return chats[-1]

    yield start
    for chat in chats:
        chat.close()


def script(stub: StubProvider, *replies: Reply) -> None:
    """Request n (from 1) gets replies[n-1]."""
    def handler(request: Recorded) -> Reply:
        return replies[len(stub.requests) - 1]

    stub.handler = handler


def bash_call(command: str, **more: object) -> Reply:
    return openai_stream(tool_calls=[("bash", {"command": command, **more})])


def tool_results(request: Recorded) -> list[str]:
    return [m["content"] for m in request.json["messages"] if m["role"] == "tool"]


def test_yes_runs_the_command_and_the_model_gets_its_output(stub, open_chat, tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    script(stub, bash_call("echo approved-123 && pwd", cwd=str(workdir), timeout=5),
           openai_stream("It printed the number."))
    chat = open_chat("--builtins")

    chat.send_line("run the echo")
    chat.expect(re.escape(PANEL_TITLE))
    # the question shows every argument, not only the command
    chat.expect(re.escape(f"cwd: {workdir}"))
    chat.expect(re.escape("timeout: 5"))
    chat.approve("", "y")
    chat.expect("It printed the number.")
    chat.expect(INPUT_PROMPT)

    assert tool_results(stub.requests[1]) == [f"exit code 0\napproved-123\n{workdir}\n"]
    assert chat.questions() == 1


def test_no_tells_the_model_and_the_conversation_goes_on(stub, open_chat):
    script(stub, bash_call("echo approved-123"), openai_stream("Understood, I will not."),
           openai_stream("Still here."))
    chat = open_chat("--builtins")

    chat.send_line("run the echo")
    chat.approve("echo approved-123", "n")
    chat.expect("Understood, I will not.")
    chat.expect(INPUT_PROMPT)
    assert tool_results(stub.requests[1]) == ["denied by the user"]

    chat.say("are you there?", "Still here.")
    messages = stub.requests[2].json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert messages[2]["content"] == "denied by the user"
    assert messages[-1]["content"] == "are you there?"


def test_always_is_not_asked_again_for_the_same_call(stub, open_chat):
    script(stub, bash_call("echo approved-123"), bash_call("echo approved-123"),
           openai_stream("Ran it twice."), bash_call("echo approved-123"),
           openai_stream("And a third time."))
    chat = open_chat("--builtins")

    chat.send_line("run the echo twice")
    chat.approve("echo approved-123", "a")
    chat.expect("Ran it twice.")
    chat.expect(INPUT_PROMPT)
    # a later turn of the same session is not asked either
    chat.say("once more", "And a third time.")

    assert chat.questions() == 1
    assert tool_results(stub.requests[2]) == ["exit code 0\napproved-123\n"] * 2
    assert tool_results(stub.requests[4])[-1] == "exit code 0\napproved-123\n"
