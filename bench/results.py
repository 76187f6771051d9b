"""bench/results.json: one section per benchmark, merged, so `make bench` leaves one file.

    from results import record
    record("loop", {...})   # replaces the "loop" section, keeps every other one

Stdlib only. The read-modify-write holds an exclusive lock on the file, so two benchmarks
finishing at once do not drop each other's section. A file that is not a JSON object
(hand-edited, truncated) is started afresh.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

PATH = Path(__file__).resolve().parent / "results.json"


def machine_load() -> dict[str, Any]:
    """The 1-minute load average, the cores, and what that makes the machine: "quiet" (load
    under half the cores), "busy" (load at least the cores: all of them kept busy by
    others) or "some load". Goals that depend on it say which applies."""
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    state = "quiet" if load < cores / 2 else "busy" if load >= cores else "some load"
    return {"load_average": round(load, 2), "cores": cores, "state": state}


_STATES = ("quiet", "some load", "busy")


def load_seen(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a benchmark saw, from machine_load() before and after it: the busier state."""
    state = max(before["state"], after["state"], key=_STATES.index)
    return {
        "load_average_before": before["load_average"],
        "load_average_after": after["load_average"],
        "cores": before["cores"],
        "state": state,
    }


def load_line(seen: dict[str, Any]) -> str:
    """One line saying the load a benchmark saw, for its printout."""
    return (
        f"load average {seen['load_average_before']:.2f} before,"
        f" {seen['load_average_after']:.2f} after, on {seen['cores']} cores:"
        f" {seen['state']}"
    )


def record(section: str, data: Any, path: Path = PATH) -> Path:
    """Store `data` as the `section` of results.json (JSON-serializable); return the path."""
    with open(path, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        try:
            results = json.loads(f.read() or "{}")
        except ValueError:
            results = {}
        if not isinstance(results, dict):
            results = {}
        results[section] = data
        f.seek(0)
        f.truncate()
        f.write(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return path
