"""Agent loop: one tool round trip per run, toolnexus beside the libraries users pick instead.

Every library does the same agent run against ONE loopback stub (tests/support/stub_provider.py in
its own process, so its CPU is never counted): the prompt goes out with an `add(a, b)` tool,
the stub asks for add(1234, 4321), the library runs the tool and sends its result back, and
the stub answers with text quoting that result ("The sum is 5555."). The stub decides by
looking at each request: if the last message is a tool result it answers with text, else it
asks for the tool; as one OpenAI JSON body or as an SSE stream, per `stream` in the body.

Two modes, each in its own process of the library's venv:

  run      the library's non-streaming agent call
  stream   the library's streaming agent call, every text delta consumed

Every library is measured the same way, and this is the one agent-loop figure the README
quotes: one stub process for all; each library's client (and so its connections, kept
alive where the library keeps them) made once and reused for every run; --warmup runs
first; then the processes take turns, --batch runs each per round, the order reversed every
other round, until each has done --runs timed runs, so drift in the machine hits every
library alike. Figures per (library, mode): wall time per run (time.perf_counter around one
whole agent run: two model round trips and the tool call), median and p95; the median
process CPU per run (time.process_time, all threads); and the peak memory of the process:
resource.getrusage ru_maxrss after its last timed batch (peak resident set: interpreter +
the library's imports + all its runs).

Two passes, each against its own stub (--over http,https): plain http, the way a local
model server is reached, where a library that connects for every request pays only a TCP
connect on loopback; and https, the way every hosted provider is reached, with a throwaway
self-signed certificate (openssl) added to the system's trust store, which every library
reads through SSL_CERT_FILE (so one that loads its trust store per client or connection pays
what it pays on a real machine), and a new connection pays a TLS handshake. Each pass prints
its own table and verdicts and is its own section of bench/results.json ("loop" and
"loop_https").

A run counts only if its final text (for `stream`, the concatenated text deltas) contains
the sum, the tool function really ran once per run, and the stub saw exactly two model
requests per run; otherwise the library is reported as "failed: <why>", never skipped.

  toolnexus       this repo: create_client(style="openai") + define_tool(add);
                  client.run / client.stream
  toolnexus-httpx2  this repo with httpx2's own (anyio) transport in place of
                  toolnexus/transport/_network.py: what that module is worth to a run
  toolnexus-client  this repo with every model call through httpx2's client (an
                  httpx2 Request and Response around each), on _network.py's transport:
                  what the direct path (a request straight to the pool) is worth to a run
  toolnexus-pypi  the original `toolnexus` on PyPI (same import name, so its own venv
                  bench/.venvs/toolnexus-pypi): the same calls, create_toolkit(builtins=False)
  llm             llm's Python API: an extra OpenAI-compatible model (LLM_USER_PATH with an
                  extra-openai-models.yaml) and model.chain(prompt, tools=[add])
  openai          the official SDK, a hand-written loop: create -> tool call -> create
  pydantic-ai     pydantic-ai-slim[openai]: Agent(OpenAIChatModel + OpenAIProvider(base_url),
                  tools=[add]); agent.run / agent.run_stream + stream_text(delta=True)
  openai-agents   the OpenAI Agents SDK: OpenAIChatCompletionsModel + AsyncOpenAI(base_url),
                  function_tool(add), tracing off; Runner.run / Runner.run_streamed

The peers live in bench/.venvs/peers (shared with the other benchmarks; created with venv +
pip when missing, missing packages installed there), the PyPI toolnexus in
bench/.venvs/toolnexus-pypi (pinned to 0.21.0). Targets: toolnexus faster than every peer
(issue 8), and at least 1.25x faster than the original toolnexus 0.21.0 in both modes
(issue 26). When a peer beats toolnexus, toolnexus' run is
profiled (cProfile, --profile runs) and the top functions printed. Results go to
bench/results.json.

    .venv/bin/python bench/loop.py [--runs 200] [--warmup 20] [--batch 10] [--only ...]
        [--over http,https]

The top-level imports are stdlib only: the same file runs as the stub (--serve) and as each
library's measurement (--peer) under other interpreters.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PYPI_VENV = BENCH / ".venvs" / "toolnexus-pypi"
MODEL = "stub-model"
A, B = 1234, 4321
SUM = str(A + B)
PROMPT = f"What is {A} + {B}? Use the add tool."
MODES = ("run", "stream")
THIS_REPO = (
    "toolnexus",
    "toolnexus-httpx2",
    "toolnexus-client",
)  # run from this checkout, in this venv
TARGET_VS_PYPI = 1.25  # issue 26: the original package takes >= 1.25x our time
PYPI_SPEC = "toolnexus==0.21.0"

# label, the distribution whose version is shown, the module that must import, the pip spec
LIBRARIES: dict[str, tuple[str, str, str, str]] = {
    "toolnexus": ("toolnexus (this repo)", "toolnexus", "toolnexus", ""),
    "toolnexus-pypi": ("toolnexus (PyPI)", "toolnexus", "toolnexus", PYPI_SPEC),
    "toolnexus-httpx2": ("toolnexus, httpx2's own transport", "toolnexus", "toolnexus", ""),
    "toolnexus-client": ("toolnexus, through httpx2's client", "toolnexus", "toolnexus", ""),
    "llm": ("llm", "llm", "llm", "llm"),
    "openai": ("openai SDK", "openai", "openai", "openai"),
    "pydantic-ai": ("pydantic-ai", "pydantic-ai-slim", "pydantic_ai", "pydantic-ai-slim[openai]"),
    "openai-agents": ("openai-agents", "openai-agents", "agents", "openai-agents"),
}


# ----------------------------------------------------------------------------- the stub


def serve(cert_dir: str | None) -> None:
    """--serve: the stub on loopback. Prints its base URL, then serves until stdin closes.
    GET .../stats answers {"requests": N}, the chat requests seen so far. With --tls DIR it
    speaks https with DIR's cert.pem and key.pem."""
    import ssl
    import threading

    sys.path.insert(0, str(ROOT))
    from tests.support.stub_provider import (
        Recorded,
        Reply,
        StubProvider,
        openai_stream,
        openai_text,
        openai_tool_call,
    )

    lock = threading.Lock()
    seen = [0]
    cache: dict[tuple[bool, str | None], Reply] = {}

    def answer(request: Recorded) -> Reply:
        if request.method == "GET" and request.path.endswith("/stats"):
            with lock:
                return Reply.json({"requests": seen[0]})
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            return Reply.error(404, f"stub: no route {request.method} {request.path}")
        body = request.json if isinstance(request.json, dict) else {}
        messages = body.get("messages") or [{}]
        last = messages[-1]
        with lock:
            seen[0] += 1
        # The tool's output, as the library sent it back: the answer quotes it, so the
        # final text holds the sum only when the tool really ran.
        result = _content_text(last.get("content")) if last.get("role") == "tool" else None
        key = (bool(body.get("stream")), result)
        reply = cache.get(key)
        if reply is None:
            text = f"The sum is {result}." if result is not None else None
            calls = [("add", {"a": A, "b": B})]
            if key[0]:
                reply = openai_stream(text, None if text else calls, model=MODEL)
            else:
                reply = Reply.json(
                    openai_text(text, model=MODEL) if text else openai_tool_call(calls, model=MODEL)
                )
            if len(cache) < 64:
                cache[key] = reply
        return reply

    tls = None
    if cert_dir:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(Path(cert_dir) / "cert.pem", Path(cert_dir) / "key.pem")
    stub = StubProvider(tls=tls)
    stub.handler = answer
    stub.start()
    print(stub.base_url, flush=True)
    sys.stdin.read()
    stub.close()


