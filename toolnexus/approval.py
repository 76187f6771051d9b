"""Approval: which tool calls run at once, which need a person's yes, which never run.

Rules are glob patterns on tool names (and, for `bash`, on the parsed command) mapped to
"allow", "ask" or "deny". Without a matching rule: read-only built-ins, Python functions
and skills are allowed; `bash`, `write_file`, `edit_file` and every MCP tool ask.
The policy works as a `before_tool` hook, so it is the loop's own tool path.
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Awaitable, Callable
from typing import Any

from ._await import maybe_await
from .builtins import CHANGING
from .command_vetting import allow_covers
from .shell import (
    Parsed,
    matches_as_written,
    names_program,
    names_program_anywhere,
    programs_run,
    words_anywhere,
)
from .toolkit import Toolkit
from .tools import Tool, ToolResult
from .workspace import DECISIONS, checked_rules

__all__ = ["DECISIONS", "DENIED_BY_USER", "ApprovalPolicy", "approval_hook"]
DENIED_BY_USER = "denied by the user"

# ask(name, args) -> "yes" | "no" | "always"
AskUser = Callable[[str, Any], Awaitable[str] | str]


class ApprovalPolicy:
    def __init__(self, rules: dict[str, str] | None = None,
                 commands: dict[str, str] | None = None) -> None:
        self.rules = checked_rules(rules, "approval rule for tool")
        self.commands = checked_rules(commands, "approval rule for command")

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

        Rules match the command as the shell parses it, word by word. A "deny" rule
        matches its program however it is spelled or wrapped (`\\rm`, `/bin/rm`,
        `sudo rm`, `env -i rm`, `xargs rm`, `bash -c "rm ..."`), anywhere in a chain,
        and wins. An "allow" rule covers only one plain command written as the rule is:
        nothing chained (`;`, `&&`, `|`, a new line...), substituted or redirected, and
        no option that makes it run code or write files (`git -c`, `find -exec`,
        `sed -i`, `--output`...); otherwise it asks."""
        parsed = Parsed(command)
        if any(self._denies(cmd) for cmd in parsed.commands):
            return "deny"
        if (parsed.nested or not parsed.ok) and self._denies_anywhere(command):
            return "deny"  # a parse that may be wrong fails closed: --yes must not run it
        if not parsed.ok:
            return "ask"
        found = [self._as_written(cmd) for cmd in parsed.commands or [[]]]
        if parsed.plain:
            if found[0] == "allow" and not allow_covers(parsed.commands[0]):
                return "ask"
            return found[0]
        return "ask" if "ask" in found else None  # the tool's own rule decides

    def _denies(self, words: list[str]) -> bool:
        return any(decision == "deny" and names_program(pattern, run)
                   for run in programs_run(words) for pattern, decision in self.commands)

    def _denies_anywhere(self, command: str) -> bool:
        """Whether a denied program stands anywhere in the command as a word, followed by
        the rule's other words, whatever the quoting and nesting around it."""
        words = words_anywhere(command)
        return any(decision == "deny" and names_program_anywhere(pattern, words)
                   for pattern, decision in self.commands)

    def _as_written(self, words: list[str]) -> str | None:
        return next((d for p, d in self.commands if matches_as_written(p, words)), None)


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
        return {"result": ToolResult(DENIED_BY_USER, is_error=True)}

    return before_tool
