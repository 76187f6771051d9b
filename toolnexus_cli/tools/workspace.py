"""Where the built-in tools work: the workspace's root (--root, the config's `workspace`,
else the working folder), the Workspace made there, and the rule that keeps the file and
command tools out of the home. A root that is the home, `/` or any folder holding the home
gets none of them (`cd ~ && toolnexus chat --yes` would hand the model every key the user
has), only a line that says why; a folder inside the home is a workspace like any other.
The chat's `/workspace PATH` moves the tools (`move_tools`)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.file import Config, config_dir, data_dir, journal_dir, state_dir
from ..config.keys import keys_path
from ..errors import UsageError
from ..session.options import ToolFlags

if TYPE_CHECKING:
    from toolnexus import Toolkit
    from toolnexus.tools.sandbox import SandboxPolicy
    from toolnexus.tools.workspace import Workspace

FILE_TOOLS = ("read_file", "list_dir", "glob", "grep", "write_file", "edit_file")
WORKSPACE_TOOLS = (*FILE_TOOLS, "bash")  # what a root holding the home does not get
CHAT_WAY_OUT = "/workspace PATH (or --root PATH) picks a project folder"
ASK_WAY_OUT = "cd into a project folder, or give --root PATH"


def workspace_root(config: Config, flags: ToolFlags) -> Path:
    """--root, the config's `workspace`, else the working folder: where the built-in tools
    act, and the root MCP servers are told of (see toolnexus.mcp.workspace_roots)."""
    if flags.root:
        root = Path(flags.root).expanduser()
    elif config.settings.workspace is not None:
        root = Path(config.path_of(config.settings.workspace))
    else:
        root = Path.cwd()
    if not root.is_dir():
        raise UsageError(f"the workspace {root} is not a folder: give --root an existing one")
    return root


def chosen_builtins(config: Config, flags: ToolFlags) -> bool | list[str] | None:
    """The built-in tools asked for: --builtins (all), else the config's `builtins`."""
    if flags.off:
        return None
    if flags.builtins:
        return True
    chosen = config.settings.builtins
    return list(chosen) if isinstance(chosen, tuple) else chosen


def withheld(chosen: bool | list[str] | None, root: Path) -> list[str]:
    """The file and command tools among `chosen` that the root does not get: all of them
    where it holds the home, else none."""
    from toolnexus.tools.workspace import holds_home

    if not chosen or not holds_home(root):
        return []
    return [name for name in _names(chosen) if name in WORKSPACE_TOOLS]


def offered_builtins(chosen: bool | list[str] | None, root: Path) -> list[str]:
    """The built-in tools `chosen` that are offered in the workspace `root`."""
    if not chosen:
        return []
    kept = withheld(chosen, root)
    return [name for name in _names(chosen) if name not in kept]


def _names(chosen: bool | list[str]) -> list[str]:
    from toolnexus.tools.builtins import ALL

    return list(ALL) if chosen is True else list(chosen or ())


def home_line(config: Config, flags: ToolFlags, way_out: str) -> str | None:
    """Why the file and command tools asked for are off, and `way_out`, in one line; None
    when they are not."""
    chosen = chosen_builtins(config, flags)
    if not chosen:
        return None
    root = workspace_root(config, flags)
    if not withheld(chosen, root):
        return None
    return (
        f"file and command tools are off: {_holding(root)}, where they would reach every "
        f"key and secret; {way_out}"
    )


def refuse_builtins_at_home(config: Config, flags: ToolFlags) -> None:
    """--builtins where the root holds the home: a UsageError saying so. (The config's
    `builtins` are only withheld there: a piped question still gets its answer.)"""
    if flags.off or not flags.builtins:
        return
    root = workspace_root(config, flags)
    if withheld(True, root):
        raise UsageError(
            f"--builtins is refused here: {_holding(root)}, where the file and command "
            f"tools would reach every key and secret; {ASK_WAY_OUT}"
        )


def _holding(root: Path) -> str:
    real = Path(os.path.realpath(root))
    home = Path(os.path.realpath(Path.home()))
    return f"the workspace {real} {'is' if real == home else 'holds'} your home folder"


def make_workspace(config: Config, flags: ToolFlags, root: Path) -> Workspace:
    """The built-in tools' Workspace at `root`: what they never read (this program's keys,
    config, threads and history besides the usual credentials), the names that ask a person
    ([approval] secret_files besides the usual ones), the path and host rules of
    [approval.paths] / [approval.hosts], and the sandbox its commands run in."""
    from toolnexus.journal.records import Journal
    from toolnexus.tools.workspace import Workspace

    rules = config.settings.approval
    made = Workspace(
        root,
        secrets=own_secrets(config),
        secret_names=rules.secret_files,
        paths=rules.paths,
        hosts=rules.hosts,
        sandbox=sandbox_policy(config, flags),
        outside=rules.outside,
        journal=Journal(journal_dir()),
    )
    for line in made.recovered:  # what a crash left half applied, finished now
        warnings.warn(line, stacklevel=2)
    return made


def own_secrets(config: Config) -> list[Path]:
    """What this program keeps that no tool may read: keys, config, threads, history."""
    return [keys_path(), config_dir(), config.path, data_dir(), state_dir()]


def sandbox_policy(config: Config, flags: ToolFlags) -> SandboxPolicy:
    from toolnexus.tools.sandbox import SandboxPolicy

    table = config.settings.sandbox
    return SandboxPolicy(
        mode=flags.sandbox or table.mode,
        network=table.network,
        read=table.read,
        write=table.write,
        env=table.env,
        namespaces=table.namespaces,
        tmp_bytes=table.tmp_size,
        overlay=table.overlay,
        apply="ask" if flags.review else table.apply,
        read_only=tuple(map(str, config.project.files)) if config.project else (),
    )


async def move_tools(toolkit: Toolkit, config: Config, flags: ToolFlags) -> None:
    """The toolkit's built-in tools (in a new Workspace, so a new sandbox) and the MCP
    servers' roots, for the workspace `flags` name now."""
    root = workspace_root(config, flags)
    offered = offered_builtins(chosen_builtins(config, flags), root)
    toolkit.use_builtins(offered, make_workspace(config, flags, root) if offered else None)
    if toolkit.servers:
        from toolnexus.mcp import ServerPool

        for source in toolkit.sources:
            if isinstance(source, ServerPool):
                await source.set_roots(mcp_roots(root))


def mcp_roots(root: Path) -> list[Path]:
    """The roots MCP servers are told of in the workspace `root`: none where it holds the
    home (toolnexus.mcp.workspace_roots), unless a server's entry names its own."""
    from toolnexus.mcp import workspace_roots

    return workspace_roots(root)
