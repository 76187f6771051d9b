"""Test processes forked from one that has already done their imports.

Most of the CPU a `toolnexus` process uses goes to imports (prompt_toolkit, rich, httpx2; the
MCP SDK alone takes about 1.5 s), and so does every MCP test server's; the suite starts
hundreds of them. So each test worker starts one process (the zygote: this file run as a
script) that imports all of that once, and the test processes are forks of it:

    command("toolnexus", "chat")        the console script, as `toolnexus chat`
    command("script", path, *args)      a Python file, as `python path args`

The command is the launcher (tests/support/prefork_launch.py), a bare interpreter that hands
the zygote its stdin, stdout, stderr, arguments, environment and working directory. The
zygote forks, and the fork becomes the program on those same descriptors, set up as a fresh
interpreter would be (std streams for its locale and PYTHONUNBUFFERED, default signal
handlers, sys.argv and sys.path[0]), and it ends as one does (threads joined, atexit run,
streams flushed, a traceback for an uncaught exception, the same exit status). Whoever
started the launcher (subprocess, pexpect in a pty, the MCP client) sees that status; the
signals it sends the launcher, and those of its terminal (Ctrl-C, a resize, a hang-up),
reach the fork. If the launcher is killed, the zygote kills the fork and its group.

What differs from a fresh process: the fork leads its own session rather than the
launcher's (a terminal's signals reach it through the launcher), and its imports are done
before it starts. A test about start-up imports, the program's own process group or session,
or a process killed outright starts the real command instead (`cli_helpers.ENTRY`).
"""

from __future__ import annotations

import atexit
import gc
import io
import json
import locale
import os
import runpy
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

LAUNCHER = str(Path(__file__).with_name("prefork_launch.py"))
ROOT = Path(__file__).resolve().parents[2]
# The switch: TOOLNEXUS_TEST_PREFORK=0 in the test run's environment, and every command is
# the real program, started anew.
SWITCH = "TOOLNEXUS_TEST_PREFORK"


def command(run: str, *argv: str) -> list[str]:
    """The command line that runs `argv` in a fork of this worker's zygote: `run` is
    "toolnexus" (argv: its arguments) or "script" (argv: a Python file and its arguments).
    With the zygote switched off, the program itself."""
    program = str(Path(sys.executable).parent / "toolnexus") if run == "toolnexus" else None
    if os.environ.get(SWITCH) == "0":
        return [program, *argv] if program else [sys.executable, *argv]
    if program:
        argv = (program, *argv)
    return [sys.executable, "-I", "-S", LAUNCHER, _zygote_socket(), run, *argv]


# ----------------------------------------------------------------------------- the test side

_started: dict[str, Any] = {}


def _zygote_socket() -> str:
    """The socket of this process's zygote, started on first use."""
    if "socket" not in _started:
        folder = tempfile.mkdtemp(prefix="toolnexus-prefork-")
        path = os.path.join(folder, "zygote")
        env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE_")}
        zygote = subprocess.Popen(
            [sys.executable, __file__, path],
            stdin=subprocess.PIPE,  # its end of the pipe closes when this process ends
            stdout=subprocess.PIPE,
            env=env,
            cwd=ROOT,
            start_new_session=True,  # none of this process group's signals
        )
        assert zygote.stdout is not None
        if zygote.stdout.readline().strip() != b"ready":
            raise RuntimeError("the prefork zygote did not start (its errors are above)")
        _started.update(socket=path, zygote=zygote)
        atexit.register(_stop_zygote)
    return str(_started["socket"])


def _stop_zygote() -> None:
    zygote: subprocess.Popen[bytes] = _started["zygote"]
    assert zygote.stdin is not None
    zygote.stdin.close()
    try:
        zygote.wait(10)
    except subprocess.TimeoutExpired:
        zygote.kill()


# ----------------------------------------------------------------------------- the zygote


class _Fork:
    """A program forked for a launcher: its pid, the pidfd that says when it ends, and the
    launcher's connection (None once the launcher is gone)."""

    def __init__(self, pid: int, conn: socket.socket) -> None:
        self.pid = pid
        self.conn: socket.socket | None = conn
        self.pidfd = os.pidfd_open(pid)


