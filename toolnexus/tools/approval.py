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
sandbox, not a rule, is the guarantee. A call a rule denies is answered with that rule and
what it refused (`denied by the rule "rm *" = "deny" in [approval.commands]: rm -rf
build`), so the model can try another way.
The policy works as a `before_tool` hook, so it is the loop's own tool path.

An "always" answer covers what `always_scopes` says, for the hook's lifetime (the session):
`ALWAYS` the narrow scope (this exact command; this file, for write_file and edit_file;
every call of any other tool), `ALWAYS_WIDER` the wide one where there is one (every plain
command of the same program, as an [approval.commands] "allow" rule covers it; every
write_file or edit_file in the workspace).
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from .._callbacks import maybe_await
from ._command_line import Parsed
from ._command_rules import CommandRules
from .builtins import CHANGING
from .rules import DECISIONS, Ruling, checked_rules
from .suspension import NOBODY_TO_ASK
from .tool import Tool, ToolResult
from .toolkit import Toolkit

__all__ = [
    "ALLOWING",
    "ALWAYS",
    "ALWAYS_WIDER",
    "DECISIONS",
    "DENIED_BY_USER",
    "NOBODY_TO_ASK",
    "READ_ONLY_RULE",
    "ApprovalHook",
    "ApprovalPolicy",
    "AskUser",
    "Scope",
    "always_scopes",
    "approval_hook",
    "refusal",
]
DENIED_BY_USER = "denied by the user"
# the rule for MCP tools that say they only read ("mcp:read-only" = "allow"); tool names
# cannot hold ":", so no tool is named by it
READ_ONLY_RULE = "mcp:read-only"

# ask(name, args) -> "yes" | "no" | ALWAYS | ALWAYS_WIDER | "nobody" (no one could be asked)
AskUser = Callable[[str, Any], Awaitable[str] | str]
ALWAYS, ALWAYS_WIDER = "always", "always-wider"
ALLOWING = frozenset({"yes", ALWAYS, ALWAYS_WIDER})  # the answers that let a call run
FILE_WRITERS = ("write_file", "edit_file")
_PROGRAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # a program named as a rule can name it
# Where the config keeps the rules on tool names and on bash commands.
TOOLS_TABLE, COMMANDS_TABLE = "approval", "approval.commands"


class ApprovalPolicy:
    """`sandboxed`: whether bash commands run in a sandbox (if not, bash asks a person about
    every command itself, and only deny rules apply here)."""

    def __init__(
        self,
        rules: dict[str, str] | None = None,
        commands: dict[str, str] | None = None,
        *,
        sandboxed: bool = True,
    ) -> None:
        self.rules = checked_rules(rules, "approval rule for tool")
        self.commands = CommandRules(commands, "approval rule for command", COMMANDS_TABLE)
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
        return self.tool_ruling(tool).decision

    def tool_ruling(self, tool: Tool) -> Ruling:
        hints = tool.annotations if tool.source.startswith("mcp") else {}
        ruling = self._by_name(tool.name)
        if (
            ruling is None
            and hints.get("readOnlyHint") is True
            and hints.get("destructiveHint") is not True
        ):
            ruling = next(
                (
                    Ruling(decision, pattern, TOOLS_TABLE)
                    for pattern, decision in self.rules
                    if pattern == READ_ONLY_RULE
                ),
                None,
            )
        if ruling is None:
            ruling = Ruling(self.default_for(tool))
        if ruling.decision == "allow" and hints.get("destructiveHint") is True:
            return Ruling("ask")  # what the tool says of itself beats the rule
        return ruling

    def _by_name(self, name: str) -> Ruling | None:
        return next(
            (
                Ruling(decision, pattern, TOOLS_TABLE)
                for pattern, decision in self.rules
                if fnmatch.fnmatchcase(name, pattern)
            ),
            None,
        )

    def decide(self, tool: Tool | None, name: str, args: Any) -> str:
        return self.ruling(tool, name, args).decision

    def ruling(self, tool: Tool | None, name: str, args: Any) -> Ruling:
        """The decision for this call and the rule that made it."""
        if name == "bash" and isinstance(args, dict):
            by_command = self.command_ruling(str(args.get("command", "")))
            if by_command is not None and by_command.decision == "deny":
                return by_command
            if not self.sandboxed:  # the tool asks a person about every command
                by_tool = self.tool_ruling(tool) if tool is not None else None
                return by_tool if by_tool and by_tool.decision == "deny" else Ruling("allow")
            if by_command is not None:
                return by_command
        if tool is not None:
            return self.tool_ruling(tool)
        return self._by_name(name) or Ruling("allow")

    def command_rule(self, command: str) -> str | None:
        """The decision of the command rules, or None when they say nothing (see
        CommandRules.ruling)."""
        ruling = self.command_ruling(command)
        return ruling.decision if ruling else None

    def command_ruling(self, command: str) -> Ruling | None:
        return self.commands.ruling(command) if self.commands else None


