"""Putting text on the clipboard: a native tool where one is on PATH, else OSC 52.

OSC 52 asks the terminal itself to set its clipboard, so it works over SSH too. It is the
one OSC 52 the program ever writes: our own, with the text base64-encoded, so nothing in
the text can act on the terminal (the model's text is always shown `visible`).

What is copied is pasted later, into a shell perhaps: escape sequences and control
characters are taken out first (an "end of bracketed paste" sequence in a model's answer
would make the shell run the rest of the paste as typed).
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from typing import IO

NATIVE_TOOLS = (
    ["wl-copy"],
    ["xclip", "-selection", "clipboard"],
    ["xsel", "--clipboard", "--input"],
    ["pbcopy"],
)
TOOL_TIMEOUT_S = 5.0

# A whole escape sequence: CSI (ESC [ or its 8-bit form) with its parameters; an OSC, DCS,
# SOS, PM or APC string with its terminator; or ESC, intermediates and a final character.
_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # every one but tab and line feed


def pasteable(text: str) -> str:
    """`text` without escape sequences or control characters (tabs and line ends stay)."""
    return _CONTROL.sub("", _ESCAPE.sub("", text))


def copy_text(text: str, terminal: IO[str]) -> str:
    """Copy `text`, made `pasteable`; the name of what did it ("xclip", "OSC 52")."""
    text = pasteable(text)
    for command in NATIVE_TOOLS:
        path = shutil.which(command[0])
        if path is None:
            continue
        try:
            done = subprocess.run(
                [path, *command[1:]],
                input=text.encode(),
                check=False,
                timeout=TOOL_TIMEOUT_S,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:  # wl-copy without a Wayland display fails: try the next
            return command[0]
    encoded = base64.b64encode(text.encode()).decode("ascii")
    terminal.write(f"\x1b]52;c;{encoded}\x07")
    terminal.flush()
    return "OSC 52"
