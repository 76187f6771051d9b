"""Hooks, as Claude Code runs them, against the stub model: the hook script of a
repository set up for Claude Code (tests/support/project_repo.py, used unchanged) blocks a
write with exit 2 and its stderr reaches the model; a hook gets the event in Claude's shape
on stdin; a PostToolUse formatter's change is journaled with the call, so a rewind undoes
both; a failing hook is one line; a hook leaves no process behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support import cli_helpers, kernel
from tests.support.cli_helpers import DEFAULT_ANSWER, model_calls, tool_results, write_files
from tests.support.project_repo import claude_repository
from tests.support.waiting import alive, pid_in, wait_until

cli, stub = cli_helpers.cli, cli_helpers.stub

RECORDER = """\
import json, os, stat, sys
event = json.load(sys.stdin)
event["transcript_mode"] = oct(stat.S_IMODE(os.stat(event["transcript_path"]).st_mode))
event["transcript"] = open(event["transcript_path"]).read()
with open(sys.argv[1], "a") as out:
    out.write(json.dumps(event) + "\\n")
"""

FORMATTER = """\
import json, sys
path = json.load(sys.stdin)["tool_input"]["file_path"]
text = open(path).read()
open(path, "w").write(text.upper())
"""


def hook_config(cli, *hooks: str) -> None:
    cli.write_config("".join(f"[[hooks]]\n{hook}\n" for hook in hooks))


def ask(cli, *args: str):
    return cli.call("ask", "--builtins", "--yes", *args, "go")


def test_a_claude_code_hook_blocks_a_write_and_the_model_reads_why(cli, stub):
    """Repro: in a repository whose .claude/settings.json runs a PreToolUse hook on
    Edit|Write that exits 2 for *.lock files, trust it and let the model write yarn.lock:
    the file is not written and the model reads the hook's stderr; notes.txt is written."""
    repo = claude_repository(cli)
    assert cli.call("trust").code == 0
    model_calls(
        stub,
        [
            ("write_file", {"path": "yarn.lock", "content": "# lock\n"}),
            ("write_file", {"path": "notes.txt", "content": "fine\n"}),
        ],
    )
    r = ask(cli, "--id", "t-1")
    assert r.code == 0, r
    blocked, written = tool_results(stub.requests[-1])
    assert blocked == (
        f"Error: blocked by a PreToolUse hook: {repo}/yarn.lock is generated: run the package "
        "manager instead"
    )
    assert not (repo / "yarn.lock").exists()
    assert (repo / "notes.txt").read_text() == "fine\n" and "blocked" not in written


def test_a_hook_gets_the_event_as_claude_code_gives_it(cli, stub, tmp_path):
    """Repro: a [[hooks]] PreToolUse hook with matcher "Edit" records its stdin: the tool is
    named Edit with file_path, old_string and new_string, with the thread as session_id
    and a 0600 JSONL export of the thread as transcript_path."""
    repo = cli.in_project()
    (repo / "a.txt").write_text("one\n")
    events = tmp_path / "events.jsonl"
    write_files(tmp_path, {"recorder.py": RECORDER})
    hook_config(
        cli,
        f'event = "PreToolUse"\nmatcher = "Edit"\n'
        f'command = "{sys.executable} {tmp_path}/recorder.py {events}"',
    )
    assert cli.call("ask", "hi").code == 0  # a first turn, for the transcript
    model_calls(stub, [("edit_file", {"path": "a.txt", "old": "one", "new": "two"})])
    r = ask(cli, "-c")
    assert r.code == 0, r
    [event] = [json.loads(line) for line in events.read_text().splitlines()]
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "Edit"
    assert event["tool_input"] == {
        "file_path": f"{repo}/a.txt",
        "old_string": "one",
        "new_string": "two",
    }
    assert event["cwd"] == str(repo) and event["session_id"]
    assert event["transcript_mode"] == "0o600"
    said = [json.loads(line) for line in event["transcript"].splitlines()]
    assert {"role": "user", "content": "hi"} in said
    assert not Path(event["transcript_path"]).exists()  # gone once the hook ran
    assert (repo / "a.txt").read_text() == "two\n"


