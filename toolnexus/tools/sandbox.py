"""The OS sandbox every command a tool runs goes through.

On Linux a command runs confined by Landlock (kernel 5.13+), whatever program it names:
`perl`, `python3 -c` or `find -exec` are held as firmly as `rm`, because the kernel, not a
reading of the command line, decides. The modes:

- "workspace-write" (the default): reads of the system folders, the workspace and the
  toolchains in the home folder; writes only inside the workspace and a private temporary
  folder; no TCP connection or listening socket unless `network` is granted.
- "read-only": the same reads, writes only in the private temporary folder.
- "off": no sandbox.

Everything not listed is out of reach: the home folder outside the toolchains, other users'
files, the keys. Whatever the mode, a command's processes cannot outlive it (a PID namespace,
else a subreaper; see _sandbox_exec.py), and the same holds for MCP servers and key commands
(`reaped`).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

MODES = ("workspace-write", "read-only", "off")
LAUNCHER = Path(__file__).with_name("_sandbox_exec.py")

# What every command may read (and run) besides the workspace: the system, not the homes.
SYSTEM_FOLDERS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
    "/nix/store",
    "/snap",
    "/run/systemd/resolve",
    "/run/resolvconf",
)
# Toolchains installed in the home folder: programs and libraries, not credentials (which
# is why ~/.cargo is not here whole: ~/.cargo/credentials.toml holds a registry token).
HOME_TOOLCHAINS = (".cargo/bin", ".rustup", ".pyenv", ".nvm", ".local/bin", ".local/lib")
# The user's git settings (name, e-mail, aliases): readable unless they hold a token.
GIT_CONFIGS = (".gitconfig", ".config/git/config")
# Devices a command may open, and whether it may write them.
DEVICES = {
    "/dev/null": True,
    "/dev/zero": True,
    "/dev/full": True,
    "/dev/random": False,
    "/dev/urandom": False,
}
# Environment variables a sandboxed command does not see: keys and tokens by their names.
SECRET_VARIABLE = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|^TOOLNEXUS_|^AWS_|^AZURE_|^DBUS_|"
    r"^GPG_AGENT",
    re.I,
)
URL_WITH_PASSWORD = re.compile(r"://[^/@\s]*:[^/@\s]*@")


@dataclass(frozen=True)
class SandboxPolicy:
    """How commands are confined. `read` and `write`: more folders (or files) they may
    read, or read and write (`~` expands)."""

    mode: str = "workspace-write"
    network: bool = False
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"sandbox mode {self.mode!r}: use one of {', '.join(MODES)}")


class Support(NamedTuple):
    """What this machine offers: the Landlock ABI (0: none) and, if none, why."""

    abi: int
    why_not: str = ""


@functools.cache
def support() -> Support:
    if not sys.platform.startswith("linux"):
        return Support(0, f"no sandbox on {sys.platform} yet (toolnexus uses Linux's Landlock)")
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, VERSION)
    if abi > 0:
        return Support(abi)
    errno = ctypes.get_errno()
    if errno == 38:  # ENOSYS
        return Support(0, "this kernel has no Landlock (Linux 5.13 or newer has it)")
    return Support(
        0, "Landlock is turned off in this kernel (add landlock to the lsm= boot option)"
    )


class Sandbox:
    """A policy applied to the commands run for one workspace (`roots`). It owns a private
    temporary folder, removed when the sandbox goes away."""

    def __init__(
        self,
        policy: SandboxPolicy | None = None,
        roots: Iterable[Path] = (),
        secrets: Iterable[Path] = (),
    ) -> None:
        self.policy = policy or SandboxPolicy()
        self.roots = [Path(os.path.realpath(root)) for root in roots]
        self.secrets = [Path(os.path.realpath(s)) for s in secrets]
        self._tmp: Path | None = None

    @property
    def active(self) -> bool:
        """Whether commands run confined (a sandbox was asked for and the system has one)."""
        return self.policy.mode != "off" and support().abi > 0

    @property
    def why_not(self) -> str:
        """Why commands run unconfined ("" while they do not)."""
        if self.policy.mode == "off":
            return 'the sandbox is off (sandbox mode "off")'
        return support().why_not

    def describe(self) -> str:
        """One line for the banner and -v."""
        if not self.active:
            return f"no sandbox: {self.why_not}; bash asks before every command"
        network = "network allowed" if self.policy.network else "no network"
        writes = "writes in the workspace" if self.policy.mode == "workspace-write" else "read-only"
        return f"sandbox: {self.policy.mode} (Landlock ABI {support().abi}): {writes}, {network}"

    def limits(self) -> str:
        """What the sandbox keeps a command from, in words the model reads."""
        writes = (
            "it writes only inside the workspace and $TMPDIR"
            if self.policy.mode == "workspace-write"
            else "it writes only in $TMPDIR"
        )
        network = "" if self.policy.network else " and has no network"
        return f"{writes}, cannot read the home folder{network}"

    def for_model(self) -> str:
        """What the bash tool's description tells the model about where commands run."""
        if not self.active:
            return "There is no sandbox here: the user is asked before each command."
        return (
            f"Commands run in a sandbox: {self.limits()}. A command the sandbox stops "
            "can be run outside it once the user agrees."
        )

    @property
    def tmp(self) -> Path:
        if self._tmp is None:
            import shutil
            import tempfile
            import weakref

            self._tmp = Path(tempfile.mkdtemp(prefix="toolnexus-sandbox-"))
            weakref.finalize(self, shutil.rmtree, self._tmp, ignore_errors=True)
        return self._tmp

    def command(self, argv: list[str]) -> list[str]:
        """`argv` as run in this sandbox (as it is where there is none)."""
        if not self.active:
            return reaped(argv)
        return _launch(argv, self.landlock_rules())

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a confined command gets: no variable that looks like a key or a
        password, and the private temporary folder as TMPDIR."""
        env = dict(os.environ if base is None else base)
        if not self.active:
            return env
        kept = {
            name: value
            for name, value in env.items()
            if not SECRET_VARIABLE.search(name) and not URL_WITH_PASSWORD.search(value)
        }
        tmp = str(self.tmp)
        kept.update(TMPDIR=tmp, TMP=tmp, TEMP=tmp)
        if any(not clean for clean in _git_configs().values()):
            kept["GIT_CONFIG_GLOBAL"] = os.devnull  # git stops at a config it cannot read
        return kept

    def landlock_rules(self) -> dict[str, object]:
        policy = self.policy
        read = [
            *SYSTEM_FOLDERS,
            *_interpreters(),
            *self._safe(_path_entries()),
            *self._safe(_expanded(HOME_TOOLCHAINS, home=True)),
            *_expanded(policy.read),
        ]
        write = [str(self.tmp), *_expanded(policy.write)]
        where = write if policy.mode == "workspace-write" else read
        where.extend(str(root) for root in self.roots)
        files = [[path, writable] for path, writable in DEVICES.items()]
        files += [[path, False] for path, clean in _git_configs().items() if clean]
        return {
            "abi": support().abi,
            "read": read,
            "write": write,
            "files": files,
            "network": policy.network,
        }

    def _safe(self, folders: Iterable[str]) -> list[str]:
        """Folders that may be opened by default: not the home folder itself or a folder
        holding it, and nothing that holds or lies in a secret."""
        home = Path(os.path.realpath(Path.home()))
        kept = []
        for folder in folders:
            path = Path(folder)
            if path == home or path in home.parents or path == Path("/"):
                continue
            if any(path == s or s in path.parents or path in s.parents for s in self.secrets):
                continue
            kept.append(folder)
        return kept


def reaped(argv: list[str]) -> list[str]:
    """`argv` run so that nothing it starts outlives it (unconfined)."""
    if not sys.platform.startswith("linux"):
        return argv  # its process group is what is killed there
    return _launch(argv, None)


def _launch(argv: list[str], rules: dict[str, object] | None) -> list[str]:
    spec = json.dumps({"parent": os.getpid(), "landlock": rules})
    return [sys.executable, "-I", "-S", str(LAUNCHER), spec, "--", *argv]


def _interpreters() -> list[str]:
    """The Python toolnexus runs on (and its virtual environment): scripts need it."""
    return sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


def _git_configs() -> dict[str, bool]:
    """The user's git config files that exist, and whether they are free of credentials."""
    from .secret_files import holds_credentials

    found = {}
    for name in GIT_CONFIGS:
        path = Path.home() / name
        try:
            found[str(path)] = not holds_credentials(path.read_text("utf-8", "replace"))
        except OSError:
            continue
    return found


def _path_entries() -> list[str]:
    found = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if os.path.isabs(entry) and os.path.isdir(entry):
            found.append(os.path.realpath(entry))
    return list(dict.fromkeys(found))


def _expanded(paths: Iterable[str], *, home: bool = False) -> list[str]:
    base = Path.home()
    return [os.path.realpath(base / p if home else os.path.expanduser(p)) for p in paths]
