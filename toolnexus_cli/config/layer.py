"""A repository's layer as a value: what its files would add to the config (project.py
reads them), the digest its trust is given to, and the lines that show it."""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG = Path(".toolnexus") / "config.toml"
MAX_REFERENCED = 1024 * 1024 * 16  # bytes of a referenced file hashed (a bigger one: its size)


@dataclass
class ProjectLayer:
    """What a repository at `root` would add: its config's accepted keys (`config`, paths
    made absolute), the keys it named that were `ignored`, its MCP servers by name (from
    `.mcp.json` and the config's `mcp`), its hooks (each a table of hooks.py's shape, with
    the file it came from) and every file it consists of or runs (`files`)."""

    root: Path
    config: dict[str, Any] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    servers: dict[str, Any] = field(default_factory=dict)
    hooks: list[dict[str, Any]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.config or self.servers or self.hooks)

    def digest(self) -> str:
        """A hash of every file of the layer and every file inside the repository it runs:
        a change to any of them makes it a layer not yet trusted."""
        whole = hashlib.sha256()
        for path in sorted(set(self.files)):
            whole.update(str(path.relative_to(self.root)).encode() + b"\0")
            whole.update(_file_hash(path) + b"\0")
        return whole.hexdigest()

    def summary(self) -> list[str]:
        """What it would add, a line each: the config's keys, servers with their commands,
        hooks with theirs (for the trust question and `toolnexus trust`)."""
        lines = []
        if self.config:
            lines.append(f"{CONFIG}: sets {', '.join(self.config)}")
        for name, entry in self.servers.items():
            lines.append(f"MCP server {name}: {_server_line(entry)}")
        for hook in self.hooks:
            matcher = f" {hook['matcher']}" if hook.get("matcher") else ""
            lines.append(f"hook {hook['event']}{matcher}: {hook['command']} ({hook['source']})")
        return lines

    def ignored_line(self) -> str | None:
        if not self.ignored:
            return None
        return (
            f"{self.root / CONFIG}: ignored {', '.join(self.ignored)}: only your own config "
            "decides where keys and conversations go and how far the sandbox reaches"
        )


def _file_hash(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_REFERENCED:
                return f"size {os.fstat(handle.fileno()).st_size}".encode()
            return hashlib.sha256(handle.read()).hexdigest().encode()
    except OSError:
        return b"missing"


def _server_line(entry: Any) -> str:
    if not isinstance(entry, Mapping):
        return "(not a server entry)"
    if entry.get("url"):
        return str(entry["url"])
    command = entry.get("command")
    words = command if isinstance(command, list) else [command]
    args = entry.get("args")
    words = [*words, *(args if isinstance(args, list) else [])]
    return shlex.join(str(w) for w in words if w is not None)
