"""The chat's terminal: the prompt line (history, keys, completion), and a quiet keyboard
while an answer streams, whose keys are queued to be sent when it ends."""

from __future__ import annotations

import codecs
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..config.file import state_dir
from ..render.terminal_answers import AnswerFilter, keyboard
from ..render.words import counted

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

TYPING_HINT = (
    "(Enter queues it for when the answer ends, Esc drops the queue, Ctrl-C stops the answer)"
)
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
BRACKETED_PASTE_ON, BRACKETED_PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
# ESC and the rest of a key: a CSI sequence (arrows, function keys), an SS3 one, Alt and a key
_KEY_AFTER_ESC = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|O.|[^\[O])", re.S)


def mute_keyboard() -> Any:
    """While an answer streams, stop the terminal echoing keys and flushing its queues on
    Ctrl-C. An echo lands inside the live region and shifts it (a "^C" after a full-width
    line wraps onto a new row, so the partial answer then shows twice), and a flush drops
    output already written. Keys typed meanwhile wait, unechoed, for whatever reads them
    (`TypeAhead`, the next prompt); they are not held back until Enter (no canonical
    mode), so `TypeAhead` reads each as it is typed.
    Returns what `restore_keyboard` needs (None when stdin is not a terminal)."""
    try:
        import termios
    except ImportError:  # not a POSIX terminal
        return None
    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
        quiet = list(saved)
        quiet[3] = quiet[3] & ~(termios.ECHO | termios.ECHOCTL | termios.ICANON) | termios.NOFLSH
        quiet[6] = list(quiet[6])
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except (OSError, ValueError, termios.error):
        return None
    return fd, saved


def restore_keyboard(state: Any) -> None:
    if state is not None:
        import termios

        try:
            termios.tcsetattr(state[0], termios.TCSANOW, state[1])
        except (OSError, termios.error):
            pass


