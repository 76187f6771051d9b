"""toolnexus.tools.approval promises a decision ("allow", "ask", "deny") for every tool call:
by the tool rules (exact names before globs, case-sensitive), else the defaults (what
changes things and every MCP tool asks; the rest runs); for `bash` alone, the command
rules first, falling back to the tool's own rule when they say nothing. `approval_hook`
applies it as a before_tool hook: "allow" runs, "deny" answers the model without asking,
"ask" asks, and only "yes" or an "always" (remembered in that hook for what
`always_scopes` says it covers: that tool, that exact bash command or every plain command
of its program, that file or every write of that tool) lets the call run; anything else is
a no, and an asker that raises leaves the next question free to be asked.

Precedence of globs, the documented command spellings and the hook through a real run
are in tests/library/test_tool_sources.py and tests/cli/test_security_tools.py; this file is every
combination of rule, tool and answer, with the hook called directly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolnexus.tools.approval import (
    ALWAYS,
    ALWAYS_WIDER,
    DENIED_BY_USER,
    ApprovalPolicy,
    always_scopes,
    approval_hook,
)
from toolnexus.tools.tool import Tool, ToolResult
from toolnexus.tools.toolkit import Toolkit


def tool(name: str, source: str = "python") -> Tool:
    return Tool(name, "", {"type": "object", "properties": {}}, lambda **kw: name, source=source)


BASH = tool("bash", "builtin")


class Answers:
    """An asker giving the answers in turn (sync or async), recording each question."""

    def __init__(self, *answers: Any, is_async: bool = True) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, Any]] = []
        self.is_async = is_async

    def __call__(self, name: str, args: Any) -> Any:
        self.asked.append((name, args))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if not self.is_async:
            return answer

        async def later() -> Any:
            return answer

        return later()


def hook_for(policy: ApprovalPolicy, asker: Answers, *tools: Tool):
    return approval_hook(policy, Toolkit().register(*tools), asker)


def denied(result: dict[str, Any] | None) -> str | None:
    """What the model is told instead of the tool running; None when it runs."""
    if result is None:
        return None
    assert isinstance(result["result"], ToolResult) and result["result"].is_error
    return result["result"].output


# ----------------------------------------------------------------------------- the defaults


@pytest.mark.parametrize(
    ("subject", "decision"),
    [
        (tool("write_file", "builtin"), "ask"),
        (tool("edit_file", "builtin"), "ask"),
        (BASH, "ask"),
        (tool("lookup", "mcp:docs"), "ask"),
        (tool("lookup", "mcp"), "ask"),
        (tool("read_file", "builtin"), "allow"),
        (tool("grep", "builtin"), "allow"),
        (tool("fetch_url", "builtin"), "allow"),
        (tool("skill", "skills"), "allow"),
        (tool("write_file"), "allow"),  # a Python function of that name is not the built-in
        (None, "allow"),
    ],
)
def test_the_default_asks_before_changing_things_and_before_any_mcp_tool(subject, decision):
    assert ApprovalPolicy().default_for(subject) == decision


def test_tool_rules_are_case_sensitive_globs():
    policy = ApprovalPolicy({"[rw]*_file": "deny", "Bash": "allow"})
    assert policy.rule_for(tool("read_file", "builtin")) == "deny"
    assert policy.rule_for(tool("write_file", "builtin")) == "deny"
    assert policy.rule_for(tool("edit_file", "builtin")) == "ask"  # no rule: the default
    assert policy.rule_for(BASH) == "ask"  # "Bash" is not "bash"


def test_a_tool_the_toolkit_does_not_know_is_judged_by_name_or_allowed():
    policy = ApprovalPolicy({"drop_*": "deny"})
    assert policy.decide(None, "drop_table", {}) == "deny"
    assert policy.decide(None, "anything_else", {}) == "allow"  # it fails on its own


@pytest.mark.parametrize("decision", [None, "", "ALLOW", "yes", "always", 1])
def test_a_decision_that_is_not_one_of_the_three_is_refused(decision):
    with pytest.raises(ValueError, match='use "allow", "ask" or "deny"'):
        ApprovalPolicy({"bash": decision})
    with pytest.raises(ValueError, match="approval rule for command 'ls'"):
        ApprovalPolicy(commands={"ls": decision})


# ----------------------------------------------------------------------------- command rules


@pytest.mark.parametrize(
    ("bash_rule", "command", "decision"),
    [
        (None, "ls -la", "allow"),  # a plain command the allow rule covers
        ("deny", "ls -la", "allow"),  # the command rule is the more specific one
        ("deny", "ls; ls", "deny"),  # chained: the command rules say nothing, bash's rule does
        ("allow", "ls; ls", "allow"),
        (None, "ls; ls", "ask"),
        ("allow", "cat x", "allow"),  # no command rule matches: bash's rule
        (None, "cat x", "ask"),
        ("allow", "rm -rf x", "deny"),  # a deny command rule beats an allowed bash
        ("allow", "git log", "ask"),  # an "ask" command rule beats an allowed bash
        ("allow", "ls; git log", "ask"),
        ("allow", "ls 'unclosed", "ask"),  # what cannot be parsed asks
    ],
)
def test_command_rules_and_the_bash_rule_in_combination(bash_rule, command, decision):
    rules = {"bash": bash_rule} if bash_rule else {}
    policy = ApprovalPolicy(rules, {"ls *": "allow", "rm *": "deny", "git log*": "ask"})
    assert policy.decide(BASH, "bash", {"command": command}) == decision


# Shell syntax nested in quotes, where shlex and bash read a command differently: a deny
# rule then matches its words anywhere in the line, so even an allowed bash never runs it.
@pytest.mark.parametrize(
    "command",
    [
        'echo "$(echo "(" ; rm x)"',  # double quotes inside a quoted substitution
        'echo "$(case a in a) rm x;; esac)"',  # a case pattern's ")" inside a substitution
        "eval " + "'eval " * 10 + "rm x" + "'" * 10,  # nested deeper than the parse follows
        'bash -c "bash -c \'sh -c \\"git -c a=b push\\"\'"',
        "echo 'rm x",  # cannot be parsed at all
    ],
)
def test_a_command_the_parse_may_misread_is_denied_when_a_denied_program_is_in_it(command):
    policy = ApprovalPolicy({"bash": "allow"}, {"rm *": "deny", "git push*": "deny"})
    assert policy.decide(BASH, "bash", {"command": command}) == "deny"


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        ("echo rm x", "allow"),  # nothing nested: the parse is sure, `rm` is only an argument
        ('echo "$(date)" rm', None),  # nested, but not `rm x`: the rules say nothing
        ('echo "$(git status)" push', "deny"),  # only echo runs, but the fallback errs toward
    ],
)  # the rule: `git` ... `push` is in the line
def test_the_fallback_looks_for_the_rule_words_in_order(command, decision):
    policy = ApprovalPolicy(commands={"rm x": "deny", "git push*": "deny", "echo *": "allow"})
    assert policy.command_rule(command) == decision


@pytest.mark.parametrize("args", [{}, {"command": ""}, "rm -rf x", None, ["rm", "x"]])
def test_bash_arguments_without_a_command_string_fall_to_the_bash_rule(args):
    policy = ApprovalPolicy({"bash": "allow"}, {"rm *": "deny"})
    assert policy.decide(BASH, "bash", args) == "allow"


def test_command_rules_are_for_bash_only():
    policy = ApprovalPolicy(commands={"rm *": "deny"})
    shell = tool("shell")
    assert policy.decide(shell, "shell", {"command": "rm -rf x"}) == "allow"


# ----------------------------------------------------------------------------- the hook


@pytest.mark.parametrize(
    ("policy", "name", "args", "told"),
    [
        (
            ApprovalPolicy(commands={"rm *": "deny", "ls *": "allow"}),
            "bash",
            {"command": "rm -rf build"},
            'denied by the rule "rm *" = "deny" in [approval.commands]: rm -rf build',
        ),
        (
            ApprovalPolicy(commands={"git push*": "deny"}),
            "bash",  # a parse that may be wrong
            {"command": 'echo "$(echo "(" ; git push -f)"'},
            'denied by the rule "git push*" = "deny" in [approval.commands]: '
            'echo "$(echo "(" ; git push -f)"',
        ),
        (
            ApprovalPolicy({"bash": "deny", "b*": "allow"}),
            "bash",
            {"command": "ls"},
            'denied by the rule "bash" = "deny" in [approval]: bash',
        ),
        (
            ApprovalPolicy({"bash": "deny"}, sandboxed=False),
            "bash",
            {"command": "ls"},
            'denied by the rule "bash" = "deny" in [approval]: bash',
        ),
        (
            ApprovalPolicy({"*_file": "deny"}),
            "write_file",
            {"path": "x", "content": ""},
            'denied by the rule "*_file" = "deny" in [approval]: write_file',
        ),
        (
            ApprovalPolicy({"drop_*": "deny"}),
            "drop_table",
            {},  # a tool the toolkit lacks
            'denied by the rule "drop_*" = "deny" in [approval]: drop_table',
        ),
    ],
)
async def test_a_refusal_names_the_rule_that_refused_and_what_it_refused(policy, name, args, told):
    asker = Answers()
    hook = hook_for(policy, asker, BASH, tool("write_file", "builtin"))
    assert denied(await hook({"name": name, "args": args})) == told
    assert asker.asked == []


@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
async def test_allow_and_deny_never_ask(is_async):
    asker = Answers(is_async=is_async)
    hook = hook_for(
        ApprovalPolicy({"safe": "allow", "risky": "deny"}), asker, tool("safe"), tool("risky")
    )
    assert denied(await hook({"name": "safe", "args": {}})) is None
    assert denied(await hook({"name": "risky", "args": {}})) == (
        'denied by the rule "risky" = "deny" in [approval]: risky'
    )
    assert asker.asked == []


@pytest.mark.parametrize("is_async", [True, False], ids=["async", "sync"])
@pytest.mark.parametrize(
    ("answer", "told"),
    [
        ("yes", None),
        ("always", None),
        ("always-wider", None),
        ("no", DENIED_BY_USER),
        ("y", DENIED_BY_USER),
        ("YES", DENIED_BY_USER),
        ("yes ", DENIED_BY_USER),
        ("", DENIED_BY_USER),
        (None, DENIED_BY_USER),
        (True, DENIED_BY_USER),
    ],
)
async def test_only_yes_and_always_let_an_asked_call_run(is_async, answer, told):
    asker = Answers(answer, is_async=is_async)
    hook = hook_for(ApprovalPolicy({"touch": "ask"}), asker, tool("touch"))
    assert denied(await hook({"name": "touch", "args": {"path": "x"}})) == told
    assert asker.asked == [("touch", {"path": "x"})]


async def test_yes_is_for_one_call_and_always_for_the_tool_whatever_its_arguments():
    asker = Answers("yes", "always")
    hook = hook_for(ApprovalPolicy({"touch": "ask"}), asker, tool("touch"))
    for path in ("a", "a", "b", "c"):
        assert denied(await hook({"name": "touch", "args": {"path": path}})) is None
    assert [args["path"] for _, args in asker.asked] == ["a", "a"]


async def test_always_for_bash_covers_that_exact_command_only():
    asker = Answers("always", "no", "no")
    hook = hook_for(ApprovalPolicy(), asker, BASH)
    runs = [
        denied(await hook({"name": "bash", "args": {"command": c}}))
        for c in ("make", "make", "make test", "make ")
    ]
    assert runs == [None, None, DENIED_BY_USER, DENIED_BY_USER]
    assert [args["command"] for _, args in asker.asked] == ["make", "make test", "make "]


async def test_the_wider_always_for_bash_covers_plain_commands_of_that_program_only():
    asker = Answers(ALWAYS_WIDER, "no", "no", "no")
    hook = hook_for(ApprovalPolicy(), asker, BASH)
    commands = ("make", "make test", "make; rm -rf x", "make && rm x", "maker", "make test")
    runs = [denied(await hook({"name": "bash", "args": {"command": c}})) for c in commands]
    assert runs == [None, None, DENIED_BY_USER, DENIED_BY_USER, DENIED_BY_USER, None]


def test_the_scopes_of_always_say_what_they_cover():
    assert [(s.answer, s.covers) for s in always_scopes("bash", {"command": "git log"})] == [
        (ALWAYS, "this command"),
        (ALWAYS_WIDER, "every plain git command (nothing chained)"),
    ]
    # a chain, or an option that runs code, has no wider scope: only this command
    for command in ("git log; ls", "git -c core.pager=x log", "./run.sh"):
        assert [s.answer for s in always_scopes("bash", {"command": command})] == [ALWAYS]
    assert [s.covers for s in always_scopes("write_file", {"path": "a.txt"})] == [
        "write_file of a.txt",
        "every write_file in this workspace",
    ]
    assert [s.covers for s in always_scopes("fetch", {"url": "x"})] == ["every fetch call"]


async def test_always_for_a_file_write_covers_that_file_and_the_wider_one_every_file(tmp_path):
    from toolnexus.tools.workspace import Workspace

    toolkit = Toolkit()
    toolkit.use_builtins(["write_file"], Workspace(tmp_path))
    asker = Answers(ALWAYS, "no", ALWAYS_WIDER)
    hook = approval_hook(ApprovalPolicy(), toolkit, asker)
    paths = ("a.txt", f"{tmp_path}/a.txt", "./a.txt", "b.txt", "c.txt", "d.txt", "a.txt")
    runs = [denied(await hook({"name": "write_file", "args": {"path": p}})) for p in paths]
    assert runs == [None, None, None, DENIED_BY_USER, None, None, None]
    assert [args["path"] for _, args in asker.asked] == ["a.txt", "b.txt", "c.txt"]


async def test_always_for_one_bash_command_never_opens_a_denied_one():
    asker = Answers("always")
    hook = hook_for(ApprovalPolicy(commands={"rm *": "deny"}), asker, BASH)
    assert denied(await hook({"name": "bash", "args": {"command": "echo hi"}})) is None
    assert denied(await hook({"name": "bash", "args": {"command": "echo hi; rm -rf x"}})) == (
        'denied by the rule "rm *" = "deny" in [approval.commands]: echo hi; rm -rf x'
    )
    assert len(asker.asked) == 1


async def test_what_always_allowed_is_remembered_by_that_hook_only():
    policy, touch = ApprovalPolicy({"touch": "ask"}), tool("touch")
    first, second = Answers("always"), Answers("no")
    await hook_for(policy, first, touch)({"name": "touch", "args": {}})
    assert denied(await hook_for(policy, second, touch)({"name": "touch", "args": {}})) == (
        DENIED_BY_USER
    )
    assert len(second.asked) == 1


async def test_an_asker_that_raises_reaches_the_caller_and_the_next_question_is_asked():
    asker = Answers(RuntimeError("the terminal went away"), "yes")
    hook = hook_for(ApprovalPolicy({"touch": "ask"}), asker, tool("touch"))
    with pytest.raises(RuntimeError, match="the terminal went away"):
        await hook({"name": "touch", "args": {}})
    assert denied(await hook({"name": "touch", "args": {}})) is None
    assert len(asker.asked) == 2


async def test_always_covers_the_identical_calls_already_waiting_for_their_turn():
    """A reply with the same call three times: they all reach the hook before the first
    question is answered, and "always" to it lets the other two run unasked."""
    asked: list[str] = []

    async def asker(name: str, args: Any) -> str:
        asked.append(args["command"])
        await asyncio.sleep(0)  # the person takes a moment: the other calls queue up
        return "always"

    hook = approval_hook(ApprovalPolicy(), Toolkit().register(BASH), asker)
    same = {"name": "bash", "args": {"command": "make test"}}
    outcomes = await asyncio.gather(*(hook(dict(same)) for _ in range(3)))
    assert [denied(outcome) for outcome in outcomes] == [None] * 3
    assert asked == ["make test"]


async def test_the_hook_says_which_calls_it_would_ask_about():
    asker = Answers(ALWAYS)
    hook = hook_for(
        ApprovalPolicy({"touch": "ask", "peek": "allow"}), asker, tool("touch"), tool("peek")
    )
    assert hook.asks("touch", {}) and not hook.asks("peek", {})
    await hook({"name": "touch", "args": {}})
    assert not hook.asks("touch", {})
