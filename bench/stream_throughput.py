"""Streaming throughput: client CPU time per text delta, toolnexus beside two baselines.

A loopback server in its own process (so its CPU is never counted) answers every POST with
one pre-encoded, realistic OpenAI stream: `chat.completion.chunk` SSE events built by
tests/support/stub_provider.py, one HTTP chunk per event - a role chunk, N one-token content deltas,
a finish chunk, a usage chunk, then `data: [DONE]` - written as fast as the socket takes it.

Measured with time.process_time() around the client side only, per stream, over several
repetitions (after one warm-up), reported as medians in microseconds per delta:

  (t) toolnexus: Client.stream(...) with create_client(style="openai") and an empty
      toolkit, every event consumed;
  (a) raw httpx2: aiter_lines() + json.loads of each data line (the floor);
  (b) the official openai SDK: AsyncOpenAI(...).chat.completions.create(stream=True). It is
      never a project dependency: it lives in bench/.venvs/peers (created with venv + pip
      when missing) and is measured there, in a subprocess that reports JSON.

Every client must deliver every delta (count and concatenated text) and the usage; a
client that drops data is reported as FAILED rather than timed.
Goals (issues 12 and 26): (t) at most 1.0x (a), and faster than (b).

    .venv/bin/python bench/stream_throughput.py [--deltas 20000] [--reps 5]

The top-level imports are stdlib only: the same file runs as the server (--serve) and as
the openai measurement (--peer) under other interpreters.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / ".venvs" / "peers"
PEER_PACKAGES = ["openai"]
MODEL = "stub-model"
PROMPT_TOKENS = 10
WORDS = (
    "The quick brown fox jumps over the lazy dog; naïve café owners résumé "
    "their work, and 42 tokens later the stream ends."
).split()
TARGET_VS_RAW = 1.0


# ----------------------------------------------------------------------------- the stream


def expected_text(deltas: int) -> str:
    """The text the server streams: `deltas` words, one delta each ("The", " quick", ...)."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(deltas))


def response_bytes(deltas: int) -> bytes:
    """The whole HTTP response, pre-encoded: head + chunked SSE body, one chunk per event."""
    sys.path.insert(0, str(ROOT))
    from tests.support.stub_provider import openai_stream

    reply = openai_stream(expected_text(deltas), usage=(PROMPT_TOKENS, deltas), model=MODEL)
    content_deltas = len(reply.parts) - 4  # role chunk, finish chunk, usage chunk, [DONE]
    assert content_deltas == deltas, f"stub split the text into {content_deltas} deltas"
    body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in reply.parts) + b"0\r\n\r\n"
    head = [f"{k}: {v}" for k, v in reply.headers.items()] + ["Transfer-Encoding: chunked"]
    return ("HTTP/1.1 200 OK\r\n" + "\r\n".join(head) + "\r\n\r\n").encode() + body


@dataclass
class Tally:
    """What a client received from one stream."""

    deltas: int
    text: str
    usage: tuple[int, int] | None  # (prompt_tokens, completion_tokens)


def problem(tally: Tally, deltas: int) -> str | None:
    """Why `tally` is not the full stream, or None when every delta and the usage arrived."""
    if tally.deltas != deltas:
        return f"got {tally.deltas} deltas, expected {deltas}"
    if tally.text != expected_text(deltas):
        return "the concatenated text differs from what was sent"
    if tally.usage != (PROMPT_TOKENS, deltas):
        return f"usage {tally.usage}, expected {(PROMPT_TOKENS, deltas)}"
    return None


# ----------------------------------------------------------------------------- the server


def serve(deltas: int) -> None:
    """Answer every request on every connection with the pre-encoded stream (keep-alive).
    Prints the port, then serves until its stdin closes."""
    response = response_bytes(deltas)
    listener = socket.create_server(("127.0.0.1", 0))
    print(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_answer, args=(conn, response), daemon=True).start()


