"""What a running tool prints, as `tool_output` events while it runs (the chat streams a
command's last lines from them), and kept when the run is stopped before the tool ends (the
model reads what it printed and a line saying it was cut) or the tool's time limit stops it.

The commands run in the sandbox, where the workspace is an overlay: a file the test makes
there would not be seen. They wait for a file in a folder the sandbox may read, made by
the test once it has seen the first line.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted import calling, scripted_client
from tests.support.stream_events import of_type
from tests.support.waiting import WAIT_S
from toolnexus import RunCancelled, ToolContext, Toolkit, create_toolkit, define_tool, suspend
from toolnexus.tools.sandbox import SandboxPolicy
from toolnexus.tools.workspace import Workspace


@pytest.fixture
def signals(tmp_path: Path) -> Path:
    folder = tmp_path / "signals"
    folder.mkdir()
    return folder


@pytest.fixture
async def bash(tmp_path: Path, signals: Path):
    work = tmp_path / "work"
    work.mkdir()
    workspace = Workspace(work, sandbox=SandboxPolicy(read=(str(signals),)))
    toolkit = await create_toolkit(builtins=["bash"], workspace=workspace)
    yield toolkit
    await toolkit.close()


def first_then_waits(go: Path) -> str:
    """Prints "first line", waits (up to a minute) for `go`, then prints "second line"."""
    return (
        f"echo 'first line'; for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done; "
        "echo 'second line'"
    )


def printed(events: list[dict]) -> str:
    return "".join(e["text"] for e in of_type(events, "tool_output"))


async def test_a_command_s_output_comes_as_events_while_it_runs(scripted, bash, signals):
    go = signals / "go"
    scripted.add(
        calling(("bash", {"command": first_then_waits(go)})),
        "ok",
    )
    events: list[dict] = []
    async with scripted_client(scripted) as client:
        async for event in client.stream("run it", bash):
            events.append(event)
            if not go.exists() and "first line" in printed(events):
                assert "second" not in printed(events)
                go.touch()  # the command goes on only now: this came while it ran
    assert go.exists(), "no output came while the command ran"
    kinds = [e["type"] for e in events if e["type"].startswith("tool_")]
    assert kinds[0] == "tool_call" and kinds[-1] == "tool_result"
    assert set(kinds[1:-1]) == {"tool_output"}
    assert {(e["id"], e["name"]) for e in of_type(events, "tool_output")} == {("call_1", "bash")}
    assert printed(events) == "first line\nsecond line\n"
    assert of_type(events, "tool_result")[0]["output"] == "exit code 0\nfirst line\nsecond line\n"


async def test_a_command_stopped_by_a_cancel_leaves_what_it_printed_and_says_it_was_cut(
    scripted, bash, signals
):
    scripted.add(calling(("bash", {"command": first_then_waits(signals / "go")})))
    cancel = asyncio.Event()
    events: list[dict] = []
    async with scripted_client(scripted) as client:
        with pytest.raises(RunCancelled) as stopped:
            async for event in client.stream("run it", bash, cancel=cancel):
                events.append(event)
                if "first line" in printed(events):
                    cancel.set()
    told = stopped.value.result.messages[-1]
    assert told["role"] == "tool" and told["is_error"] is True
    assert told["content"] == (
        "first line\n[cut: the user stopped the run before this tool finished; above is what "
        "it printed until then]"
    )


async def test_a_python_tool_prints_from_its_thread_and_a_stop_keeps_it(scripted):
    """A sync tool passes what it prints on through its ToolContext; stopped, it has the
    printed text as its result (capped as results are)."""
    release = asyncio.Event()
    loop = asyncio.get_running_loop()

    def crawl(ctx: ToolContext) -> str:
        """Crawl, saying what it found."""
        ctx.output("page 1\n")
        ctx.output("page 2\n")
        asyncio.run_coroutine_threadsafe(release.wait(), loop).result()
        return "never"

    toolkit = Toolkit().register(define_tool(crawl))
    scripted.add(calling(("crawl", {})))
    cancel = asyncio.Event()
    events: list[dict] = []
    async with scripted_client(scripted) as client:
        with pytest.raises(RunCancelled) as stopped:
            async for event in client.stream("crawl", toolkit, cancel=cancel):
                events.append(event)
                if printed(events) == "page 1\npage 2\n":
                    cancel.set()
                    release.set()
    assert stopped.value.result.messages[-1]["content"].startswith("page 1\npage 2\n[cut: ")


async def test_a_tool_stopped_before_it_printed_anything_says_so_as_before(scripted):
    started = asyncio.Event()

    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    toolkit = Toolkit().register(define_tool(wait))
    scripted.add(calling(("wait", {})))
    cancel = asyncio.Event()

    async def stop_once_it_runs() -> None:
        await started.wait()
        cancel.set()

    async with scripted_client(scripted) as client:
        stopping = asyncio.create_task(stop_once_it_runs())
        with pytest.raises(RunCancelled) as stopped:
            async for _ in client.stream("wait", toolkit, cancel=cancel):
                pass
        await stopping
    assert stopped.value.result.messages[-1]["content"] == (
        "error: the run was interrupted before this tool finished"
    )


async def test_a_tool_stopped_by_its_time_limit_leaves_what_it_printed():
    async def crawl(ctx: ToolContext) -> str:
        """Crawl for ever, saying what it found."""
        ctx.output("page 1\n")
        await asyncio.Event().wait()
        return "never"

    toolkit = Toolkit().register(define_tool(crawl, timeout=0.2))
    result = await toolkit.execute("crawl", {}, ToolContext(call_id="c1"))
    assert result.is_error
    assert result.output == (
        "error: tool 'crawl' timed out after 0.2 s; what it printed until then:\npage 1"
    )


async def test_a_call_run_again_with_a_person_s_answer_streams_its_output_too(scripted):
    """A call that asked a person (a command offered to run outside the sandbox, say) runs
    again once they said yes: what it prints then comes as it runs too."""
    seen = threading.Event()

    def step(ctx: ToolContext) -> Any:
        """Ask, then work, saying what it does."""
        if ctx.answer is None:
            return suspend("approval", "go on?")
        ctx.output("after the yes\n")
        assert seen.wait(WAIT_S), "the output did not come while the call ran"
        return "done"

    toolkit = Toolkit().register(define_tool(step))
    scripted.add(calling(("step", {})), "ok")
    events: list[dict] = []
    async with scripted_client(scripted, wait_for=lambda request: {"ok": True}) as client:
        async for event in client.stream("go", toolkit):
            events.append(event)
            if printed(events) == "after the yes\n":
                seen.set()
    kinds = [e["type"] for e in events if e["type"].startswith("tool_")]
    assert kinds == ["tool_call", "tool_output", "tool_result"]
    assert of_type(events, "tool_result")[0]["output"] == "done"
