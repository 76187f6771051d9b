"""Subagents in `toolnexus chat --builtins`, in a real pseudo-terminal against the stub
endpoint: a Claude Code agent definition used unchanged becomes a choice of the `task`
tool; its subagent gets its own system prompt and only its tools, the parent model its
final answer; its tokens count in the footer and its transcript is kept with the thread
(`threads show`); two running at once stop at Ctrl-C, the turn going on with both marked
stopped, and a second Ctrl-C stops the turn.

The stub tells the two contexts apart by the system prompt a request carries.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.chat_session import Chat
from tests.support.cli_helpers import CLI, plain, tool_results, write_files
from tests.support.pty_screen import opener
from tests.support.stub_provider import Recorded, Reply, openai_stream

REVIEWER_PROMPT = "You are a careful code reviewer. Report bugs, nothing else."
# as Claude Code documents an agent file, with its tool names and model alias
REVIEWER = f"""---
name: reviewer
description: Reviews code for bugs; use after a change.
tools: Read, Grep, Glob
model: sonnet
---

{REVIEWER_PROMPT}
"""
INTERRUPTED = "(interrupted: the partial answer is kept)"


@pytest.fixture
def project(cli: CLI) -> Path:
    """A git repository with `.claude/agents/reviewer.md`; the chat starts in `src/`."""
    root = cli.in_project()
    (root / ".git").mkdir()
    write_files(root, {".claude/agents/reviewer.md": REVIEWER, "src/x.py": "print(1)\n"})
    cli.cwd = root / "src"
    return root


@pytest.fixture
def open_chat(cli: CLI, project: Path) -> Iterator[Callable[..., Chat]]:
    yield from opener(lambda *args: Chat(cli, *args, rows=40, cols=120, timeout=15.0))


def system_prompt(request: Recorded) -> str:
    messages = request.json["messages"]
    return messages[0]["content"] if messages[0]["role"] == "system" else ""


def is_subagent(request: Recorded) -> bool:
    return REVIEWER_PROMPT in system_prompt(request)


def task(prompt: str) -> tuple[str, dict[str, object]]:
    return ("task", {"agent": "reviewer", "prompt": prompt})


def test_a_claude_agent_definition_runs_as_a_subagent(stub, cli, open_chat):
    """Repro: in a repository with Claude Code's `.claude/agents/reviewer.md` (tools: Read,
    Grep, Glob), run `toolnexus chat --builtins` and ask for a review; the model calls
    `task` with agent "reviewer". The subagent's request carries the reviewer's prompt and
    read_file, grep and glob only; the model gets its answer; the footer counts the
    subagent's tokens; `toolnexus threads show ID` links the subagent's transcript."""
    parent: list[Recorded] = []
    child: list[Recorded] = []
    seen = threading.Event()  # the subagent's panel was seen with its call

    def handler(request: Recorded) -> Reply:
        if is_subagent(request):
            child.append(request)
            if len(child) == 1:
                return openai_stream(tool_calls=[("read_file", {"path": "x.py"})], usage=(50, 7))
            seen.wait(15)
            return openai_stream("No bugs in x.py.", usage=(60, 30))
        parent.append(request)
        if len(parent) == 1:
            return openai_stream(tool_calls=[task("review src/x.py")], usage=(20, 2))
        return openai_stream("The reviewer found nothing.", usage=(30, 1))

    stub.handler = handler
    chat = open_chat("--builtins")
    chat.send_line("review my change")
    chat.wait_text("↳ read_file: x.py")  # in the task call's panel while it runs
    assert "reviewer: review src/x.py" in chat.term.text()
    seen.set()
    chat.wait_text("The reviewer found nothing.")
    chat.wait(lambda: "completion tokens" in chat.term.text(), "the footer")

    sent = child[0].json
    assert system_prompt(child[0]).strip() == REVIEWER_PROMPT
    assert sorted(t["function"]["name"] for t in sent["tools"]) == ["glob", "grep", "read_file"]
    assert sent["messages"][-1] == {"role": "user", "content": "review src/x.py"}
    assert "print(1)" in tool_results(child[1])[0], "the subagent's read_file did not run"
    task_tool = next(t for t in parent[0].json["tools"] if t["function"]["name"] == "task")
    assert task_tool["function"]["parameters"]["properties"]["agent"]["enum"] == ["reviewer"]
    assert "reviewer: Reviews code for bugs" in task_tool["function"]["description"]
    assert tool_results(parent[1]) == ["No bugs in x.py."]
    assert not any(is_subagent(r) for r in parent)

    footer = next(line for line in chat.term.lines() if "completion tokens" in line)
    assert " 40 completion tokens " in f" {footer} ", footer  # 2 + 1 + the subagent's 7 + 30
    listed = json.loads(cli.run("threads", "list", "--json").stdout)
    assert len(listed) == 1, "the subagent's transcript is listed as a thread of its own"
    thread = listed[0]["id"]
    shown = plain(cli.run("threads", "show", thread).stdout)
    record = f"{thread}/task-call_1"
    assert f"↳ subagent transcript: `toolnexus threads show {record}`" in shown
    assert "The reviewer found nothing." in shown
    assert "print(1)" not in shown, "the subagent's transcript is inside the thread's"
    kept = plain(cli.run("threads", "show", record).stdout)
    assert REVIEWER_PROMPT not in kept  # the prompt is the agent's, not a message
    assert "review src/x.py" in kept and "read_file" in kept and "No bugs in x.py." in kept

    assert cli.run("threads", "rm", "--yes", thread).code == 0
    assert cli.run("threads", "show", record).code != 0, "its subagent's transcript was kept"


def test_ctrl_c_stops_the_running_subagents_and_the_turn_goes_on(stub, open_chat):
    """Repro: ask for two reviews at once; while both subagents wait for the model, press
    Ctrl-C: both stop, the model is told each was stopped and answers on; Ctrl-C again
    while it answers stops the turn."""
    parent: list[Recorded] = []

    def handler(request: Recorded) -> Reply:
        if is_subagent(request):
            return Reply.hang()  # in flight until stopped
        parent.append(request)
        if len(parent) == 1:
            return openai_stream(tool_calls=[task("review a.py"), task("review b.py")])
        if len(parent) == 2:
            return Reply.hang()
        return openai_stream(f"later answer {len(parent)}.")

    stub.handler = handler
    chat = open_chat("--builtins")
    chat.send_line("review both")
    assert stub.wait_for_requests(3, timeout=15), "the two subagents did not both start"
    chat.wait_text("running task, task")
    chat.interrupt()
    chat.wait_text("(subagents stopped; Ctrl-C again stops the answer)")
    chat.wait_text("[stopped: the user stopped this subagent", 2)  # each call's result
    assert stub.wait_for_requests(4, timeout=15), "the turn did not go on"
    results = tool_results(parent[1])
    assert len(results) == 2
    assert all("[stopped: the user stopped this subagent" in result for result in results)
    assert all(r.disconnected.wait(5) for r in stub.requests[1:3]), "a subagent still runs"

    chat.interrupt()
    chat.wait_text(INTERRUPTED)
    chat.wait_prompt()
    chat.send_line("still there?")
    chat.wait_text("later answer 3.")
