"""A repository's own layer: `.toolnexus/config.toml`, `.mcp.json` and the hooks of
`.claude/settings.json`, read at the repository's top (the folder holding `.git`, else the
workspace itself).

Only keys that concern the project are taken from `.toolnexus/config.toml`; those that
would send the person's keys or conversation elsewhere or loosen the sandbox are the
user's alone and are named as ignored. Nothing here starts a program: trust.py decides
whether a layer takes effect at all."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .layer import CONFIG, ProjectLayer

if TYPE_CHECKING:
    from .file import Config

MCP_JSON = Path(".mcp.json")
CLAUDE_SETTINGS = Path(".claude") / "settings.json"
# Keys a project may set, and what of them (None: the whole value).
PROJECT_KEYS = ("instructions", "commands", "skills", "mcp", "hooks", "sandbox", "approval")
PROJECT_SANDBOX_KEYS = ("read", "write")
PROJECT_DECISIONS = ("ask", "deny")
STRICTNESS = ("allow", "ask", "deny")
# [approval] tables a project may add to; `outside` (leaving the sandbox) is the user's.
PROJECT_RULE_TABLES = ("commands", "paths", "hosts")
PROJECT_DIR_VARIABLES = ("$CLAUDE_PROJECT_DIR", "${CLAUDE_PROJECT_DIR}")


def repository_top(workspace: Path) -> Path:
    """The folder holding the workspace's `.git` (a folder or a worktree's file), else
    the workspace itself."""
    workspace = Path(os.path.realpath(workspace))
    for folder in (workspace, *workspace.parents):
        if (folder / ".git").exists():
            return folder
    return workspace


def read_layer(workspace: Path) -> ProjectLayer | None:
    """The layer of the repository holding `workspace`, None where it has none. A file
    that cannot be read or checked is a UsageError naming it (and its line)."""
    root = repository_top(workspace)
    layer = ProjectLayer(root)
    config_file = root / CONFIG
    if config_file.is_file():
        layer.files.append(config_file)
        _take_config(layer, _checked_config(config_file))
    mcp_json = root / MCP_JSON
    if mcp_json.is_file():
        layer.files.append(mcp_json)
        _add_servers(layer, mcp_json)
    settings = root / CLAUDE_SETTINGS
    if settings.is_file():
        hooks = claude_hooks(settings)
        if hooks:
            layer.files.append(settings)
            layer.hooks += hooks
    if layer.empty and not layer.ignored:
        return None
    layer.files += referenced_files(layer)
    return layer


def _checked_config(path: Path) -> dict[str, Any]:
    """The project config, checked as the user's is (line-numbered errors)."""
    import tomllib

    from .file import _validate
    from .shape import file_shape

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the project config: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: {exc}: fix the TOML syntax there") from None
    _validate(path, text, data, file_shape(), "")
    return data


def _take_config(layer: ProjectLayer, data: Mapping[str, Any]) -> None:
    """The keys a project may set into `layer.config`; the others into `layer.ignored`."""
    folder = layer.root / CONFIG.parent
    for key, value in data.items():
        if key not in PROJECT_KEYS:
            layer.ignored += _dotted(key, value)
        elif key == "sandbox":
            _take_sandbox(layer, value)
        elif key == "approval":
            _take_approval(layer, value)
        elif key in ("skills", "mcp"):
            path = _inside(layer.root, folder / Path(value))
            if path is None:
                layer.ignored.append(key)
            elif key == "mcp":
                layer.files.append(path)
                _add_servers(layer, path)
            else:
                layer.config[key] = str(path)
        elif key == "hooks":
            layer.hooks += [{**hook, "source": str(CONFIG)} for hook in value]
        else:
            layer.config[key] = value


def _dotted(key: str, value: Any) -> list[str]:
    """The names a table sets, one level down, so that `providers.work.base_url` reads as
    `base_url` rather than the table's name."""
    if isinstance(value, Mapping) and key in ("providers", "models"):
        names = {inner for table in value.values() if isinstance(table, Mapping) for inner in table}
        return [key, *sorted(names)]
    return [key]


def _take_sandbox(layer: ProjectLayer, table: Mapping[str, Any]) -> None:
    kept: dict[str, list[str]] = {}
    for key, value in table.items():
        if key not in PROJECT_SANDBOX_KEYS:
            layer.ignored.append(f"sandbox.{key}")
            continue
        for entry in value:
            path = _inside(layer.root, layer.root / Path(str(entry)))
            if path is None:
                layer.ignored.append(f"sandbox.{key} {entry}")
            else:
                kept.setdefault(key, []).append(str(path))
    if kept:
        layer.config["sandbox"] = kept


