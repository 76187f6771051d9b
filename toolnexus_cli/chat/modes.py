"""The chat's mode (toolnexus.tools.modes): which one is on, Shift-Tab's cycle, the words
the banner and the toolbar say of it, and what plan mode changes in the toolkit: a
read-only sandbox for commands and a note in the system prompt asking for a plan. When a
plan-mode answer has ended, one key (PLAN_KEY) goes back to the mode before plan mode and
sends GO_AHEAD."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from toolnexus import Answer, Request, make_answer
from toolnexus.app_support import maybe_await
from toolnexus.tools.builtins import CHANGING
from toolnexus.tools.modes import MODES, commands_reviewed

from ..tools.command_question import command_question

if TYPE_CHECKING:
    from toolnexus import Toolkit
    from toolnexus.tools.sandbox import SandboxPolicy
    from toolnexus.tools.suspension import WaitFor
    from toolnexus.tools.workspace import Workspace

CYCLE_KEY, CYCLE_KEY_NAME = "s-tab", "Shift-Tab"
PLAN_KEY, PLAN_KEY_NAME = "c-g", "Ctrl-G"
GO_AHEAD = "go ahead with the plan"
MEANING = {
    "ask": "every write and command asks first",
    "auto-edit": "file edits in the workspace run without asking, commands ask",
    "auto": "commands run in the sandbox and edits without asking (/rewind undoes them); "
    "leaving the sandbox asks",
    "plan": "read-only: the model looks around and proposes a plan; writes are refused, "
    "commands run read-only",
}
PLAN_NOTE = (
    "You are in plan mode: the user wants a plan before anything changes. Look around as "
    "much as you need (read, search; commands run in a read-only sandbox, and write_file "
    "and edit_file are refused), then answer with a short numbered plan of the changes you "
    "would make, and stop there. The user will tell you when to go ahead."
)
STAYS_READ_ONLY = (
    "plan mode: commands stay in the read-only sandbox; what needs more belongs in the plan"
)


def modes_matter(toolkit: Toolkit) -> bool:
    """Whether the toolkit offers a built-in tool that changes things (which the modes are
    about): not in the home folder, say, where only fetch_url is offered."""
    return any(
        (tool := toolkit.get(name)) is not None and tool.source == "builtin" for name in CHANGING
    )


class ChatMode:
    """The mode on now (`name`), the one before plan mode (`before_plan`: what PLAN_KEY goes
    back to), and whether a plan-mode answer waits to be carried out (`plan_ready`)."""

    def __init__(self, start: str = "ask") -> None:
        self.name: str = start if start in MODES else "ask"
        self.before_plan: str = self.name if self.name != "plan" else "ask"
        self.plan_ready = False
        # plan mode's workspace and the sandbox policy it had before it became read-only
        self._held: tuple[Workspace, SandboxPolicy] | None = None
        self._toolkit: Toolkit | None = None  # the one `apply` made what the mode says

    def switch(self, name: str) -> None:
        """Turn `name` on (the toolkit of the last `apply` follows)."""
        if self.name != "plan":
            self.before_plan = self.name
        self.name = name
        self.plan_ready = False
        if self._toolkit is not None:
            self.apply(self._toolkit)

    def cycle(self) -> str:
        """The next mode of MODES (after the last, the first): the one now on."""
        self.switch(MODES[(MODES.index(self.name) + 1) % len(MODES)])
        return self.name

    def go_ahead(self) -> str | None:
        """PLAN_KEY: with a plan waiting, the mode before plan mode and GO_AHEAD to send;
        else None (the key does nothing)."""
        if not (self.name == "plan" and self.plan_ready):
            return None
        self.switch(self.before_plan)
        return GO_AHEAD

    def apply(self, toolkit: Toolkit) -> None:
        """Make `toolkit` what the mode says: in plan mode its sandbox read-only (no folder
        of `[sandbox] write` either) and PLAN_NOTE in its system prompt; else as it was.
        A later `switch` changes it too."""
        self._toolkit = toolkit
        workspace = toolkit.workspace
        planning = self.name == "plan"
        if planning and PLAN_NOTE not in toolkit.instructions:
            toolkit.instructions.append(PLAN_NOTE)
        elif not planning and PLAN_NOTE in toolkit.instructions:
            toolkit.instructions.remove(PLAN_NOTE)
        if self._held is not None and (not planning or self._held[0] is not workspace):
            held, policy = self._held
            held.sandbox.policy = dataclasses.replace(
                held.sandbox.policy, mode=policy.mode, write=policy.write
            )
            self._held = None
        # only a sandbox already set up: a policy changed first would be the one probed
        if planning and self._held is None and workspace is not None and workspace.sandbox.active:
            sandbox = workspace.sandbox
            self._held = (workspace, sandbox.policy)
            sandbox.policy = dataclasses.replace(sandbox.policy, mode="read-only", write=())

    def kept_in_sandbox(self, wait_for: WaitFor) -> WaitFor:
        """`wait_for`, except that in plan mode a command the read-only sandbox stopped is
        not offered to run outside it: the model reads STAYS_READ_ONLY instead."""

        async def answer(request: Request) -> Answer:
            leaving = request.get("kind") == "approval" and command_question(request.get("data"))
            if self.name == "plan" and leaving:
                return make_answer(request, False, reason=STAYS_READ_ONLY)
            return await maybe_await(wait_for(request))

        return answer

    def status(self) -> str:
        """The toolbar's words: the mode and how to change it, or how to run a plan."""
        if self.name == "plan" and self.plan_ready:
            return f"plan mode · {PLAN_KEY_NAME} carries out the plan in {self.before_plan} mode"
        return f"{self.name} mode ({CYCLE_KEY_NAME} changes it)"

    def line(self, toolkit: Toolkit) -> str:
        """The banner's and /mode's line: the mode, what it means in `toolkit` (review
        moves a command's question to after it ran), how to change it."""
        meaning = MEANING[self.name]
        if self.name in ("ask", "auto-edit") and commands_reviewed(toolkit):
            meaning += " (with review on, a command asks once, after it ran)"
        return (
            f"mode: {self.name}: {meaning} ({CYCLE_KEY_NAME} or /mode NAME changes it: "
            f"{', '.join(MODES)})"
        )

    def plan_hint(self) -> str:
        """Said under a plan-mode answer."""
        return (
            f"plan mode: {PLAN_KEY_NAME} carries out this plan in {self.before_plan} mode "
            f'(it sends "{GO_AHEAD}"); {CYCLE_KEY_NAME} changes mode'
        )
