"""The MCP config: the common `mcp.json` shape read into one `ServerSpec` per server.

A top-level `mcpServers`, `servers` or `mcp` object holds servers by name; each has
`command` + `args` + `env` (stdio) or `url` + `headers` (streamable HTTP, falling back to
the legacy HTTP+SSE transport for an older server; `"type": "sse"` for that one only), and
may say
`disabled: true` (it is still read, so that it can be enabled later),
`startup_timeout_sec` (how long it may take to start), `ping_interval_sec` (a remote
server's: how often it is pinged while idle, so that one gone is noticed before a call
needs it; 0: never), `oauth` (a remote server's: `client_id` and `client_secret_cmd` of a
client registered beforehand, `scopes`, `callback_port`) and `roots` (the folders it is told
are its roots: `false` for none, or a list of absolute folders; by default the workspace's,
see pool.py). `${VAR}` (or `${VAR:-default}`) in
the command, args, env, cwd, url and headers is replaced from the environment; every value
substituted, and every literal that looks like a credential, is a secret of the spec, and
`ServerSpec.redact` blanks them out of anything shown. A header value no request could
carry (a line break, a control character) is the spec's error, naming the variable or the
config key it came from.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._bounded_json import TooDeep, loads_bounded
from ..errors import ToolnexusError
from ..transport import header_value_problem

__all__ = [
    "SERVER_KEYS",
    "McpConfig",
    "OAuthSettings",
    "ServerSpec",
    "load_servers",
    "parse_server",
    "read_specs",
]

SERVER_KEYS = ("mcpServers", "servers", "mcp")
HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamablehttp", "remote"}
STDIO_TYPES = {"stdio", "local"}
MIN_SECRET = 4  # shorter values are not redacted (they would blank out ordinary words)
STARTUP_TIMEOUT = 30.0  # seconds a server may take to start, unless its entry says
MAX_STARTUP_TIMEOUT = 3600.0
PING_INTERVAL = 30.0  # seconds between pings of an idle remote server, unless its entry says

McpConfig = str | os.PathLike[str] | Mapping[str, Any]
# how a server is reached: a process it runs (stdio), streamable HTTP, or the legacy HTTP+SSE
McpTransport = Literal["stdio", "http", "sse"]


@dataclass
class OAuthSettings:
    """A remote server's `oauth` entry: a client registered beforehand (`client_id`, and
    `client_secret_cmd`, a command printing its secret, run when it is needed and never
    stored), the `scopes` asked for, and the loopback `callback_port` of the login."""

    client_id: str | None = None
    client_secret_cmd: str | None = None
    scopes: list[str] | None = None
    callback_port: int | None = None


@dataclass
class ServerSpec:
    """One configured server, its values expanded; `error` says why it cannot start."""

    name: str
    transport: McpTransport
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    disabled: bool = False
    startup_timeout: float | None = None  # seconds; None: the default of whoever starts it
    ping_interval: float = PING_INTERVAL  # seconds between pings of a remote server (0: none)
    roots: list[str] | None = None  # its own roots ([]: none); None: the workspace's
    oauth: OAuthSettings = field(default_factory=OAuthSettings)
    error: str | None = None
    secrets: set[str] = field(default_factory=set)

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text


def read_specs(config: McpConfig) -> list[ServerSpec]:
    """Every server of `config` (a path of an mcp.json, or its parsed dict), in order.
    Raises ToolnexusError only for a config that cannot be read at all; a bad entry is a
    spec with an `error`."""
    return [parse_server(str(name), entry) for name, entry in load_servers(config).items()]


def load_servers(config: McpConfig) -> Mapping[str, Any]:
    if isinstance(config, str | os.PathLike):
        path = Path(config).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            why = exc.strerror or exc
            raise ToolnexusError(f"cannot read the MCP config {path}: {why}") from None
        try:
            data = loads_bounded(text)
        except json.JSONDecodeError as exc:
            raise ToolnexusError(
                f"{path}:{exc.lineno}:{exc.colno}: the MCP config is not valid JSON: {exc.msg}"
            ) from None
        except TooDeep as exc:
            raise ToolnexusError(f"{path}: the MCP config is {exc}") from None
        where = str(path)
    elif isinstance(config, Mapping):
        data, where = config, "the MCP config"
    else:
        raise TypeError(f"config must be a path or a dict, not {type(config).__name__}")
    if not isinstance(data, Mapping):
        raise ToolnexusError(f"{where}: expected a JSON object with 'mcpServers' in it")
    for key in SERVER_KEYS:
        if key in data:
            servers = data[key]
            if not isinstance(servers, Mapping):
                raise ToolnexusError(f"{where}: '{key}' must be an object of servers by name")
            return servers
    raise ToolnexusError(
        f"{where}: no servers found: expected a top-level 'mcpServers', 'servers' or 'mcp' object"
    )


_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION", re.I)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _ConfigError(Exception):
    pass


def expand(value: Any, where: str, secrets: set[str]) -> str:
    """`${VAR}` / `${VAR:-default}` from the environment; every substituted value is a secret."""
    if not isinstance(value, str):
        if isinstance(value, bool | int | float):
            return json.dumps(value)
        raise _ConfigError(f"{where} must be a string")

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is None or (found == "" and default is not None):
            if default is None:
                raise _ConfigError(f"{where} uses ${{{name}}}, which is not set")
            found = default
        if len(found) >= MIN_SECRET:
            secrets.add(found)
        return found

    return _VAR.sub(substitute, value)


def parse_server(name: str, entry: Any) -> ServerSpec:
    if not isinstance(entry, Mapping):
        return ServerSpec(name, "stdio", error="the server entry must be an object")
    kind = str(entry.get("type") or entry.get("transport") or "").lower()
    url = entry.get("url") or entry.get("serverUrl")
    command = entry.get("command")
    remote = kind in HTTP_TYPES or kind == "sse" or (url and not command and not kind)
    transport: McpTransport = "sse" if kind == "sse" else "http" if remote else "stdio"
    spec = ServerSpec(name, transport)
    spec.disabled = entry.get("disabled") is True or entry.get("enabled") is False
    try:
        spec.startup_timeout = _startup_timeout(entry.get("startup_timeout_sec"))
        spec.ping_interval = _ping_interval(entry.get("ping_interval_sec"))
        spec.roots = _roots(entry.get("roots"), spec.secrets)
        if kind and kind not in HTTP_TYPES | STDIO_TYPES | {"sse"}:
            raise _ConfigError(f"unknown transport type {kind!r} (use 'stdio', 'http' or 'sse')")
        if transport != "stdio":
            _parse_http(spec, entry, url)
            spec.oauth = _oauth(entry.get("oauth"))
        else:
            _parse_stdio(spec, entry, command)
    except _ConfigError as exc:
        spec.error = str(exc)
    return spec


def _startup_timeout(value: Any) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (0 < value <= MAX_STARTUP_TIMEOUT)
    ):
        raise _ConfigError(
            f"startup_timeout_sec must be a number of seconds from 0 to "
            f"{MAX_STARTUP_TIMEOUT:g}, not {json.dumps(value)[:40]}"
        )
    return float(value)


def _ping_interval(value: Any) -> float:
    if value is None:
        return PING_INTERVAL
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0 <= value <= 86_400):
        raise _ConfigError(
            "ping_interval_sec must be a number of seconds from 0 (no pings) to 86400, "
            f"not {json.dumps(value)[:40]}"
        )
    return float(value)


OAUTH_KEYS = {"client_id", "client_secret_cmd", "scopes", "callback_port"}


def _oauth(value: Any) -> OAuthSettings:
    if value is None:
        return OAuthSettings()
    if not isinstance(value, Mapping):
        raise _ConfigError("'oauth' must be an object")
    unknown = sorted(set(value) - OAUTH_KEYS)
    if unknown:
        raise _ConfigError(
            f"unknown key oauth.{unknown[0][:40]} (known: {', '.join(sorted(OAUTH_KEYS))})"
        )
    client_id, secret_cmd = value.get("client_id"), value.get("client_secret_cmd")
    scopes, port = value.get("scopes"), value.get("callback_port")
    for key, text in (("client_id", client_id), ("client_secret_cmd", secret_cmd)):
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise _ConfigError(f"oauth.{key} must be a non-empty string")
    if secret_cmd is not None and client_id is None:
        raise _ConfigError("oauth.client_secret_cmd needs oauth.client_id")
    if scopes is not None and (
        not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in scopes)
    ):
        raise _ConfigError("oauth.scopes must be a list of scope names")
    if port is not None and (
        isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535
    ):
        raise _ConfigError(f"oauth.callback_port must be a port from 1 to 65535, not {port!r:.40}")
    return OAuthSettings(client_id, secret_cmd, scopes, port)


def _roots(value: Any, secrets: set[str]) -> list[str] | None:
    """`roots`: absent or true, the workspace's (None); false, none; else a list of
    absolute folders (`~` and `${VAR}` expanded)."""
    if value is None or value is True:
        return None
    if value is False:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _ConfigError(
            f"'roots' must be false (no roots) or a list of folders, not {json.dumps(value)[:40]}"
        )
    folders = []
    for i, item in enumerate(value):
        folder = Path(expand(item, f"roots[{i}]", secrets)).expanduser()
        if not folder.is_absolute():
            raise _ConfigError(
                f"roots[{i}] must be an absolute folder (or start with ~), not {item[:40]!r}"
            )
        folders.append(str(folder))
    return folders


def _parse_http(spec: ServerSpec, entry: Mapping[str, Any], url: Any) -> None:
    if not url:
        raise _ConfigError("a remote server needs a 'url'")
    spec.url = expand(url, "url", spec.secrets)
    if not spec.url.startswith(("http://", "https://")):
        raise _ConfigError("the url must start with http:// or https://")
    headers = entry.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise _ConfigError("'headers' must be an object")
    for key, value in headers.items():
        spec.headers[str(key)] = expanded = expand(value, f"headers.{key}", spec.secrets)
        _check_header(f"headers.{key}", value, expanded)
        if len(expanded) >= MIN_SECRET:  # a literal token in the file is a secret too
            spec.secrets.add(expanded)


def _check_header(where: str, written: Any, value: str) -> None:
    """Refuse a header value no request could carry (a line break would smuggle in
    another header), before any connection, naming where it came from."""
    problem = header_value_problem(value)
    if problem is None:
        return
    text = str(written)
    variables = [f"${name}" for name, _ in _VAR.findall(text)]
    if variables and header_value_problem(_VAR.sub("", text)) is None:
        raise _ConfigError(
            f"the value of {where} (from {', '.join(variables)}) contains {problem}: fix it there"
        )
    raise _ConfigError(f"the value of {where} contains {problem}: fix it in the MCP config")


def _parse_stdio(spec: ServerSpec, entry: Mapping[str, Any], command: Any) -> None:
    args = entry.get("args") or []
    if isinstance(command, list) and command:  # the `mcp` style: command: [cmd, *args]
        command, args = command[0], [*command[1:], *args]
    if not command:
        raise _ConfigError("a local server needs a 'command' (or a 'url' for a remote one)")
    if not isinstance(args, list):
        raise _ConfigError("'args' must be a list")
    env = entry.get("env") or entry.get("environment") or {}
    if not isinstance(env, Mapping):
        raise _ConfigError("'env' must be an object")
    for key, value in env.items():
        spec.env[str(key)] = expanded = expand(value, f"env.{key}", spec.secrets)
        if _SECRET_NAME.search(str(key)) and len(expanded) >= MIN_SECRET:
            spec.secrets.add(expanded)  # a literal token in the file is a secret too
    spec.command = expand(command, "command", spec.secrets)
    spec.args = [expand(arg, f"args[{i}]", spec.secrets) for i, arg in enumerate(args)]
    if entry.get("cwd"):
        spec.cwd = str(Path(expand(entry["cwd"], "cwd", spec.secrets)).expanduser())
