"""Thread store speed: the cost of saving one new turn must not grow with the thread.

For each store (memory, SQLite, and PostgreSQL when TOOLNEXUS_TEST_PG_DSN is set) and
threads of 10, 1,000 and 10,000 messages: load the thread, save it with one new turn
(a user message and an answer), as `Client.ask(id=...)` does; medians of several runs.
"prefix check" is the part of that save which does grow with the thread: an in-memory
comparison proving the earlier messages were not edited in place (no I/O). For contrast,
the cost of rewriting the whole thread (what a save without append would pay every
turn). Then list 10,000 threads. "save" is wall time; "(cpu)" the CPU time of this
process, which other programs on the machine do not disturb.

    .venv/bin/python bench/store.py [--runs 9] [--threads 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolnexus.stores import MemoryStore  # noqa: E402
from toolnexus.stores._planner import _extends  # noqa: E402

SIZES = (10, 1_000, 10_000)
PARAGRAPH = (
    "The store appends only what is new, so a turn costs the same on a short "
    "thread as on a long one. "
)


def message(i: int) -> dict:
    if i % 10 == 3:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": f'{{"path": "src/f{i}.py"}}'},
                }
            ],
        }
    if i % 10 == 4:
        return {"role": "tool", "tool_call_id": f"call_{i - 1}", "content": PARAGRAPH * 3}
    role = "user" if i % 2 == 0 else "assistant"
    return {"role": role, "content": f"message {i}. " + PARAGRAPH * 2}


def thread_of(n: int) -> list[dict]:
    return [message(i) for i in range(n)]


def new_turn(k: int) -> list[dict]:
    return [
        {"role": "user", "content": f"follow-up {k}: " + PARAGRAPH},
        {
            "role": "assistant",
            "content": f"answer {k}: " + PARAGRAPH * 2,
            "reasoning": "thinking about it",
        },
    ]


async def timed(awaitable) -> tuple[float, object]:
    start = time.perf_counter()
    result = await awaitable
    return time.perf_counter() - start, result


async def cpu_and_wall(awaitable) -> tuple[float, float]:
    """CPU seconds of this process (every thread: the SQLite worker too) and wall seconds.
    The CPU figure does not move when other programs load the machine."""
    cpu, wall = time.process_time(), time.perf_counter()
    await awaitable
    return time.process_time() - cpu, time.perf_counter() - wall


async def measure(store, runs: int, n_threads: int) -> dict:
    out: dict = {}
    for n in SIZES:
        id = f"bench-{n}-{uuid.uuid4().hex[:8]}"
        await store.save(id, thread_of(n))
        loads, saves, save_cpus = [], [], []
        for k in range(runs):
            took, history = await timed(store.get(id))
            loads.append(took)
            cpu, took = await cpu_and_wall(
                store.save(id, history + new_turn(k), version=history.version)
            )
            saves.append(took)
            save_cpus.append(cpu)
        # The one part of a turn's save that grows with the thread: checking in memory
        # that the earlier messages were not edited in place (no I/O).
        history = await store.get(id)
        held = store._versions.exact(id)[1]
        checks = []
        for _ in range(runs):
            candidate = history + new_turn(0)
            start = time.process_time()
            _extends(candidate, held)
            checks.append(time.process_time() - start)
        rewrites = []
        for k in range(max(3, runs // 3)):
            history = await store.get(id)
            rewritten = [{**history[0], "content": f"compacted {k}"}] + history[1:]
            took, _ = await timed(store.save(id, rewritten, version=history.version))
            rewrites.append(took)
        out[n] = (
            statistics.median(saves),
            statistics.median(save_cpus),
            statistics.median(checks),
            statistics.median(loads),
            statistics.median(rewrites),
        )
    many = [f"list-{uuid.uuid4().hex[:6]}-{i}" for i in range(n_threads)]
    for i, id in enumerate(many):
        await store.save(
            id, [{"role": "user", "content": f"thread {i}"}, {"role": "assistant", "content": "ok"}]
        )
    total = len(await store.list_threads())
    lists = [(await timed(store.list_threads()))[0] for _ in range(max(3, runs // 2))]
    out["list"] = (statistics.median(lists), total)
    return out


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.2f} ms"


def report(name: str, figures: dict) -> None:
    print(f"\n{name}")
    print(
        f"  {'messages':>9}  {'save 1 turn':>12}  {'(cpu)':>12}  {'prefix check':>12}"
        f"  {'load':>12}  {'rewrite all':>12}"
    )
    for n in SIZES:
        save, cpu, check, load, rewrite = figures[n]
        print(
            f"  {n:>9,}  {ms(save):>12}  {ms(cpu):>12}  {ms(check):>12}  {ms(load):>12}"
            f"  {ms(rewrite):>12}"
        )
    small, big = figures[SIZES[0]], figures[SIZES[-1]]
    print(
        f"  one turn onto {SIZES[-1]:,} vs {SIZES[0]:,} messages: "
        f"+{(big[1] - small[1]) * 1000:.2f} ms cpu, of which the prefix check "
        f"+{(big[2] - small[2]) * 1000:.2f} ms; rewriting the whole thread instead costs "
        f"{big[4] / max(big[0], 1e-9):.0f}x the turn"
    )
    took, total = figures["list"]
    print(f"  list_threads() over {total:,} threads: {ms(took).strip()}")
    save_results(name, figures)


RESULTS: dict = {}


def save_results(name: str, figures: dict) -> None:
    """Every store reported so far, as the "store" section of bench/results.json."""
    from results import record  # bench/results.py, beside this file

    keys = ("save_ms", "save_cpu_ms", "prefix_check_ms", "load_ms", "rewrite_all_ms")
    RESULTS[name] = {
        "messages": {
            n: {k: round(v * 1000, 3) for k, v in zip(keys, figures[n], strict=True)} for n in SIZES
        },
        "list_threads_ms": round(figures["list"][0] * 1000, 3),
        "list_threads_count": figures["list"][1],
    }
    record("store", RESULTS)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--threads", type=int, default=10_000)
    args = parser.parse_args()
    print(
        f"thread stores: medians of {args.runs} runs; one turn = 2 messages "
        f"(~{len(str(new_turn(0)))} bytes)"
    )

    report("memory (MemoryStore)", await measure(MemoryStore(), args.runs, args.threads))

    from toolnexus.stores import SQLiteStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "threads.db")
        try:
            figures = await measure(store, args.runs, args.threads)
        finally:
            await store.aclose()
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
    report(f"SQLite (SQLiteStore, WAL; file {size / 1e6:.0f} MB)", figures)

    dsn = os.environ.get("TOOLNEXUS_TEST_PG_DSN")
    if not dsn:
        print("\nPostgreSQL: skipped (set TOOLNEXUS_TEST_PG_DSN=postgresql://... to include it)")
        return
    from toolnexus.stores import PostgresStore

    schema = f"bench_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(dsn, schema=schema)
    try:
        figures = await measure(store, args.runs, args.threads)
    finally:
        await store.aclose()
        import psycopg

        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    report("PostgreSQL (PostgresStore, loopback)", figures)


if __name__ == "__main__":
    asyncio.run(main())
