"""What the sandbox costs a trivial `bash` call.

Wall time, time.perf_counter() in this process, of running `bash -c true` the way the bash
tool runs it (toolnexus.tools._command_run.run_command: a process group of its own, output
read to the end), the command line built by toolnexus.tools.sandbox.Sandbox.command:

  no sandbox                 the launcher that only keeps descendants in (`reaped`)
  Landlock alone             the fallback: Landlock, the socket filter, no capabilities,
                             a PID namespace (`[sandbox] namespaces = false`)
  namespaces + Landlock      bubblewrap's user, mount, PID, network, IPC and UTS
                             namespaces around the same launcher and Landlock (the default)

The three take turns, round after round (the order reversed every other round), so drift in
the machine hits them alike; medians and p95 of the rounds, and the ratios to Landlock alone
and to no sandbox from the same run. The figures also go to the "sandbox" section of
bench/results.json.

    .venv/bin/python bench/sandbox.py [--rounds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import load_line, load_seen, machine_load, record  # noqa: E402

from toolnexus.tools._command_run import run_command  # noqa: E402
from toolnexus.tools.sandbox import Sandbox, SandboxPolicy, reaped  # noqa: E402

ARGV = ["bash", "-c", "true"]


async def one_call(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    ran = await run_command(argv, cwd=cwd, env=env, timeout=60)
    if ran.code != 0:
        raise SystemExit(f"{argv[:3]}... exited {ran.code}: {ran.output[:300]}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    rounds = parser.parse_args().rounds
    before = machine_load()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        namespaced = Sandbox(SandboxPolicy(), [work])
        landlock = Sandbox(SandboxPolicy(namespaces=False), [work])
        cases = {"no sandbox": (reaped(ARGV), dict(namespaced.environment()))}
        for name, box in (("Landlock alone", landlock), ("namespaces + Landlock", namespaced)):
            enforced = box.enforced()
            wanted = "namespaces" if box is namespaced else "landlock"
            if enforced.kind != wanted:
                print(f"{name}: not measured here ({enforced.summary()})")
                continue
            cases[name] = (box.command(ARGV, work), box.environment())
        times: dict[str, list[float]] = {name: [] for name in cases}

        async def measure() -> None:
            names = list(cases)
            for name in names:  # warm-up
                await one_call(*cases[name], work)
            for turn in range(rounds):
                for name in names if turn % 2 == 0 else reversed(names):
                    times[name].append(await one_call(*cases[name], work))

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
