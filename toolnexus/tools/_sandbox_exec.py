"""Run one command so that nothing it starts outlives it, optionally confined.

This file runs as a script of its own (`python -I -S _sandbox_exec.py SPEC -- ARGV...`),
between toolnexus and a command (`bash -c ...`, an MCP server, a key command). It imports
only the standard library: it starts in a few milliseconds and needs no site-packages.
SPEC is JSON:

    {"parent": PID,
     "landlock": RULES or null,
     "seccomp": bool (the socket filter of _seccomp.py; the fallback's network wall),
     "drop_caps": bool (empty the capability bounding set: root keeps no capability),
     "reaper": "namespace" (the default: a PID namespace where the system allows one, else a
               subreaper) | "subreaper" | "none" (already inside bubblewrap's namespaces,
               whose init keeps the command's processes in: confine and exec at once;
               with "tell", confine and run the command in a child, see `watched`),
     "report": null or what to check (see `report`): instead of running ARGV, run this
               script again, confined, with "measure": it prints as JSON what a program
               started in the sandbox gets, so toolnexus's words come from a real run,
     "tell": FD (optional): once the command ended, write there how (see `tell`),
     "count_network": bool (with "tell": say too what the network namespace of the
               sandbox's own counted while the command ran, or in the fallback, how many
               network sockets the socket filter refused it)}

Keeping descendants in (Linux):
- Best, a PID namespace: the command runs under a small init of a new namespace, and when
  that init exits the kernel kills every process left in the namespace, also those that
  called setsid or double-forked. Root gets one directly; others through a user namespace
  that maps their own uid and gid (so files keep their owner). A confined command also
  gets a /proc of its own namespace (a mount namespace of its own).
- Else a child subreaper: orphans of the command are re-parented to this process, which
  kills them all once the command ends.
Either way the whole tree dies with toolnexus: this process and the namespace's init get
a parent-death signal.

Landlock (RULES): {"abi": N, "read": [paths], "write": [paths], "files": [[path, write]],
"network": bool}. Everything not listed is out of reach (rules are an allow-list); with
"network" false, TCP connect and bind are refused (ABI 4+); signals and abstract UNIX
sockets outside the sandbox are out of reach (ABI 6+). `no_new_privs` is set first, so
nothing inside gains privileges through a set-uid program.

A failure to confine is one line on stderr and exit status 126: the command never runs
less confined than was asked.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import stat
import sys

TYPE_CHECKING = False  # not from typing: this script starts without importing it
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable
    from types import FrameType, ModuleType
    from typing import Literal, NoReturn, Required, TypedDict

    class Rules(TypedDict):
        abi: int
        read: list[str]
        write: list[str]
        files: list[tuple[str, bool]]
        network: bool

    class Spec(TypedDict, total=False):
        parent: Required[int]
        landlock: Rules | None
        seccomp: bool
        drop_caps: bool
        reaper: Literal["namespace", "subreaper", "none"]
        report: dict[str, object] | None
        measure: dict[str, object] | None
        landlock_applied: int
        tell: int
        count_network: bool
        notify_to: int


CONFINE_FAILED = 126
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on every
# architecture.
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # all a file rule takes
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR


class Confinement(Exception):
    """Landlock could not be applied; the message says why."""


libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        raise Confinement(f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def confine(spec: Spec) -> int:
    """Apply what `spec` asks to this process and everything it starts from now on; the
    Landlock ABI applied (0: none). Confinement if any part cannot be applied."""
    if spec.get("drop_caps"):
        drop_capabilities()
    abi = 0
    if spec.get("landlock") or spec.get("seccomp"):
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    rules = spec.get("landlock")
    if rules:
        landlock(rules)
        abi = rules["abi"]
    if spec.get("seccomp"):
        _seccomp = seccomp_module()
        try:
            listener = None
            notify_to = spec.get("notify_to")
            if notify_to is not None:
                try:
                    listener = _seccomp.install(notify=True)
                except OSError:  # a listener in the chain already (EBUSY): uncounted
                    pass
            if listener is None:
                _seccomp.install()
        except OSError as exc:
            raise Confinement(f"the socket filter: {exc.strerror or exc}") from None
        if listener is not None and notify_to is not None:  # made for notify_to only
            hand_over(notify_to, listener)
    return abi


def seccomp_module() -> ModuleType:
    if TYPE_CHECKING:
        from . import _seccomp
    else:  # a script: its modules lie beside it, not on a package path
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import _seccomp
    return _seccomp


def hand_over(to: int, listener: int) -> None:
    """Send the filter's listener to the supervisor (this process's parent: see `start`)."""
    import socket

    with socket.socket(fileno=to) as channel:
        socket.send_fds(channel, [b"listener"], [listener])
    os.close(listener)


def supervise(channel: socket.socket) -> None:
    """Take the listener the command sends (see `hand_over`; none if it could not make
    one) and answer its refused sockets in a thread, counting in REFUSED_SOCKETS."""
    import socket
    import threading

    with channel:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 16, 1)
        except OSError:
            fds = []
    if fds:
        answering = seccomp_module().answer_refusals
        threading.Thread(target=answering, args=(fds[0], REFUSED_SOCKETS), daemon=True).start()


REFUSED_SOCKETS = [0]  # network sockets the socket filter refused the command (supervise)


def drop_capabilities() -> None:
    """Empty the bounding set (so an exec gives root no capability) and the ambient set.
    Only root can, and only root needs it."""
    if os.geteuid() != 0:
        return
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "dropping capabilities")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def landlock(rules: Rules) -> None:
    """Apply Landlock to this process and everything it starts from now on."""
    abi = rules["abi"]
    fs = handled_fs(abi)
    attr = _RulesetAttr(fs, 0, 0)
    size = 8
    if abi >= 4 and not rules["network"]:
        attr.net, size = NET_BIND_TCP | NET_CONNECT_TCP, 16
    if abi >= 6:
        attr.scoped, size = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL, 24
    ruleset = _check(
        libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), size, 0), "landlock_create_ruleset"
    )
    try:
        for path in rules["read"]:
            _allow(ruleset, path, READ_RIGHTS & fs)
        for path in rules["write"]:
            _allow(ruleset, path, fs)
        for path, write in rules["files"]:
            _allow(
                ruleset,
                path,
                (READ_FILE | (WRITE_FILE | TRUNCATE if write else 0) | IOCTL_DEV) & fs,
            )
        _check(libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a folder this machine does not have
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS  # a rule on a file takes only the rights of files
        rule = _PathBeneath(rights, fd)
        _check(
            libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0),
            f"landlock_add_rule {path}",
        )
    finally:
        os.close(fd)


def exit_like(status: int) -> NoReturn:
    """End this process the way a child with wait status `status` ended."""
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def die_with_parent(parent: int, sig: int) -> None:
    """Get `sig` when the parent dies; if it already has, act on it now."""
    libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if parent and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def new_pid_namespace() -> bool:
    """Whether children from now on start in a PID namespace of their own (and a mount
    namespace, where the namespace's init mounts a /proc that shows only its processes)."""
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWNS | CLONE_NEWPID) == 0:
        return True
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) != 0:
        return False
    try:  # keep the same uid and gid inside, so files keep their owner
        for name, text in (
            ("uid_map", f"{uid} {uid} 1"),
            ("setgroups", "deny"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError:
        return False
    return True


def run(argv: list[str]) -> NoReturn:
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"cannot run {argv[0]!r}: {exc.strerror or exc}\n")
    os._exit(127)


def start(argv: list[str], spec: Spec) -> int:
    """Fork the command (confined as `spec` asks); its pid. Where the socket filter
    confines it and the network is to be counted, this process answers the filter's
    refusals (`supervise`)."""
    pair = None
    if spec.get("seccomp") and spec.get("count_network") and "tell" in spec:
        import socket

        pair = socket.socketpair()
    child = os.fork()
    if child == 0:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        told = spec.pop("tell", None)
        if told is not None:  # the command must not write what toolnexus reads of it
            os.close(told)
        if pair is not None:
            pair[0].close()
            spec["notify_to"] = pair[1].detach()
        confine_and_run(argv, spec)
    if pair is not None:
        pair[1].close()
        supervise(pair[0])
    return child


def confine_and_run(argv: list[str], spec: Spec) -> NoReturn:
    """Confine this process as `spec` asks, then run the command in it (or print the report
    the spec asks for instead)."""
    try:
        abi = confine(spec)
    except Confinement as exc:
        sys.stderr.write(f"toolnexus sandbox: cannot confine the command ({exc})\n")
        os._exit(CONFINE_FAILED)
    checks = spec.get("report")
    if checks is not None:  # measured by a new program, as the command would be
        after = {"parent": 0, "reaper": "none", "measure": checks, "landlock_applied": abi}
        run([sys.executable, "-I", "-S", os.path.abspath(__file__), json.dumps(after), "--"])
    run(argv)


def forward_signals(target: int) -> None:
    for sig in FORWARDED:
        signal.signal(sig, lambda signum, _frame: _kill(target, signum))


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_for(command: int) -> int:
    """Reap children until `command` ends; its wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        if pid == command:
            return status


def namespace_init(argv: list[str], spec: Spec, lifeline: int) -> NoReturn:
    """PID 1 of the new namespace: run the command, reap orphans, and exit with it (the
    kernel then kills whatever is left in the namespace). `lifeline` reads a pipe whose
    only write end the parent holds: readable (at its end) once the parent is gone."""
    die_with_parent(0, signal.SIGKILL)
    if select.select([lifeline], [], [], 0)[0]:  # the parent died before the signal was set
        os._exit(CONFINE_FAILED)
    os.close(lifeline)
    if spec.get("landlock") is not None:
        own_proc()
    command = start(argv, spec)
    forward_signals(command)
    status = wait_for(command)
    tell(spec, status, filtered_network(spec))
    exit_like(status)


def watched(argv: list[str], spec: Spec) -> NoReturn:
    """Inside bubblewrap's namespaces (whose init keeps the command's processes in): run
    the command confined in a child, and tell how it ended and what this network namespace
    counted meanwhile. This process stays outside the command's Landlock domain, so the
    command cannot reach it."""
    counted = network_counts() if spec.get("count_network") else None
    command = start(argv, spec)
    forward_signals(command)
    status = wait_for(command)
    if counted is None:
        tell(spec, status, None)
    else:
        now = network_counts()
        tell(spec, status, {name: now[name] - counted[name] for name in now})
    exit_like(status)


def filtered_network(spec: Spec) -> dict[str, int] | None:
    """What the socket filter refused the command, where this process answered it."""
    if spec.get("seccomp") and spec.get("count_network"):
        return {"refused_socket": REFUSED_SOCKETS[0]}
    return None


def tell(spec: Spec, status: int, network: dict[str, int] | None) -> None:
    """Write to the spec's `tell` fd, as JSON, how the command ended: {"exit": code} or
    {"signal": number} (exit_like can only pass a signal on as 128 + its number); and
    "network": what the sandbox's network counters (or the socket filter) counted of it,
    where they did."""
    told = spec.get("tell")
    if told is None:
        return
    ended: dict[str, object] = (
        {"signal": os.WTERMSIG(status)}
        if os.WIFSIGNALED(status)
        else {"exit": os.waitstatus_to_exitcode(status)}
    )
    if network is not None:
        ended["network"] = network
    try:
        os.write(told, json.dumps(ended).encode())
        os.close(told)
    except OSError:
        pass  # nobody reads it any more


# Counters of a network namespace (/proc/net/snmp, /proc/net/snmp6) that a connection
# the sandbox's network cannot carry moves: a packet with no route (only `lo` is up, so
# any address of the host or the internet), a TCP connection refused on loopback (no
# server listens inside), a UDP datagram to a loopback port nobody listens on (DNS).
SNMP = {
    ("Ip", "OutNoRoutes"): "no_route",
    ("Tcp", "AttemptFails"): "refused",
    ("Udp", "NoPorts"): "no_port",
}
SNMP6 = {"Ip6OutNoRoutes": "no_route", "Udp6NoPorts": "no_port"}


def network_counts() -> dict[str, int]:
    counts: dict[str, int] = dict.fromkeys(("no_route", "refused", "no_port"), 0)
    try:
        with open("/proc/net/snmp") as handle:
            lines = handle.read().splitlines()
        for heads, values in zip(lines[::2], lines[1::2], strict=False):
            protocol, _, names = heads.partition(":")
            counted = values.partition(":")[2].split()
            for name, value in zip(names.split(), counted, strict=False):
                if (protocol, name) in SNMP:
                    counts[SNMP[protocol, name]] += int(value)
        with open("/proc/net/snmp6") as handle:
            for line in handle:
                name, _, value = line.partition(" ")
                if name in SNMP6:
                    counts[SNMP6[name]] += int(value)
    except (OSError, ValueError):
        pass
    return counts


def own_proc() -> None:
    """For a confined command: mount a /proc of this PID namespace over the host's, so other
    processes' command lines are out of sight; mounts made here stay here (private). If it
    cannot, the host's /proc stays (Landlock still keeps other processes' memory and
    environment out of reach)."""
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) == 0:
        libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)


def report(checks: dict[str, object], abi: int) -> dict[str, object]:
    """What holds for this process now, measured, not taken from the spec. `checks` names
    what to compare with the outside: "namespaces" ({name: the outside's id}), "home" and
    "tmp" (the outside's [device, inode]), "masked" (paths that must be unreadable),
    "read_only" (paths that must not be writable)."""
    status = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            status[name] = value.strip()
    outside_ns = checks.get("namespaces")
    outside_ns = outside_ns if isinstance(outside_ns, dict) else {}
    return {
        "uid": os.getuid(),
        "capabilities": int(status.get("CapEff", "0"), 16),
        "no_new_privs": status.get("NoNewPrivs") == "1",
        "seccomp": status.get("Seccomp") == "2",
        "landlock": abi,
        "namespaces": sorted(n for n, ident in outside_ns.items() if _namespace(n) != ident),
        "interfaces": _interfaces(),
        "inet_socket": _tried(lambda: _socket(2, 2)),  # AF_INET, SOCK_DGRAM: UDP
        "unix_connect": _unix_connect(),
        "root_read_only": bool(os.statvfs("/").f_flag & os.ST_RDONLY),
        "home": _home(checks.get("home")),
        "tmp_private": _ident("/tmp") != checks.get("tmp"),
        "tmp_bytes": _size("/tmp"),
        "masked": [p for p in _strings(checks.get("masked")) if _unreadable(p)],
        "read_only": [p for p in _strings(checks.get("read_only")) if _unwritable(p)],
        "overlay": _mounted_as(str(checks.get("overlay_at") or ""), "overlay"),
    }


def _mounted_as(path: str, fstype: str) -> bool:
    """Whether `path` is a mount point of that type here."""
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                fields = line.split()
                dash = fields.index("-")
                if fields[4] == path and fields[dash + 1] == fstype:
                    return True
    except (OSError, ValueError, IndexError):
        pass
    return False


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _namespace(name: str) -> str:
    try:
        return os.readlink(f"/proc/self/ns/{name}")
    except OSError:
        return ""


def _interfaces() -> list[str]:
    try:
        with open("/proc/self/net/dev") as handle:
            return sorted(line.split(":")[0].strip() for line in handle.readlines()[2:])
    except OSError:
        return []


def _socket(family: int, kind: int) -> None:
    import socket

    socket.socket(family, kind).close()


def _unix_connect() -> str:
    """Whether a path UNIX socket could be connected to: "refused" (the filter) or
    "allowed" (then what is reachable is what the file system shows)."""
    import socket

    def connect() -> None:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect("/nonexistent/toolnexus-probe.sock")

    outcome = _tried(connect)
    return "allowed" if outcome == "missing" else outcome


def _tried(action: Callable[[], None]) -> str:
    try:
        action()
    except PermissionError:
        return "refused"
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "failed"
    return "allowed"


def _ident(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def _home(outside: object) -> str:
    """ "replaced" (another folder stands in the home's place), "unreadable" or "readable"."""
    home = os.environ.get("HOME", "/")
    if _ident(home) != outside:
        return "replaced"
    try:
        os.listdir(home)
    except PermissionError:
        return "unreadable"
    except OSError:
        pass
    return "readable"


def _size(path: str) -> int:
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return st.f_blocks * st.f_frsize


def _unreadable(path: str) -> bool:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def _unwritable(path: str) -> bool:
    return not os.access(path, os.W_OK)


def kill_descendants() -> None:
    """As a subreaper: kill every child (orphans included, as they are re-parented here)
    until none is left."""
    me = os.getpid()
    while True:
        for pid in children_of(me):
            _kill(pid, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def children_of(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == parent:
                found.append(int(entry))
    return found


def main() -> NoReturn:
    spec: Spec = json.loads(sys.argv[1])
    argv = sys.argv[3:]  # after "--"
    parent = spec["parent"]
    reaper = spec.get("reaper", "namespace")
    measure = spec.get("measure")
    if measure is not None:
        sys.stdout.write(json.dumps(report(measure, spec.get("landlock_applied", 0))) + "\n")
        sys.exit(0)
    if reaper == "none":
        if "tell" in spec:
            watched(argv, spec)
        confine_and_run(argv, spec)
    if reaper == "namespace" and new_pid_namespace():
        die_with_parent(parent, signal.SIGKILL)  # the namespace's init follows: see below
        read_end, write_end = os.pipe()
        init = os.fork()
        if init == 0:
            os.close(write_end)
            namespace_init(argv, spec, read_end)
        os.close(read_end)  # write_end stays open as long as this process lives
        forward_signals(init)
        exit_like(wait_for(init))
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    def end(signum: int, _frame: FrameType | None) -> NoReturn:
        kill_descendants()
        os._exit(128 + signum)

    for sig in FORWARDED:
        signal.signal(sig, end)
    die_with_parent(parent, signal.SIGTERM)
    command = start(argv, spec)
    status = wait_for(command)
    kill_descendants()
    tell(spec, status, filtered_network(spec))
    exit_like(status)


if __name__ == "__main__":
    main()
