"""The chat's /mode command: the mode shown, or changed (as Shift-Tab does, by name)."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from toolnexus.tools.modes import MODES

from ..session.session import Session
from .modes import modes_matter

COMMANDS = {
    "/mode": f"show or change what asks before a tool call: /mode [{'|'.join(MODES)}] "
    "(Shift-Tab cycles)",
}


class ModeCommands:
    """Mixed into Commands, which gives `session` and `say`."""

    session: Session
    say: Callable[..., None]

    async def mode(self, arg: str) -> None:
        mode = self.session.mode
        if mode is None or not modes_matter(self.session.toolkit):
            self.say("no file or command tools in this chat: a mode changes nothing here")
            return
        if arg and arg not in MODES:
            near = difflib.get_close_matches(arg, MODES, n=1, cutoff=0.5)
            hint = f"did you mean {near[0]}? " if near else ""
            self.say(f"no mode {arg!r}: {hint}use one of {', '.join(MODES)}", "yellow")
            return
        if arg:
            mode.switch(arg)
        self.say(mode.line(self.session.toolkit))
