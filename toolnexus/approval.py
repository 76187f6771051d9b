"""Approval: which tool calls run at once, which need a person's yes, which never run.

Rules are glob patterns on tool names (and, for `bash`, on the parsed command) mapped to
"allow", "ask" or "deny". Without a matching rule: read-only built-ins, Python functions
and skills are allowed; `bash`, `write_file`, `edit_file` and every MCP tool ask. An MCP
tool's annotations only make this stricter, except by a rule that trusts them:
`destructiveHint` always asks, `readOnlyHint` follows the rule "mcp:read-only" if any.

For `bash` an "allow" lets a command run in the sandbox without asking; leaving the sandbox
is the bash tool's own question (builtins.py), which only a person or an explicit
[approval.outside] rule answers. Where commands run with no sandbox at all, every command is
that question, so the policy leaves bash to it (deny rules still hold). Deny rules are
best-effort: they read the command line, and any interpreter is a way around them; the
sandbox, not a rule, is the guarantee.
The policy works as a `before_tool` hook, so it is the loop's own tool path.
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Awaitable, Callable
from typing import Any

from ._await import maybe_await
from .builtins import CHANGING
from .command_rules import CommandRules
from .rules import DECISIONS, checked_rules
from .suspension import NOBODY_TO_ASK
from .toolkit import Toolkit
from .tools import Tool, ToolResult

__all__ = ["DECISIONS", "DENIED_BY_USER", "NOBODY_TO_ASK", "READ_ONLY_RULE", "ApprovalPolicy",
           "approval_hook"]
DENIED_BY_USER = "denied by the user"
# the rule for MCP tools that say they only read ("mcp:read-only" = "allow"); tool names
# cannot hold ":", so no tool is named by it
READ_ONLY_RULE = "mcp:read-only"

# ask(name, args) -> "yes" | "no" | "always" | "nobody" (no one could be asked)
AskUser = Callable[[str, Any], Awaitable[str] | str]


class ApprovalPolicy:
    """`sandboxed`: whether bash commands run in a sandbox (if not, bash asks a person about
    every command itself, and only deny rules apply here)."""

    def __init__(self, rules: dict[str, str] | None = None,
                 commands: dict[str, str] | None = None, *, sandboxed: bool = True) -> None:
        self.rules = checked_rules(rules, "approval rule for tool")
        self.commands = CommandRules(commands, "approval rule for command")
        self.sandboxed = sandboxed

    def default_for(self, tool: Tool | None) -> str:
        if tool is None:
            return "allow"  # unknown tools fail on their own
        if tool.source.startswith("mcp") or (tool.source == "builtin" and tool.name in CHANGING):
            return "ask"
        return "allow"

    def rule_for(self, tool: Tool) -> str:
        """The decision for a tool by name alone (what `toolnexus tools` shows). An MCP
        tool that says it is destructive is never allowed without asking; one that says
        it only reads follows the rule READ_ONLY_RULE when no rule names it."""
        decision = next((d for p, d in self.rules if fnmatch.fnmatchcase(tool.name, p)), None)
        hints = tool.annotations if tool.source.startswith("mcp") else {}
        if decision is None and hints.get("readOnlyHint") is True \
                and hints.get("destructiveHint") is not True:
            decision = dict(self.rules).get(READ_ONLY_RULE)
        if decision is None:
            decision = self.default_for(tool)
        return "ask" if decision == "allow" and hints.get("destructiveHint") is True else decision

    def decide(self, tool: Tool | None, name: str, args: Any) -> str:
        if name == "bash" and isinstance(args, dict):
            decision = self.command_rule(str(args.get("command", "")))
            if decision == "deny":
                return decision
            if not self.sandboxed:  # the tool asks a person about every command
                return "deny" if tool is not None and self.rule_for(tool) == "deny" else "allow"
            if decision is not None:
                return decision
        if tool is not None:
            return self.rule_for(tool)
        return next((d for p, d in self.rules if fnmatch.fnmatchcase(name, p)), "allow")

    def command_rule(self, command: str) -> str | None:
        """The decision of the command rules, or None when they say nothing (see
        CommandRules.decide)."""
        return self.commands.decide(command) if self.commands else None


def approval_hook(policy: ApprovalPolicy, toolkit: Toolkit, ask: AskUser,
                  ) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]:
    """A `before_tool` hook that applies `policy`, asking the user through `ask`.
    Prompts never overlap: concurrent calls wait their turn."""
    remembered: set[tuple[str, str]] = set()
    turn = asyncio.Lock()

    async def before_tool(call: dict[str, Any]) -> dict[str, Any] | None:
        name, args = call["name"], call["args"]
        decision = policy.decide(toolkit.get(name), name, args)
        if decision == "allow":
            return None
        if decision == "deny":
            return {"result": ToolResult(f"denied by policy: {name} may not run",
                                         is_error=True)}
        key = (name, str(args.get("command", "")) if name == "bash" and isinstance(
            args, dict) else "")
        if key in remembered:
            return None
        async with turn:
            answer = await maybe_await(ask(name, args))
        if answer == "always":
            remembered.add(key)
            return None
        if answer == "yes":
            return None
        refusal = NOBODY_TO_ASK if answer == "nobody" else DENIED_BY_USER
        return {"result": ToolResult(refusal, is_error=True)}

    return before_tool
