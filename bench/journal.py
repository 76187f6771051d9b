"""What the workspace journal costs a command that changes many files, or one big file.

Wall time, time.perf_counter() in this process, of one bash call made the way the bash
tool makes it (toolnexus.tools._command_run.run_command), median of several:

  10,000 small files     `for i in $(seq 10000); do echo $i > d/f$i; done` in a fresh
                         workspace, and what the journal keeps for them (contents + records)
  one byte of a big file `dd ... conv=notrunc` writes one byte in the middle of a file of
                         --big-mb MB (1024 by default): the overlay copies the whole file up,
                         the apply hashes it and moves it back by rename

each with the sandbox off (the launcher alone, writing to the workspace directly), the
namespaces writing to the workspace directly (`[sandbox] overlay = false`), and the
namespaces with the overlay, its changes read, kept and applied (the default). The ratios
are to the sandbox off, from the same run. Figures go to the "journal" section of
bench/results.json.

    .venv/bin/python bench/journal.py [--reps 3] [--big-mb 1024]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import load_line, load_seen, machine_load, record  # noqa: E402

from toolnexus.journal import Journal  # noqa: E402
from toolnexus.tools._command_run import run_command  # noqa: E402
from toolnexus.tools.sandbox import SandboxPolicy, reaped  # noqa: E402
from toolnexus.tools.workspace import Workspace  # noqa: E402

MANY = "mkdir -p d && for i in $(seq 10000); do echo $i > d/f$i; done"
ONE_BYTE = "printf x | dd of=big bs=1 seek=$(( $(stat -c %s big) / 2 )) conv=notrunc status=none"
KINDS = ("sandbox off", "namespaces, no overlay", "namespaces + overlay + journal")


async def call(kind: str, work: Path, journal: Path, command: str) -> float:
    argv = ["bash", "-c", command]
    started = time.perf_counter()
    if kind == "sandbox off":
        unconfined = functools.partial(reaped, argv)
        ran = await run_command(unconfined, cwd=work, env=os.environ, timeout=600)
    else:
        overlay_on = kind.endswith("journal")
        workspace = Workspace(
            work, sandbox=SandboxPolicy(overlay=overlay_on), journal=Journal(journal)
        )
        box = workspace.sandbox
        overlay = box.new_overlay()
        begun = time.time_ns()
        ran = await run_command(
            functools.partial(box.command, argv, work, overlay),
            cwd=work,
            env=box.environment(),
            timeout=600,
        )
        if overlay is not None:
            workspace.apply_overlay(overlay, begun, interrupted=False)
    if ran.code != 0:
        raise SystemExit(f"{kind}: exited {ran.code}: {ran.output[:300]}")
    return time.perf_counter() - started


def measure(
    reps: int, prepare: Callable[[Path], None], command: str
) -> tuple[dict[str, float], dict[str, int]]:
    """Median seconds per kind, and the bytes the journal holds after one call."""
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    sizes: dict[str, int] = {}
    for turn in range(reps):
        for kind in KINDS if turn % 2 == 0 else reversed(KINDS):
            # in the home, as projects are: the overlay's folders (in the cache folder)
            # are then on the workspace's file system, and applying is renaming
            with tempfile.TemporaryDirectory(dir=Path.home()) as folder:
                work, journal = Path(folder) / "work", Path(folder) / "journal"
                work.mkdir()
                prepare(work)
                times[kind].append(asyncio.run(call(kind, work, journal, command)))
                sizes[kind] = _bytes(journal)
    return {k: statistics.median(v) for k, v in times.items()}, sizes


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def big_file(megabytes: int) -> Callable[[Path], None]:
    def prepare(work: Path) -> None:
        with open(work / "big", "wb") as handle:
            chunk = os.urandom(1024 * 1024)
            for _ in range(megabytes):
                handle.write(chunk)

    return prepare


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--big-mb", type=int, default=1024)
    args = parser.parse_args()
    if Workspace(Path.cwd()).sandbox.enforced().kind != "namespaces":
        print("no namespaces here: the journal's overlay is not measured")
        return 0
    before = machine_load()
    cases = {
        "10,000 small files": measure(args.reps, lambda work: None, MANY),
        f"one byte of a {args.big_mb} MB file": measure(args.reps, big_file(args.big_mb), ONE_BYTE),
    }
    seen = load_seen(before, machine_load())
    print(f"one bash call, median of {args.reps}; {load_line(seen)}")
    print(f"{'':32} {'kind':32} {'seconds':>9} {'/ off':>7} {'journal MB':>11}")
    for case, (medians, sizes) in cases.items():
        for kind in KINDS:
            ratio = medians[kind] / medians["sandbox off"]
            size = f"{sizes[kind] / 1e6:.2f}" if kind.endswith("journal") else "-"
            print(f"{case:32} {kind:32} {medians[kind]:9.3f} {ratio:6.2f}x {size:>11}")
    record(
        "journal",
        {
            case: {"median_s": medians, "journal_bytes": sizes}
            for case, (medians, sizes) in cases.items()
        }
        | {"load": seen, "reps": args.reps, "big_mb": args.big_mb},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
