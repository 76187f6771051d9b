"""The socket filter of the sandbox's fallback (where user namespaces are refused, so there is
no network namespace of its own): a seccomp program that refuses every network a command
could reach around Landlock.

- `socket` and `socketpair` only for AF_UNIX (pipes between the command's own processes);
  every other family (UDP, raw, netlink, ...) fails with EPERM;
- `connect` fails for every family, path UNIX sockets too (tmux, screen, docker, D-Bus,
  X11 and agent sockets are path sockets Landlock does not guard);
- `io_uring_*` fail (io_uring can open and connect sockets without those system calls);
- a system call of another architecture than this process's (i386's `int 0x80` on x86_64,
  whose `socketcall` multiplexes the socket calls, or x32's numbers) fails as a whole.

With `notify`, a refused network socket is not refused by the filter itself: the kernel
hands it to a supervisor (the launcher, `answer_refusals`) that refuses it the same way
and counts those of the internet families, so toolnexus can tell that a failed command
tried the network. Were the supervisor gone, the call fails all the same (ENOSYS).

Imported by the launcher (_sandbox_exec.py), which runs without site-packages: only the
standard library here. `no_new_privs` must be set before `install`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 1 << 3
# ioctls of the listener: _IOWR('!', 0, struct seccomp_notif), _IOWR('!', 1, ..._resp)
NOTIF_RECV, NOTIF_SEND = 0xC0502100, 0xC0182101
RET_USER_NOTIF = 0x7FC00000
# Classic BPF, as seccomp reads it (linux/filter.h, linux/seccomp.h)
LD_ABS_W, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
NR_OFFSET, ARCH_OFFSET, ARG0_OFFSET = 0, 4, 16  # struct seccomp_data; arg0's low word (LE)
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
X32_BIT = 0x40000000


class Machine:
    """What the filter needs to know of one architecture."""

    def __init__(
        self,
        audit: int,
        socket: int,
        socketpair: int,
        connect: int,
        seccomp: int,
        *,
        x32: bool = False,
    ) -> None:
        self.audit, self.x32 = audit, x32
        self.socket, self.socketpair, self.connect = socket, socketpair, connect
        self.seccomp = seccomp


IO_URING = (425, 426, 427)  # setup, enter, register: the same number everywhere
MACHINES = {
    "x86_64": Machine(0xC000003E, socket=41, socketpair=53, connect=42, seccomp=317, x32=True),
    "aarch64": Machine(0xC00000B7, socket=198, socketpair=199, connect=203, seccomp=277),
}


class _Instruction(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


class _Notification(ctypes.Structure):  # struct seccomp_notif
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("pid", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("nr", ctypes.c_int32),
        ("arch", ctypes.c_uint32),
        ("instruction_pointer", ctypes.c_uint64),
        ("args", ctypes.c_uint64 * 6),
    ]


class _Response(ctypes.Structure):  # struct seccomp_notif_resp
    _fields_ = [
        ("id", ctypes.c_uint64),
        ("val", ctypes.c_int64),
        ("error", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
    ]


def program(machine: Machine, *, notify: bool = False) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jump-if-true, jump-if-false, k) instructions."""
    refuse = RET_ERRNO | errno.EPERM
    refuse_socket = RET_USER_NOTIF if notify else refuse
    body: list[tuple[int, int, int, int]] = [
        (LD_ABS_W, 0, 0, ARCH_OFFSET),
        (JEQ_K, 1, 0, machine.audit),
        (RET_K, 0, 0, refuse),  # another architecture's system call
        (LD_ABS_W, 0, 0, NR_OFFSET),
    ]
    if machine.x32:
        body += [(JGE_K, 0, 1, X32_BIT), (RET_K, 0, 0, refuse)]
    for number in (machine.connect, *IO_URING):
        body += [(JEQ_K, 0, 1, number), (RET_K, 0, 0, refuse)]
    # socket / socketpair: allowed for AF_UNIX only
    body += [
        (JEQ_K, 1, 0, machine.socket),
        (JEQ_K, 0, 3, machine.socketpair),
        (LD_ABS_W, 0, 0, ARG0_OFFSET),
        (JEQ_K, 1, 0, AF_UNIX),
        (RET_K, 0, 0, refuse_socket),
        (RET_K, 0, 0, RET_ALLOW),
    ]
    return body


def supported() -> bool:
    return platform.machine() in MACHINES


def install(*, notify: bool = False) -> int | None:
    """Apply the filter to this process and all it starts; OSError if the kernel refuses.
    With `notify`, the listener's file descriptor, for `answer_refusals`."""
    machine = MACHINES.get(platform.machine())
    if machine is None:
        raise OSError(errno.ENOSYS, f"no socket filter for {platform.machine()} yet")
    code = program(machine, notify=notify)
    instructions = (_Instruction * len(code))(*(_Instruction(*i) for i in code))
    prog = _Program(len(code), instructions)
    libc = ctypes.CDLL(None, use_errno=True)
    if notify:
        flags = SECCOMP_FILTER_FLAG_NEW_LISTENER
        listener = libc.syscall(machine.seccomp, SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(prog))
        if listener < 0:
            number = ctypes.get_errno()
            raise OSError(number, f"seccomp: {os.strerror(number)}")
        return int(listener)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"seccomp: {os.strerror(number)}")
    return None


def answer_refusals(listener: int, counted: list[int]) -> None:
    """Refuse (EPERM) each socket the filter handed to `listener`, adding those of the
    internet families to counted[0], until no process is left under the filter."""
    import select

    libc = ctypes.CDLL(None, use_errno=True)
    notification, response = _Notification(), _Response()
    waiting = select.poll()
    waiting.register(listener, select.POLLIN)
    while True:
        events = waiting.poll()
        if any(event & (select.POLLHUP | select.POLLERR) for _, event in events):
            return  # every process under the filter ended
        ctypes.memset(ctypes.byref(notification), 0, ctypes.sizeof(notification))
        if libc.ioctl(listener, NOTIF_RECV, ctypes.byref(notification)) != 0:
            continue  # the caller died meanwhile (ENOENT), or a signal came (EINTR)
        if notification.args[0] & 0xFFFFFFFF in (AF_INET, AF_INET6):
            counted[0] += 1
        response.id, response.val, response.error = notification.id, 0, -errno.EPERM
        libc.ioctl(listener, NOTIF_SEND, ctypes.byref(response))  # ENOENT: it died
