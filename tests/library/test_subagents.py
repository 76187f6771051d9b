"""The task tool's engine (toolnexus.tools.subagents) on the scripted model: subagents
running at once ask their questions through the parent's approval one at a time, and
what their model calls counted is in the parent run's usage."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.scripted import calling, scripted_client, usage
from toolnexus import RunCancelled, create_toolkit
from toolnexus.testing import ModelRequest, ScriptedModel, ScriptedReply
from toolnexus.tools.approval import ApprovalPolicy, approval_hook
from toolnexus.tools.subagents import Agent, SubagentRun, Subagents

WRITER = Agent("writer", "Writes one file.", "You write files.", tools=("write_file",))


def test_subagents_at_once_ask_one_question_at_a_time_and_count_their_tokens(tmp_path):
    """Two subagents that each want to write a file run at once; their two questions
    never overlap, both files are written, and the run's usage holds their tokens."""

    def respond(request: ModelRequest) -> ScriptedReply:
        messages = request.messages
        if request.system != WRITER.prompt:  # the parent
            if messages[-1]["role"] == "tool":
                return ScriptedReply(text="both written", usage=usage(10, 1))
            calls = [("task", {"agent": "writer", "prompt": name}) for name in ("a.txt", "b.txt")]
            return ScriptedReply(tool_calls=calling(*calls).tool_calls, usage=usage(10, 1))
        if messages[-1]["role"] == "tool":
            return ScriptedReply(text="done", usage=usage(100, 20))
        name = request.last_text
        write = calling(("write_file", {"path": name, "content": name}))
        return ScriptedReply(tool_calls=write.tool_calls, usage=usage(100, 20))

    asked: list[str] = []
    at_once = 0
    most_at_once = 0

    async def ask(name: str, args: dict[str, str]) -> str:
        nonlocal at_once, most_at_once
        at_once += 1
        most_at_once = max(most_at_once, at_once)
        for _ in range(20):  # a person taking a while to answer
            await asyncio.sleep(0.001)
        asked.append(args["path"])
        at_once -= 1
        return "yes"

    async def main() -> tuple[int, dict[str, int]]:
        toolkit = await create_toolkit(builtins=["write_file"], workspace=tmp_path)
        hook = approval_hook(ApprovalPolicy(), toolkit, ask)
        model = ScriptedModel(respond=respond)
        client = scripted_client(model, hooks={"before_tool": hook}, retries=2)
        subagents = Subagents([WRITER], toolkit, lambda agent: client)
        toolkit.register(subagents.tool())
        result = await client.run("write a.txt and b.txt", toolkit)
        await client.aclose()
        subagent_requests = sum(1 for r in model.requests if r.system == "You write files.")
        return subagent_requests, dict(result.usage)

    requests, counted = asyncio.run(main())
    assert requests == 4
    assert sorted(asked) == ["a.txt", "b.txt"]
    assert most_at_once == 1, "two questions were on screen at once"
    assert (tmp_path / "a.txt").read_text() == "a.txt"
    assert (tmp_path / "b.txt").read_text() == "b.txt"
    assert counted["completion_tokens"] == 1 + 1 + 4 * 20
    assert counted["prompt_tokens"] == 10 + 10 + 4 * 100


def test_a_subagent_stopped_with_its_parent_run_keeps_its_transcript(tmp_path):
    """The parent run is cancelled (SIGTERM, a Ctrl-C outside the chat) while its subagent
    waits for the model: the subagent stops too, and what it got to is kept."""
    kept: list[SubagentRun] = []

    async def keep(run: SubagentRun) -> None:
        kept.append(run)

    def respond(request: ModelRequest) -> ScriptedReply:
        if request.system == WRITER.prompt:
            return ScriptedReply(text="never", delay_s=3600)  # a model that does not answer
        return calling(("task", {"agent": "writer", "prompt": "a.txt"}))

    async def main() -> None:
        toolkit = await create_toolkit(builtins=["write_file"], workspace=tmp_path)
        cancel = asyncio.Event()
        model = ScriptedModel(respond=respond)
        client = scripted_client(model, retries=2)
        toolkit.register(Subagents([WRITER], toolkit, lambda agent: client, keep=keep).tool())
        running = asyncio.ensure_future(client.run("write a.txt", toolkit, cancel=cancel))
        while len(model.requests) < 2:  # the subagent's call is made
            await asyncio.sleep(0.01)
        cancel.set()
        with pytest.raises(RunCancelled):
            await running
        await client.aclose()

    asyncio.run(main())
    assert len(kept) == 1
    assert kept[0].stopped
    assert kept[0].messages == [{"role": "user", "content": "a.txt"}]
