"""Tools in the `toolnexus` command: --functions files end to end, `toolnexus tools`, and
approval without a terminal (issue 7, acceptance points 1 and 3), as subprocesses against
the loopback stub."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import SUSPENDING_TOOLS, tool_results
from tests.support.stub_provider import LlamaCppLike, Recorded, Reply, StubProvider, openai_stream
from toolnexus._loop import UNREADABLE_ARGUMENTS_KEY
from toolnexus.tools.sandbox import support

FUNCTIONS = '''
import os


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _helper(x: int) -> int:
    return x


def untyped(x):
    return x
'''


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def calls_then_answer(stub: StubProvider, calls: list[tuple[str, dict]], answer: str) -> None:
    """The first request asks for `calls`; every later one gets `answer`."""

    def handler(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=calls)
        return openai_stream(answer)

    stub.handler = handler


def tool_names(request: Recorded) -> list[str]:
    return [t["function"]["name"] for t in request.json.get("tools", [])]


# ===================================================================== functions files


def test_a_functions_file_end_to_end_through_ask(cli, stub, tmp_path):
    path = write(tmp_path / "mytools.py", FUNCTIONS)
    calls_then_answer(stub, [("add", {"a": 2, "b": 40})], "The sum is 42.")

    result = cli.call("ask", "--functions", str(path), "what is 2 + 40?")

    assert result.code == 0, result
    assert result.stdout == "The sum is 42.\n"
    assert len(stub.requests) == 2
    assert tool_names(stub.requests[0]) == ["add"]  # not _helper, untyped or os
    # the public function left out is named, in one warning line
    assert result.stderr == (
        f"warning: {path}: untyped() has no type hints, so it is not a "
        "tool (annotate its parameters, or name it _untyped to keep it "
        "private)\n"
    )
    follow_up = stub.requests[1].json["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "tool"]
    assert follow_up[1]["tool_calls"][0]["function"]["name"] == "add"
    assert follow_up[2] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}


def test_functions_is_repeatable(cli, stub, tmp_path):
    one = write(tmp_path / "one.py", FUNCTIONS)
    two = write(tmp_path / "two.py", "def shout(text: str) -> str:\n    return text.upper()\n")
    calls_then_answer(stub, [("shout", {"text": "hey"})], "ok")

    result = cli.call("ask", "--functions", str(one), "--functions", str(two), "go")

    assert result.code == 0, result
    assert sorted(tool_names(stub.requests[0])) == ["add", "shout"]
    assert tool_results(stub.requests[1]) == ["HEY"]


def test_functions_in_the_config_are_relative_to_the_config_file(cli, stub):
    write(cli.config_dir / "tools" / "fns.py", FUNCTIONS)
    cli.write_config('functions = ["tools/fns.py"]\n')
    calls_then_answer(stub, [("add", {"a": 1, "b": 1})], "Two.")

    result = cli.call("ask", "1+1?")  # run from HOME, not from the config folder

    assert result.code == 0, result
    assert result.stdout == "Two.\n"
    assert tool_results(stub.requests[1]) == ["2"]


def test_a_broken_functions_file_is_a_usage_error_naming_it(cli, stub, tmp_path):
    broken = write(tmp_path / "broken_tools.py", "import no_such_module_xyz\n")

    for args in (["ask", "--functions", str(broken), "hi"], ["tools", "--functions", str(broken)]):
        result = cli.call(*args)
        assert result.code == 2, result
        assert str(broken) in result.stderr and "no_such_module_xyz" in result.stderr
        assert "Traceback" not in result.stderr
    assert stub.requests == []  # nothing was sent


def test_a_missing_functions_file_in_the_config_is_named(cli, stub):
    cli.write_config('functions = ["nope.py"]\n')
    result = cli.call("ask", "hi")
    assert result.code == 2, result
    assert str(cli.config_dir / "nope.py") in result.stderr
    assert stub.requests == []


# ===================================================================== toolnexus tools


def rows_by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in rows}


def test_tools_json_lists_source_status_and_approval(cli, tmp_path):
    cli.in_project()
    path = write(tmp_path / "mytools.py", FUNCTIONS)
    skills = write(
        tmp_path / "skills" / "pdf" / "SKILL.md",
        "---\nname: pdf\ndescription: PDF forms\n---\nSteps.\n",
    ).parent.parent

    result = cli.call(
        "tools", "--json", "--builtins", "--functions", str(path), "--skills", str(skills)
    )

    assert result.code == 0, result
    rows = rows_by_name(result.json)
    assert set(rows) == {
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "write_file",
        "edit_file",
        "bash",
        "fetch_url",
        "add",
        "skill",
    }
    summary = {name: (row["source"], row["status"], row["approval"]) for name, row in rows.items()}
    assert summary["read_file"] == ("builtin", "ok", "allow")
    assert summary["bash"] == ("builtin", "ok", "ask")
    assert summary["write_file"] == ("builtin", "ok", "ask")
    assert summary["edit_file"] == ("builtin", "ok", "ask")
    assert summary["add"] == ("python", "ok", "allow")
    assert summary["skill"] == ("skills", "ok", "allow")
    assert rows["add"]["description"] == "Add two numbers."


def test_tools_shows_the_config_rules(cli, tmp_path):
    cli.in_project()
    path = write(tmp_path / "mytools.py", FUNCTIONS)
    cli.write_config(
        f'functions = ["{path}"]\nbuiltins = ["read_file", "bash"]\n\n'
        '[approval]\n"add" = "deny"\n"read_*" = "ask"\n'
    )

    result = cli.call("tools", "--json")
    assert result.code == 0, result
    approval = {row["name"]: row["approval"] for row in result.json}
    assert approval == {"read_file": "ask", "bash": "ask", "add": "deny"}

    table = cli.call("tools")
    assert table.code == 0, table
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["TOOL", "SOURCE", "STATUS", "APPROVAL"]
    assert [line.split() for line in lines[1:]] == [
        ["read_file", "builtin", "ok", "ask"],
        ["bash", "builtin", "ok", "ask", "(sandbox)" if support().abi else "(no sandbox)"],
        ["add", "python", "ok", "deny"],
    ]


@pytest.mark.skipif(support().abi == 0, reason=f"no Landlock: {support().why_not}")
def test_tools_shows_the_approval_in_effect_with_yes_and_the_sandbox(cli):
    """Newcomer's repro: `toolnexus tools --builtins` says bash and write_file "ask", but
    `ask --yes` runs them without a word, in the sandbox; and with `--sandbox off` bash
    asks before every command, --yes or not. The list showed the config's rule, never
    what happens."""
    cli.in_project()

    def approvals(*flags: str) -> dict[str, tuple[str, str]]:
        result = cli.call("tools", "--json", "--builtins", *flags)
        assert result.code == 0, result
        return {row["name"]: (row["approval"], row["approval_note"]) for row in result.json}

    with_yes = approvals("--yes")
    assert {name: with_yes[name] for name in ("bash", "write_file", "read_file")} == {
        "bash": ("allow", "--yes, sandbox"),
        "write_file": ("allow", "--yes"),
        "read_file": ("allow", ""),
    }
    assert approvals()["bash"] == ("ask", "sandbox")
    assert approvals()["fetch_url"] == ("allow", "asks per new host")
    assert with_yes["fetch_url"] == ("allow", "asks per new host")  # --yes does not answer it
    unconfined = approvals("--yes", "--sandbox", "off")
    assert unconfined["bash"] == ("ask", "no sandbox")
    assert unconfined["edit_file"] == ("allow", "--yes")

    table = cli.call("tools", "--builtins", "--yes").stdout.splitlines()
    assert next(line for line in table if line.startswith("bash ")).endswith(
        " allow (--yes, sandbox)"
    )
    assert next(line for line in table if line.startswith("read_file ")).endswith(" allow")


def test_tools_without_any_says_how_to_add_some(cli):
    result = cli.call("tools")
    assert result.code == 0, result
    assert "no tools" in result.stdout and "--builtins" in result.stdout
    assert cli.call("tools", "--json").json == []


# ================================================================ approval in a pipe

BASH_CALL = [("bash", {"command": "echo approved-123"})]


def test_non_interactive_ask_denies_and_says_to_pass_yes(cli, stub):
    cli.in_project()
    calls_then_answer(stub, BASH_CALL, "I could not run it.")

    result = cli.call("ask", "--builtins", "run echo")

    assert result.code == 0, result
    assert result.stdout == "I could not run it.\n"
    assert tool_results(stub.requests[1]) == ["Error: not approved: nobody to ask"]
    denial = [line for line in result.stderr.splitlines() if "denied" in line]
    assert denial == [
        "toolnexus: denied bash: it needs approval and nobody can be asked "
        "here; pass --yes to allow it"
    ]


def test_yes_approves(cli, stub):
    cli.in_project()
    calls_then_answer(stub, BASH_CALL, "Done.")

    result = cli.call("ask", "--builtins", "--yes", "run echo")

    assert result.code == 0, result
    assert result.stdout == "Done.\n"
    assert tool_results(stub.requests[1]) == ["exit code 0\napproved-123\n"]
    assert "denied" not in result.stderr


def test_a_config_command_rule_allows_without_yes(cli, stub):
    cli.in_project()
    cli.write_config(
        'builtins = true\n\n[approval.commands]\n"echo *" = "allow"\n"rm *" = "deny"\n'
    )
    calls_then_answer(stub, [*BASH_CALL, ("bash", {"command": "rm -rf somewhere"})], "Done.")

    result = cli.call("ask", "run echo")

    assert result.code == 0, result
    assert tool_results(stub.requests[1]) == [
        "exit code 0\napproved-123\n",
        ('Error: denied by the rule "rm *" = "deny" in [approval.commands]: rm -rf somewhere'),
    ]
    assert "denied bash" not in result.stderr  # nobody needed asking


def test_an_allowed_command_does_not_carry_a_chained_one(cli, stub):
    cli.in_project()
    cli.write_config('builtins = true\n\n[approval.commands]\n"echo *" = "allow"\n')
    marker = cli.home / "pwned"
    calls_then_answer(stub, [("bash", {"command": f"echo hi; touch {marker}"})], "ok")

    result = cli.call("ask", "run echo")

    assert result.code == 0, result
    assert tool_results(stub.requests[1]) == ["Error: not approved: nobody to ask"]
    assert "pass --yes" in result.stderr
    assert not marker.exists()


def test_no_tools_offers_none(cli, stub, tmp_path):
    path = write(tmp_path / "mytools.py", FUNCTIONS)
    stub.handler = lambda rec: openai_stream("plain")
    result = cli.call("ask", "--builtins", "--functions", str(path), "--no-tools", "hi")
    assert result.code == 0, result
    assert tool_names(stub.requests[0]) == []


# ===================================================================== suspended tools


def test_without_a_terminal_a_suspended_tool_is_declined_and_the_model_told(cli, stub):
    calls_then_answer(stub, [("ask_name", {})], "I could not ask.")

    result = cli.call("ask", "--functions", str(SUSPENDING_TOOLS), "greet me")

    assert result.code == 0, result
    assert tool_results(stub.requests[1]) == [
        "Error: declined: what is your name? (not approved: nobody to ask)"
    ]
    assert "declined a tool's input (what is your name?): nobody can answer here" in result.stderr


def test_yes_answers_a_suspended_approval(cli, stub):
    calls_then_answer(stub, [("deploy", {"target": "prod"})], "Done.")

    result = cli.call("ask", "--functions", str(SUSPENDING_TOOLS), "--yes", "deploy")

    assert result.code == 0, result
    assert tool_results(stub.requests[1]) == ["deployed to prod"]


def test_a_duplicate_skill_is_one_plain_warning_line(cli, tmp_path):
    for folder, description in (("a", "ship it"), ("b", "again")):
        write(
            tmp_path / "skills" / folder / "SKILL.md",
            f"---\nname: deploy\ndescription: {description}\n---\nSteps.\n",
        )

    result = cli.call("tools", "--skills", str(tmp_path / "skills"))

    assert result.code == 0, result
    assert result.stderr.splitlines() == [
        f"warning: {tmp_path / 'skills/b/SKILL.md'}: skill 'deploy' is already defined by "
        f"{tmp_path / 'skills/a/SKILL.md'}; the first one wins"
    ]


def test_an_mcp_server_that_cannot_start_is_a_warning_and_the_answer_still_comes(
    cli, stub, tmp_path
):
    config = write(
        tmp_path / "mcp.json", '{"mcpServers": {"broken": {"command": "no-such-mcp-server-x"}}}'
    )
    stub.handler = lambda rec: openai_stream("Answered anyway.")

    result = cli.call("ask", "--mcp", str(config), "hi")

    assert result.code == 0, result
    assert result.stdout == "Answered anyway.\n"
    assert result.stderr.splitlines() == [
        "warning: MCP server broken failed: command not found: 'no-such-mcp-server-x'; its "
        "tools are unavailable ('toolnexus tools' shows every status)"
    ]


def test_a_run_that_never_stops_calling_tools_ends_with_a_note(cli, stub, tmp_path):
    path = write(tmp_path / "mytools.py", FUNCTIONS)
    stub.handler = lambda rec: openai_stream(tool_calls=[("add", {"a": 1, "b": 1})])

    result = cli.call("ask", "--functions", str(path), "loop forever")

    assert result.code == 0, result
    assert len(stub.requests) == 10  # max_turns
    assert result.stderr.splitlines()[1:] == [  # after the warning about untyped()
        "note: stopped after 10 model calls without a final answer (the tools kept being "
        "called); ask again to let it go on"
    ]


def test_max_turns_comes_from_the_config(cli, stub, tmp_path):
    path = write(tmp_path / "mytools.py", FUNCTIONS)
    cli.config_file.parent.mkdir(parents=True, exist_ok=True)
    cli.config_file.write_text("max_turns = 3\n")
    stub.handler = lambda rec: openai_stream(tool_calls=[("add", {"a": 1, "b": 1})])

    result = cli.call("ask", "--functions", str(path), "loop forever")

    assert result.code == 0, result
    assert len(stub.requests) == 3
    assert "stopped after 3 model calls" in result.stderr


def test_a_call_with_unreadable_arguments_does_not_break_the_thread(cli, stub, tmp_path):
    """Repro: llama.cpp serving a small model, `ask --functions tools.py --id T`; the model
    calls `add` with arguments cut short, `{"a": 1, `. llama.cpp parses the arguments of
    every tool call in the history, so the turn's next request, and every later turn on
    the thread, got HTTP 500 "Failed to parse tool call arguments as JSON" until /undo.
    Now the call is stored and sent back with `{}` as its arguments (the model's own text
    kept beside it in the thread), and its result tells the model they were invalid."""
    llama = LlamaCppLike(window=4096, answer="It is 3.")
    cut_short = '{"a": 1, '

    def handler(request: Recorded) -> Reply:
        if request.method == "POST" and len(stub.requests) == 1:
            return openai_stream(tool_calls=[("add", cut_short)])
        return llama(request)

    stub.handler = handler
    tools = write(tmp_path / "tools.py", FUNCTIONS)
    first = cli.call("ask", "--functions", str(tools), "--id", "T", "what is 1 + 2?")
    assert first.code == 0 and first.stdout == "It is 3.\n", first
    call = stub.requests[1].json["messages"][1]["tool_calls"][0]
    assert call["function"] == {"name": "add", "arguments": "{}"}
    [result] = tool_results(stub.requests[1])
    assert "the arguments for 'add' are not valid JSON" in result and cut_short in result
    assert "make it again with its arguments as one JSON object" in result
    stored = cli.thread("T")[1]
    assert stored[UNREADABLE_ARGUMENTS_KEY] == {"call_1": cut_short}

    second = cli.call("ask", "--functions", str(tools), "--id", "T", "and 2 + 3?")
    assert second.code == 0 and second.stdout == "It is 3.\n", second
    assert len(stub.requests) == 3
