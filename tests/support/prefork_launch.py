"""The launcher of tests/support/prefork.py: a bare interpreter (`python -I -S`, stdlib only)
that has the zygote fork the program it stands for, on this process's own stdin, stdout and
stderr, with its arguments, environment and working directory; it passes on the signals it
gets and exits as the program did.

    python -I -S prefork_launch.py SOCKET RUN ARGV0 [ARGS...]

RUN is "toolnexus" (the console script) or "script" (ARGV0 is a Python file run as __main__).
"""

import array
import json
import os
import signal
import socket
import struct
import sys

# What a terminal, a test or an MCP client sends a process: all of it is the program's.
FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGWINCH,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGCONT,
)


def std_fds() -> list[int]:
    """Descriptors 0-2 to hand over; one that is closed here is /dev/null there."""
    fds = []
    for fd in range(3):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            fds.append(os.open(os.devnull, os.O_RDWR))
    return fds


def main() -> None:
    # Held until the program's pid is known, then passed on: a signal sent before that (the
    # program may print before this reads its pid) must not end the launcher alone.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    path, run, *argv = sys.argv[1:]
    request = json.dumps(
        {"run": run, "argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    ).encode()
    data = struct.pack("!I", len(request)) + request
    zygote = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        zygote.connect(path)
    except OSError as exc:
        sys.exit(f"prefork_launch: no zygote at {path} ({exc.strerror})")
    fds = array.array("i", std_fds())
    sent = zygote.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    if sent < len(data):  # (an empty send to a zygote already done with the fork is EPIPE)
        zygote.sendall(data[sent:])
    replies = zygote.makefile("rb")
    pid = int(replies.readline().split()[1])  # b"pid N"

    def forward(sig: int, _frame: object) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    line = replies.readline()  # b"status N": N < 0 is the signal that ended it
    status = int(line.split()[1]) if line else -signal.SIGKILL
    if status < 0:
        if -status in FORWARDED:
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status & 0xFF)


main()
