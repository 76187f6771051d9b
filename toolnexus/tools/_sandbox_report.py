"""What a confined command actually got, read from the launcher's report (a real confined
run, see _sandbox_exec.report), and the words toolnexus says about it: the banner, `-v`
and the model's tool text come from here, never from the configuration."""

from __future__ import annotations

import json
from typing import NamedTuple

ROOT_ONLY_PLACES = ("/etc/", "/root/")  # see _sandbox_view.ROOT_ONLY
NAMESPACE_WORDS = {"user": "user", "mnt": "mount", "pid": "PID", "net": "network"}


class Enforced(NamedTuple):
    """`kind`: "namespaces" (bubblewrap's namespaces and Landlock), "landlock" (the
    fallback: Landlock and the socket filter) or "none" (`why_not` says why)."""

    kind: str
    why_not: str = ""
    namespaces: tuple[str, ...] = ()
    landlock: int = 0
    capabilities: int = 0
    seccomp: bool = False
    interfaces: tuple[str, ...] = ()
    inet_socket: str = "allowed"
    unix_connect: str = "allowed"
    root_read_only: bool = False
    home: str = "readable"
    tmp_private: bool = False
    tmp_bytes: int = 0
    masked: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    uid: int = -1
    network_granted: bool = False
    namespaces_refused: str = ""
    overlay: bool = False  # commands write into an overlay: every change is seen and journaled
    overlay_refused: str = ""

    @classmethod
    def none(cls, why: str) -> Enforced:
        return cls("none", why)

    @classmethod
    def from_report(cls, kind: str, text: str, network_granted: bool) -> Enforced | str:
        """The launcher's JSON report of a `kind` launch (whose policy grants the network
        or not); a line saying what is wrong with it otherwise."""
        try:
            found = json.loads(text)
            return cls(
                kind=kind,
                namespaces=tuple(str(n) for n in found["namespaces"]),
                landlock=int(found["landlock"]),
                capabilities=int(found["capabilities"]),
                seccomp=bool(found["seccomp"]),
                interfaces=tuple(str(n) for n in found["interfaces"]),
                inet_socket=str(found["inet_socket"]),
                unix_connect=str(found["unix_connect"]),
                root_read_only=bool(found["root_read_only"]),
                home=str(found["home"]),
                tmp_private=bool(found["tmp_private"]),
                tmp_bytes=int(found["tmp_bytes"]),
                masked=tuple(str(p) for p in found["masked"]),
                read_only=tuple(str(p) for p in found["read_only"]),
                uid=int(found["uid"]),
                overlay=bool(found.get("overlay", False)),
                network_granted=network_granted,
            )
        except (ValueError, KeyError, TypeError) as exc:
            return f"the launcher's report could not be read ({exc})"

    @property
    def own_network(self) -> bool:
        """In a network namespace of its own with nothing but loopback."""
        return "net" in self.namespaces and set(self.interfaces) <= {"lo"}

    @property
    def no_network(self) -> bool:
        return self.own_network or (
            self.inet_socket == "refused" and self.unix_connect == "refused"
        )

    def network_words(self) -> str:
        if self.no_network:
            return "no network"
        if self.network_granted:
            return "the network allowed" + (
                ""
                if "net" in self.namespaces or self.landlock >= 6
                else " (abstract UNIX sockets of the host reachable too)"
            )
        if self.landlock >= 4:
            return "no TCP, but UDP and DNS open"
        return "the network open (this kernel's Landlock cannot close it)"

    def summary(self) -> str:
        """The banner's and -v's words: what holds, and what does not."""
        walls = []
        if self.kind == "namespaces":
            names = [NAMESPACE_WORDS[n] for n in NAMESPACE_WORDS if n in self.namespaces]
            walls.append(f"{', '.join(names)} namespaces")
        if self.landlock:
            walls.append(f"Landlock ABI {self.landlock}")
        if self.seccomp:
            walls.append("a socket filter")
        said = [" + ".join(walls)]
        said.append("no capabilities" if self.capabilities == 0 else "capabilities kept")
        said.append("system read-only" if self.root_read_only else "system writable by metadata")
        said.append(HOME_WORDS.get(self.home, "home readable"))
        said.append(self.network_words())
        if self.read_only:
            said.append(f"{_count(len(self.read_only), 'git/project place')} read-only")
        root_only = [p for p in self.masked if p.startswith(ROOT_ONLY_PLACES)]
        if len(self.masked) > len(root_only):
            said.append(f"{_count(len(self.masked) - len(root_only), 'secret file')} hidden")
        if root_only:
            said.append("root-only files masked")
        said.append("processes and memory not capped")
        if self.overlay:
            said.append("changes applied from an overlay")
        elif self.overlay_refused:
            said.append(f"no overlay ({self.overlay_refused})")
        line = ", ".join(said)
        if self.namespaces_refused:
            line += f" (no namespaces: {self.namespaces_refused})"
        return line

    def limits(self) -> list[str]:
        """What keeps a command in, in words the model reads (see Sandbox.limits)."""
        said = [
            "its home folder is an empty one of its own"
            if self.home == "replaced"
            else "cannot read the home folder"
            if self.home == "unreadable"
            else "can read the home folder"
        ]
        if self.root_read_only:
            said.append("the rest of the system is read-only")
        said.append("it has " + self.network_words())
        if self.read_only:
            said.append(
                "the repository's git directory and project settings are read-only "
                "(git commit fails here: ask the user to run it)"
            )
        if self.masked:
            said.append("secret-looking files read as Permission denied")
        return said


HOME_WORDS = {"replaced": "home replaced", "unreadable": "home unreadable"}


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
