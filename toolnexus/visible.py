"""Text from an endpoint, a tool or a server made safe to show on a terminal.

A terminal obeys control characters wherever they come from: ESC starts sequences that write
the clipboard (OSC 52), set the window title, clear the screen or move the cursor, BEL rings.
`visible` shows every such character as caret notation instead (ESC as `^[`, BEL as `^G`,
the 8-bit C1 controls as their 7-bit form, CSI as `^[[`), so nothing in the text can act on
the terminal and what was there stays readable. Tabs and newlines stay; carriage returns are
dropped (CRLF line ends are common and harmless once the CR is gone).

It maps one character at a time, so text streamed in pieces is safe piece by piece.
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


def visible(text: str) -> str:
    """`text` with no character a terminal would act on."""
    return text.translate(_TABLE)
