"""`toolnexus config show | init`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .config import Config
from .errors import UsageError
from .redact import Redactor

EXAMPLE = Path(__file__).with_name("config.example.toml")


def show(config: Config) -> str:
    lines = [f"# {config.path}" + ("" if config.path.exists() else " (not created yet)")]
    lines += [f"{path} = {json.dumps(value)}" for path, value in _flatten(config.data, "")]
    return "\n".join(lines)


def _flatten(data: dict[str, Any], prefix: str) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    redact = Redactor()
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, path + ".")
        else:
            rows.append((path, redact.setting(path, value)))
    return rows


def init(path: Path, *, force: bool = False) -> Path:
    if path.exists() and not force:
        raise UsageError(f"{path} already exists: edit it, or pass --force to overwrite")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    return path