class TypeAhead:
    """What is typed while an answer streams, read from the muted keyboard: Enter queues
    the line typed to be sent when the answer ends, Esc drops the queue and the line,
    Backspace and Ctrl-U edit the line, Esc Enter puts a new line in it, Ctrl-D on an empty
    line leaves the chat once the queue is done (as at the prompt), and a paste goes in
    whole (the terminal is asked to bracket pastes: their line ends queue nothing).
    `arm` reads until `disarm`, which must come before anything else reads the keyboard
    (a question about a tool call)."""

    def __init__(self, terminal: IO[str]) -> None:
        self.terminal = terminal
        self.queued: list[str] = []
        self.line = ""  # typed, not queued yet
        self.leaving = False  # Ctrl-D on an empty line: leave once the queue is done
        self.dropped: list[str] = []  # what Esc dropped, said under the answer and after it
        self._unread = ""  # the start of an escape sequence or a paste, the rest to come
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._answers = AnswerFilter()  # the terminal's, to the theme's questions
        self._fd: int | None = None

    def arm(self, show: Callable[[str], None]) -> None:
        """Read each key as it is typed, and `show` what there is to show after it (see
        `shown`). Call it while no live region draws: it writes to the terminal."""
        import asyncio

        try:
            fd = sys.stdin.fileno()
            if not os.isatty(fd):
                return
        except (OSError, ValueError):
            return

        def read() -> None:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:  # the terminal is gone
                self.disarm()
                return
            self.feed(self._answers.feed(self._decoder.decode(data)))
            show(self.shown())

        self._write(BRACKETED_PASTE_ON)
        asyncio.get_running_loop().add_reader(fd, read)
        self._fd = fd

    def disarm(self) -> None:
        if self._fd is not None:
            import asyncio

            asyncio.get_running_loop().remove_reader(self._fd)
            self._fd = None

    @contextmanager
    def during_turn(self) -> Iterator[None]:
        """The keyboard muted for a turn (see mute_keyboard); after it, pastes are no
        longer bracketed (the prompt asks for that itself), and a key cut short by the
        end is forgotten, so it cannot swallow the keys of the next answer."""
        keyboard = mute_keyboard()
        try:
            yield
        finally:
            self._write(BRACKETED_PASTE_OFF)
            restore_keyboard(keyboard)
            self._unread = ""

    def _write(self, sequence: str) -> None:
        if self.terminal.isatty():
            self.terminal.write(sequence)
            self.terminal.flush()

    def feed(self, text: str) -> None:
        text, self._unread = self._unread + text, ""
        at = 0
        while at < len(text):
            at = self._key(text, at)

    def _key(self, text: str, at: int) -> int:
        """Take the key at `at` (a character, a sequence, a whole paste): where the next
        begins. One cut short waits in `_unread` for its rest."""
        if text.startswith(PASTE_START, at):
            end = text.find(PASTE_END, at)
            if end < 0:
                return self._wait_for_rest(text, at)
            pasted = text[at + len(PASTE_START) : end]
            self.line += pasted.replace("\r\n", "\n").replace("\r", "\n")
            return end + len(PASTE_END)
        char = text[at]
        if char == "\x1b":
            return self._escaped(text, at)
        if char in "\r\n":
            if self.line.strip():
                self.queued.append(self.line)
            self.line = ""
        elif char in "\x7f\x08":  # Backspace
            self.line = self.line[:-1]
        elif char == "\x15":  # Ctrl-U
            self.line = ""
        elif char == "\x04" and not self.line:  # Ctrl-D, as at the prompt: leave
            self.leaving = True
        elif char >= " ":
            self.line += char
        return at + 1

    def _escaped(self, text: str, at: int) -> int:
        key = _KEY_AFTER_ESC.match(text, at)
        if key is None and at + 1 == len(text):  # Esc alone (a terminal sends a key whole)
            self.dropped += [_labelled("queued message dropped", m) for m in self.queued]
            if self.line.strip():
                self.dropped.append(_labelled("unsent line dropped", self.line))
            self.queued, self.line, self.leaving = [], "", False
            return at + 1
        if key is None:  # cut short, unless it is too long to be one sequence
            return self._wait_for_rest(text, at) if len(text) - at < 32 else at + 1
        if key[1] in "\r\n":  # Esc Enter, as at the prompt
            self.line += "\n"
        return key.end()

    def _wait_for_rest(self, text: str, at: int) -> int:
        self._unread = text[at:]
        return len(text)

    def shown(self) -> str:
        """What Esc dropped, the queue and the line typed, to show under the answer ("" for
        nothing)."""
        if not self.queued and not self.line:
            return "\n".join(self.dropped)
        lines = [_labelled("queued", message) for message in self.queued]
        if self.line:
            lines.append(_labelled("typing", self.line))
        return "\n".join([*self.dropped, *lines, TYPING_HINT])

    def take_dropped(self) -> list[str]:
        """What Esc dropped during the answer, to say once it ended (and not again)."""
        dropped, self.dropped = self.dropped, []
        return dropped

    def next_queued(self) -> str | None:
        """The next queued message; EOFError once the queue is done if Ctrl-D was typed."""
        if self.queued:
            return self.queued.pop(0)
        if self.leaving:
            self.leaving = False
            raise EOFError
        return None

    def take_line(self) -> str:
        """The line typed and not queued, for the prompt to start with."""
        line, self.line = self.line, ""
        return line

    def keep_for_prompt(self) -> None:
        """Nothing queued is sent: an answer stopped or failed, and the person decides
        again. It all waits at the prompt, one line after the other."""
        self.line = "\n".join([*self.queued, *([self.line] if self.line else [])])
        self.queued, self.leaving = [], False


def _labelled(label: str, text: str) -> str:
    """A line of the queue: what it is, and the start of it; a shell command says so."""
    shell = " (shell mode)" if text.lstrip().startswith("!") else ""
    return f"{label}{shell}: {_glimpse(text)}"


def _glimpse(text: str, width: int = 80) -> str:
    """The first line of `text`, cut to `width`, saying how many more there are."""
    lines = text.strip().splitlines() or [""]
    first = lines[0] if len(lines[0]) <= width else lines[0][: width - 1] + "…"
    return first + (f" (+{counted(len(lines) - 1, 'line')})" if len(lines) > 1 else "")