def serve(path: str) -> None:
    _preload()
    # What is imported stays as it is: no collection in a fork writes to (and so copies) the
    # memory pages it shares with the zygote.
    gc.freeze()
    if threading.active_count() != 1:  # a fork would lose the others mid-step
        raise RuntimeError(f"a preloaded module started a thread: {threading.enumerate()}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(sys.stdin, selectors.EVENT_READ, "parent")
    forks: list[_Fork] = []
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.data == "accept":
                conn, _ = listener.accept()
                fork = _fork(conn, listener, selector, forks)
                if fork is not None:
                    forks.append(fork)
                    selector.register(fork.pidfd, selectors.EVENT_READ, ("ended", fork))
                    selector.register(conn, selectors.EVENT_READ, ("launcher", fork))
            elif key.data == "parent":
                if not os.read(0, 4096):  # the test worker is gone: so are its programs
                    for fork in forks:
                        _kill(fork)
                    return
            elif key.data[0] == "ended":
                fork = key.data[1]
                _, status = os.waitpid(fork.pid, 0)
                selector.unregister(fork.pidfd)
                os.close(fork.pidfd)
                forks.remove(fork)
                if fork.conn is not None:
                    selector.unregister(fork.conn)
                    _tell(fork.conn, f"status {os.waitstatus_to_exitcode(status)}")
                    fork.conn.close()
            elif key.data[0] == "launcher":
                fork = key.data[1]
                if fork.conn is not None and not _received(fork.conn):  # killed
                    selector.unregister(fork.conn)
                    fork.conn.close()
                    fork.conn = None
                    _kill(fork)


def _preload() -> None:
    """The imports of tests/support/prefork_preload.py, which is then forgotten with the
    path to it: a fork sees the modules a fresh process would find."""
    sys.path.insert(0, str(ROOT))
    from tests.support.prefork_preload import preload

    preload()
    sys.path.remove(str(ROOT))
    for name in [name for name in sys.modules if name == "tests" or name.startswith("tests.")]:
        del sys.modules[name]


def _received(conn: socket.socket) -> bytes:
    """What the launcher sent (it sends nothing): b"" once it is gone, however it went."""
    try:
        return conn.recv(64)
    except OSError:  # reset: the launcher died with data unread
        return b""


def _tell(conn: socket.socket, line: str) -> None:
    try:
        conn.sendall(line.encode() + b"\n")
    except OSError:
        pass  # the launcher is gone: its connection's end is seen next


def _kill(fork: _Fork) -> None:
    """The fork and its group (it leads one once it has called setsid; a fork that has not
    yet has no group, and nothing of its own in one)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(fork.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _fork(
    conn: socket.socket,
    listener: socket.socket,
    selector: selectors.BaseSelector,
    forks: list[_Fork],
) -> _Fork | None:
    """Read the launcher's request and fork its program; None if the request is broken."""
    conn.settimeout(30)
    try:
        request, fds = _read_request(conn)
    except (OSError, ValueError):
        conn.close()
        return None
    conn.settimeout(None)
    pid = os.fork()
    if pid == 0:
        # The zygote's own descriptors are not the program's.
        for fork in forks:
            os.close(fork.pidfd)
            if fork.conn is not None:
                fork.conn.close()
        selector.close()
        listener.close()
        conn.close()
        _become(request, fds)  # never returns
    for fd in fds:
        os.close(fd)
    _tell(conn, f"pid {pid}")
    return _Fork(pid, conn)


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    size = struct.calcsize("!I")
    data, ancillary, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(3 * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4])
    if len(fds) != 3 or len(data) < size:
        for fd in fds:
            os.close(fd)
        raise ValueError("a launcher's request without its three descriptors")
    (length,) = struct.unpack("!I", data[:size])
    body = data[size:]
    while len(body) < length:
        more = conn.recv(length - len(body))
        if not more:
            raise ValueError("a launcher's request cut off")
        body += more
    return json.loads(body), fds


# ----------------------------------------------------------------------------- the fork


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """In the fork: turn into the program the launcher stands for, run it, and exit."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds) - {0, 1, 2}:
            os.close(fd)
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()
        try:
            locale.setlocale(locale.LC_CTYPE, "")
        except locale.Error:
            pass
        _std_streams(request["env"])
        argv: list[str] = request["argv"]
        sys.argv = list(argv)
        sys.path[0] = str(Path(argv[0]).resolve().parent)
        code = _run(request["run"], argv[0])
    finally:
        os._exit(code)


def _run(run: str, program: str) -> int:
    """Run the program as `python` would, and end it as the interpreter does: its exit
    status (or, after a Ctrl-C it did not handle, death by SIGINT)."""
    interrupted = False
    try:
        if run == "toolnexus":
            from toolnexus_cli.app import main

            sys.exit(main())
        runpy.run_path(program, run_name="__main__")
        code = 0
    except SystemExit as done:
        code = _exit_status(done.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        interrupted, code = True, 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    code = _finish(code)
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _finish(code: int) -> int:
    """What the interpreter does on its way out: wait for the other threads, run the atexit
    functions, flush the std streams (a failed flush of stdout is status 120)."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            if stream is sys.stdout:
                code = 120
    return code


def _std_streams(env: dict[str, str]) -> None:
    """sys.stdin, stdout and stderr on descriptors 0-2 as Python makes them at start-up."""
    encoding, errors = "utf-8", ""
    if env.get("PYTHONIOENCODING"):
        encoding, _, errors = env["PYTHONIOENCODING"].partition(":")
    ctype = env.get("LC_ALL") or env.get("LC_CTYPE") or env.get("LANG") or "C"
    escape = env.get("PYTHONUTF8") == "1" or ctype in ("C", "POSIX")
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    streams: list[IO[str]] = []
    for fd in range(3):
        text_errors = errors or ("surrogateescape" if escape and fd < 2 else "strict")
        if fd == 2:
            text_errors = "backslashreplace"
        raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
        binary: io.RawIOBase | io.BufferedIOBase
        if fd == 0:
            binary = io.BufferedReader(raw)
        elif unbuffered:
            binary = raw
        else:
            binary = io.BufferedWriter(raw)
        streams.append(
            io.TextIOWrapper(
                binary,
                encoding=encoding or "utf-8",
                errors=text_errors,
                newline="\n",
                line_buffering=fd == 2 or (fd == 1 and raw.isatty()),
                write_through=unbuffered and fd > 0,
            )
        )
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]


if __name__ == "__main__":
    serve(sys.argv[1])
