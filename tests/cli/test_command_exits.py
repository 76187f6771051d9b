"""`ask --json` and `--events` say how each command a call ran ended: its `exit_code`, or
the `signal` that killed it (a program reading them need not parse the tool's text)."""

from __future__ import annotations

import json

from tests.support import kernel
from tests.support.cli_helpers import Result, model_calls, tool_results

pytestmark = kernel.landlock
CALLS = [("bash", {"command": "exit 3"}), ("bash", {"command": "kill -TERM $$"})]


def ask(cli, stub, *args: str) -> Result:
    """`ask --builtins --yes ARGS go` in a workspace, the model making CALLS."""
    work = cli.root / "work"
    work.mkdir()
    model_calls(stub, CALLS, "done")
    result = cli.call("ask", "--builtins", "--yes", "--root", str(work), *args, "go")
    assert result.code == 0, result
    return result


def test_ask_json_lists_each_commands_exit_code_or_signal(cli, stub):
    [line] = ask(cli, stub, "--json").stdout.splitlines()
    exits = json.loads(line)["exits"]
    assert [{k: v for k, v in e.items() if k != "call"} for e in exits] == [
        {"exit_code": 3},
        {"signal": "SIGTERM"},
    ]
    assert all(e["call"] for e in exits)


def test_ask_events_carry_them_on_each_tool_result(cli, stub):
    events = [json.loads(line) for line in ask(cli, stub, "--events").stdout.splitlines()]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r.get("exit_code"), r.get("signal")) for r in results] == [
        (3, None),
        (None, "SIGTERM"),
    ]


def test_ask_verbose_tags_each_result_with_how_its_command_ended(cli, stub):
    """`ask -v` in a pipe: the tool lines on stderr read `[exit 3]` and `[killed by
    SIGTERM]`, not `[result]`."""
    result = ask(cli, stub, "-v")
    assert "[exit 3] exit code 3" in result.stderr, result.stderr
    assert "[killed by SIGTERM] killed by SIGTERM" in result.stderr, result.stderr
    assert "[result]" not in result.stderr


def test_a_time_limit_of_zero_is_no_limit_in_particular(cli, stub):
    """Seen with a small model on llama.cpp: it wrote `{"command": "...", "cwd": "",
    "timeout": 0}` for "no folder, no limit in particular", and the command was killed at
    once ("killed after 0 s (timeout)"). A limit of 0 (or below) now means the default."""
    work = cli.root / "work"
    work.mkdir()
    model_calls(stub, [("bash", {"command": "echo ran-$((6*7))", "cwd": "", "timeout": 0})])
    result = cli.call("ask", "--builtins", "--yes", "--root", str(work), "go")
    assert result.code == 0, result
    posted = [r for r in stub.requests if r.method == "POST"]
    assert tool_results(posted[1]) == ["exit code 0\nran-42\n"]