def _content_text(content: Any) -> str:
    """A tool message's content as text: a string, or the text parts of a list."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


# ----------------------------------------------------------------------------- the runs

CALLS = [0]  # how many times add() really ran in this process


def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    CALLS[0] += 1
    return a + b


ADD_SCHEMA = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers and return the sum.",
        "parameters": {
            "type": "object",
            "required": ["a", "b"],
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        },
    },
}

Runner = Callable[[], Awaitable[str]]  # one agent run; returns the final (or streamed) text


async def setup_toolnexus(
    base_url: str, mode: str, *, builtins_off: bool = False
) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """This repo's and the PyPI package's toolnexus: the same public calls."""
    from toolnexus import create_client, create_toolkit, define_tool

    client = create_client(base_url=base_url, style="openai", model=MODEL, api_key="x")
    toolkit = await (create_toolkit(builtins=False) if builtins_off else create_toolkit())
    toolkit.register(define_tool(add))

    async def run() -> str:
        return (await client.run(PROMPT, toolkit)).text

    async def stream() -> str:
        parts = []
        async for event in client.stream(PROMPT, toolkit):
            if event["type"] == "text":
                parts.append(event["delta"])
        return "".join(parts)

    async def close() -> None:
        await toolkit.close()
        if hasattr(client, "aclose"):
            await client.aclose()

    return (run if mode == "run" else stream), close


async def setup_llm(base_url: str, mode: str) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """llm's sync Python API; the model comes from extra-openai-models.yaml in LLM_USER_PATH
    (written by the parent), as a user would configure an OpenAI-compatible endpoint."""
    import llm

    model = llm.get_model("stub")

    async def run() -> str:
        return model.chain(PROMPT, tools=[add], stream=False).text()

    async def stream() -> str:
        return "".join(model.chain(PROMPT, tools=[add], stream=True))

    async def close() -> None:
        pass

    return (run if mode == "run" else stream), close


async def setup_openai(base_url: str, mode: str) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """The official SDK with the tool loop written by hand, as its docs show."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="x")

    def tool_messages(calls: list[tuple[str, str, str]]) -> list[dict]:
        assistant = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in calls
            ],
        }
        results = [
            {"role": "tool", "tool_call_id": cid, "content": str(add(**json.loads(args)))}
            for cid, name, args in calls
            if name == "add"
        ]
        return [assistant, *results]

    async def run() -> str:
        messages: list[dict] = [{"role": "user", "content": PROMPT}]
        for _ in range(10):
            response = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=[ADD_SCHEMA]
            )
            message = response.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages += tool_messages(
                [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls]
            )
        return ""

    async def stream() -> str:
        messages: list[dict] = [{"role": "user", "content": PROMPT}]
        text: list[str] = []
        for _ in range(10):
            chunks = await client.chat.completions.create(
                model=MODEL,
                messages=messages,
                tools=[ADD_SCHEMA],
                stream=True,
                stream_options={"include_usage": True},
            )
            calls: dict[int, list[str]] = {}
            async for chunk in chunks:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    text.append(delta.content)
                for tc in delta.tool_calls or []:
                    call = calls.setdefault(tc.index, ["", "", ""])
                    call[0] = tc.id or call[0]
                    if tc.function:
                        call[1] = tc.function.name or call[1]
                        call[2] += tc.function.arguments or ""
            if not calls:
                return "".join(text)
            messages += tool_messages([tuple(calls[i]) for i in sorted(calls)])
        return ""

    return (run if mode == "run" else stream), client.close


