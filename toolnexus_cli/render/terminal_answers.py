"""The terminal's answers to what the chat asks it are not typing.

theme.py asks the terminal its background colour (OSC 11) and then for its Device Attributes
(DA1), and waits a while for the answers. One that comes after that wait (a slow link, a busy
machine) would land in the next prompt as "]11;rgb:..." or "[?6c". Every reader of the keyboard
(the prompts through `keyboard()`, the type-ahead under a streaming answer) drops them here,
whenever they come. No key sends either sequence. Keys typed while theme.py waited for the
answers are kept for the next prompt (`keep_for_prompt`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prompt_toolkit.input import Input

_ANSWER = re.compile(r"\x1b\[\?[0-9;]*c|\x1b\]11;[^\x07\x1b]*(?:\x07|\x1b\\)")
# An answer cut off by the end of a read: held for its rest.
_ANSWER_START = re.compile(r"\x1b(?:\[\?[0-9;]*|\]11;[^\x07\x1b]*\x1b?)\Z")
_MAX_HELD = 256  # longer than any answer: what starts like one but runs on is typing


class AnswerFilter:
    """Keyboard input in, the same without the terminal's answers out, as it arrives."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        text, self._held = self._held + text, ""
        text = _ANSWER.sub("", text)
        start = _ANSWER_START.search(text)
        if start is not None and len(text) - start.start() <= _MAX_HELD:
            text, self._held = text[: start.start()], text[start.start() :]
        return text


class _AnswersDropped:
    """prompt_toolkit's reader of the terminal, minus the terminal's answers."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._answers = AnswerFilter()

    @property
    def closed(self) -> bool:
        return bool(self._reader.closed)

    def read(self, count: int = 1024) -> str:
        return self._answers.feed(self._reader.read(count))


def keep_for_prompt(typed: str) -> None:
    """The next prompt (whichever comes first: the chat's, or a setup question) starts with
    the keys in `typed`, as prompt_toolkit keeps keys read ahead of a prompt."""
    if not typed:
        return
    from prompt_toolkit.input.typeahead import store_typeahead
    from prompt_toolkit.input.vt100_parser import Vt100Parser
    from prompt_toolkit.key_binding import KeyPress

    presses: list[KeyPress] = []
    Vt100Parser(presses.append).feed_and_flush(typed)
    store_typeahead(keyboard(), presses)


def keyboard() -> Input:
    """prompt_toolkit's input for this terminal, for a prompt to read keys from."""
    from prompt_toolkit.input import create_input

    keys = create_input()
    reader = getattr(keys, "stdin_reader", None)  # a POSIX terminal's (Vt100Input)
    if reader is not None:
        keys.stdin_reader = _AnswersDropped(reader)  # type: ignore[attr-defined]
    return keys
