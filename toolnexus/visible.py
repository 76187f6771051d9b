"""Text from an endpoint, a tool or a server made safe to show on a terminal.

A terminal obeys control characters wherever they come from: ESC starts sequences that write
the clipboard (OSC 52), set the window title, clear the screen or move the cursor, BEL rings.
`visible` shows every such character as caret notation instead (ESC as `^[`, BEL as `^G`,
the 8-bit C1 controls as their 7-bit form, CSI as `^[[`), so nothing in the text can act on
the terminal and what was there stays readable. Tabs and newlines stay; carriage returns are
dropped (CRLF line ends are common and harmless once the CR is gone).

It maps one character at a time, so text streamed in pieces is safe piece by piece.

`unmistakable` goes further, for what a person approves or checks character by character
(a command, a path, a tool's arguments): the characters that change how the rest looks
without showing themselves (bidi overrides and isolates, which can make `rm -rf ~` read
as something else; zero-width spaces and joiners; the soft hyphen) are shown as `<U+202E>`.
Answers keep them: right-to-left text and emoji need them.
"""

from __future__ import annotations

_KEEP = {"\t", "\n"}


def _table() -> dict[int, str]:
    table = {code: "^" + chr(code + 0x40) for code in range(0x20) if chr(code) not in _KEEP}
    table[ord("\r")] = ""
    table[0x7F] = "^?"
    table.update({code: "^[" + chr(code - 0x40) for code in range(0x80, 0xA0)})
    return table


_TABLE = _table()


_HIDDEN = [
    0x00AD,
    0x061C,
    0x180E,
    *range(0x200B, 0x2010),
    *range(0x202A, 0x202F),
    *range(0x2060, 0x2065),
    *range(0x2066, 0x206A),
    0xFEFF,
]
_EXACT_TABLE = {**_TABLE, **{code: f"<U+{code:04X}>" for code in _HIDDEN}}


def visible(text: str) -> str:
    """`text` with no character a terminal would act on."""
    return text.translate(_TABLE)


def unmistakable(text: str) -> str:
    """`visible`, and every character that is invisible or reorders the text around it
    shown by its code point."""
    return text.translate(_EXACT_TABLE)