async def setup_pydantic_ai(
    base_url: str, mode: str
) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="x"))
    agent = Agent(model, tools=[add])

    async def run() -> str:
        return (await agent.run(PROMPT)).output

    async def stream() -> str:
        parts = []
        async with agent.run_stream(PROMPT) as result:
            async for delta in result.stream_text(delta=True, debounce_by=None):
                parts.append(delta)
        return "".join(parts)

    async def close() -> None:
        await model.client.close()

    return (run if mode == "run" else stream), close


async def setup_openai_agents(
    base_url: str, mode: str
) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
    from agents import Runner as AgentRunner
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # no trace export (it would try to reach api.openai.com)
    client = AsyncOpenAI(base_url=base_url, api_key="x")
    agent = Agent(
        name="bench",
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        tools=[function_tool(add)],
    )

    async def run() -> str:
        return str((await AgentRunner.run(agent, PROMPT)).final_output)

    async def stream() -> str:
        parts = []
        result = AgentRunner.run_streamed(agent, PROMPT)
        async for event in result.stream_events():
            if (
                event.type == "raw_response_event"
                and getattr(event.data, "type", "") == "response.output_text.delta"
            ):
                parts.append(event.data.delta)
        return "".join(parts)

    return (run if mode == "run" else stream), client.close


async def setup_toolnexus_httpx2(
    base_url: str, mode: str
) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """This repo with httpx2's own transport (anyio) where toolnexus/transport/_network.py would
    serve: what that module is worth to an agent run."""
    import httpx2

    from toolnexus.transport import _connections, _exchange

    def stock_pool(*, secure: bool) -> Any:
        client = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport())
        return _connections.Pool(client, None, _connections.NO_HEADERS)

    _exchange.new_pool = stock_pool  # where Transport looks it up
    return await setup_toolnexus(base_url, mode)


async def setup_toolnexus_client(
    base_url: str, mode: str
) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """This repo with every call sent through httpx2's client on _network.py's transport, as
    behind a proxy: what the direct path (no httpx2 Request or Response) is worth to a run."""
    import importlib.util

    import httpx2

    from toolnexus.transport import _connections, _exchange
    from toolnexus.transport._network import AsyncioTransport

    def client_pool(*, secure: bool) -> Any:
        http2 = importlib.util.find_spec("h2") is not None
        transport = AsyncioTransport(_connections.tls_context() if secure else None, http2=http2)
        client = httpx2.AsyncClient(transport=transport, follow_redirects=False)
        return _connections.Pool(client, None, _connections.NO_HEADERS)

    _exchange.new_pool = client_pool  # where Transport looks it up
    return await setup_toolnexus(base_url, mode)


SETUPS: dict[str, Callable[..., Awaitable[tuple[Runner, Callable[[], Awaitable[None]]]]]] = {
    "toolnexus": setup_toolnexus,
    "toolnexus-httpx2": setup_toolnexus_httpx2,
    "toolnexus-client": setup_toolnexus_client,
    "toolnexus-pypi": lambda url, mode: setup_toolnexus(url, mode, builtins_off=True),
    "llm": setup_llm,
    "openai": setup_openai,
    "pydantic-ai": setup_pydantic_ai,
    "openai-agents": setup_openai_agents,
}