def refusal(ruling: Ruling, name: str, args: Any) -> str:
    """What the model and the person read when a rule denies a call: the rule, and the
    command or tool it refused, so that the model can try another way."""
    refused = args["command"] if ruling.table == COMMANDS_TABLE else name
    return f"denied by the rule {ruling.rule()}: {refused}"


class Scope(NamedTuple):
    """What an "always" answer covers: the `answer` ask() gives for it, in words (`covers`),
    and the `key` every call it covers shares."""

    answer: str
    covers: str
    key: tuple[str, str]


def always_scopes(name: str, args: Any, resolve: Callable[[str], str] | None = None) -> list[Scope]:
    """The scopes an "always" answer about this call may have, narrowest first (the
    question offers each). `resolve` makes a file's path the same however it is written."""
    if name == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
        command = args["command"]
        scopes = [Scope(ALWAYS, "this command", ("command", command))]
        program = plain_program(command)
        if program is not None:
            covers = f"every plain {program} command (nothing chained)"
            scopes.append(Scope(ALWAYS_WIDER, covers, ("program", program)))
        return scopes
    if name in FILE_WRITERS and isinstance(args, dict) and isinstance(args.get("path"), str):
        path = args["path"]
        return [
            Scope(ALWAYS, f"{name} of {path}", (name, resolve(path) if resolve else path)),
            Scope(ALWAYS_WIDER, f"every {name} in this workspace", ("tool", name)),
        ]
    return [Scope(ALWAYS, f"every {name} call", ("tool", name))]


def plain_program(command: str) -> str | None:
    """The program `command` runs when it is one plain command that the rule "PROGRAM *"
    = "allow" would let run (nothing chained, no option that runs code); else None."""
    parsed = Parsed(command)
    if not parsed.plain or not parsed.commands or not _PROGRAM.fullmatch(parsed.commands[0][0]):
        return None
    program = parsed.commands[0][0]
    rule = CommandRules({program: "allow", f"{program} *": "allow"}, "always", "always")
    return program if rule.decide(command) == "allow" else None


def approval_hook(policy: ApprovalPolicy, toolkit: Toolkit, ask: AskUser) -> ApprovalHook:
    """A `before_tool` hook that applies `policy`, asking the user through `ask`.
    Prompts never overlap: concurrent calls wait their turn, and one whose turn comes
    after an "always" that covers it runs without a question."""
    return ApprovalHook(policy, toolkit, ask)


class ApprovalHook:
    """See approval_hook; `asks(name, args)` says whether a call would be asked about now."""

    def __init__(self, policy: ApprovalPolicy, toolkit: Toolkit, ask: AskUser) -> None:
        self.policy, self.toolkit, self.ask = policy, toolkit, ask
        self.remembered: set[tuple[str, str]] = set()  # the keys of the "always" scopes
        self.turn = asyncio.Lock()

    def _resolve(self, path: str) -> str:
        workspace = self.toolkit.workspace
        try:
            return str(workspace.resolve(path)) if workspace else path
        except (OSError, ValueError):  # a NUL byte, a loop of links: the tool fails on it
            return path

    def _covered(self, name: str, args: Any) -> bool:
        scopes = always_scopes(name, args, self._resolve)
        return any(scope.key in self.remembered for scope in scopes)

    def asks(self, name: str, args: Any) -> bool:
        ruling = self.policy.ruling(self.toolkit.get(name), name, args)
        return ruling.decision == "ask" and not self._covered(name, args)

    async def __call__(self, call: dict[str, Any]) -> dict[str, Any] | None:
        name, args = call["name"], call["args"]
        ruling = self.policy.ruling(self.toolkit.get(name), name, args)
        if ruling.decision == "allow":
            return None
        if ruling.decision == "deny":
            return {"result": ToolResult(refusal(ruling, name, args), is_error=True)}
        async with self.turn:
            if self._covered(name, args):
                return None
            answer = await maybe_await(self.ask(name, args))
            scopes = always_scopes(name, args, self._resolve)
            self.remembered.update(scope.key for scope in scopes if scope.answer == answer)
        if answer in ALLOWING:
            return None
        why = NOBODY_TO_ASK if answer == "nobody" else DENIED_BY_USER
        return {"result": ToolResult(why, is_error=True)}