def test_a_formatter_hook_is_journaled_with_the_write_and_rewind_undoes_both(cli, stub, tmp_path):
    """Repro: a PostToolUse hook on Write that rewrites the file (a formatter); the model
    writes notes.txt; the file holds the formatted text; `threads rewind ID 1` puts back
    what was there before the turn (without the hook's change in the journal, the rewind
    would refuse: the file would not be what the turn left)."""
    repo = cli.in_project()
    (repo / "notes.txt").write_text("old\n")
    write_files(tmp_path, {"fmt.py": FORMATTER})
    hook_config(
        cli,
        f'event = "PostToolUse"\nmatcher = "Write"\ncommand = "{sys.executable} {tmp_path}/fmt.py"',
    )
    model_calls(stub, [("write_file", {"path": "notes.txt", "content": "hello\n"})])
    r = ask(cli, "--id", "t-2")
    assert r.code == 0, r
    assert (repo / "notes.txt").read_text() == "HELLO\n"
    rewound = cli.call("threads", "rewind", "t-2", "1")
    assert rewound.code == 0, rewound
    assert (repo / "notes.txt").read_text() == "old\n"


def test_a_failing_hook_is_one_line_and_the_call_runs(cli, stub):
    """Repro: a PreToolUse hook that exits 1: stderr says so in one line, the write runs."""
    repo = cli.in_project()
    hook_config(cli, 'event = "PreToolUse"\ncommand = "echo broken >&2; exit 1"')
    model_calls(stub, [("write_file", {"path": "a.txt", "content": "x\n"})])
    r = ask(cli)
    assert r.code == 0, r
    assert r.stderr == "toolnexus: hook PreToolUse exited with status 1: broken\n"
    assert (repo / "a.txt").read_text() == "x\n"


def test_a_hook_leaves_no_process_behind(cli, stub, tmp_path):
    """Repro: a hook that starts a background `sleep` and exits: the sleep is ended with it."""
    cli.in_project()
    pid_file = tmp_path / "pid"
    hook_config(cli, f'event = "PreToolUse"\ncommand = "sleep 300 & echo $! > {pid_file}"')
    model_calls(stub, [("write_file", {"path": "a.txt", "content": "x\n"})])
    assert ask(cli).code == 0
    pid = wait_until(lambda: pid_in(pid_file), "the hook's pid")
    wait_until(lambda: not alive(pid), "the hook's background sleep to end")


def json_hook(cli, tmp_path, event: str, matcher: str, answer: dict) -> None:
    """A hook that answers `answer` as JSON on stdout."""
    write_files(tmp_path, {"answer.json": json.dumps(answer)})
    hook_config(
        cli, f'event = "{event}"\nmatcher = "{matcher}"\ncommand = "cat {tmp_path}/answer.json"'
    )


def test_a_hook_that_denies_in_json_blocks_with_its_reason(cli, stub, tmp_path):
    """Repro: a PreToolUse hook printing {"hookSpecificOutput": {"permissionDecision":
    "deny", "permissionDecisionReason": ...}} for Bash: the command does not run, even with
    --yes, and the model reads the reason."""
    repo = cli.in_project()
    json_hook(
        cli,
        tmp_path,
        "PreToolUse",
        "Bash",
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "no shell on Fridays",
            }
        },
    )
    model_calls(stub, [("bash", {"command": "touch made.txt"})])
    assert ask(cli).code == 0
    assert tool_results(stub.requests[-1]) == [
        "Error: blocked by a PreToolUse hook: no shell on Fridays"
    ]
    assert not (repo / "made.txt").exists()


def test_a_hook_can_change_a_calls_input(cli, stub, tmp_path):
    """Repro: a PreToolUse hook on Write answering updatedInput with another content: the
    file gets the hook's content (Claude's field names turned back into ours)."""
    repo = cli.in_project()
    json_hook(
        cli,
        tmp_path,
        "PreToolUse",
        "Write",
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "updatedInput": {"file_path": f"{repo}/a.txt", "content": "from the hook\n"},
            }
        },
    )
    model_calls(stub, [("write_file", {"path": "a.txt", "content": "from the model\n"})])
    assert ask(cli).code == 0
    assert (repo / "a.txt").read_text() == "from the hook\n"


