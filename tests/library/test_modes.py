"""toolnexus.tools.modes promises, for the built-in tools, what each mode asks before a call
on top of the approval rules: ask (the rules alone), auto-edit (writes and edits run),
auto (commands in the sandbox run too), plan (writes and edits refused, commands run, but
refused where there is no sandbox); a deny rule holds in every mode, other tools follow the
rules alone, and review on (a command asked about after it ran) lifts the question before a
command. The hook is called directly; the modes in a chat are in
tests/terminal/test_modes_pty.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolnexus.tools.approval import ApprovalPolicy, approval_hook
from toolnexus.tools.modes import PLAN_REFUSAL, Verdict, mode_verdict, with_mode
from toolnexus.tools.tool import Tool, ToolResult
from toolnexus.tools.toolkit import Toolkit


def tool(name: str, source: str = "builtin") -> Tool:
    return Tool(name, "", {"type": "object", "properties": {}}, lambda **kw: name, source=source)


WRITE, EDIT, BASH, READ = tool("write_file"), tool("edit_file"), tool("bash"), tool("read_file")
MCP = tool("write_file", "mcp:files")


def run_hook(mode: str, subject: Tool, policy: ApprovalPolicy, args: Any = None) -> Any:
    """What the hook under `mode` does with a call of `subject`: None (it runs), "asked"
    (the approval hook asked, and was told no), or the refusal the model reads."""
    asked: list[str] = []

    def asker(name: str, call_args: Any) -> str:
        asked.append(name)
        return "no"

    toolkit = Toolkit().register(subject)
    hook = with_mode(approval_hook(policy, toolkit, asker), policy, toolkit, lambda: mode)
    outcome = asyncio.run(hook({"name": subject.name, "args": args or {}}))
    if asked:
        return "asked"
    if outcome is None:
        return None
    assert isinstance(outcome["result"], ToolResult) and outcome["result"].is_error
    return outcome["result"].output


@pytest.mark.parametrize(
    ("mode", "write", "edit", "bash"),
    [
        ("ask", "asked", "asked", "asked"),
        ("auto-edit", None, None, "asked"),
        ("auto", None, None, None),
        ("plan", PLAN_REFUSAL, PLAN_REFUSAL, None),
    ],
)
def test_each_mode_asks_runs_or_refuses_the_built_in_tools(mode, write, edit, bash):
    policy = ApprovalPolicy()
    assert run_hook(mode, WRITE, policy) == write
    assert run_hook(mode, EDIT, policy) == edit
    assert run_hook(mode, BASH, policy, {"command": "make test"}) == bash
    assert run_hook(mode, READ, policy) is None


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "auto", "plan"])
def test_a_deny_rule_holds_and_other_tools_follow_the_rules_in_every_mode(mode):
    denied = ApprovalPolicy({"write_file": "deny"}, {"rm *": "deny"})
    assert run_hook(mode, WRITE, denied).startswith("denied by the rule")
    assert run_hook(mode, BASH, denied, {"command": "rm -rf build"}).startswith(
        "denied by the rule"
    )
    assert run_hook(mode, MCP, ApprovalPolicy()) == "asked"


def test_without_a_sandbox_commands_are_left_to_the_tool_and_plan_refuses_them():
    bare = ApprovalPolicy(sandboxed=False)
    for mode in ("ask", "auto-edit", "auto"):  # bash asks a person about each one itself
        assert run_hook(mode, BASH, bare, {"command": "ls"}) is None
    assert run_hook("plan", BASH, bare, {"command": "ls"}).startswith(
        "refused: plan mode runs commands only in a read-only sandbox"
    )


def test_review_on_lifts_the_question_before_a_command_only():
    for mode in ("ask", "auto-edit"):
        assert mode_verdict(mode, BASH, sandboxed=True, reviewed=True) == Verdict("allow")
        assert mode_verdict(mode, BASH, sandboxed=True, reviewed=False) is None
    assert mode_verdict("ask", WRITE, sandboxed=True, reviewed=True) is None
    assert mode_verdict("ask", BASH, sandboxed=False, reviewed=True) is None