def private_file(path: Path) -> Path:
    """`path`, created (or made) 0600 whatever the umask and the folder's mode: the prompt
    history holds whatever was typed, pasted secrets included."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


SHELL_MODE = "shell mode: Enter runs this line with your shell, not the model"


def prompt_session(
    commands: Iterable[str],
    models: Iterable[str] = (),
    *,
    vi: bool = False,
    status: Callable[[], str] | None = None,
    keys: Mapping[str, Callable[[], str | None]] | None = None,
    lent: Callable[[], bool] | None = None,
    hints: Mapping[str, str] | None = None,
) -> PromptSession[str]:
    """The prompt line: a private history, Esc-Enter for a new line, Ctrl-C clears the
    line (on an empty one it raises KeyboardInterrupt), `commands` complete, and so do
    `models` after `/model`. A toolbar says "shell mode" while the line starts with "!";
    `vi`: vi keys, the mode shown in it too; `status`: a line for it too (redrawn when the
    app is invalidated); `keys`: more keys ("escape r", "s-tab"), each an action that may
    return a line to send, as if typed and entered; while `lent` says the terminal is lent
    to a program one of them started (a pager), a SIGINT is that program's; `hints`:
    what completion shows beside a command (its arguments)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    history_path = private_file(state_dir() / "history")
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    for key, action in (keys or {}).items():
        bindings.add(*key.split())(lambda event, act=action: _key_action(event, act))

    if lent is not None:
        from prompt_toolkit.filters import Condition

        @bindings.add("<sigint>", filter=Condition(lent))
        def _not_ours(event: Any) -> None:
            pass

    @bindings.add("c-c")
    def _interrupt(event: Any) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()  # Ctrl-C on a line clears it
        else:
            event.app.exit(exception=KeyboardInterrupt())

    session: PromptSession[str] = PromptSession(
        history=FileHistory(str(history_path)),
        completer=_slash_completer(list(commands), list(models), hints or {}),
        complete_while_typing=True,
        key_bindings=bindings,
        enable_history_search=True,
        vi_mode=vi,
        input=keyboard(),
    )
    _toolbar_while_it_has_news(session, vi, status)
    return session


def _key_action(event: Any, action: Callable[[], str | None]) -> None:
    line = action()
    if line is not None:
        event.current_buffer.text = line
        event.current_buffer.validate_and_handle()


def _toolbar_while_it_has_news(session: Any, vi: bool, status: Callable[[], str] | None) -> None:
    """The toolbar shows the vi mode (with `vi`), "shell mode" while the line starts with
    "!" and the `status` line, and is not there when it has nothing to say: prompt_toolkit
    shows a toolbar whenever `bottom_toolbar` is set, so it is set or cleared before each
    redraw."""

    def toolbar() -> str:
        shell = session.default_buffer.text.lstrip().startswith("!")
        return "  ".join(
            part
            for part in (
                _vi_mode() if vi else "",
                SHELL_MODE if shell else "",
                status() if status else "",
            )
            if part
        )

    def before_render(app: Any) -> None:
        session.bottom_toolbar = toolbar if toolbar() else None

    session.app.before_render += before_render


def _vi_mode() -> str:
    from prompt_toolkit.application.current import get_app
    from prompt_toolkit.key_binding.vi_state import InputMode

    mode = get_app().vi_state.input_mode
    if mode == InputMode.NAVIGATION:
        return "-- NORMAL --"
    return (
        "-- REPLACE --"
        if mode in (InputMode.REPLACE, InputMode.REPLACE_SINGLE)
        else ("-- INSERT --")
    )


def _slash_completer(commands: list[str], models: list[str], hints: Mapping[str, str]) -> Any:
    """Slash commands at the start of the line (`hints` beside them); model names after
    `/model `."""
    from prompt_toolkit.completion import Completer, WordCompleter

    command_words = WordCompleter(commands, sentence=True, meta_dict=dict(hints))
    model_words = WordCompleter(models, WORD=True)  # OpenRouter names hold "/"

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            if document.text_before_cursor.startswith("/model "):
                return model_words.get_completions(document, complete_event)
            return command_words.get_completions(document, complete_event)

    return SlashCompleter()
