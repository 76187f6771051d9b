"""The chat's terminal: the prompt line (history, keys, completion), and a quiet keyboard
while an answer streams."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .config import state_dir

KEY_HINT = "(Ctrl-C stops the answer; type when it is done)"


def mute_keyboard() -> Any:
    """While an answer streams, stop the terminal echoing keys and flushing its queues on
    Ctrl-C. An echo lands inside the live region and shifts it (a "^C" after a full-width
    line wraps onto a new row, so the partial answer then shows twice), and a flush drops
    output already written. Keys typed meanwhile wait, unechoed, for the next prompt; they
    are not held back until Enter (no canonical mode), so `KeyWatch` sees the first one.
    Returns what `restore_keyboard` needs (None when stdin is not a terminal)."""
    try:
        import termios
    except ImportError:  # not a POSIX terminal
        return None
    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
        quiet = list(saved)
        quiet[3] = (quiet[3] & ~(termios.ECHO | termios.ECHOCTL | termios.ICANON)
                    | termios.NOFLSH)
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


class KeyWatch:
    """Tells once when a key is pressed on the muted keyboard, without reading it: the key
    stays queued for the next prompt. Disarm it before anything else reads the keyboard
    (a question about a tool call)."""

    def __init__(self) -> None:
        self._fd: int | None = None

    def arm(self, on_key: Any) -> None:
        import asyncio

        try:
            fd = sys.stdin.fileno()
            if not os.isatty(fd):
                return
        except (OSError, ValueError):
            return

        def fire() -> None:
            self.disarm()
            on_key()

        asyncio.get_running_loop().add_reader(fd, fire)
        self._fd = fd

    def disarm(self) -> None:
        if self._fd is not None:
            import asyncio

            asyncio.get_running_loop().remove_reader(self._fd)
            self._fd = None


def private_file(path: Path) -> Path:
    """`path`, created (or made) 0600 whatever the umask and the folder's mode: the prompt
    history holds whatever was typed, pasted secrets included."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def prompt_session(commands: Iterable[str], models: Iterable[str] = (), *,
                   vi: bool = False, status: Callable[[], str] | None = None) -> Any:
    """The prompt line: a private history, Esc-Enter for a new line, Ctrl-C clears the
    line (on an empty one it raises KeyboardInterrupt), `commands` complete, and so do
    `models` after `/model`. `vi`: vi keys, the mode shown in a toolbar; `status`: a line
    for the toolbar too (redrawn when the app is invalidated)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    history_path = private_file(state_dir() / "history")
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("c-c")
    def _interrupt(event: Any) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()  # Ctrl-C on a line clears it
        else:
            event.app.exit(exception=KeyboardInterrupt())

    return PromptSession(
        history=FileHistory(str(history_path)),
        completer=_slash_completer(list(commands), list(models)),
        complete_while_typing=True, key_bindings=bindings, enable_history_search=True,
        vi_mode=vi, bottom_toolbar=_toolbar(vi, status),
    )


def _toolbar(vi: bool, status: Callable[[], str] | None) -> Callable[[], str] | None:
    if not vi and status is None:
        return None

    def toolbar() -> str:
        return "  ".join(part for part in (_vi_mode_toolbar() if vi else "",
                                           status() if status else "") if part)

    return toolbar


def _vi_mode_toolbar() -> str:
    from prompt_toolkit.application.current import get_app
    from prompt_toolkit.key_binding.vi_state import InputMode

    mode = get_app().vi_state.input_mode
    if mode == InputMode.NAVIGATION:
        return "-- NORMAL --"
    return "-- REPLACE --" if mode in (InputMode.REPLACE, InputMode.REPLACE_SINGLE) else (
        "-- INSERT --")


def _slash_completer(commands: list[str], models: list[str]) -> Any:
    """Slash commands at the start of the line; model names after `/model `."""
    from prompt_toolkit.completion import Completer, WordCompleter

    command_words = WordCompleter(commands, sentence=True)
    model_words = WordCompleter(models, WORD=True)  # OpenRouter names hold "/"

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, event: Any) -> Any:
            if document.text_before_cursor.startswith("/model "):
                return model_words.get_completions(document, event)
            return command_words.get_completions(document, event)

    return SlashCompleter()