def _answer(conn: socket.socket, response: bytes) -> None:
    with conn:
        try:
            buf = b""
            while (buf := _read_request(conn, buf)) is not None:
                conn.sendall(response)
        except OSError:  # the client went away: its business, not the benchmark's
            pass


def _read_request(conn: socket.socket, buf: bytes) -> bytes | None:
    """Consume one request (head + Content-Length body) from `buf` and the socket.
    Returns the bytes after it, or None when the client closed the connection."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, buf = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buf) < length:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    return buf[length:]  # the request body itself is not needed


class ServerProcess:
    """A benchmark script's own `--serve` mode in a subprocess: its first line of output
    is the base URL; closing its stdin stops it. The other benchmarks use this too."""

    def __init__(self, script: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, script, "--serve", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = (self.proc.stdout.readline() if self.proc.stdout else "").strip()
        if not self.base_url:
            raise SystemExit(f"the server of {Path(script).name} did not start")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ----------------------------------------------------------------------------- the clients


async def stream_toolnexus(client: Any, toolkit: Any) -> Tally:
    parts: list[str] = []
    usage = None
    async for event in client.stream("Say something long.", toolkit):
        if event["type"] == "text":
            parts.append(event["delta"])
        elif event["type"] == "done":
            u = event["result"].usage
            usage = (u["prompt_tokens"], u["completion_tokens"])
    return Tally(len(parts), "".join(parts), usage)


async def stream_httpx2(http: Any, base_url: str) -> Tally:
    body = {
        "model": MODEL,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "Say something long."}],
    }
    parts: list[str] = []
    usage = None
    async with http.stream("POST", base_url + "/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            if chunk.get("usage"):
                usage = (chunk["usage"]["prompt_tokens"], chunk["usage"]["completion_tokens"])
            for choice in chunk["choices"]:
                content = choice["delta"].get("content")
                if content:
                    parts.append(content)
    return Tally(len(parts), "".join(parts), usage)


async def stream_openai(client: Any) -> Tally:
    stream = await client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Say something long."}],
        stream=True,
        stream_options={"include_usage": True},
    )
    parts: list[str] = []
    usage = None
    async for chunk in stream:
        if chunk.usage:
            usage = (chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    return Tally(len(parts), "".join(parts), usage)


# ----------------------------------------------------------------------------- measuring


@dataclass
class Result:
    """Seconds of client CPU (and wall) per stream, one entry per repetition."""

    cpu: list[float]
    wall: list[float]
    problem: str | None = None


async def timed(consume: Callable[[], Awaitable[Tally]], deltas: int, result: Result) -> None:
    """Run one stream, adding its CPU and wall time to `result` (or recording why its
    data was incomplete)."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    tally = await consume()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    result.problem = result.problem or problem(tally, deltas)
    result.cpu.append(cpu)
    result.wall.append(wall)


async def measure_in_process(base_url: str, deltas: int, reps: int) -> dict[str, Result]:
    """(t) and (a), interleaved rep by rep so drift in the machine hits both alike."""
    import httpx2

    from toolnexus import create_client, create_toolkit

    client = create_client(base_url=base_url, style="openai", model=MODEL, api_key="x")
    toolkit = await create_toolkit()
    http = httpx2.AsyncClient(timeout=60)
    runs = {
        "t": lambda: stream_toolnexus(client, toolkit),
        "a": lambda: stream_httpx2(http, base_url),
    }
    results = {key: Result([], []) for key in runs}
    try:
        for rep in range(reps + 1):  # rep 0 warms up connections and code paths
            for key, consume in runs.items():
                await timed(consume, deltas, results[key])
                if rep == 0:
                    results[key].cpu.clear()
                    results[key].wall.clear()
    finally:
        await http.aclose()
        await client.aclose()
        await toolkit.close()
    return results