async def batch(run_once: Runner, count: int, times: list[float], cpu: list[float]) -> str | None:
    """`count` timed runs, their wall and process CPU seconds appended to `times` and `cpu`;
    why a run did not do the job, or None."""
    calls = CALLS[0]
    for _ in range(count):
        start, start_cpu = time.perf_counter(), time.process_time()
        text = await run_once()
        elapsed, used = time.perf_counter() - start, time.process_time() - start_cpu
        if SUM not in (text or ""):
            return f"the final text {str(text)[:80]!r} lacks {SUM}"
        times.append(elapsed)
        cpu.append(used)
    if CALLS[0] - calls != count:
        return f"add() ran {CALLS[0] - calls} times in {count} runs"
    return None


async def profile_runs(run_once: Runner, runs: int) -> str:
    """cProfile over `runs` runs: own time grouped by package, then the top functions by
    cumulative time. (cProfile sees this thread only: work in worker threads is missing.)"""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(runs):
        await run_once()
    profiler.disable()
    wall = (time.perf_counter() - start) / runs * 1000
    stats = pstats.Stats(profiler)
    groups: dict[str, float] = {}
    for (path, _, name), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        group = _group(path, name)
        groups[group] = groups.get(group, 0.0) + own
    total = sum(groups.values()) or 1.0
    out = io.StringIO()
    out.write(
        f"{runs} runs under cProfile, {wall:.2f} ms per run with the profiler on "
        f"(its overhead inflates Python-heavy code)\n"
    )
    out.write("own time by package, ms per run (share):\n")
    for group, own in sorted(groups.items(), key=lambda kv: -kv[1])[:12]:
        out.write(f"  {own / runs * 1000:7.3f}  ({own / total:4.0%})  {group}\n")
    out.write("top functions by cumulative time:\n")
    stats.stream = out  # type: ignore[attr-defined]
    stats.strip_dirs().sort_stats("cumulative").print_stats(22)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    return "\n".join(ln for ln in lines if not ln.lstrip().startswith(("Ordered by", "List ")))


def _group(path: str, name: str) -> str:
    if path == "~":  # built-in functions
        if "socket" in name or "poll" in name or "select" in name:
            return "socket calls and epoll waits (waiting for the stub counts here)"
        if "posix.stat" in name or "listdir" in name:
            return "os.stat/listdir calls"
        if "_queue" in name or "lock" in name or "thread" in name:
            return "thread hand-offs"
        return "other built-ins"
    if "importlib" in path:
        return "importlib: import statements run per request (failed ones scan sys.path)"
    for package in (
        "toolnexus",
        "httpx2",
        "httpcore2",
        "h11",
        "anyio",
        "asyncio",
        "json",
        "openai",
        "pydantic",
        "concurrent",
        "threading",
        "urllib",
        "http",
    ):
        if f"/{package}/" in path or path.endswith(f"/{package}.py"):
            return package
    return Path(path).name


