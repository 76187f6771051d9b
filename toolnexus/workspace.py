"""The workspace: what the built-in tools may touch without asking.

File tools act inside one root folder. A path is resolved (`~`, `..`, symlinks) before it is
judged, so a `notes.txt` that links to `~/.bashrc` is judged as `~/.bashrc`:

- a special file (FIFO, device, socket) is refused;
- a secret (keys, credentials, `/proc/*/environ`...) is refused unless a path rule without
  wildcards names it: no approval, not even `--yes`, opens one;
- a path outside the root asks first, unless a path rule allows (or denies) it.

`fetch_url` is judged the same way by address: a host that resolves to a loopback, private,
link-local or otherwise non-public address asks first, unless a host rule decides.

Asking goes through suspension (suspension.py): the tool returns an approval request and
is run again with the person's answer, so a host's `wait_for` (a terminal prompt, `--yes`,
nobody) decides, and the request names the resolved path or address.
"""

from __future__ import annotations

import fnmatch
import hashlib
import ipaddress
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .suspension import suspend
from .tools import ToolContext, ToolResult

DECISIONS = ("allow", "ask", "deny")

# Under the home folder: credentials of common tools.
HOME_SECRETS = (".ssh", ".aws", ".config/gcloud", ".netrc", ".gnupg", ".git-credentials",
                ".pgpass", ".docker/config.json", ".kube", ".azure")
# Anywhere: private keys and certificates with their keys.
SECRET_NAMES = ("*.pem", "*.key", "*.p12", "*.pfx")
PROC_SECRETS = ("/proc/*/environ", "/proc/*/task/*/environ", "/proc/*/mem")


class Refused(PermissionError):
    """A tool may not touch this; the message says why (the model reads it)."""


