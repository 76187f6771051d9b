"""Instructions per agent run: bench/loop.py's run counted by callgrind, not timed.

Wall and CPU times on a shared machine move with its load; instruction counts do not. This
runs one (library, mode) of bench/loop.py under `valgrind --tool=callgrind` against the same
loopback stub (its own process, not counted): set-up and --warmup runs, then --runs runs
between two calls of os.getppid(), which callgrind is told to dump before
(--dump-before=getppid), so the middle dump holds exactly the timed runs, every thread
included (the sync tool's worker too). Prints instructions per run: the same on a busy
machine as on a quiet one, so a change can be judged by them while others run tests.
(They leave out what the kernel does: syscalls, thread switches. bench/loop.py says
what a run takes.)

    .venv/bin/python bench/instructions.py [--runs 50] [--warmup 20]
        [--only toolnexus,toolnexus-pypi] [--modes run,stream] [--keep DIR]

Stdlib only, like loop.py; the libraries run in the interpreters loop.py uses.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import loop  # noqa: E402  (after the path: bench/ is not a package)


def measure(lib: str, mode: str, base_url: str, warmup: int, runs: int) -> None:
    """--measure: the runs themselves, in the interpreter under callgrind."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
    if lib in loop.THIS_REPO:
        sys.path.insert(0, str(loop.ROOT))

    async def session() -> None:
        run_once, close = await loop.SETUPS[lib](base_url, mode)
        try:
            problem = await loop.batch(run_once, warmup, [], [])
            os.getppid()  # callgrind dumps here: set-up and warm-up end
            problem = problem or await loop.batch(run_once, runs, [], [])
            os.getppid()  # and here: the timed runs end
        finally:
            await close()
        if problem:
            raise SystemExit(f"{lib} {mode}: {problem}")

    asyncio.run(session())


def count(
    python: Path, lib: str, mode: str, base_url: str, args: argparse.Namespace, out: Path
) -> tuple[float, str]:
    """Instructions per run of (lib, mode); 0 and why when it could not be counted."""
    prefix = out / f"{lib}-{mode}.callgrind"
    command = [
        "valgrind",
        "--tool=callgrind",
        "--dump-before=getppid",
        f"--callgrind-out-file={prefix}",
        str(python),
        __file__,
        "--measure",
        lib,
        "--mode",
        mode,
        "--base-url",
        base_url,
        "--warmup",
        str(args.warmup),
        "--runs",
        str(args.runs),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    runs_dump = Path(f"{prefix}.2")
    if done.returncode or not runs_dump.exists():
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return 0, f"failed: {tail}"
    text = runs_dump.read_text(encoding="utf-8", errors="replace")
    found = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    if found is None:
        return 0, f"failed: no totals in {runs_dump}"
    return int(found.group(1)) / args.runs, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--only", default="toolnexus,toolnexus-pypi")
    parser.add_argument("--modes", default=",".join(loop.MODES))
    parser.add_argument("--keep", help="keep the callgrind files in this folder")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(args.measure, args.mode, args.base_url, args.warmup, args.runs)
    if not shutil.which("valgrind"):
        print("skipped: valgrind is not installed")
        return None
    libs = args.only.split(",")
    pythons = loop.interpreters(libs)
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="toolnexus-ir-"))
    out.mkdir(parents=True, exist_ok=True)
    stub = loop.Stub()
    try:
        for lib in libs:
            python, why = pythons[lib]
            for mode in args.modes.split(","):
                if python is None:
                    print(f"{lib:18} {mode:6} failed: {why}")
                    continue
                per_run, why = count(python, lib, mode, stub.base_url, args, out)
                figure = f"{per_run / 1e6:6.2f} M instructions per run" if per_run else why
                print(f"{lib:18} {mode:6} {figure}", flush=True)
    finally:
        stub.close()
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