def peer_main(lib: str, mode: str, base_url: str, warmup: int) -> None:
    """--peer: one (library, mode) in this interpreter, driven over stdin/stdout one JSON
    line per command: after set-up and `warmup` runs it says {"ready": ...}; then
    "run N" -> {"times": [...], "cpu": [...], "problem": ..., "peak_kb": ...}, "profile N" ->
    {"profile": text}, "quit" or end of input -> exit."""
    # Protocol lines go to the real stdout; whatever a library prints goes to stderr.
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def say(**data: Any) -> None:
        data["peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        proto.write(json.dumps(data) + "\n")
        proto.flush()

    def why(exc: BaseException) -> str:
        line = (str(exc).strip().splitlines() or [""])[0]
        return f"{type(exc).__name__}: {line[:200]}"

    # Never let this folder's modules (or the repo) shadow the library under test.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
    if lib in THIS_REPO:
        sys.path.insert(0, str(ROOT))

    async def session() -> None:
        import importlib
        import importlib.metadata as md

        try:
            module = importlib.import_module(LIBRARIES[lib][2])
            version = md.version(LIBRARIES[lib][1])
            where = Path(module.__file__ or "").resolve()
            if lib.startswith("toolnexus") and (ROOT / "toolnexus" in where.parents) != (
                lib in THIS_REPO
            ):
                raise RuntimeError(f"imported the wrong toolnexus: {where}")
            run_once, close = await SETUPS[lib](base_url, mode)
        except Exception as exc:
            return say(ready=False, problem=why(exc))
        try:
            try:
                problem = await batch(run_once, warmup, [], [])
            except Exception as exc:
                problem = why(exc)
            say(
                ready=problem is None,
                problem=problem,
                version=version,
                python=platform.python_version(),
            )
            while problem is None:
                command, _, count = sys.stdin.readline().strip().partition(" ")
                if command == "run":
                    times: list[float] = []
                    cpu: list[float] = []
                    try:
                        problem = await batch(run_once, int(count), times, cpu)
                    except Exception as exc:
                        problem = why(exc)
                    say(times=times, cpu=cpu, problem=problem)
                elif command == "profile":
                    say(profile=await profile_runs(run_once, int(count)))
                else:
                    break
        finally:
            await close()

    asyncio.run(session())


# ----------------------------------------------------------------------------- the venvs


def pip_install(python: Path, spec: str) -> str | None:
    """pip install `spec` with `python`; None on success, else why it failed."""
    print(f"installing {spec} into {python.parent.parent.relative_to(ROOT)} ...", flush=True)
    try:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", spec],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"pip install {spec} failed: {exc}"
    if done.returncode != 0:
        errors = (
            [ln for ln in done.stderr.splitlines() if "ERROR" in ln]
            or done.stderr.strip().splitlines()[-1:]
            or [f"exit {done.returncode}"]
        )
        return f"pip install {spec} failed: {errors[-1].strip()}"
    return None


def importable(python: Path, module: str) -> bool:
    check = [str(python), "-c", f"import {module}"]
    return (
        python.exists()
        and subprocess.run(check, capture_output=True, cwd=tempfile.gettempdir()).returncode == 0
    )


def interpreters(libs: list[str]) -> dict[str, tuple[Path | None, str]]:
    """Each library's python, creating venvs and installing what is missing:
    {lib: (python, "") or (None, why it cannot run)}."""
    from stream_throughput import PEERS, peer_python

    found: dict[str, tuple[Path | None, str]] = {}
    for lib in THIS_REPO:
        if lib in libs:
            found[lib] = (Path(sys.executable), "")
    if "toolnexus-pypi" in libs:
        python = PYPI_VENV / "bin" / "python"
        why = None
        if not importable(python, "toolnexus"):
            print(f"setting up {PYPI_VENV.relative_to(ROOT)} ...", flush=True)
            done = subprocess.run(
                [sys.executable, "-m", "venv", str(PYPI_VENV)], capture_output=True, text=True
            )
            why = (
                f"python -m venv failed: {done.stderr.strip()[-200:]}"
                if done.returncode
                else pip_install(python, PYPI_SPEC)
            )
        found["toolnexus-pypi"] = (None, why) if why else (python, "")
    peers = [lib for lib in libs if not lib.startswith("toolnexus")]
    if peers:
        python, how = peer_python()  # bench/.venvs/peers, created (with openai) if missing
        for lib in peers:
            if python is None:
                found[lib] = (None, how)
                continue
            module, spec = LIBRARIES[lib][2], LIBRARIES[lib][3]
            why = None if importable(python, module) else pip_install(python, spec)
            found[lib] = (None, why) if why else (python, "")
        assert python is None or python == PEERS / "bin" / "python"
    return found


# ----------------------------------------------------------------------------- running


class Stub:
    """serve() above in a subprocess of this interpreter, with its request count; over
    https when given a certificate (a cert.pem with its key.pem beside it)."""

    def __init__(self, cert: Path | None = None) -> None:
        import ssl

        from stream_throughput import ServerProcess

        self.server = ServerProcess(__file__, *(["--tls", str(cert.parent)] if cert else []))
        self.base_url = self.server.base_url
        self._trust = ssl.create_default_context(cafile=cert) if cert else None

    def requests(self) -> int:
        stats = self.base_url + "/stats"
        with urllib.request.urlopen(stats, timeout=10, context=self._trust) as response:
            return json.load(response)["requests"]

    def close(self) -> None:
        self.server.close()


def peer_env(tmp: Path, base_url: str, cert: Path | None) -> dict[str, str]:
    """This environment without anything that configures Python or a provider, an API key
    the stub ignores, an llm user dir whose one extra model is the stub, and for https the
    system's trust store with the stub's certificate added (SSL_CERT_FILE, which every
    library here reads)."""
    drop = ("PYTHON", "TOOLNEXUS_", "LLM_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_", "LOGFIRE_")
    drop += ("SSL_CERT_", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE") if cert else ()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(drop) and not k.endswith("_API_KEY")
    }
    llm_dir = tmp / "llm"
    llm_dir.mkdir(exist_ok=True)
    (llm_dir / "extra-openai-models.yaml").write_text(
        f'- model_id: stub\n  model_name: {MODEL}\n  api_base: "{base_url}"\n'
        f"  supports_tools: true\n",
        encoding="utf-8",
    )
    return {
        **env,
        **({"SSL_CERT_FILE": str(trust_store(cert))} if cert else {}),
        "OPENAI_API_KEY": "x",
        "LLM_USER_PATH": str(llm_dir),
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
    }


def trust_store(cert: Path) -> Path:
    """The system's trust store (as SSL_CERT_FILE or OpenSSL names it) and `cert`, in one file
    beside it: a library that loads its trust store for every client or connection pays what
    it pays on a real machine, not the cost of one certificate."""
    import ssl

    bundle = cert.with_name("trusted.pem")
    system = ssl.get_default_verify_paths().cafile
    known = Path(system).read_bytes() if system and Path(system).is_file() else b""
    bundle.write_bytes(known + b"\n" + cert.read_bytes())
    return bundle


class Peer:
    """One (library, mode) process, driven batch by batch (see peer_main)."""

    def __init__(
        self,
        python: Path,
        lib: str,
        mode: str,
        stub: Stub,
        env: dict[str, str],
        warmup: int,
        tmp: Path,
    ) -> None:
        self.lib, self.mode, self.stub = lib, mode, stub
        self.times: list[float] = []
        self.cpu: list[float] = []
        self.problem: str | None = None
        self.info: dict[str, Any] = {}
        self.peak_kb = 0
        self.stderr = open(tmp / f"{lib}-{mode}.stderr", "w+", encoding="utf-8")  # noqa: SIM115
        cmd = [
            str(python),
            __file__,
            "--peer",
            lib,
            "--mode",
            mode,
            "--base-url",
            stub.base_url,
            "--warmup",
            str(warmup),
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env=env,
            cwd=tmp,
        )
        self._expect(warmup, lambda: self._answer(None))

    @property
    def ok(self) -> bool:
        return self.problem is None

    def run(self, count: int) -> None:
        """`count` more timed runs."""
        if self.ok:
            self._expect(count, lambda: self._answer(f"run {count}"))

    def profile(self, count: int) -> str:
        if not self.ok:
            return f"not profiled: {self.problem}"
        answer = self._expect(count, lambda: self._answer(f"profile {count}"))
        return answer.get("profile") or f"not profiled: {self.problem}"

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.communicate("quit\n", timeout=30)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()

    def _expect(self, runs: int, ask: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Ask, and check that the stub saw exactly two model requests per run."""
        before = self.stub.requests()
        answer = ask()
        made = self.stub.requests() - before
        if self.ok and made != 2 * runs:
            self.problem = f"the stub saw {made} model requests in {runs} runs (expected 2 per run)"
        return answer

    def _answer(self, command: str | None, timeout: float = 900) -> dict[str, Any]:
        try:
            if command is not None:
                self.proc.stdin.write(command + "\n")
                self.proc.stdin.flush()
            ready = select.select([self.proc.stdout], [], [], timeout)[0]
            line = self.proc.stdout.readline() if ready else None
        except OSError:
            line = ""
        if line is None:
            self.proc.kill()
            self.problem = f"no answer within {timeout:.0f} s"
            return {}
        try:
            answer = json.loads(line)
        except ValueError:
            self.proc.wait(timeout=30)
            self.stderr.seek(0)
            tail = self.stderr.read().strip().splitlines()[-1:] or [f"exit {self.proc.returncode}"]
            self.problem = f"the process ended: {tail[0][:200]}"
            return {}
        self.problem = answer.get("problem") or self.problem
        self.times += answer.get("times", [])
        self.cpu += answer.get("cpu", [])
        self.peak_kb = answer.get("peak_kb", self.peak_kb)
        self.info.update({k: answer[k] for k in ("version", "python") if k in answer})
        return answer


# ----------------------------------------------------------------------------- reporting


def p95(times: list[float]) -> float:
    return statistics.quantiles(times, n=20, method="inclusive")[18] if len(times) > 1 else times[0]


def summarize(peer: Peer | None, why: str) -> dict[str, Any]:
    """The figures of one (library, mode), or {"failed": why}."""
    if peer is None or not peer.ok or not peer.times:
        return {"failed": (peer.problem if peer else why) or "no runs measured"}
    times = peer.times
    return {
        "median_ms": round(statistics.median(times) * 1000, 3),
        "p95_ms": round(p95(times) * 1000, 3),
        "min_ms": round(min(times) * 1000, 3),
        "cpu_ms": round(statistics.median(peer.cpu) * 1000, 3),
        "peak_mb": round(peer.peak_kb / 1024, 1),
        "runs": len(times),
    }


def table(libs: list[str], figures: dict[str, dict[str, Any]], labels: dict[str, str]) -> None:
    print(
        f"{'library':<28} {'mode':<7} {'median ms':>10} {'p95 ms':>8} {'CPU ms':>7}"
        f" {'peak MB':>8} {'x toolnexus':>12}"
    )
    for mode in MODES:
        ours = figures.get("toolnexus", {}).get(mode, {}).get("median_ms")
        for lib in libs:
            fig = figures[lib][mode]
            if "failed" in fig:
                print(f"{labels[lib]:<28} {mode:<7} failed: {fig['failed']}")
                continue
            ratio = f"{fig['median_ms'] / ours:11.2f}x" if ours else f"{'n/a':>12}"
            print(
                f"{labels[lib]:<28} {mode:<7} {fig['median_ms']:10.2f} {fig['p95_ms']:8.2f}"
                f" {fig['cpu_ms']:7.2f} {fig['peak_mb']:8.1f} {ratio}"
            )


def verdict(
    libs: list[str], figures: dict[str, dict[str, Any]], labels: dict[str, str]
) -> tuple[list[str], dict[str, Any], list[str]]:
    """Lines to print, the verdict for results.json, and the modes where a peer beat us."""
    lines: list[str] = []
    data: dict[str, Any] = {}
    beaten: list[str] = []
    for mode in MODES:
        ours = figures.get("toolnexus", {}).get(mode, {})
        if "median_ms" not in ours:
            lines.append(
                f"{mode}: no verdict - toolnexus itself "
                f"{'failed: ' + ours['failed'] if ours else 'was not measured'}"
            )
            data[mode] = {"faster_than_every_peer": None, "vs_pypi": None}
            continue
        faster = []  # peers at least as fast as toolnexus
        unmeasured = []
        for lib in libs:
            if lib == "toolnexus":
                continue
            fig = figures[lib][mode]
            if "failed" in fig:
                unmeasured.append(labels[lib])
            elif fig["median_ms"] <= ours["median_ms"]:
                faster.append(f"{labels[lib]} ({fig['median_ms']:.2f} ms)")
        met = not faster
        if faster:
            beaten.append(mode)
        lines.append(
            f"{mode}: toolnexus {ours['median_ms']:.2f} ms is faster than every"
            f" measured peer: {'MET' if met else 'MISSED, beaten by ' + ', '.join(faster)}"
            + (f" (not measured: {', '.join(unmeasured)})" if unmeasured else "")
        )
        pypi = figures.get("toolnexus-pypi", {}).get(mode, {})
        vs_pypi = None
        if "median_ms" in pypi:
            vs_pypi = pypi["median_ms"] / ours["median_ms"]
            cpu = pypi["cpu_ms"] / ours["cpu_ms"]
            lines.append(
                f"{mode}: the original toolnexus package takes {vs_pypi:.2f}x"
                f" toolnexus' time (goal >= {TARGET_VS_PYPI:.2f}x): "
                f"{'MET' if vs_pypi >= TARGET_VS_PYPI else 'MISSED'}"
                f" (and {cpu:.2f}x its CPU time)"
            )
        else:
            why = pypi.get("failed", "not measured")
            lines.append(f"{mode}: vs the original toolnexus package: no verdict - {why}")
        data[mode] = {
            "faster_than_every_peer": met,
            "beaten_by": faster,
            "not_measured": unmeasured,
            "vs_pypi": round(vs_pypi, 2) if vs_pypi else None,
            "vs_pypi_cpu": round(pypi["cpu_ms"] / ours["cpu_ms"], 2) if vs_pypi else None,
            "vs_pypi_met": vs_pypi >= TARGET_VS_PYPI if vs_pypi else None,
        }
    return lines, data, beaten


SCHEMES = ("http", "https")
SECTIONS = {"http": "loop", "https": "loop_https"}  # of bench/results.json
OVER = {
    "http": "plain http (a local model server's way: llama.cpp, Ollama, vLLM on loopback)",
    "https": "https (every hosted provider's way; a throwaway self-signed certificate added to"
    " the system's trust store the clients read through SSL_CERT_FILE, so a new connection pays"
    " a TLS handshake)",
}


class Measured(NamedTuple):
    figures: dict[str, dict[str, Any]]
    versions: dict[str, str]
    labels: dict[str, str]
    python: str
    seen: dict[str, Any]
    profiles: dict[str, str]


def measure(
    libs: list[str],
    pythons: dict[str, tuple[Path | None, str]],
    args: argparse.Namespace,
    cert: Path | None,
) -> Measured:
    """Every (library, mode) against one stub, plain http or (given a certificate) https."""
    from results import load_seen, machine_load

    peers: dict[tuple[str, str], Peer] = {}
    profiles: dict[str, str] = {}
    load_before = machine_load()
    with tempfile.TemporaryDirectory(prefix="toolnexus-loop-") as tmpdir:
        tmp = Path(tmpdir)
        stub = Stub(cert)
        try:
            env = peer_env(tmp, stub.base_url, cert)
            # Set-up and warm-up one process at a time, then the timed runs in rounds of
            # --batch runs per process, so drift in the machine hits every library alike.
            for lib in libs:
                python = pythons[lib][0]
                for mode in MODES:
                    if python is not None:
                        peers[lib, mode] = Peer(python, lib, mode, stub, env, args.warmup, tmp)
            done, order = 0, list(peers.values())
            while done < args.runs:
                count = min(args.batch, args.runs - done)
                for peer in order:
                    peer.run(count)
                order.reverse()  # no process always runs right after the same one
                done += count
            figures = {
                lib: {mode: summarize(peers.get((lib, mode)), pythons[lib][1]) for mode in MODES}
                for lib in libs
            }
            _, _, beaten = verdict(libs, figures, {lib: lib for lib in libs})
            if args.profile and "toolnexus" in libs:
                for mode in beaten:
                    profiles[mode] = peers["toolnexus", mode].profile(args.profile)
        finally:
            for peer in peers.values():
                peer.close()
            stub.close()
    versions = {lib: peer.info.get("version", "") for (lib, _), peer in peers.items()}
    labels = {lib: f"{LIBRARIES[lib][0]} {versions.get(lib, '')}".strip() for lib in libs}
    python = next(
        (p.info["python"] for p in peers.values() if "python" in p.info), platform.python_version()
    )
    return Measured(
        figures, versions, labels, python, load_seen(load_before, machine_load()), profiles
    )


def report(scheme: str, libs: list[str], got: Measured, args: argparse.Namespace) -> None:
    """Print one pass's table and verdicts; record them as its section of results.json."""
    from results import load_line, record

    print(
        f"== over {OVER[scheme]}\n"
        f"python {got.python} | {os.cpu_count()} cores | {platform.machine()} | "
        f"{load_line(got.seen)}"
    )
    print(
        f"one run = one agent run: 2 model round trips to the loopback stub + 1 add() call;"
        f" wall time per run, {args.runs} runs after {args.warmup} warm-up runs,"
    )
    print(
        f"one process per row, the processes taking turns in rounds of {args.batch} runs"
        " (order reversed every other round), each client made once and reused;"
        " peak MB = that process' ru_maxrss (peak RSS: interpreter + imports + runs);"
    )
    print(
        "CPU ms = median process CPU time per run (time.process_time, all threads);"
        " x toolnexus = median / toolnexus' median, same mode (above 1: slower)"
    )
    print()
    table(libs, got.figures, got.labels)
    print()
    lines, verdicts, _ = verdict(libs, got.figures, got.labels)
    for line in lines:
        print(f"verdict ({scheme}): " + line)
    for mode, text in got.profiles.items():
        print()
        print(f"toolnexus was beaten in {mode} mode; where its time goes (cProfile):")
        print(text.rstrip())
    section = SECTIONS[scheme]
    path = record(
        section,
        {
            "machine": {
                "python": got.python,
                "cores": os.cpu_count(),
                "arch": platform.machine(),
                "platform": platform.platform(),
                **got.seen,
            },
            "over": scheme,
            "runs": args.runs,
            "warmup": args.warmup,
            "batch": args.batch,
            "timing": "wall time per agent run (2 model round trips + 1 tool call), ms",
            "memory": "ru_maxrss of the measuring process (peak RSS), MiB",
            "libraries": {
                lib: {"label": got.labels[lib], "version": got.versions.get(lib) or None}
                | got.figures[lib]
                for lib in libs
            },
            "verdict": verdicts,
        },
    )
    print(f'\nwrote section "{section}" of {path.relative_to(ROOT)}\n')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument(
        "--batch",
        type=int,
        default=10,
        help="runs per library per round; the rounds interleave the libraries",
    )
    parser.add_argument("--only", help="comma-separated libraries (default: all)")
    parser.add_argument(
        "--over",
        default=",".join(SCHEMES),
        help="http, https or both (default): one pass each, against its own stub",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=50,
        help="runs of toolnexus under cProfile when a peer beats it (0: never)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tls", help=argparse.SUPPRESS)
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.tls)
    if args.peer:
        return peer_main(args.peer, args.mode, args.base_url, args.warmup)

    libs = args.only.split(",") if args.only else list(LIBRARIES)
    unknown = [lib for lib in libs if lib not in LIBRARIES]
    if unknown:
        parser.error(f"unknown libraries {unknown}; known: {', '.join(LIBRARIES)}")
    schemes = args.over.split(",")
    if not set(schemes) <= set(SCHEMES):
        parser.error(f"--over takes {' or '.join(SCHEMES)}, or both")
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(ROOT))
    from tests.support.net_servers import make_certificate

    pythons = interpreters(libs)
    with tempfile.TemporaryDirectory(prefix="toolnexus-loop-cert-") as certs:
        for scheme in schemes:
            cert = None
            if scheme == "https":
                made = make_certificate(Path(certs))
                if made is None:
                    print("== over https: skipped, the openssl command is missing\n")
                    continue
                cert = made[0]
            report(scheme, libs, measure(libs, pythons, args, cert), args)


if __name__ == "__main__":
    main()
