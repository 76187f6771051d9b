"""PreToolUse and PostToolUse hooks (hooks_run.py) around the library's `before_tool` and
`after_tool`, with the approval hook in between.

A PreToolUse hook runs before the approval question: it may block the call (its reason goes
to the model), change its input, or decide. "deny" and "ask" always hold; "allow" skips the
question only for a command that runs inside the sandbox (leaving it is asked apart) and
never past a deny rule. What a PostToolUse hook changes in the workspace (a formatter) joins
the call's change set, so the journal can undo the turn as a whole."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolnexus import Toolkit
from toolnexus.tools.tool import ToolResult

from .hooks_run import HookRunner, Outcome, claude_input, claude_name, our_args

if TYPE_CHECKING:
    from toolnexus.journal.changes import ChangeSet
    from toolnexus.tools.approval import ApprovalPolicy, AskUser


def with_tool_hooks(
    runner: HookRunner,
    toolkit: Toolkit,
    hooks: dict[str, Any] | None,
    policy: Callable[[], ApprovalPolicy],
    ask: AskUser,
) -> dict[str, Any] | None:
    """`hooks` (the approval's) with the runner's tool hooks around them."""
    if not runner.of("PreToolUse") and not runner.of("PostToolUse"):
        return hooks
    approval = (hooks or {}).get("before_tool")

    async def before_tool(payload: dict[str, Any]) -> Any:
        name, args = payload["name"], payload["args"]
        outcome = await runner.run(
            "PreToolUse",
            {
                "tool_name": claude_name(name),
                "tool_input": claude_input(name, args, runner.root),
                "tool_use_id": payload["id"],
            },
            tool=name,
        )
        if outcome.blocked:
            return _blocked("PreToolUse", outcome)
        if outcome.args is not None:
            args = our_args(name, outcome.args)
            payload = {**payload, "args": args}
        changed = {"args": args} if outcome.args is not None else None
        if outcome.decision == "ask":
            from toolnexus.tools.approval import ALLOWING

            answer = await _answer(ask, name, args)
            if answer not in ALLOWING:
                return {"result": ToolResult(f"declined by the person: {name}", is_error=True)}
            return changed
        ruling = policy().ruling(toolkit.get(name), name, args)
        if outcome.decision == "allow" and ruling.decision != "deny" and _sandboxed(toolkit, name):
            return changed
        decided = await approval(payload) if approval is not None else None
        return changed if decided is None else decided

    async def after_tool(payload: dict[str, Any]) -> Any:
        name, result = payload["name"], payload["result"]
        if not runner.of("PostToolUse", name):
            return None
        workspace = toolkit.workspace
        before = workspace.before_command() if workspace is not None else None
        outcome = await runner.run(
            "PostToolUse",
            {
                "tool_name": claude_name(name),
                "tool_input": claude_input(name, payload["args"], runner.root),
                "tool_response": {"output": result.output, "is_error": result.is_error},
                "tool_use_id": payload["id"],
            },
            tool=name,
        )
        if workspace is not None and before is not None:
            made = workspace.after_command(before, outside=True)
            if made.changes:
                result = dataclasses.replace(result, changes=_joined(result.changes, made))
        note = _note("PostToolUse", outcome)
        if note:
            result = dataclasses.replace(result, output=f"{result.output}\n{note}")
        return {"result": result}

    return {**(hooks or {}), "before_tool": before_tool, "after_tool": after_tool}


async def _answer(ask: AskUser, name: str, args: Any) -> str:
    from toolnexus.app_support import maybe_await

    return str(await maybe_await(ask(name, args)))


def _sandboxed(toolkit: Toolkit, name: str) -> bool:
    """Whether a call of `name` runs inside the sandbox (a built-in bash, confined)."""
    tool, workspace = toolkit.get(name), toolkit.workspace
    return (
        name == "bash"
        and tool is not None
        and tool.source == "builtin"
        and workspace is not None
        and workspace.sandbox.active
    )


def _blocked(event: str, outcome: Outcome) -> dict[str, Any]:
    return {"result": ToolResult(f"blocked by a {event} hook: {outcome.reason}", is_error=True)}


def _note(event: str, outcome: Outcome) -> str:
    """What a hook after the call tells the model: why it objects, what it adds."""
    parts = [f"[{event} hook: {outcome.reason}]"] if outcome.blocked else []
    parts += [f"[{event} hook: {context}]" for context in outcome.context]
    return "\n".join(parts)


def _joined(first: ChangeSet | None, then: ChangeSet) -> ChangeSet:
    """The call's changes followed by the hook's: a path both changed goes from what was
    there before the call to what the hook left."""
    if first is None:
        return then
    from toolnexus.journal.changes import FileChange

    merged = {change.path: change for change in first.changes}
    for change in then.changes:
        earlier = merged.get(change.path)
        merged[change.path] = (
            change if earlier is None else FileChange(change.path, earlier.before, change.after)
        )
    return first._replace(changes=tuple(merged.values()))
