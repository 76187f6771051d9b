"""The MCP server files `toolnexus mcp add/remove/get` edit: the user's mcp.json (the one
the config's `mcp` names, else mcp.json beside the config) and the project's `.mcp.json` at
the repository's root (Claude Code's `{"mcpServers": {...}}`). A file is rewritten with the
indentation it had and everything else in it kept; a file that cannot be read as one is
an error, never overwritten."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolnexus import ToolnexusError
from toolnexus.app_support import TooDeep, loads_bounded
from toolnexus.mcp.config import SERVER_KEYS

from ..config.file import Config

SCOPES = ("user", "project")
PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_INDENT = re.compile(r"\{[ \t]*\r?\n([ \t]+)\S")


def user_file(config: Config) -> Path:
    """The user's mcp.json: the config's `mcp`, else mcp.json in the config's folder."""
    if config.settings.mcp is not None:
        return Path(config.path_of(config.settings.mcp))
    return config.path.parent / USER_FILE


def project_file(start: Path) -> Path:
    """`.mcp.json` at the root of the git repository holding `start` (else in `start`)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder / PROJECT_FILE
    return start / PROJECT_FILE


@dataclass
class ServerFile:
    """One mcp.json as read: the whole object, the key its servers are under and the
    indentation to write it back with."""

    path: Path
    data: dict[str, Any]
    key: str
    indent: str | None

    @property
    def servers(self) -> dict[str, Any]:
        servers: dict[str, Any] = self.data.setdefault(self.key, {})
        return servers

    def write(self, *, private: bool) -> None:
        """Replace the file whole (never half written); 0600 when it may hold secrets (a
        header or an environment value) or already was."""
        target = self.path.resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o644
        if target.exists():
            mode = target.stat().st_mode & 0o777
        if private:
            mode = 0o600
        text = json.dumps(self.data, indent=self.indent, ensure_ascii=False) + "\n"
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(text)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def read_server_file(path: Path) -> ServerFile:
    """The file at `path` (an empty one when there is none yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ServerFile(path, {}, "mcpServers", "  ")
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolnexusError(
            f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    try:
        data = loads_bounded(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolnexusError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}): fix it first, "
            "it is left as it is"
        ) from None
    except TooDeep as exc:
        raise ToolnexusError(f"{path}: {exc}: fix it first, it is left as it is") from None
    if not isinstance(data, dict):
        raise ToolnexusError(f"{path}: expected a JSON object: fix it first, it is left as it is")
    key = next((k for k in SERVER_KEYS if k in data), "mcpServers")
    if not isinstance(data.setdefault(key, {}), dict):
        raise ToolnexusError(f"{path}: '{key}' must be an object of servers by name")
    found = _INDENT.match(text.lstrip())
    indent = found.group(1) if found else ("  " if not text.strip() else None)
    return ServerFile(path, data, key, indent)


def check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise ToolnexusError(
            f"{name!r} cannot name a server: use letters, digits, '_', '-' and '.'"
        )


def server_entry(
    command: list[str], url: str | None, headers: list[str], env: list[str]
) -> dict[str, Any]:
    """The mcp.json entry of a server given on the command line."""
    from toolnexus.transport import header_value_problem

    if bool(command) == bool(url):
        raise ToolnexusError(
            "give the server's command after '--' (mcp add NAME -- CMD ARGS) or --url URL"
        )
    if url:
        if not url.startswith(("http://", "https://")):
            raise ToolnexusError(f"--url must start with http:// or https://, not {url[:40]!r}")
        if env:
            raise ToolnexusError("--env is for a local server; a remote one takes --header")
        entry: dict[str, Any] = {"type": "http", "url": url}
        if headers:
            entry["headers"] = dict(_pair(h, ":", "--header", "'Name: value'") for h in headers)
            for key, value in entry["headers"].items():
                if (problem := header_value_problem(value)) is not None:
                    raise ToolnexusError(f"the value of --header {key} contains {problem}")
        return entry
    if headers:
        raise ToolnexusError("--header is for a remote server (--url); a local one takes --env")
    entry = {"type": "stdio", "command": command[0], "args": command[1:]}
    if env:
        entry["env"] = dict(_pair(e, "=", "--env", "KEY=VALUE") for e in env)
    return entry


def _pair(text: str, separator: str, option: str, shape: str) -> tuple[str, str]:
    key, found, value = text.partition(separator)
    if not found or not key.strip():
        raise ToolnexusError(f"{option} takes {shape}, not {text[:40]!r}")
    return key.strip(), value.strip()
