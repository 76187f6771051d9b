"""Code that runs in *other processes* for the store tests (importable by multiprocessing
"spawn" children and by `python -c` subprocesses), plus the turn builder they share."""

from __future__ import annotations

import asyncio
import json
import os
import sys


def turn(tag: str) -> list[dict]:
    """One complete turn with a tool call, as the loop stores it."""
    call_id = f"call_{tag}"
    return [
        {"role": "user", "content": f"question {tag}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "lookup", "arguments": json.dumps({"key": tag})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"value of {tag}"},
        {"role": "assistant", "content": f"answer {tag}"},
    ]


def append_turns(path: str, thread: str, name: str, rounds: int, barrier) -> None:
    """Each round: load the thread, wait until every process has loaded it too, then save
    it with one new turn. Every save but the first of a round starts from a stale copy."""
    from toolnexus.stores import SQLiteStore

    async def main() -> None:
        store = SQLiteStore(path, timeout=30)
        for i in range(rounds):
            history = await store.get(thread) or []
            await asyncio.to_thread(barrier.wait, 30)
            await store.save(thread, history + turn(f"{name}-{i}"))
        await store.aclose()

    asyncio.run(main())


def big_messages(n: int, word: str) -> list[dict]:
    filler = "x" * 2000
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{word} {i} {filler}"}
        for i in range(n)
    ]


def write_then_hang_before_commit(path: str, thread: str, mode: str) -> None:
    """Start a big save of `thread` (append or rewrite); when SQLite is about to run its
    COMMIT, print "ready" and block until killed. Prints "committed" if it ever gets past."""
    from toolnexus.stores import SQLiteStore

    async def main() -> None:
        store = SQLiteStore(path)
        history = await store.get(thread)

        def arm(conn) -> None:
            def trace(sql: str) -> None:
                if sql.strip().upper().startswith("COMMIT"):
                    os.write(1, b"ready\n")
                    os.read(0, 1)  # the parent never writes: we wait here for SIGKILL

            conn.set_trace_callback(trace)

        await store._call(arm)
        uncommitted = big_messages(3000, "uncommittedword")
        new = history + uncommitted if mode == "append" else uncommitted
        await store.save(thread, new)
        os.write(1, b"committed\n")

    asyncio.run(main())


if __name__ == "__main__":  # python -m tests.support.store_workers hang PATH THREAD MODE
    if sys.argv[1] == "hang":
        write_then_hang_before_commit(sys.argv[2], sys.argv[3], sys.argv[4])
