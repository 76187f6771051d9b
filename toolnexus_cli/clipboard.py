"""Putting text on the clipboard: a native tool where one is on PATH, else OSC 52.

OSC 52 asks the terminal itself to set its clipboard, so it works over SSH too. It is the
one OSC 52 the program ever writes: our own, with the text base64-encoded, so nothing in
the text can act on the terminal (the model's text is always shown `visible`).
"""

from __future__ import annotations

import base64
import shutil
import subprocess
from typing import TextIO

NATIVE_TOOLS = (["wl-copy"], ["xclip", "-selection", "clipboard"], ["xsel", "--clipboard",
                                                                   "--input"], ["pbcopy"])
TOOL_TIMEOUT_S = 5.0


def copy_text(text: str, terminal: TextIO) -> str:
    """Copy `text`; the name of what did it ("xclip", "OSC 52")."""
    for command in NATIVE_TOOLS:
        path = shutil.which(command[0])
        if path is None:
            continue
        try:
            done = subprocess.run([path, *command[1:]], input=text.encode(), check=False,
                                  timeout=TOOL_TIMEOUT_S, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:  # wl-copy without a Wayland display fails: try the next
            return command[0]
    encoded = base64.b64encode(text.encode()).decode("ascii")
    terminal.write(f"\x1b]52;c;{encoded}\x07")
    terminal.flush()
    return "OSC 52"
