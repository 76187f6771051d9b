"""Whether a repository's layer (project.py) takes effect: only once the person said yes
to exactly these files and the scripts they run. The yes is remembered by the layer's
digest in a private file of the data folder, so a changed file asks again."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from toolnexus.app_support import visible

from ..errors import UsageError
from ..session.options import ToolFlags
from ..tools.workspace import workspace_root
from .file import Config, data_dir
from .layer import ProjectLayer
from .project import merged_config, read_layer, repository_top

TRUST_FILE = "trusted-projects.json"
Question = Callable[[ProjectLayer], bool]  # asks the person; True: trust it


def trust_path() -> Path:
    return data_dir() / TRUST_FILE


def trusted() -> dict[str, str]:
    """Each trusted repository's top folder and the digest of the layer trusted there."""
    try:
        data = json.loads(trust_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}


def _write(entries: dict[str, str]) -> None:
    path = trust_path()
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(entries, handle, indent=1, sort_keys=True)
    os.replace(temporary, path)


def is_trusted(layer: ProjectLayer) -> bool:
    return trusted().get(str(layer.root)) == layer.digest()


def remember(layer: ProjectLayer) -> None:
    _write({**trusted(), str(layer.root): layer.digest()})


def revoke(root: Path) -> bool:
    """Forget the yes given to the repository at `root`; False if there was none."""
    entries = trusted()
    if entries.pop(str(root), None) is None:
        return False
    _write(entries)
    return True


def with_project(config: Config, flags: ToolFlags, ask: Question | None) -> Config:
    """`config` with the workspace's repository layer merged in, if it is trusted or the
    person trusts it now (`ask`; None: nobody can be asked, and an untrusted layer is
    ignored with one line on stderr)."""
    layer = read_layer(workspace_root(config, flags))
    if layer is None:
        return config
    ignored = layer.ignored_line()
    if layer.empty:
        if ignored:
            _say(ignored)
        return config
    if not is_trusted(layer):
        if ask is None:
            _say(
                f"ignored the project layer of {layer.root} ({', '.join(_names(layer))}): "
                f"it is not trusted; 'toolnexus trust {layer.root}' trusts it"
            )
            return config
        if not ask(layer):
            _say(f"the project layer of {layer.root} is not used (not trusted)")
            return config
        remember(layer)
    elif ignored:
        _say(ignored)
    return merged_config(config, layer)


def _names(layer: ProjectLayer) -> list[str]:
    return [str(path.relative_to(layer.root)) for path in layer.files]


def _say(line: str) -> None:
    sys.stderr.write(f"toolnexus: {visible(line)}\n")
    sys.stderr.flush()


def shown_layer(layer: ProjectLayer) -> str:
    """The layer as the question and `toolnexus trust` show it."""
    lines = [f"The repository {layer.root} has a project layer:"]
    lines += [f"  {line}" for line in layer.summary()]
    lines.append(
        "Its MCP servers and hooks run as you, outside the sandbox. Files it runs: "
        + ", ".join(_names(layer))
    )
    ignored = layer.ignored_line()
    if ignored:
        lines.append(ignored)
    return visible("\n".join(lines))


def ask_at_terminal(layer: ProjectLayer) -> bool:
    """Show what the layer would add and ask; no unless the person types y."""
    import asyncio

    from ..tools.approve import confirm_default_no

    print(shown_layer(layer), flush=True)
    return asyncio.run(confirm_default_no("Trust it? [y/N] "))


def layer_at(path: str | None) -> ProjectLayer:
    root = Path(path or ".").expanduser()
    if not root.is_dir():
        raise UsageError(f"{root} is not a folder")
    layer = read_layer(root)
    if layer is None or layer.empty:
        raise UsageError(
            f"{repository_top(root)} has no project layer (.toolnexus/config.toml, "
            ".mcp.json or hooks in .claude/settings.json)"
        )
    return layer


def trust_command(path: str | None, *, list_them: bool, revoke_it: bool) -> int:
    """`toolnexus trust [PATH]`, `--list`, `--revoke`."""
    if list_them:
        for folder in sorted(trusted()):
            layer = read_layer(Path(folder)) if Path(folder).is_dir() else None
            state = "trusted" if layer and is_trusted(layer) else "changed since (asks again)"
            print(visible(f"{folder}  {state}"))
        return 0
    if revoke_it:
        root = repository_top(Path(path or ".").expanduser())
        if not revoke(root):
            raise UsageError(f"{root} is not trusted")
        print(visible(f"no longer trusted: {root}"))
        return 0
    layer = layer_at(path)
    print(shown_layer(layer))
    remember(layer)
    print(visible(f"trusted: {layer.root}"))
    return 0
