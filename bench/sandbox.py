"""What the sandbox costs a trivial `bash` call.

Wall time, time.perf_counter() in this process, of running `bash -c true` the way the bash
tool runs it (toolnexus.tools._command_run.run_command: a process group of its own, output
read to the end), the command line built by toolnexus.tools.sandbox.Sandbox.command:

  no sandbox                 the launcher that only keeps descendants in (`reaped`)
  Landlock alone             the fallback: Landlock, the socket filter, no capabilities,
                             a PID namespace (`[sandbox] namespaces = false`)
  namespaces + Landlock      bubblewrap's user, mount, PID, network, IPC and UTS
                             namespaces around the same launcher and Landlock, writing to
                             the workspace directly (`[sandbox] overlay = false`)
  namespaces + overlay       the same, the workspace seen through an overlay whose changes
                             are read and applied when the call ends (the default)

The three take turns, round after round (the order reversed every other round), so drift in
the machine hits them alike; medians and p95 of the rounds, and the ratios to Landlock alone
and to no sandbox from the same run. The figures also go to the "sandbox" section of
bench/results.json.

    .venv/bin/python bench/sandbox.py [--rounds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import load_line, load_seen, machine_load, record  # noqa: E402

from toolnexus.journal._apply import apply, plan  # noqa: E402
from toolnexus.tools._command_run import run_command  # noqa: E402
from toolnexus.tools.sandbox import Sandbox, SandboxPolicy, reaped  # noqa: E402

ARGV = ["bash", "-c", "true"]
Call = Callable[[], Awaitable[float]]


async def one_call(command: Callable[[int], list[str]], env: dict[str, str], cwd: Path) -> float:
    """One call of the command line `command` makes (given the launcher's `tell`)."""
    started = time.perf_counter()
    ran = await run_command(command, cwd=cwd, env=env, timeout=60)
    if ran.code != 0:
        raise SystemExit(f"the call exited {ran.code}: {ran.output[:300]}")
    return time.perf_counter() - started


async def overlay_call(box: Sandbox, work: Path) -> float:
    """A call as the bash tool makes it: a fresh overlay, the command, its changes read
    and applied (none here), the overlay removed."""
    started = time.perf_counter()
    overlay = box.new_overlay()
    assert overlay is not None
    ran = await run_command(
        lambda tell: box.command(ARGV, work, overlay, tell),
        cwd=work,
        env=box.environment(),
        timeout=60,
    )
    found = plan(overlay.upper, work, "bash", started_ns=time.time_ns())
    apply(found, overlay.upper, work, overlay.upper.parent)
    if ran.code != 0:
        raise SystemExit(f"the overlay call exited {ran.code}: {ran.output[:300]}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    rounds = parser.parse_args().rounds
    before = machine_load()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        namespaced = Sandbox(SandboxPolicy(overlay=False), [work])
        landlock = Sandbox(SandboxPolicy(namespaces=False), [work])
        overlaid = Sandbox(SandboxPolicy(), [work])
        env = dict(namespaced.environment())
        cases: dict[str, Call] = {
            "no sandbox": functools.partial(one_call, functools.partial(reaped, ARGV), env, work)
        }
        boxes = {"Landlock alone": landlock, "namespaces + Landlock": namespaced}
        for name, box in boxes.items():
            if box.enforced().kind != ("landlock" if box is landlock else "namespaces"):
                print(f"{name}: not measured here ({box.enforced().summary()})")
                continue
            confined = functools.partial(box.command, ARGV, work, None)
            cases[name] = functools.partial(one_call, confined, box.environment(), work)
        if overlaid.enforced().overlay:
            cases["namespaces + overlay"] = lambda: overlay_call(overlaid, work)
        else:
            print(f"namespaces + overlay: not measured here ({overlaid.enforced().summary()})")
        times: dict[str, list[float]] = {name: [] for name in cases}

        async def measure() -> None:
            names = list(cases)
            for name in names:  # warm-up
                await cases[name]()
            for turn in range(rounds):
                for name in names if turn % 2 == 0 else reversed(names):
                    times[name].append(await cases[name]())

        asyncio.run(measure())
    seen = load_seen(before, machine_load())
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    p95 = {name: statistics.quantiles(values, n=20)[18] * 1000 for name, values in times.items()}
    print(f"a trivial bash call (`bash -c true`), {rounds} rounds; {load_line(seen)}")
    print(f"{'':26} {'median ms':>10} {'p95 ms':>8} {'/ none':>8} {'/ Landlock':>11}")
    base, landlock_ms = medians["no sandbox"], medians.get("Landlock alone")
    for name in cases:
        vs_landlock = f"{medians[name] / landlock_ms:.2f}x" if landlock_ms else "-"
        print(
            f"{name:26} {medians[name]:10.2f} {p95[name]:8.2f} "
            f"{medians[name] / base:7.2f}x {vs_landlock:>11}"
        )
    record(
        "sandbox",
        {
            "rounds": rounds,
            "median_ms": medians,
            "p95_ms": p95,
            "load": seen,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
