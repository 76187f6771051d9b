"""Colours readable on the terminal's background: `ui.theme` is "dark", "light" or "auto".

For "auto" the terminal is asked its background colour (OSC 11), followed by a Device
Attributes request (DA1) that every terminal answers: a terminal that ignores OSC 11 so
answers at once, and the chat starts without waiting out the timeout. No answer at all
(or no terminal) means dark. NO_COLOR turns colour off, so nothing is asked then.

Keys typed before the answers come are read with them. The chat gives them to its first
prompt; `ask` leaves keys already typed to whatever reads next (the shell) and does not ask.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config.settings import UiSettings

CODE_THEMES = {"dark": "monokai", "light": "friendly"}
# Rich's Markdown styles that are unreadable on a light background (yellow, cyan on black)
LIGHT_MARKDOWN = {
    "markdown.code": "bold blue",
    "markdown.item.bullet": "bold blue",
    "markdown.item.number": "bold blue",
    "markdown.hr": "grey50",
    "markdown.link": "blue",
    "markdown.link_url": "underline blue",
    "markdown.block_quote": "magenta",
    "markdown.h1.border": "grey50",
}
QUERY = b"\x1b]11;?\x1b\\\x1b[c"  # ST, not BEL: BEL never reaches the terminal
REPLY_WAIT_S = 1.0
# compiled when a terminal is first asked (re keeps them)
_BACKGROUND = rb"\x1b\]11;rgb:([0-9a-fA-F]{1,4})/([0-9a-fA-F]{1,4})/([0-9a-fA-F]{1,4})"
_DEVICE_ATTRIBUTES = rb"\x1b\[\?[0-9;]*c"


def terminal_ui(ui: UiSettings, console: Any, *, prompt_follows: bool = False) -> UiSettings:
    """`ui` with its code theme chosen for the background (unless `ui.code_theme` names
    one), Markdown styles for a light one pushed on `console`. `prompt_follows`: keys typed
    meanwhile go to the next prompt."""
    background = ui.theme
    if background == "auto":
        no_colour = os.environ.get("NO_COLOR")
        background = "dark" if no_colour else ask_background(prompt_follows) or "dark"
    if background == "light":
        from rich.theme import Theme

        console.push_theme(Theme(LIGHT_MARKDOWN))
    return dataclasses.replace(ui, code_theme=ui.code_theme or CODE_THEMES[background])


def ask_background(prompt_follows: bool = False) -> str | None:
    """ "light" or "dark" as the terminal answers OSC 11; None if it does not, or if keys
    were typed already and no prompt of ours follows to take them."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    reply = _exchange(sys.stdin.fileno(), sys.stdout.fileno(), typed_ahead_ok=prompt_follows)
    if prompt_follows:
        from .terminal_answers import AnswerFilter, keep_for_prompt

        keep_for_prompt(AnswerFilter().feed(reply.decode("utf-8", "replace")))
    found = re.search(_BACKGROUND, reply)
    if not found:
        return None
    red, green, blue = (int(part, 16) / (16 ** len(part) - 1) for part in found.groups())
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return "light" if luminance > 0.5 else "dark"


def _typed_ahead(fd: int) -> bool:
    """Whether keys wait to be read."""
    import fcntl
    import struct
    import termios

    try:
        waiting = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return False
    count: int = struct.unpack("i", waiting)[0]
    return count > 0


def _exchange(fd_in: int, fd_out: int, *, typed_ahead_ok: bool) -> bytes:
    """Send the query with the keyboard unechoed; what came back until the DA1 answer.
    Nothing is asked if keys wait to be read, unless `typed_ahead_ok`."""
    import select
    import termios
    import tty

    try:
        saved = termios.tcgetattr(fd_in)
        tty.setcbreak(fd_in, termios.TCSANOW)  # no echo, byte by byte
    except termios.error:
        return b""
    reply = b""
    try:
        # Only now: a line being typed counts as waiting once the keyboard is byte by byte.
        if not typed_ahead_ok and _typed_ahead(fd_in):
            return b""
        os.write(fd_out, QUERY)
        deadline = time.monotonic() + REPLY_WAIT_S
        while not re.search(_DEVICE_ATTRIBUTES, reply) and len(reply) < 4096:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd_in], [], [], remaining)[0]:
                break
            reply += os.read(fd_in, 1024)
    except OSError:
        pass
    finally:
        termios.tcsetattr(fd_in, termios.TCSANOW, saved)
    return reply
