"""`toolnexus mcp add`, `mcp remove` and `mcp get`: a server written into, taken out of or
shown from the user's mcp.json or the project's .mcp.json (see mcp_files)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from toolnexus import ToolnexusError
from toolnexus.app_support import visible

from ..config.file import Config
from .files import (
    ServerFile,
    check_name,
    project_file,
    read_server_file,
    server_entry,
    user_file,
)

_ONLY_VARIABLES = re.compile(r"(\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}\s*)+")
_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION", re.I)


def _files(config: Config, scope: str | None) -> list[tuple[str, Path]]:
    chosen = [("project", project_file(Path.cwd())), ("user", user_file(config))]
    return [(name, path) for name, path in chosen if scope in (None, name)]


def add_server(
    config: Config,
    name: str,
    *,
    scope: str,
    command: list[str],
    url: str | None,
    headers: list[str],
    env: list[str],
) -> int:
    check_name(name)
    entry = server_entry(command, url, headers, env)
    ((_, path),) = _files(config, scope)
    file = read_server_file(path)
    if name in file.servers:
        raise ToolnexusError(
            f"{path} has a server named {name!r} already: "
            f"'toolnexus mcp remove {name} --scope {scope}' first"
        )
    file.servers[name] = entry
    file.write(private=bool(headers or env))
    kind = "remote" if url else "local"
    print(visible(f"added the {kind} server {name} to {path} ({scope} scope)"))
    return 0


def remove_server(config: Config, name: str, *, scope: str | None) -> int:
    holding = [(where, file) for where, file in _read_all(config, scope) if name in file.servers]
    if not holding:
        raise _missing(config, name, scope)
    if len(holding) > 1:
        raise ToolnexusError(
            f"{name!r} is in both {holding[0][1].path} and {holding[1][1].path}: "
            "say which with --scope user or --scope project"
        )
    ((where, file),) = holding
    del file.servers[name]
    file.write(private=False)
    print(visible(f"removed the server {name} from {file.path} ({where} scope)"))
    return 0


def show_server(config: Config, name: str, *, scope: str | None) -> int:
    holding = [(where, file) for where, file in _read_all(config, scope) if name in file.servers]
    if not holding:
        raise _missing(config, name, scope)
    for where, file in holding:
        print(visible(f"{name} ({where} scope, {file.path})"))
        for line in describe(file.servers[name]):
            print(visible(f"  {line}"))
    return 0


def describe(entry: Any) -> list[str]:
    """An entry's lines for `mcp get`, a literal secret (a header's value, a secret-named
    environment variable's) shown as ***; a `${VAR}` reference as written."""
    if not isinstance(entry, dict):
        return ["(not an object: the entry cannot be read)"]
    lines = []
    if entry.get("url") or entry.get("serverUrl"):
        lines.append(f"type: {entry.get('type') or 'http'}")
        lines.append(f"url: {entry.get('url') or entry.get('serverUrl')}")
    else:
        lines.append(f"type: {entry.get('type') or 'stdio'}")
        command = entry.get("command")
        args = entry.get("args")
        args = args if isinstance(args, list) else []
        words = command if isinstance(command, list) else [command, *args]
        lines.append(f"command: {shlex.join(str(word) for word in words)}")
    for key, secret in (("headers", True), ("env", False)):
        values = entry.get(key)
        if isinstance(values, dict) and values:
            shown = ", ".join(f"{k}={_shown(k, v, secret)}" for k, v in values.items())
            lines.append(f"{key}: {shown}")
    if entry.get("disabled") is True:
        lines.append("disabled: true")
    return lines


def _shown(key: str, value: Any, secret: bool) -> str:
    text = str(value)
    if _ONLY_VARIABLES.fullmatch(text.strip()) or not (secret or _SECRET_NAME.search(key)):
        return text
    return "***"


def _read_all(config: Config, scope: str | None) -> list[tuple[str, ServerFile]]:
    return [(where, read_server_file(path)) for where, path in _files(config, scope)]


def _missing(config: Config, name: str, scope: str | None) -> ToolnexusError:
    looked = " or ".join(str(path) for _, path in _files(config, scope))
    return ToolnexusError(f"no MCP server named {name!r} in {looked}")
