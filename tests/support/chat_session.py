"""`toolnexus chat` in a pseudo-terminal (tests/support/pty_screen.py), for the chat tests: the
`Chat` session, waited on with conditions on its screen; the `open_chat` fixture that starts them
and closes them after the test; and the stub handlers and request views those tests share.

Bring the fixture into a test module with `open_chat = chat_session.open_chat` (beside
`cli = cli_helpers.cli`, which it needs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pexpect
import pytest

from tests.support.cli_helpers import CLI
from tests.support.pty_screen import PtySession, opener
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream
from tests.support.waiting import WAIT_S

ROWS, COLS = 30, 100
PROMPT = "›"
CTRL_D = "\x04"


class Chat(PtySession):
    """`toolnexus chat ARGS`, waited on with conditions on its screen (`background`: what the
    terminal answers OSC 11 with, "rgb:RRRR/GGGG/BBBB")."""

    def __init__(
        self,
        cli: CLI,
        *args: str,
        rows: int = ROWS,
        cols: int = COLS,
        timeout: float = WAIT_S,
        background: str | None = None,
        reflows: bool = True,
        answers_late: bool = False,
        fresh: bool = False,
    ) -> None:
        super().__init__(
            cli,
            "chat",
            *args,
            rows=rows,
            cols=cols,
            timeout=timeout,
            background=background,
            reflows=reflows,
            answers_late=answers_late,
            fresh=fresh,
        )
        self.prompts = 0  # prompts shown so far (each leaves a line starting with the marker)
        self.wait_prompt()

    def prompt_count(self) -> int:
        return sum(1 for line in self.term.lines() if line.startswith(PROMPT))

    def resync_prompts(self) -> None:
        """After a key that may or may not have drawn a new prompt (one is showing now)."""
        self.prompts = self.prompt_count()

    def wait_prompt(self) -> None:
        """Until a new, empty input prompt is showing (not the one already answered)."""
        want = self.prompts + 1
        self.wait(
            lambda: self.prompt_count() >= want and self.term.cursor_line().strip() == PROMPT,
            "a new prompt",
        )
        self.prompts = want

    def say(self, line: str) -> None:
        """Type a line and press Enter, then wait for the next prompt."""
        self.send_line(line)
        self.wait_prompt()

    def interrupt(self) -> None:
        self.child.sendintr()  # the terminal's Ctrl-C: SIGINT, or a key in raw mode

    def exit_code(self) -> int:
        self.wait(lambda: not self.child.isalive() or self.child.eof(), "the chat to exit")
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert self.child.signalstatus is None, self.term.text()
        return self.child.exitstatus


@pytest.fixture
def open_chat(cli: CLI) -> Iterator[Callable[..., Chat]]:
    yield from opener(lambda *args, **options: Chat(cli, *args, **options))


def numbered_answers(stub: StubProvider) -> None:
    """The n-th request (from 1) gets the answer "answer n."."""

    def handler(request: Recorded) -> Reply:
        return openai_stream(f"answer {len(stub.requests)}.")

    stub.handler = handler


def conversation(request: Recorded) -> list[tuple[str, str]]:
    """The (role, content) of each message an OpenAI-style request carried."""
    return [(m["role"], m.get("content") or "") for m in request.json["messages"]]