def _take_approval(layer: ProjectLayer, rules: Mapping[str, Any]) -> None:
    kept: dict[str, Any] = {}
    for name, value in rules.items():
        if name == "outside":
            layer.ignored.append("approval.outside")
        elif name == "secret_files":
            kept[name] = value  # more files that ask: only ever stricter
        elif isinstance(value, Mapping) and name in PROJECT_RULE_TABLES:
            table = {k: v for k, v in value.items() if v in PROJECT_DECISIONS}
            layer.ignored += [f'approval.{name}."{k}" = "allow"' for k in value if k not in table]
            if table:
                kept[name] = table
        elif value in PROJECT_DECISIONS:
            kept[name] = value
        else:
            layer.ignored.append(f'approval."{name}" = "allow"')
    if kept:
        layer.config["approval"] = kept


def _inside(root: Path, path: Path) -> Path | None:
    """`path` resolved, if it is inside `root`."""
    resolved = Path(os.path.realpath(path.expanduser()))
    return resolved if resolved == root or root in resolved.parents else None


def _add_servers(layer: ProjectLayer, path: Path) -> None:
    """The servers of an mcp.json in the repository, started in the repository's top
    folder unless they say otherwise (as Claude Code starts them)."""
    from toolnexus import ToolnexusError
    from toolnexus.mcp.config import load_servers

    try:
        servers = load_servers(path)
    except ToolnexusError as exc:
        raise UsageError(str(exc)) from None
    for name, entry in servers.items():
        if isinstance(entry, Mapping) and entry.get("command") and not entry.get("cwd"):
            entry = {**entry, "cwd": str(layer.root)}
        layer.servers.setdefault(str(name), entry)


def claude_hooks(path: Path) -> list[dict[str, Any]]:
    """The command hooks of a Claude Code settings file, as hooks.py's tables:
    {"hooks": {EVENT: [{"matcher": "Edit|Write", "hooks": [{"type": "command",
    "command": ..., "timeout": 60}]}]}}. Other kinds of hook are not ours to run."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read its hooks: {exc}") from None
    events = data.get("hooks") if isinstance(data, Mapping) else None
    if not isinstance(events, Mapping):
        return []
    found = []
    for event, groups in events.items():
        for group in groups if isinstance(groups, list) else ():
            if not isinstance(group, Mapping):
                continue
            for hook in group.get("hooks") or ():
                if not isinstance(hook, Mapping) or hook.get("type", "command") != "command":
                    continue
                if not isinstance(hook.get("command"), str):
                    continue
                entry = {
                    "event": str(event),
                    "command": hook["command"],
                    "source": str(CLAUDE_SETTINGS),
                }
                if isinstance(group.get("matcher"), str) and group["matcher"]:
                    entry["matcher"] = group["matcher"]
                if isinstance(hook.get("timeout"), int | float):
                    entry["timeout"] = hook["timeout"]
                found.append(entry)
    return found


def referenced_files(layer: ProjectLayer) -> list[Path]:
    """The files inside the repository that the layer's servers and hooks run: every word
    of their commands that names one (`node server.js`, `"$CLAUDE_PROJECT_DIR"/.claude/
    hooks/check.py`)."""
    found = []
    for word in _command_words(layer):
        for variable in PROJECT_DIR_VARIABLES:
            word = word.replace(variable, str(layer.root))
        path = _inside(layer.root, layer.root / word) if word else None
        if path is not None and path.is_file():
            found.append(path)
    return list(dict.fromkeys(found))


def _command_words(layer: ProjectLayer) -> Iterator[str]:
    for entry in layer.servers.values():
        if not isinstance(entry, Mapping):
            continue
        command = entry.get("command")
        words = command if isinstance(command, list) else [command]
        args = entry.get("args")
        words += args if isinstance(args, list) else []
        yield from (str(w) for w in words if isinstance(w, str))
    for hook in layer.hooks:
        try:
            yield from shlex.split(hook["command"])
        except ValueError:
            yield from hook["command"].split()


def merged_config(config: Config, layer: ProjectLayer) -> Config:
    """`config` with the layer over it: its keys over the user's, its sandbox folders and
    hooks added to the user's, its approval rules over the user's (they only ask or deny)."""
    from .file import Config

    data = {key: value for key, value in config.file.items()}
    for key, value in layer.config.items():
        if key == "sandbox":
            table = dict(data.get("sandbox", {}))
            for name, folders in value.items():
                table[name] = [*table.get(name, []), *folders]
            data["sandbox"] = table
        elif key == "approval":
            data["approval"] = _merged_rules(data.get("approval", {}), value)
        else:
            data[key] = value
    if layer.hooks:
        data["hooks"] = [*data.get("hooks", []), *layer.hooks]
    return Config(config.path, data, project=layer)


def _merged_rules(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, Any]:
    """The user's rules with the project's: where both name a call, the stricter holds (a
    project's "ask" never turns the user's "deny" into a question)."""
    rules = dict(mine)
    for name, value in theirs.items():
        if isinstance(value, Mapping):
            rules[name] = _merged_rules(rules.get(name, {}), value)
        elif isinstance(value, list):
            rules[name] = [*rules.get(name, []), *value]
        else:
            current = rules.get(name)
            stricter = isinstance(current, str) and current in STRICTNESS
            rules[name] = max(value, current, key=STRICTNESS.index) if stricter else value
    return rules
