"""The real `toolnexus` console script in a pseudo-terminal, with an emulated screen.

pexpect runs the command in a pty, in the isolated environment and HOME of a
`cli_helpers.CLI`. Every byte it prints is also fed to pyte, a terminal emulator, which keeps
the screen and its scrollback for the assertions and answers cursor-position requests the way
a real terminal does (prompt_toolkit asks), so the program runs as it would for a person.
On a resize the screen re-flows its lines as most terminals do (tests/support/reflow_screen.py).

Every wait is on output - a pattern in the stream (`expect`) or a condition on the screen
(`wait`) - and a wait that fails shows the screen. Nothing sleeps and hopes.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pexpect
import pyte

from tests.support import prefork
from tests.support.cli_helpers import CLI, ENTRY
from tests.support.reflow_screen import ReflowScreen
from tests.support.waiting import WAIT_S

Session = TypeVar("Session", bound="PtySession")


def spawn(
    cli: CLI,
    *args: str,
    rows: int,
    cols: int,
    timeout: float,
    env: dict[str, str | None] | None = None,
    fresh: bool = False,
) -> pexpect.spawn:
    """`toolnexus ARGS` in a `rows` x `cols` UTF-8 pty, as `cli`'s user (env: as CLI.run),
    forked from a process that has done its imports (tests/support/prefork.py); `fresh`:
    the console script itself, in the terminal's process group (the terminal's signals
    reach the programs it starts)."""
    size = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "COLUMNS": str(cols), "LINES": str(rows)}
    command = [*ENTRY, *args] if fresh else prefork.command("toolnexus", *args)
    return pexpect.spawn(
        command[0],
        command[1:],
        env=cli.merged_env({**size, **(env or {})}),
        dimensions=(rows, cols),
        encoding="utf-8",
        codec_errors="replace",
        timeout=timeout,
        cwd=str(cli.cwd),
    )


class Terminal:
    """A virtual terminal with scrollback, fed with whatever the program prints (pexpect's
    logfile_read interface: write and flush)."""

    BACKGROUND_QUERY = "\x1b]11;?\x1b\\"  # OSC 11: "what is your background colour?"
    DEVICE_ATTRIBUTES = re.compile(r"\x1b\[\?[0-9;]*c")  # the answer to a DA1 request

    def __init__(self, child: pexpect.spawn, rows: int, cols: int, *, reflows: bool = True) -> None:
        self.child = child
        self.screen = ReflowScreen(cols, rows, history=100_000, reflows=reflows)
        # A real terminal answers "where is the cursor?" (prompt_toolkit asks).
        self.screen.write_process_input = self._answer  # type: ignore[method-assign]
        self.stream = pyte.Stream(self.screen)
        self.raw: list[str] = []  # every byte printed, escapes included (pyte drops OSCs)
        self.background: str | None = None  # "rgb:ffff/ffff/ffff": answer OSC 11 queries
        # A slow terminal (or link): its answers to OSC 11 and DA1 wait in `late` until
        # send_late_answers(), as if they came after the program stopped waiting for them.
        self.answers_late = False
        self.late: list[str] = []
        # The rows as text, kept until the screen changes: a wait looks at them after every
        # read, and rendering the screen and its scrollback for each look was a fifth of the
        # CPU time of a pty test.
        self._rendered: tuple[list[str], list[str]] | None = None
        self._text: str | None = None

    def write(self, data: str) -> None:
        self.raw.append(data)
        if self.background and self.BACKGROUND_QUERY in data:
            # answered before pyte answers what follows in the same chunk (a DA1 query)
            self._answer(f"\x1b]11;{self.background}\x1b\\")
        self._rendered = self._text = None
        self.stream.feed(data)

    def _answer(self, answer: str) -> None:
        late = answer.startswith("\x1b]11;") or self.DEVICE_ATTRIBUTES.fullmatch(answer)
        if self.answers_late and late:
            self.late.append(answer)
        else:
            self.child.send(answer)

    def send_late_answers(self) -> None:
        self.child.send("".join(self.late))
        self.late.clear()

    def resize(self, rows: int, cols: int) -> None:
        self._rendered = self._text = None
        self.screen.resize(rows, cols)

    def raw_text(self) -> str:
        return "".join(self.raw)

    def flush(self) -> None:
        pass

    def _render(self) -> tuple[list[str], list[str]]:
        """(the scrollback's rows, the screen's rows) as text."""
        if self._rendered is None:
            display = [line.rstrip() for line in self.screen.display]
            self._rendered = (self.screen.scrollback(), display)
        return self._rendered

    def scrollback(self) -> list[str]:
        return list(self._render()[0])

    def display(self) -> list[str]:
        return list(self._render()[1])

    def lines(self) -> list[str]:
        """Everything a person could see: the scrollback, then the screen."""
        scrollback, display = self._render()
        return scrollback + display

    def text(self) -> str:
        if self._text is None:
            self._text = "\n".join(self.lines())
        return self._text

    def cursor_line(self) -> str:
        return self.display()[self.screen.cursor.y]


class PtySession:
    """One `toolnexus ARGS` process in a pty (`child`), with its Terminal (`term`)."""

    def __init__(
        self,
        cli: CLI,
        *args: str,
        rows: int,
        cols: int,
        timeout: float = WAIT_S,
        background: str | None = None,
        reflows: bool = True,
        answers_late: bool = False,
        fresh: bool = False,
    ) -> None:
        """`reflows=False`: the terminal is xterm, which cuts rows off when it narrows;
        `answers_late`: it answers OSC 11 and DA1 only when told (Terminal.send_late_answers);
        `fresh`: see `spawn`."""
        self.timeout = timeout
        xterm = {} if reflows else {"XTERM_VERSION": "XTerm(390)"}
        self.child = spawn(
            cli, *args, rows=rows, cols=cols, timeout=timeout, env=xterm, fresh=fresh
        )
        self.term = Terminal(self.child, rows, cols, reflows=reflows)
        self.term.background = background
        self.term.answers_late = answers_late
        self.child.logfile_read = self.term

    def resize(self, rows: int, cols: int) -> None:
        """Resize the emulated screen and the pty, as a terminal window resized would
        (the kernel sends the program SIGWINCH; sent again in case it raced)."""
        self.term.resize(rows, cols)
        self.child.setwinsize(rows, cols)
        self.child.kill(signal.SIGWINCH)

    def expect(self, pattern: str) -> None:
        """Until the regular expression `pattern` matches the output stream: only what no
        `wait` has read yet (a wait reads past the expect buffer), so after a wait, wait for
        what follows on the screen (`wait_text`)."""
        try:
            self.child.expect(pattern)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            raise AssertionError(
                f"no {pattern!r} ({type(exc).__name__}); the screen:\n" + self.term.text()
            ) from None

    def wait(self, done: Callable[[], bool], what: str, timeout: float | None = None) -> None:
        """Read the output until `done()` holds for the emulated screen."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}; the screen:\n" + self.term.text()
                )
            try:
                self.child.read_nonblocking(65536, timeout=0.05)
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                if not done():
                    raise AssertionError(
                        f"the program exited while waiting for {what}; "
                        "the screen:\n" + self.term.text()
                    ) from None
                return

    def wait_text(self, text: str, count: int = 1) -> None:
        """Until `text` shows `count` times on the screen and in its scrollback."""
        self.wait(lambda: self.term.text().count(text) >= count, repr(text))

    def send_line(self, text: str) -> None:
        """Type `text` and press Enter."""
        self.child.send(text + "\r")

    def close(self) -> None:
        """End the program if it still runs, as closing its terminal window would: SIGHUP
        (it cleans up, whatever it was doing; Ctrl-D is only a key to a prompt holding text),
        then SIGKILL if it has not ended after WAIT_S."""
        if self.child.isalive():
            self.child.kill(signal.SIGHUP)
            try:
                self.child.expect(pexpect.EOF, timeout=WAIT_S)
            except pexpect.TIMEOUT:
                self.child.terminate(force=True)
        self.child.close()


def opener(start: Callable[..., Session]) -> Iterator[Callable[..., Session]]:
    """The body of a fixture that hands a test `start` (which starts a session) and closes
    every session it started when the test is over: `yield from opener(...)`."""
    started: list[Session] = []

    def open_session(*args: str, **options: object) -> Session:
        started.append(start(*args, **options))
        return started[-1]

    yield open_session
    for session in started:
        session.close()