def test_an_ask_from_a_hook_holds_where_the_rules_would_allow(cli, stub, tmp_path):
    """Repro: a rule allowing write_file and a PreToolUse hook answering "ask": with nobody
    to ask (a pipe, no --yes), the write is declined."""
    repo = cli.in_project()
    json_hook(
        cli,
        tmp_path,
        "PreToolUse",
        "Write",
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}},
    )
    cli.write_config(cli.config_file.read_text() + '[approval]\nwrite_file = "allow"\n')
    model_calls(stub, [("write_file", {"path": "a.txt", "content": "x\n"})])
    assert cli.call("ask", "--builtins", "go").code == 0
    assert tool_results(stub.requests[-1]) == ["Error: declined by the person: write_file"]
    assert not (repo / "a.txt").exists()


def test_user_prompt_submit_adds_context_or_blocks(cli, stub, tmp_path):
    """Repro: a UserPromptSubmit hook printing text: the model gets it after the prompt. A
    hook exiting 2: the prompt is not sent, and the person reads why."""
    cli.in_project()
    hook_config(cli, 'event = "UserPromptSubmit"\ncommand = "echo the build is red"')
    assert cli.call("ask", "hi").code == 0
    assert stub.requests[-1].json["messages"][-1]["content"] == "hi\n\nthe build is red"
    hook_config(cli, 'event = "UserPromptSubmit"\ncommand = "echo no secrets here >&2; exit 2"')
    sent = len(stub.requests)
    r = cli.call("ask", "hi")
    assert r.code != 0 and len(stub.requests) == sent
    assert "blocked by a UserPromptSubmit hook: no secrets here" in r.stderr


@kernel.landlock
def test_an_allow_from_a_hook_skips_the_question_only_inside_the_sandbox(cli, stub, tmp_path):
    """Repro: a PreToolUse hook answering "allow" for every tool, in a pipe without --yes
    (nobody to ask): a sandboxed bash command runs, while write_file (which does not run
    in the sandbox) is still refused for want of a person's yes."""
    repo = cli.in_project()
    json_hook(
        cli,
        tmp_path,
        "PreToolUse",
        "*",
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
    )
    cli.write_config(cli.config_file.read_text() + '[approval]\nbash = "ask"\nwrite_file = "ask"\n')
    model_calls(
        stub,
        [
            ("bash", {"command": "echo ran"}),
            ("write_file", {"path": "a.txt", "content": "x\n"}),
        ],
    )
    r = cli.call("ask", "--builtins", "go")
    assert r.code == 0, r
    ran, refused = tool_results(stub.requests[-1])
    assert ran.startswith("exit code 0\nran"), ran
    assert not (repo / "a.txt").exists() and refused == "Error: not approved: nobody to ask"


def test_session_start_context_goes_with_the_first_question_and_stop_runs_after(
    cli, stub, tmp_path
):
    """Repro: a SessionStart hook printing text and a Stop hook recording its event: the
    first question carries the text, and the Stop hook ran once the answer was in."""
    cli.in_project()
    events = tmp_path / "events.jsonl"
    write_files(tmp_path, {"recorder.py": RECORDER})
    hook_config(
        cli,
        'event = "SessionStart"\ncommand = "echo on branch main"',
        f'event = "Stop"\ncommand = "{sys.executable} {tmp_path}/recorder.py {events}"',
    )
    assert cli.call("ask", "hi").code == 0
    assert stub.requests[-1].json["messages"][-1]["content"] == "hi\n\non branch main"
    [stop] = [json.loads(line) for line in events.read_text().splitlines()]
    assert stop["hook_event_name"] == "Stop" and stop["stop_hook_active"] is False
    said = [json.loads(line) for line in stop["transcript"].splitlines()]
    assert said[-1] == {"role": "assistant", "content": DEFAULT_ANSWER}
