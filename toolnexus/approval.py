"""Approval: which tool calls run at once, which need a person's yes, which never run.

Rules are glob patterns on tool names (and, for `bash`, on the command) mapped to
"allow", "ask" or "deny". Without a matching rule: read-only built-ins, Python functions
and skills are allowed; `bash`, `write_file`, `edit_file` and every MCP tool ask.
The policy works as a `before_tool` hook, so it is the loop's own tool path.
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any

from .builtins import CHANGING
from .toolkit import Toolkit
from .tools import Tool, ToolResult

DECISIONS = ("allow", "ask", "deny")
DENIED_BY_USER = "denied by the user"

# ask(name, args) -> "yes" | "no" | "always"
AskUser = Callable[[str, Any], Awaitable[str] | str]


def _checked(rules: dict[str, str] | None, what: str) -> list[tuple[str, str]]:
    checked = []
    for pattern, decision in (rules or {}).items():
        if decision not in DECISIONS:
            raise ValueError(f"approval rule {what} {pattern!r} = {decision!r}: "
                             "use \"allow\", \"ask\" or \"deny\"")
        checked.append((pattern, decision))
    # exact names first, then the longest (most specific) pattern
    return sorted(checked, key=lambda rule: (any(c in rule[0] for c in "*?["),
                                             -len(rule[0])))


class ApprovalPolicy:
    def __init__(self, rules: dict[str, str] | None = None,
                 commands: dict[str, str] | None = None) -> None:
        self.rules = _checked(rules, "for tool")
        self.commands = _checked(commands, "for command")

    def default_for(self, tool: Tool | None) -> str:
        if tool is None:
            return "allow"  # unknown tools fail on their own
        if tool.source.startswith("mcp") or (tool.source == "builtin" and tool.name in CHANGING):
            return "ask"
        return "allow"

    def rule_for(self, tool: Tool) -> str:
        """The decision for a tool by name alone (what `toolnexus tools` shows)."""
        for pattern, decision in self.rules:
            if fnmatch.fnmatchcase(tool.name, pattern):
                return decision
        return self.default_for(tool)

    def decide(self, tool: Tool | None, name: str, args: Any) -> str:
        if name == "bash" and isinstance(args, dict) and self.commands:
            decision = self.command_rule(str(args.get("command", "")))
            if decision is not None:
                return decision
        if tool is not None:
            return self.rule_for(tool)
        return next((d for p, d in self.rules if fnmatch.fnmatchcase(name, p)), "allow")

    def command_rule(self, command: str) -> str | None:
        """The decision of the command rules, or None when they say nothing.

        A command chained to others (`;`, `&&`, `|`, a new line...), with a substitution
        or a redirection is never allowed by a rule: `"git status*" = "allow"` must not
        let `git status; rm -rf ~` through. A piece that a rule denies denies it all."""
        pieces = [p.strip() for p in _CHAIN.split(command) if p.strip()]
        found = [self._match_command(p) for p in pieces or [""]]
        if "deny" in found:
            return "deny"
        if len(pieces) == 1 and not _UNSAFE.search(command):
            return found[0]
        return "ask" if "ask" in found else None  # the tool's own rule decides

    def _match_command(self, command: str) -> str | None:
        return next((d for p, d in self.commands if fnmatch.fnmatchcase(command, p)), None)


_CHAIN = re.compile(r"&&|\|\||[;&|\n]")  # what runs another command after or beside one
_UNSAFE = re.compile(r"[;&|\n`<>]|\$\(")  # chaining, substitution, redirection


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
            answer = ask(name, args)
            if inspect.isawaitable(answer):
                answer = await answer
        if answer == "always":
            remembered.add(key)
            return None
        if answer == "yes":
            return None
        return {"result": ToolResult(DENIED_BY_USER, is_error=True)}

    return before_tool
