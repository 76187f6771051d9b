"""The OS sandbox every command a tool runs goes through.

On Linux, where the system allows user namespaces, a command runs in namespaces of its own
(user, mount, PID, network, IPC, UTS; bubblewrap sets them up: _sandbox_view.py) with every
capability dropped, the system read-only, the home folder replaced, private /tmp and /run,
no network but its own loopback, and Landlock inside as a second wall. Where user
namespaces are refused, Landlock (kernel 5.13+) plus a seccomp socket filter (_seccomp.py)
and, as root, an empty capability bounding set. Whatever program a command names (`perl`,
`python3 -c`, `find -exec`), the kernel, not a reading of the command line, decides.

The modes:
- "workspace-write" (the default): writes only inside the workspace and private temporary
  folders;
- "read-only": the same reads, writes only in the private temporary folders;
- "off": no sandbox.

What the banner, `-v` and the model's tool text say is built from a report the launcher
makes from inside a real confined run (`Sandbox.enforced`), never from the configuration.
Whatever the mode, a command's processes cannot outlive it (a PID namespace, else a
subreaper; see _sandbox_exec.py), and the same holds for MCP servers and key commands
(`reaped`).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypedDict

from ..journal import _apply as _journal_apply
from . import _sandbox_view as _view
from ._sandbox_report import Enforced

__all__ = [
    "MODES",
    "Sandbox",
    "SandboxPolicy",
    "Support",
    "support",
]

MODES = ("workspace-write", "read-only", "off")
APPLY = ("auto", "ask")  # a command's changes: applied at once, or after a yes
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
# The environment a sandboxed command gets, by name (an allow-list; `[sandbox] env` adds).
ENV_ALLOWED = frozenset(
    {
        *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM"),
        *("TZ", "PWD", "EDITOR", "VISUAL", "PAGER", "VIRTUAL_ENV", "JAVA_HOME", "GOPATH"),
        *("GOROOT", "CARGO_HOME", "RUSTUP_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR", "NO_COLOR"),
    }
)
ENV_PREFIXES = ("LC_", "XDG_")
PROXIES = frozenset(
    name
    for base in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY")
    for name in (base, base.lower())
)
# Doors to the person's session: never passed, whatever the configuration says.
ENV_NEVER = frozenset(
    {
        *("TMUX", "TMUX_PANE", "STY", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY"),
        *("DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO"),
        *("KRB5CCNAME", "XDG_RUNTIME_DIR", "XDG_SESSION_ID", "XDG_SEAT"),
    }
)
# A value with a password in it (a URL's user:password@, or a query's password=), kept out
# even when [sandbox] env names the variable.
URL_WITH_PASSWORD = re.compile(
    r"://[^/@\s]*:[^/@\s]*@|[?&;](password|passwd|pwd|pass|secret|token|api_?key)=", re.I
)
TMP_BYTES = 1024**3  # each private /tmp, /dev/shm, /run: tmpfs, counted against memory
MIN_TMP_BYTES = 1024**2


@dataclass(frozen=True)
class SandboxPolicy:
    """How commands are confined. `read` and `write`: more folders (or files) they may
    read, or read and write (`~` expands). `env`: more environment variables passed in.
    `namespaces`: False skips the namespaces for Landlock and the socket filter alone (the
    fallback where the system refuses them). `tmp_bytes`: the size of the private /tmp.
    `overlay`: a command writes into an overlay of the workspace, applied when it ends (so
    what it changed is known exactly); False lets it write to the workspace directly.
    `apply`: "auto" applies what a command changed at once, "ask" only after a yes (the
    model is told which files were not changed otherwise). `read_only`: more files inside
    the workspace a command may not change (the scripts a trusted project runs)."""

    mode: str = "workspace-write"
    network: bool = False
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    namespaces: bool = True
    tmp_bytes: int = TMP_BYTES
    overlay: bool = True
    apply: str = "auto"
    read_only: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"sandbox mode {self.mode!r}: use one of {', '.join(MODES)}")
        if self.apply not in APPLY:
            raise ValueError(f"sandbox apply {self.apply!r}: use one of {', '.join(APPLY)}")
        # a mistake here must not quietly weaken the sandbox (bwrap would refuse the size,
        # and commands would fall back to Landlock alone)
        size: object = self.tmp_bytes  # as given (from a config file, perhaps)
        if not isinstance(size, int) or size < MIN_TMP_BYTES:
            raise ValueError(
                f"sandbox tmp_size {self.tmp_bytes!r}: give a size in bytes of at least "
                f"{MIN_TMP_BYTES} (1 MiB)"
            )
        names: tuple[object, ...] = self.env  # as given
        wrong = [name for name in names if not isinstance(name, str) or not name]
        if wrong:
            raise ValueError(f"sandbox env {wrong[0]!r}: give names of environment variables")


@dataclass(frozen=True, slots=True)
class Support:
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
    """A policy applied to the commands run for one workspace (`roots`). `secrets`: secret
    places outside it (never opened to a command); `workspace_secrets`: what lists the
    secret-looking files inside it (masked in each call). `state`: where the sandbox keeps
    its own home folder between calls (default: the user's cache folder)."""

    def __init__(
        self,
        policy: SandboxPolicy | None = None,
        roots: Iterable[Path] = (),
        secrets: Iterable[Path] = (),
        workspace_secrets: Callable[[], Iterable[Path]] | None = None,
        state: Path | None = None,
    ) -> None:
        self.policy = policy or SandboxPolicy()
        self.roots = [Path(os.path.realpath(root)) for root in roots]
        self.secrets = [Path(os.path.realpath(s)) for s in secrets]
        self.workspace_secrets = workspace_secrets or (lambda: ())
        self._state = state
        self._tmp: Path | None = None
        self._enforced: Enforced | None = None
        self._own_proc = True  # a /proc of the command's PID namespace (see _probe)
        self._overlays = self.policy.overlay  # False too where the system mounts none

    @property
    def active(self) -> bool:
        """Whether commands run confined (a sandbox was asked for and one was set up)."""
        return self.enforced().kind != "none"

    @property
    def why_not(self) -> str:
        """Why commands run unconfined ("" while they do not)."""
        return self.enforced().why_not if not self.active else ""

    def enforced(self) -> Enforced:
        """What a confined command actually gets here: found once by running the launcher
        for real (namespaces first, then the fallback) and reading its report."""
        if self._enforced is None:
            self._enforced = self._probe()
        return self._enforced

    def _probe(self) -> Enforced:
        if self.policy.mode == "off":
            return Enforced.none('the sandbox is off (sandbox mode "off")')
        if support().abi == 0:
            return Enforced.none(support().why_not)
        refused = ""
        if self.policy.namespaces:
            if not sys.platform.startswith("linux") or _view.bubblewrap() is None:
                refused = "no bubblewrap (bwrap) here"
            else:
                found = self._probe_namespaces()
                if isinstance(found, Enforced):
                    return found
                refused = found
        else:
            refused = "namespaces turned off ([sandbox] namespaces = false)"
        self._overlays = False  # no mount namespace: nothing to lay an overlay in
        found = self._report("landlock", self._fallback([]))
        if isinstance(found, Enforced):
            return found._replace(namespaces_refused=refused)
        return Enforced.none(f"the sandbox could not be set up: {found}")

    def _probe_namespaces(self) -> Enforced | str:
        """The namespaces, with an overlay of the workspace if the system mounts one."""
        cwd = self.roots[0] if self.roots else None
        overlay = self.new_overlay()
        try:
            found = self._report("namespaces", self._namespaced([], cwd, overlay))
            if isinstance(found, str) and "proc" in found:
                # a container that masks /proc refuses a new one: bind the host's
                self._own_proc = False
                found = self._report("namespaces", self._namespaced([], cwd, overlay))
        finally:
            if overlay is not None:
                _journal_apply.finish(overlay.upper.parent)
        if isinstance(found, str) and overlay is not None:
            self._overlays = False
            without = self._report("namespaces", self._namespaced([], cwd))
            if isinstance(without, Enforced):
                return without._replace(overlay_refused=found)
        if isinstance(found, Enforced) and not found.overlay:
            self._overlays = False
        return found

    def new_overlay(self) -> _view.Overlay | None:
        """Fresh upper and work folders for one command's overlay of the workspace (None
        where commands write to the workspace directly)."""
        if not (self._overlays and self.roots and self.policy.mode == "workspace-write"):
            return None
        import uuid

        # named by the process, so that a start recovering what a crash left never takes
        # the folder of a call still running in another toolnexus
        self._state_folder()
        folder = self.overlays_folder() / f"{os.getpid()}-{uuid.uuid4().hex}"
        (folder / "upper").mkdir(mode=0o700, parents=True)
        (folder / "work").mkdir(mode=0o700)
        return _view.Overlay(folder / "upper", folder / "work")

    def overlays_folder(self) -> Path:
        """Where the overlays of this workspace's commands are made (and recovered from)."""
        return self._state_path() / "overlays" / self._key()

    def _report(self, kind: str, launch: Launch) -> Enforced | str:
        """Run the launcher in report mode; what it found, or why it failed (one line)."""
        import subprocess

        spec = {**launch.spec, "report": self._checks(launch)}
        argv = launch.argv[: launch.argv.index(SPEC_SLOT)]
        try:
            done = subprocess.run(
                [*argv, json.dumps(spec), "--", "true"],
                env=self._allowed(os.environ),
                capture_output=True,
                text=True,
                timeout=60,
                cwd=self.roots[0] if self.roots else None,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
            return lines[-1][:300]
        return Enforced.from_report(kind, done.stdout, self.policy.network)

    def _checks(self, launch: Launch) -> dict[str, object]:
        home = Path.home()
        return {
            "namespaces": {name: _namespace_id(name) for name in NAMESPACES},
            "home": _ident(home),
            "tmp": _ident(Path("/tmp")),
            "masked": launch.masked,
            "read_only": launch.read_only,
            "overlay_at": str(self.roots[0]) if self.roots else "",
        }

    def describe(self) -> str:
        """One line for the banner and -v."""
        enforced = self.enforced()
        if enforced.kind == "none":
            return f"no sandbox: {enforced.why_not}; bash asks before every command"
        return f"sandbox: {self.policy.mode}, {enforced.summary()}"

    def limits(self) -> str:
        """What the sandbox keeps a command from, in words the model reads."""
        writes = (
            "it writes only inside the workspace and $TMPDIR"
            if self.policy.mode == "workspace-write"
            else "it writes only in $TMPDIR"
        )
        return ", ".join([writes, *self.enforced().limits()])

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
        """The private temporary folder of the fallback (the namespaces have their own)."""
        if self._tmp is None:
            import shutil
            import tempfile
            import weakref

            self._tmp = Path(tempfile.mkdtemp(prefix="toolnexus-sandbox-"))
            weakref.finalize(self, shutil.rmtree, self._tmp, ignore_errors=True)
        return self._tmp

    def command(
        self,
        argv: list[str],
        cwd: Path | None = None,
        overlay: _view.Overlay | None = None,
        tell: int | None = None,
    ) -> list[str]:
        """`argv` as run in this sandbox from `cwd` (as it is where there is none), its
        writes to the workspace going to `overlay` when one is given. `tell`: a file
        descriptor the launcher writes how the command ended to (_sandbox_exec.tell), with
        what the sandbox's own network saw of it where it has one."""
        kind = self.enforced().kind
        if kind == "namespaces":
            launch = self._namespaced(argv, cwd, overlay)
        elif kind == "landlock":
            launch = self._fallback(argv)
        else:
            return reaped(argv, tell)
        spec = dict(launch.spec)
        if tell is not None:
            spec["tell"] = tell
            # what a network namespace of its own, or the fallback's socket filter, saw
            spec["count_network"] = not self.policy.network
        return [json.dumps(spec) if part is SPEC_SLOT else part for part in launch.argv]

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a confined command gets: the allow-listed names (and the
        policy's), never a value holding a URL password, proxies only with the network;
        private temporary folders."""
        env = dict(os.environ if base is None else base)
        kind = self.enforced().kind
        if kind == "none":
            return env
        kept = self._allowed(env)
        tmp = "/tmp" if kind == "namespaces" else str(self.tmp)
        kept.update(TMPDIR=tmp, TMP=tmp, TEMP=tmp)
        if kind == "namespaces":
            kept["XDG_RUNTIME_DIR"] = f"/run/user/{os.getuid()}"
        return kept

    def _allowed(self, env: Mapping[str, str]) -> dict[str, str]:
        wanted = set(self.policy.env)
        kept = {
            name: value
            for name, value in env.items()
            if (
                name in ENV_ALLOWED
                or name.startswith(ENV_PREFIXES)
                or name in wanted
                or (self.policy.network and name in PROXIES)
            )
            and name not in ENV_NEVER
            and not URL_WITH_PASSWORD.search(value)
        }
        home = str(Path.home())
        for name in [n for n in kept if n.startswith("XDG_")]:
            value = kept[name]
            if name.endswith("_HOME") and not (value + "/").startswith(home + "/"):
                del kept[name]  # a folder outside the home: not in the sandbox's view
        if any(not clean for clean in _git_configs().values()):
            kept["GIT_CONFIG_GLOBAL"] = os.devnull  # git stops at a config it cannot read
        return kept

    def landlock_rules(self, *, namespaced: bool = False) -> LandlockRules:
        policy = self.policy
        read = [
            *SYSTEM_FOLDERS,
            *_interpreters(),
            *self._safe(_python_path()),
            str(LAUNCHER.parent),
            *self._safe(_path_entries()),
            *self._safe(_expanded(HOME_TOOLCHAINS, home=True)),
            *_expanded(policy.read),
            *(str(p) for root in self.roots for p in _view.protected_places(root)),
        ]
        private = ["/tmp", "/dev/shm", "/var/tmp", str(Path.home())] if namespaced else []
        write = [*(private or [str(self.tmp)]), *_expanded(policy.write)]
        where = write if policy.mode == "workspace-write" else read
        where.extend(str(root) for root in self.roots)
        files = list(DEVICES.items())
        files += [(path, False) for path, clean in _git_configs().items() if clean]
        return {
            "abi": support().abi,
            "read": read,
            "write": write,
            "files": files,
            # in namespaces the network namespace is the wall, and a command's own loopback
            # servers (a test suite's) must work
            "network": policy.network or namespaced,
        }

    def _namespaced(
        self, argv: list[str], cwd: Path | None, overlay: _view.Overlay | None = None
    ) -> Launch:
        rules = self.landlock_rules(namespaced=True)
        home = Path(os.path.realpath(Path.home()))
        read = [Path(p) for p in rules["read"]]
        readable = [*read, *(Path(p) for p, _ in _git_configs_clean())]
        protected = [p for root in self.roots for p in _view.protected_places(root)]
        protected += [Path(os.path.realpath(p)) for p in self.policy.read_only]
        secrets = [Path(os.path.realpath(p)) for p in self.workspace_secrets()]
        view = _view.arguments(
            _view.Layout(
                home=home,
                sandbox_home=self._sandbox_home(),
                workspaces=self.roots if self.policy.mode == "workspace-write" else [],
                writable=[Path(p) for p in _expanded(self.policy.write)],
                readable=readable + ([] if self.policy.mode == "workspace-write" else self.roots),
                read_only=protected,
                secrets=secrets,
                mask_file=self._mask_file(),
                network=self.policy.network,
                tmp_bytes=self.policy.tmp_bytes,
                own_proc=self._own_proc,
                cwd=cwd or (self.roots[0] if self.roots else Path("/")),
                overlay=overlay,
            )
        )
        bwrap = _view.bubblewrap() or "bwrap"
        spec = {"parent": 0, "landlock": rules, "reaper": "none"}
        argv = [bwrap, *view.arguments, "--", *_python(), SPEC_SLOT, "--", *argv]
        return Launch(argv, spec, view.masked, view.read_only)

    def _fallback(self, argv: list[str]) -> Launch:
        spec = {
            "parent": os.getpid(),
            "landlock": self.landlock_rules(),
            "seccomp": not self.policy.network,
            "drop_caps": True,
        }
        return Launch([*_python(), SPEC_SLOT, "--", *argv], spec, [], [])

    def _state_path(self) -> Path:
        if self._state is None:
            cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
            self._state = Path(cache) / "toolnexus" / "sandbox"
        return self._state

    def _state_folder(self) -> Path:
        """Where the sandbox keeps its homes and overlays: the cache folder, or where that
        cannot be made (a read-only home), a temporary folder of this process."""
        try:
            self._state_path().mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            self._state = self.tmp / "state"
            self._state.mkdir(mode=0o700, exist_ok=True)
        return self._state_path()

    def _sandbox_home(self) -> Path:
        """The home folder commands of this workspace see: the sandbox's own, kept."""
        folder = self._state_folder() / "homes" / self._key()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder

    def _key(self) -> str:
        """This workspace's name among the sandbox's folders."""
        import hashlib

        return hashlib.sha256("\0".join(map(str, self.roots)).encode()).hexdigest()[:16]

    def _mask_file(self) -> Path:
        """An empty file nobody may open, bound over the secrets a command must not read."""
        mask = self._state_folder() / "unreadable"
        if not mask.exists():
            mask.touch(mode=0o000)
        os.chmod(mask, 0o000)
        return mask

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


SPEC_SLOT = "\0spec"  # where the launcher's JSON spec goes in a Launch's argv
NAMESPACES = ("user", "mnt", "pid", "net", "ipc", "uts")


class LandlockRules(TypedDict):
    """What Landlock lets a command reach (the launcher's RULES)."""

    abi: int
    read: list[str]
    write: list[str]
    files: list[tuple[str, bool]]
    network: bool


class Launch(NamedTuple):
    """A command line to run confined: `argv` with SPEC_SLOT where the JSON of `spec` goes,
    and what the launcher must then find masked and read-only."""

    argv: list[str]
    spec: dict[str, object]
    masked: list[str]
    read_only: list[str]


def reaped(argv: list[str], tell: int | None = None) -> list[str]:
    """`argv` run so that nothing it starts outlives it (unconfined); `tell` as in
    Sandbox.command."""
    if not sys.platform.startswith("linux"):
        return argv  # its process group is what is killed there
    spec: dict[str, object] = {"parent": os.getpid(), "landlock": None}
    if tell is not None:
        spec["tell"] = tell
    return [*_python(), json.dumps(spec), "--", *argv]


def _python() -> list[str]:
    return [sys.executable, "-I", "-S", str(LAUNCHER)]


def _namespace_id(name: str) -> str:
    try:
        return os.readlink(f"/proc/self/ns/{name}")
    except OSError:
        return ""


def _ident(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def _interpreters() -> list[str]:
    """The Python toolnexus runs on (and its virtual environment): scripts need it."""
    return sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


def _python_path() -> list[str]:
    """The folders toolnexus's Python imports from (a package folder a `.pth` file adds,
    PYTHONPATH's): the same interpreter run by a command finds the same packages."""
    found = (os.path.realpath(p) for p in sys.path if os.path.isabs(p) and os.path.isdir(p))
    return list(dict.fromkeys(found))


def _git_configs_clean() -> list[tuple[str, bool]]:
    return [(path, clean) for path, clean in _git_configs().items() if clean]


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