async def measure_openai(base_url: str, deltas: int, reps: int) -> Result:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    result = Result([], [])
    try:
        await timed(lambda: stream_openai(client), deltas, Result([], []))  # warm-up
        for _ in range(reps):
            await timed(lambda: stream_openai(client), deltas, result)
    finally:
        await client.close()
    return result


def peer_main(base_url: str, deltas: int, reps: int) -> None:
    """--peer: measure (b) in this interpreter (the peers venv); print JSON."""
    import importlib.metadata as md

    result = asyncio.run(measure_openai(base_url, deltas, reps))
    versions = {
        name: md.version(name) for name in ("openai", "httpx2", "httpx") if _installed(md, name)
    }
    print(
        json.dumps(
            {
                "cpu": result.cpu,
                "wall": result.wall,
                "problem": result.problem,
                "versions": versions,
            }
        )
    )


def _installed(md: Any, name: str) -> bool:
    try:
        md.version(name)
    except md.PackageNotFoundError:
        return False
    return True


# ----------------------------------------------------------------------------- the peers venv


def peer_python() -> tuple[Path | None, str]:
    """The peers venv's interpreter, creating the venv and installing openai if needed.
    Returns (None, reason) when that is impossible."""
    python = PEERS / "bin" / "python"
    check = [str(python), "-c", "import openai"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python, "present"
    steps = [
        [sys.executable, "-m", "venv", str(PEERS)],
        [str(python), "-m", "pip", "install", "--quiet", *PEER_PACKAGES],
    ]
    print(
        f"setting up {PEERS.relative_to(ROOT)} (pip install {' '.join(PEER_PACKAGES)}) ...",
        flush=True,
    )
    for step in steps:
        problem = setup_step(step, " ".join(step[2:4]))
        if problem:
            return None, problem
    return python, "installed"


def setup_step(command: list[str], what: str) -> str | None:
    """Run one set-up command (venv, pip install); None when it worked, else why not,
    in one line: pip's last ERROR line, or its last line."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{what} failed: {exc}"
    if done.returncode == 0:
        return None
    errors = (
        [ln for ln in done.stderr.splitlines() if "ERROR" in ln]
        or done.stderr.strip().splitlines()[-1:]
        or [f"exit {done.returncode}"]
    )
    return f"{what} failed: {errors[-1].strip()}"


def measure_peer(base_url: str, deltas: int, reps: int) -> tuple[Result | None, str]:
    """(b) in the peers venv. Returns (None, why) when it could not run."""
    python, how = peer_python()
    if python is None:
        return None, how
    cmd = [
        str(python),
        __file__,
        "--peer",
        "--base-url",
        base_url,
        "--deltas",
        str(deltas),
        "--reps",
        str(reps),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return None, f"the openai measurement failed: {tail[0]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    return Result(report["cpu"], report["wall"], report["problem"]), versions


# ----------------------------------------------------------------------------- reporting


def per_delta_us(seconds: list[float], deltas: int) -> list[float]:
    return [s / deltas * 1e6 for s in seconds]


def row(label: str, result: Result | None, deltas: int, note: str = "") -> str:
    if result is None:
        return f"{label:<38} skipped: {note}"
    us = per_delta_us(result.cpu, deltas)
    ms = statistics.median(result.wall) * 1000
    data = "FAILED: " + result.problem if result.problem else "all deltas, text, usage OK"
    return (
        f"{label:<38} {statistics.median(us):8.2f} {min(us):7.2f} {max(us):7.2f} {ms:9.1f}   {data}"
    )


def ratio(x: Result, y: Result | None) -> float | None:
    if y is None or x.problem or y.problem:
        return None
    return statistics.median(x.cpu) / statistics.median(y.cpu)


def verdict(t_a: float | None, t_b: float | None) -> str:
    if t_a is None:
        return "verdict: no comparison - a client dropped data (see above)"
    parts = [
        f"toolnexus is {t_a:.2f}x raw httpx2 (goal <= {TARGET_VS_RAW}x): "
        + ("MET" if t_a <= TARGET_VS_RAW else "MISSED")
    ]
    if t_b is None:
        parts.append("vs openai SDK: not measured")
    else:
        parts.append(
            f"{t_b:.2f}x the openai SDK (target < 1x): " + ("MET" if t_b < 1 else "MISSED")
        )
    return "verdict: " + "; ".join(parts)


def report(
    deltas: int,
    reps: int,
    inproc: dict[str, Result],
    peer: Result | None,
    peer_note: str,
    seen: dict[str, Any],
) -> None:
    import httpx2
    from results import load_line

    print(
        f"python {platform.python_version()} | httpx2 {httpx2.__version__} | peers: "
        f"{peer_note if peer else 'n/a'}"
    )
    print(
        f"{deltas:,} one-token deltas per stream; median of {reps} streams (+1 warm-up);"
        f" client process CPU only; {load_line(seen)}"
    )
    print()
    print(f"{'':<38} {'client CPU µs per delta':>24} {'wall ms':>9}")
    print(f"{'client':<38} {'median':>8} {'min':>7} {'max':>7} {'/stream':>9}   data check")
    print(row("(t) toolnexus Client.stream", inproc["t"], deltas))
    print(row("(a) httpx2 aiter_lines + json.loads", inproc["a"], deltas))
    print(row("(b) openai SDK AsyncOpenAI stream=True", peer, deltas, peer_note))
    print()
    t_a, t_b = ratio(inproc["t"], inproc["a"]), ratio(inproc["t"], peer)
    print(
        "t/a = "
        + (f"{t_a:.2f}x" if t_a else "n/a")
        + "   t/b = "
        + (f"{t_b:.2f}x" if t_b else "n/a")
    )
    print(verdict(t_a, t_b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.deltas)
    if args.peer:
        return peer_main(args.base_url, args.deltas, args.reps)

    from results import load_seen, machine_load  # bench/results.py, beside this file

    load_before = machine_load()
    server = ServerProcess(__file__, "--deltas", str(args.deltas))
    try:
        inproc = asyncio.run(measure_in_process(server.base_url, args.deltas, args.reps))
        peer, peer_note = measure_peer(server.base_url, args.deltas, args.reps)
    finally:
        server.close()
    seen = load_seen(load_before, machine_load())
    report(args.deltas, args.reps, inproc, peer, peer_note, seen)
    save(args.deltas, args.reps, inproc, peer, peer_note, seen)


def save(
    deltas: int,
    reps: int,
    inproc: dict[str, Result],
    peer: Result | None,
    peer_note: str,
    seen: dict[str, Any],
) -> None:
    """The figures above as the "stream_throughput" section of bench/results.json."""
    from results import record  # bench/results.py, beside this file

    def figures(result: Result | None, note: str = "") -> dict[str, Any]:
        if result is None:
            return {"skipped": note}
        if result.problem:
            return {"failed": result.problem}
        us = per_delta_us(result.cpu, deltas)
        return {
            "cpu_us_per_delta_median": round(statistics.median(us), 3),
            "cpu_us_per_delta_min": round(min(us), 3),
            "wall_ms_per_stream_median": round(statistics.median(result.wall) * 1000, 1),
        }

    t_a, t_b = ratio(inproc["t"], inproc["a"]), ratio(inproc["t"], peer)
    record(
        "stream_throughput",
        {
            "python": platform.python_version(),
            "deltas": deltas,
            "reps": reps,
            "machine": seen,
            "toolnexus": figures(inproc["t"]),
            "httpx2": figures(inproc["a"]),
            "openai": figures(peer, peer_note),
            "openai_versions": peer_note if peer else None,
            "t_over_a": round(t_a, 3) if t_a else None,
            "t_over_b": round(t_b, 3) if t_b else None,
            "verdict": verdict(t_a, t_b),
        },
    )


if __name__ == "__main__":
    main()
