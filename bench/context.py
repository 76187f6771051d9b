"""Deciding whether to compact, and building the request, for long threads.

For threads of 10, 1,000 and 10,000 messages that fit the window (no compaction is
needed): the time `ContextKeeper.prepare` takes to estimate the request and pick what is
sent ("decide"), and that plus the wire body ("+build"); medians of several runs, in CPU
time of this process (the machine is shared). "warm" is a thread whose last reply the
endpoint counted in this process (the estimate adds only what came since); "cold" one just
loaded from a store (every message estimated); "compacted" a cold thread that already
holds a compaction record.

    .venv/bin/python bench/context.py [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results import record  # noqa: E402

from toolnexus import ContextPolicy, create_client  # noqa: E402
from toolnexus._control import RunControl  # noqa: E402
from toolnexus.context._marks import COMPACTION_KEY  # noqa: E402
from toolnexus.context.keeper import Outgoing  # noqa: E402

SIZES = (10, 1_000, 10_000)
PARAGRAPH = "A turn of a long conversation, about as long as people write them. "


def thread_of(n: int, compacted: bool = False) -> list[dict]:
    messages = []
    for i in range(n):
        if i % 10 == 3:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {
                                "name": "read_file",
                                "arguments": f'{{"path": "f{i}.py"}}',
                            },
                        }
                    ],
                }
            )
        elif i % 10 == 4:
            messages.append(
                {"role": "tool", "tool_call_id": f"call_{i - 1}", "content": PARAGRAPH * 3}
            )
        else:
            role = "user" if i % 2 == 0 else "assistant"
            messages.append({"role": role, "content": f"message {i}. " + PARAGRAPH * 2})
    if compacted:
        half = n // 2
        messages.insert(
            half,
            {
                "role": "user",
                "content": "[summary of earlier conversation]",
                COMPACTION_KEY: {"summarized": [1, half - 1], "after_tokens": 900},
            },
        )
    messages.append({"role": "user", "content": "and now?"})
    return messages


async def median_ms(client, messages: list[dict], runs: int, *, warm: bool, build: bool) -> float:
    keeper, settings = client.settings.context, client.settings
    control = RunControl(None, None)
    if warm:  # as after a reply in this process: the endpoint counted the request
        keeper.note_reply(messages[-2], 250_000)
    times = []
    for _ in range(runs):
        out = Outgoing(messages, None, [], settings, control)
        start = time.process_time()
        sent = await keeper.prepare(out)
        if build:
            settings.wire.build_body(
                model=settings.model, messages=sent, system=None, tools=[], stream=True
            )
        times.append((time.process_time() - start) * 1000)
    control.close()
    return statistics.median(times)


async def main(runs: int) -> None:
    rows = {}
    policy = ContextPolicy(window=10_000_000)  # everything fits: no compaction
    for n in SIZES:
        cases = {
            "warm": (thread_of(n), True),
            "cold": (thread_of(n), False),
            "compacted": (thread_of(n, compacted=True), False),
        }
        for name, (messages, warm) in cases.items():
            async with create_client(
                base_url="http://127.0.0.1:9/v1",
                style="openai",
                model="m",
                api_key="k",
                context=policy,
            ) as client:
                decide = await median_ms(client, messages, runs, warm=warm, build=False)
                both = await median_ms(client, messages, runs, warm=warm, build=True)
            rows.setdefault(name, {})[n] = {
                "decide_ms": round(decide, 3),
                "decide_build_ms": round(both, 3),
            }
    print(f"{'thread':<12}" + "".join(f"{n:>24,}" for n in SIZES))
    print(f"{'':<12}" + "".join(f"{'decide / +build (ms)':>24}" for _ in SIZES))
    for name, by_size in rows.items():
        cells = "".join(
            f"{by_size[n]['decide_ms']:>14.3f} / {by_size[n]['decide_build_ms']:<7.3f}"
            for n in SIZES
        )
        print(f"{name:<12}{cells}")
    record(
        "context",
        {
            "runs": runs,
            "median_ms": {k: {str(n): v for n, v in by.items()} for k, by in rows.items()},
        },
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    asyncio.run(main(parser.parse_args().runs))
