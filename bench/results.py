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