class ApprovalNeeded(Exception):  # noqa: N818 - not an error: a question for a person
    """Raised inside a built-in tool that must ask first; `result` is the suspension the
    tool returns (see builtins.guarded)."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.output)
        self.result = result


def checked_rules(rules: Mapping[str, str] | None, what: str) -> list[tuple[str, str]]:
    """`rules` (pattern -> decision) checked, most specific first; `what` names them in
    the error ("path rule")."""
    checked = []
    for pattern, decision in (rules or {}).items():
        if decision not in DECISIONS:
            raise ValueError(f"{what} {pattern!r} = {decision!r}: "
                             "use \"allow\", \"ask\" or \"deny\"")
        checked.append((pattern, decision))
    # exact ones first, then the longest (most specific) pattern
    return sorted(checked, key=lambda rule: (_has_wildcard(rule[0]), -len(rule[0])))


def _has_wildcard(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _folded(path: Path) -> Path:
    return Path(str(path).lower())


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class Workspace:
    """The root the file tools work in, the secrets they never read, and the path and
    host rules ("allow" / "ask" / "deny") that decide what lies outside.

    `secrets`: more files or folders that hold secrets (an application's own keys file
    and config folder). `paths`: glob patterns on resolved paths (`~` allowed; `*` also
    matches across folders). `hosts`: glob patterns on `host` or `host:port`, in
    any case (an IPv6 address in brackets: `[::1]:8080`).
    """

    def __init__(self, root: str | Path | None = None, *, secrets: Iterable[str | Path] = (),
                 paths: Mapping[str, str] | None = None,
                 hosts: Mapping[str, str] | None = None) -> None:
        self.root = _real(root if root is not None else os.getcwd())
        self.extra_secrets = [_real(p) for p in secrets]
        self.path_rules = [(str(_real(p)), d) for p, d in checked_rules(paths, "path rule")]
        self.host_rules = [(_host_glob(p), d) for p, d in checked_rules(hosts, "host rule")]

    # -- paths ---------------------------------------------------------------------------
    def resolve(self, path: str | Path) -> Path:
        """`path` as the system will open it: `~` expanded, relative to the root,
        `..` and every symlink resolved."""
        given = Path(os.path.expanduser(str(path)))
        return Path(os.path.realpath(given if given.is_absolute() else self.root / given))

    def inside(self, path: Path) -> bool:
        return _within(path, self.root)

    def is_secret(self, path: Path) -> bool:
        # in any case: a case-insensitive disk (macOS) opens ~/.SSH/id_rsa as ~/.ssh/id_rsa
        folded, home = _folded(path), _folded(_real(Path.home()))
        if any(_within(folded, home / name) for name in HOME_SECRETS):
            return True
        if any(_within(folded, _folded(secret)) for secret in self.extra_secrets):
            return True
        if any(fnmatch.fnmatchcase(str(path), pattern) for pattern in PROC_SECRETS):
            return True
        name = folded.name
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_NAMES):
            return True
        if name.startswith("id_") and "." not in name:  # id_rsa, id_ed25519, ...
            return True
        return (name == ".env" or name.startswith(".env.")) and not self.inside(path)

    def path_rule(self, path: Path) -> str | None:
        text = str(path)
        for pattern, decision in self.path_rules:
            if fnmatch.fnmatchcase(text, pattern) or _within(path, Path(pattern)):
                return decision
        return None

    def secret_allowed(self, path: Path) -> bool:
        """A secret opens only by an "allow" rule without wildcards that names it or a
        folder holding it which is itself secret (`~/.aws`, not `~`)."""
        for pattern, decision in self.path_rules:
            if decision != "allow" or _has_wildcard(pattern):
                continue
            named = Path(pattern)
            if path == named or (_within(path, named) and self.is_secret(named)):
                return True
        return False

    def refusal(self, path: Path) -> str | None:
        """Why `path` may not be touched at all (no approval opens it), or None."""
        if self.is_secret(path) and not self.secret_allowed(path):
            return (f"{path} holds secrets: no tool may read or change it (a path rule "
                    "naming it exactly is the only way to allow it)")
        if self.path_rule(path) == "deny":
            return f"{path} is denied by a path rule"
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return None  # a missing file fails on its own, with its own message
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return f"{path} is a special file (a device, FIFO or socket): tools read only files"
        return None

    def permit(self, given: str, context: ToolContext | None, *, action: str) -> Path:
        """The resolved path a tool may `action` ("read", "write", ...), or Refused, or
        ApprovalNeeded when it lies outside the root and no rule decides (or an "ask"
        rule names it)."""
        path = self.resolve(given)
        why = self.refusal(path)
        if why:
            raise Refused(why)
        rule = self.path_rule(path)
        if rule == "allow" or (self.inside(path) and rule != "ask"):
            return path
        shown = given if str(path) == given else f"{given} (which is {path})"
        why = ("? (a path rule asks first)" if rule == "ask"
               else f", outside the workspace {self.root}?")
        ask(context, f"path:{path}", f"{action} {shown}{why}")
        return path

    # -- addresses -----------------------------------------------------------------------
    def host_rule(self, host: str, port: int) -> str | None:
        if ":" in host:  # an IPv6 literal, written in brackets as in a URL
            host = f"[{host}]"
        for pattern, decision in self.host_rules:
            if fnmatch.fnmatchcase(f"{host}:{port}", pattern) or fnmatch.fnmatchcase(
                    host, pattern):
                return decision
        return None

    def permit_address(self, origin: str, host: str, port: int, addresses: list[str],
                       context: ToolContext | None) -> None:
        """May a fetch connect to `addresses` (what `host` resolved to)? Refused by a
        deny rule; asks when one of them is not a public address."""
        rule = self.host_rule(host.lower(), port)
        if rule == "deny":
            raise Refused(f"{host} is denied by a host rule")
        if rule == "allow":
            return
        private = [a for a in addresses if not is_public(a)]
        if private:
            where = host if private == [host] else f"{host} ({', '.join(private)})"
            ask(context, f"origin:{origin}",
                f"fetch {origin}? {where} is not a public address (loopback, private "
                "network or link-local)")
        elif rule == "ask":
            ask(context, f"origin:{origin}", f"fetch {origin}? (a host rule asks first)")


def _host_glob(pattern: str) -> str:
    """A host rule as a lowercase glob; the opening bracket of an IPv6 literal (`[::1]:8080`)
    is itself, not the start of a character class."""
    pattern = pattern.lower()
    return "[[]" + pattern[1:] if pattern.startswith("[") else pattern


def is_public(address: str) -> bool:
    """A globally routable address: not loopback, private, link-local (cloud metadata
    lives there), shared, reserved or unspecified; IPv4 inside IPv6 is judged as IPv4."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if any(ip in network for network in _LAST_32_BITS_IPV4):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public(str(embedded))
        if any(ip in network for network in _LOCAL_IPV6):
            return False
    return ip.is_global and not ip.is_multicast


# NAT64, IPv4-compatible (deprecated) and IPv4-translated (SIIT) addresses
_LAST_32_BITS_IPV4 = tuple(map(ipaddress.ip_network, ("64:ff9b::/96", "::/96", "::ffff:0:0:0/96")))
# Local-use NAT64 (translated to whatever the local network chooses) and the old site-local
# private networks, which the standard library counts as global.
_LOCAL_IPV6 = tuple(map(ipaddress.ip_network, ("64:ff9b:1::/48", "fec0::/10")))


def request_id(context: ToolContext | None, subject: str) -> str:
    """The same call asking about the same thing gets the same id, so its re-run can tell
    the answer is for exactly this (a symlink changed meanwhile asks again)."""
    call = context.call_id if context else ""
    return "req_" + hashlib.sha256(f"{call}\0{subject}".encode()).hexdigest()[:16]


def approved(context: ToolContext | None, subject: str) -> bool:
    answer: Any = context.answer if context else None
    return (isinstance(answer, dict) and bool(answer.get("ok"))
            and answer.get("id") == request_id(context, subject))


def ask(context: ToolContext | None, subject: str, prompt: str) -> None:
    """Go on if the person already said yes to `subject` in this call, else ask."""
    if not approved(context, subject):
        raise ApprovalNeeded(suspend("approval", prompt, id=request_id(context, subject)))
