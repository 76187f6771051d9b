"""The chat's /init: the model surveys the repository with read-only tools (read_file,
list_dir, glob, grep) and proposes an AGENTS.md for its top folder, shown as a diff against
the file there now and written only after a yes. The survey is not part of the thread."""

from __future__ import annotations

import asyncio
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from toolnexus import RunCancelled, ToolnexusError
from toolnexus.app_support import visible

from ..session.instructions import repository_top
from ..session.session import Session

if TYPE_CHECKING:
    from rich.console import Console

    from toolnexus import Client, Toolkit

COMMANDS = {
    "/init": "let the model survey the repository and propose an AGENTS.md (a diff; written on y)",
}
SURVEY_TOOLS = ["read_file", "list_dir", "glob", "grep"]
SHOWN_LINES = 200  # of the proposal's diff
SURVEY = """\
Survey this repository with the tools you have (list_dir, glob, grep, read_file): its \
layout, languages, how it is built, tested and linted, and the conventions its code keeps. \
Then write an AGENTS.md for it: short, concrete instructions for a coding agent working \
here (commands to build and test, where things are, the rules to follow). Answer with the \
file's Markdown content only, nothing before or after it."""
FENCED = re.compile(r"\A\s*```[\w-]*\n(.*?)\n```\s*\Z", re.DOTALL)


def proposed_text(answer: str) -> str:
    """The file the answer proposes: a single fenced block is unwrapped."""
    fenced = FENCED.match(answer)
    return (fenced.group(1) if fenced else answer.strip()) + "\n"


class InitCommands:
    """Mixed into Commands, which gives `session`, `console` and `say`."""

    session: Session
    console: Console
    say: Callable[..., None]

    async def init(self, arg: str) -> None:
        top = repository_top(Path.cwd().resolve())
        target = top / "AGENTS.md"
        current = target.read_text("utf-8", errors="replace") if target.is_file() else None
        prompt = SURVEY
        if current is not None:
            prompt += f"\n\nThe AGENTS.md there now, to improve on:\n\n{current}"
        self.say(f"surveying {top} with read-only tools… (Ctrl-C stops)")
        answer = await self._survey(top, prompt)
        if answer is None:
            return
        if not answer.strip():
            self.say("the model proposed nothing: AGENTS.md is as it was", "yellow")
            return
        proposal = proposed_text(answer)
        if proposal == current:
            self.say(f"the model proposes no change to {target}")
            return
        await self._offer(top, target, proposal)

    async def _survey(self, top: Path, prompt: str) -> str | None:
        """The model's answer after its survey of `top` (None: stopped or failed, said)."""
        from toolnexus.tools.toolkit import Toolkit
        from toolnexus.tools.workspace import Workspace

        from ..session.session import make_client

        session = self.session
        survey = Toolkit()
        survey.use_builtins(SURVEY_TOOLS, Workspace(top))
        client, _, redact = make_client(
            session.target, session.store, wait_for=session.wait_for, budget=session.budget
        )
        cancel = session.interrupts.turn = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, cancel.set)
        try:
            return await self._answer(client, survey, prompt, cancel)
        except RunCancelled:
            self.say("(stopped: AGENTS.md is as it was)")
        except ToolnexusError as exc:
            self.say(redact.line(f"error: /init: {' '.join(str(exc).split())}"), "bold red")
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            session.interrupts.turn = None
            await client.aclose()
        return None

    async def _answer(
        self, client: Client, survey: Toolkit, prompt: str, cancel: asyncio.Event
    ) -> str:
        async for event in client.stream(prompt, survey, cancel=cancel):
            if event["type"] == "tool_call":
                self.say(f"  {event['name']} {_brief(event['args'])}")
            elif event["type"] == "done":
                return str(event["result"].text or "")
        return ""

    async def _offer(self, top: Path, target: Path, proposal: str) -> None:
        from toolnexus.tools.workspace import Workspace

        from ..tools.approve import confirm_default_no, panel
        from ..tools.file_change import file_change

        change = file_change(
            Workspace(top),
            "write_file",
            {"path": target.name, "content": proposal},
            shown_lines=SHOWN_LINES,
        )
        panel(self.console, change, "the proposed AGENTS.md")
        if not await confirm_default_no("write AGENTS.md? [y/N] "):
            self.say("not written: AGENTS.md is as it was")
            return
        target.write_text(proposal, encoding="utf-8")
        self.say(f"wrote {target}: it is read with the next message")


def _brief(args: object) -> str:
    """A survey call's arguments on one short line."""
    if isinstance(args, dict):
        text = " ".join(str(value) for value in args.values())
    else:
        text = str(args)
    text = visible(" ".join(text.split()))
    return text if len(text) <= 80 else text[:79] + "…"
