"""`toolnexus config show | init`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .config import Config
from .errors import UsageError

EXAMPLE = Path(__file__).with_name("config.example.toml")
# A key whose last word is one of these holds a secret ("max_tokens" does not).
_SECRET_KEY = re.compile(r"(^|[_-])(key|token|secret|password|authorization|cookie)$", re.I)


def show(config: Config) -> str:
    lines = [f"# {config.path}" + ("" if config.path.exists() else " (not created yet)")]
    lines += [f"{path} = {json.dumps(value)}" for path, value in _flatten(config.data, "")]
    return "\n".join(lines)


def _flatten(data: dict[str, Any], prefix: str) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, path + ".")
        else:
            rows.append((path, _masked(path, value)))
    return rows


def _masked(path: str, value: Any) -> Any:
    if _SECRET_KEY.search(path.rsplit(".", 1)[-1]) or ".headers." in path.lower():
        return "***"
    if isinstance(value, str) and "://" in value and "@" in value:
        scheme, rest = value.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"  # a DSN with credentials
    return value


def init(path: Path, *, force: bool = False) -> Path:
    if path.exists() and not force:
        raise UsageError(f"{path} already exists: edit it, or pass --force to overwrite")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    return path
