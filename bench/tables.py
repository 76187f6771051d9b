"""The README's performance figures, from bench/results.json: run by `make bench` after the
benchmarks. Prints every goal of issue 26 with its ratio and the load each benchmark saw,
then the Markdown of the README's agent-loop table and the streaming and start-up lines,
and writes that Markdown to bench/tables.md.

Only a run on a quiet machine (every benchmark saw a load average under half the cores)
is meant to replace the README's figures: the printout says whether this one was. Stdlib
only; a section that is missing (its benchmark failed or was not run) is named, not
guessed.

    .venv/bin/python bench/tables.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results.json"
OUT = BENCH / "tables.md"
MODES = ("run", "stream")
LOOP_SECTIONS = (("loop", "http"), ("loop_https", "https"))  # bench/loop.py's two passes


def load_of(section: dict[str, Any]) -> str:
    seen = section.get("machine") or {}
    if "state" not in seen:
        return "load not recorded"
    return (
        f"load average {seen['load_average_before']:.2f} -> {seen['load_average_after']:.2f}"
        f" on {seen['cores']} cores: {seen['state']}"
    )


def goals(results: dict[str, Any]) -> list[str]:
    """Each goal of issue 26 beside its ratio and the load its benchmark saw."""
    lines = []
    start = results.get("startup")
    lines.append(
        "piped one-shot, llm / toolnexus (goal >= 4x quiet, >= 3x busy): "
        + (
            f"{start['verdict'].removeprefix('verdict: ')} [{load_of(start)}]"
            if start
            else "not measured (bench/startup.py)"
        )
    )
    for section, over in LOOP_SECTIONS:
        loop = results.get(section)
        for mode in MODES:
            verdict = (loop or {}).get("verdict", {}).get(mode, {})
            ratio = verdict.get("vs_pypi")
            lines.append(
                f"agent run ({mode}, over {over}), toolnexus 0.21.0 / toolnexus"
                " (goal >= 1.25x): "
                + (
                    f"{ratio:.2f}x wall ({verdict['vs_pypi_cpu']:.2f}x CPU): "
                    f"{'MET' if ratio >= 1.25 else 'MISSED'} [{load_of(loop)}]"
                    if loop and ratio
                    else f"not measured (bench/loop.py --over {over})"
                )
            )
    stream = results.get("stream_throughput")
    ratio = (stream or {}).get("t_over_a")
    lines.append(
        "streaming CPU per delta, toolnexus / raw httpx2 (goal <= 1.0x): "
        + (
            f"{ratio:.2f}x: {'MET' if ratio <= 1.0 else 'MISSED'} [{load_of(stream)}]"
            if ratio
            else "not measured (bench/stream_throughput.py)"
        )
    )
    return lines


def loop_table(loop: dict[str, Any]) -> list[str]:
    libraries = loop["libraries"]
    ours = {mode: libraries.get("toolnexus", {}).get(mode, {}).get("median_ms") for mode in MODES}
    rows = [
        "| library | mode | median ms | p95 ms | CPU ms | peak MB | vs toolnexus |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for mode in MODES:
        for name, lib in libraries.items():
            fig = lib.get(mode, {})
            label = "**toolnexus**" if name == "toolnexus" else lib["label"]
            if "median_ms" not in fig:
                rows.append(
                    f"| {label} | {mode} | failed: {fig.get('failed', 'not run')} | | | | |"
                )
                continue
            median = (
                f"**{fig['median_ms']:.2f}**" if name == "toolnexus" else f"{fig['median_ms']:.2f}"
            )
            versus = f"{fig['median_ms'] / ours[mode]:.2f}x" if ours[mode] else "n/a"
            rows.append(
                f"| {label} | {mode} | {median} | {fig['p95_ms']:.2f} "
                f"| {fig['cpu_ms']:.2f} | {fig['peak_mb']:.1f} | {versus} |"
            )
    return rows


def markdown(results: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for section, over in LOOP_SECTIONS:
        loop = results.get(section)
        if loop:
            machine = loop["machine"]
            out += [
                f"**One agent run over {over}** (`bench/loop.py`), Python {machine['python']}, "
                f"{machine['cores']} cores, {load_of(loop)}; {loop['runs']} runs per library "
                f"after {loop['warmup']} warm-up runs, in alternating rounds of "
                f"{loop['batch']}.",
                "",
                *loop_table(loop),
                "",
            ]
    stream = results.get("stream_throughput")
    if stream and "cpu_us_per_delta_median" in stream.get("toolnexus", {}):
        sdk = stream.get("openai", {}).get("cpu_us_per_delta_median")
        out += [
            f"**Streaming** (`bench/stream_throughput.py`, {load_of(stream)}): client CPU "
            f"time per delta over {stream['deltas']:,} one-token deltas: toolnexus "
            f"**{stream['toolnexus']['cpu_us_per_delta_median']:.2f} µs**, raw `httpx2` "
            f"`aiter_lines` + `json.loads` "
            f"{stream['httpx2']['cpu_us_per_delta_median']:.2f} µs "
            f"({stream['t_over_a']:.2f}x)" + (f", the `openai` SDK {sdk:.2f} µs." if sdk else "."),
            "",
        ]
    start = results.get("startup")
    if start:

        def wall(label: str) -> str:
            fig = start.get(label, {})
            return f"{fig['wall_ms_median']:.1f} ms" if "wall_ms_median" in fig else "n/a"

        ours, llm = 'echo hi | toolnexus ask "say hi"', 'echo hi | llm -m stub "say hi"'
        ratio = start["ratio"].split(": ")[-1].split(" wall")[0]
        out += [
            f"**Start-up** (`bench/startup.py`, {load_of(start)}), wall time of a whole "
            f"process, median of {start['reps']}: `python -c pass` "
            f"{wall('python -c pass')}, `toolnexus --version` "
            f"{wall('toolnexus --version')}, `{ours}` **{wall(ours)}**, the same one-shot "
            f"with `llm` {wall(llm)} ({ratio}).",
            "",
        ]
    return out


def main() -> int:
    try:
        results = json.loads(RESULTS.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"no figures: {RESULTS.name} cannot be read ({exc})")
        return 1
    print("goals (issue 26):")
    for line in goals(results):
        print(f"  {line}")
    states = {
        (results.get(name) or {}).get("machine", {}).get("state")
        for name in ("startup", "loop", "loop_https", "stream_throughput")
    }
    quiet = states == {"quiet"}
    text = "\n".join(markdown(results))
    OUT.write_text(text, encoding="utf-8")
    print()
    print(
        f"the README's figures, as Markdown (also in {OUT.relative_to(BENCH.parent)}):"
        + ("" if quiet else " NOT from a quiet machine, so not for the README")
    )
    print()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
