"""Modes: how much a person is asked before the built-in tools change things, on top of the
approval rules (approval.py).

- "ask": the rules alone (without one, write_file, edit_file and bash ask first);
- "auto-edit": write_file and edit_file run without asking; commands ask;
- "auto": commands run in the sandbox without asking, and so do writes and edits;
- "plan": read-only: write_file and edit_file are refused (the model reads that it is in plan
  mode), commands run without asking in the sandbox, which the host makes read-only; where
  there is no sandbox they are refused too.

In every mode the tools' own questions stand, since no mode answers them: leaving the
sandbox, a path outside the workspace, a secret-looking file, a new host. A "deny" rule
holds in every mode, and tools other than the built-in ones follow the rules alone.
While a command's changes wait for a person's yes after it ran (review: the sandbox's
apply = "ask"), a command in the sandbox is not asked about before it runs as well: the
person is asked once, after, with what it changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .approval import ApprovalHook, ApprovalPolicy
from .tool import Tool, ToolResult
from .toolkit import Toolkit

__all__ = [
    "MODES",
    "PLAN_REFUSAL",
    "Mode",
    "ModeApproval",
    "Verdict",
    "commands_reviewed",
    "mode_verdict",
    "with_mode",
]

Mode = Literal["ask", "auto-edit", "auto", "plan"]
MODES: tuple[Mode, ...] = ("ask", "auto-edit", "auto", "plan")
EDITS = ("write_file", "edit_file")
PLAN_REFUSAL = (
    "refused: plan mode is read-only, no file is written or edited; finish the plan, and "
    "the user will switch modes to carry it out"
)
NO_READ_ONLY_SANDBOX = (
    "refused: plan mode runs commands only in a read-only sandbox, and there is no sandbox "
    "here; read with the file tools, and finish the plan"
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a mode says of a call: it runs without asking ("allow"), or is refused with
    `why`, which the model reads."""

    decision: Literal["allow", "refuse"]
    why: str = ""


def mode_verdict(
    mode: str, tool: Tool | None, *, sandboxed: bool, reviewed: bool
) -> Verdict | None:
    """What `mode` says of a call of `tool` (None: the rules decide). `sandboxed`: commands
    run in a sandbox; `reviewed`: a command's changes are asked about after it ran."""
    if tool is None or tool.source != "builtin":
        return None
    if tool.name in EDITS:
        if mode == "plan":
            return Verdict("refuse", PLAN_REFUSAL)
        return Verdict("allow") if mode in ("auto-edit", "auto") else None
    if tool.name != "bash":
        return None
    if not sandboxed:  # the tool asks a person about every command itself
        return Verdict("refuse", NO_READ_ONLY_SANDBOX) if mode == "plan" else None
    return Verdict("allow") if mode in ("auto", "plan") or reviewed else None


def commands_reviewed(toolkit: Toolkit) -> bool:
    """Whether a command's changes wait for a person's yes after it ran: review is on and
    commands write into an overlay (where they do not, nothing waits)."""
    workspace = toolkit.workspace
    if workspace is None or not workspace.reviewing:
        return False
    sandbox = workspace.sandbox
    return bool(sandbox.active and sandbox.enforced().overlay)


def with_mode(
    approval: ApprovalHook,
    policy: ApprovalPolicy,
    toolkit: Toolkit,
    mode: Callable[[], str],
) -> ModeApproval:
    """`approval` (the approval hook of `policy`) under the mode `mode()` names at each
    call: a call the mode allows runs without asking, one it refuses gets its refusal, and
    every other call, or one a rule denies, goes to `approval`."""
    return ModeApproval(approval, policy, toolkit, mode)


class ModeApproval:
    """See with_mode; `asks(name, args)` says whether a call would be asked about now."""

    def __init__(
        self,
        approval: ApprovalHook,
        policy: ApprovalPolicy,
        toolkit: Toolkit,
        mode: Callable[[], str],
    ) -> None:
        self.approval, self.policy, self.toolkit, self.mode = approval, policy, toolkit, mode

    def _verdict(self, name: str, args: Any) -> Verdict | None:
        tool = self.toolkit.get(name)
        if self.policy.ruling(tool, name, args).decision == "deny":
            return None
        reviewed = commands_reviewed(self.toolkit)
        return mode_verdict(self.mode(), tool, sandboxed=self.policy.sandboxed, reviewed=reviewed)

    def asks(self, name: str, args: Any) -> bool:
        return self._verdict(name, args) is None and self.approval.asks(name, args)

    async def __call__(self, call: dict[str, Any]) -> dict[str, Any] | None:
        verdict = self._verdict(call["name"], call["args"])
        if verdict is None:
            return await self.approval(call)
        if verdict.decision == "allow":
            return None
        return {"result": ToolResult(verdict.why, is_error=True)}
