"""Text from an endpoint, a tool or a server made safe to show on a terminal.

A terminal obeys control characters wherever they come from: ESC starts sequences that write
the clipboard (OSC 52), set the window title, clear the screen or move the cursor, BEL rings.
`visible` shows every such character as caret notation instead (ESC as `^[`, BEL as `^G`,
the 8-bit C1 controls as their 7-bit form, CSI as `^[[`), so nothing in the text can act on
the terminal and what was there stays readable. Tabs and newlines stay; carriage returns are
dropped (CRLF line ends are common and harmless once the CR is gone).

It maps one character at a time, so text streamed in pieces is safe piece by piece.

`unmistakable` goes further, for what a person approves or checks character by character
(a command, a path, a tool's arguments): every character that shows as nothing, as blank
space or not at all as itself is shown by its code point, as `\\u202e`: those that change
how the rest looks (bidi overrides and isolates, which can make `rm -rf ~` read as something
else), Unicode's default-ignorable ones (zero-width spaces and joiners, the soft hyphen,
the Hangul fillers U+3164 and U+115F/1160, which are letters yet show as blanks; variation
selectors, tags), format characters, spaces other than the ASCII one, line and paragraph
separators, private-use, surrogate and unassigned code points. Answers keep them:
right-to-left text and emoji need them.
"""

from __future__ import annotations

import re

_KEEP = {"\t", "\n"}


def _table() -> dict[int, str]:
    table = {code: "^" + chr(code + 0x40) for code in range(0x20) if chr(code) not in _KEEP}
    table[ord("\r")] = ""
    table[0x7F] = "^?"
    table.update({code: "^[" + chr(code - 0x40) for code in range(0x80, 0xA0)})
    return table


_TABLE = _table()


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): what is shown as
# nothing at all wherever it is not acted on, as the body of a regular-expression class.
IGNORABLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_HIDDEN = re.compile(f"[{IGNORABLE}\u2800]")  # and the blank braille pattern, a blank symbol
_CACHED = 4096  # code points whose look `unmistakable` remembers


class _Exact(dict[int, str]):
    """The table `unmistakable` translates by: visible's, and each character met that is
    not shown as itself (see the module's doc) as its escape; filled in as they are met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        shown = char if char.isprintable() and not _HIDDEN.match(char) else _escaped(char)
        if len(self) < _CACHED:
            self[code] = shown
        return shown


_EXACT = _Exact({**{ord(keep): keep for keep in _KEEP}, **_TABLE})


def _escaped(char: str) -> str:
    """`char` as its code point: `\\u3164`, `\\U000e0041`."""
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with no character a terminal would act on."""
    return text.translate(_TABLE)


def unmistakable(text: str) -> str:
    """`visible`, and every character that is not shown as itself (invisible, blank, or
    reordering the text around it) shown by its code point."""
    return text.translate(_EXACT)
