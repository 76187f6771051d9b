"""What counts as a secret file: by where it is (credential folders in the home folder, the
application's own keys), by its name (private keys, `.env` files...), by what it holds (a git
config with a token in it) and by what it is (its inode: a hard link or a bind mount of a
known secret has another name but the same inode)."""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path, PurePath

__all__ = [
    "KnownSecrets",
    "SecretNames",
    "checked_name",
    "holds_credentials",
    "is_git_config",
    "looks_secret",
    "within",
]

# Under the home folder: credentials of common tools.
HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".netrc",
    ".gnupg",
    ".git-credentials",
    ".pgpass",
    ".docker/config.json",
    ".kube",
    ".azure",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".config/gh/hosts.yml",
    ".vault-token",
)
PROC_SECRETS = ("/proc/*/environ", "/proc/*/task/*/environ", "/proc/*/mem")
# Names that look like secrets wherever they are, in any case: private keys, certificates
# with their keys and key stores; environment files; registry, network, database and vault
# logins; cloud credentials; infrastructure state (Terraform's holds every secret it made);
# secrets files of deployment tools. A pattern with a "/" matches the last parts of a path
# (`.aws/credentials` at any depth).
SECRET_NAMES = (
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "*.kdbx",
    ".env",
    ".env.*",
    ".envrc",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".git-credentials",
    ".htpasswd",
    ".vault-token",
    ".s3cfg",
    ".dockercfg",
    ".docker/config.json",
    ".aws/credentials",
    "credentials.json",
    "client_secret*.json",
    "*service-account*.json",
    "*-" + "[0-9a-f]" * 12 + ".json",  # a Google Cloud key as downloaded: PROJECT-KEYID.json
    "credentials.tfrc.json",
    "*.tfstate",
    "*.tfstate.backup",
    "secrets.yaml",
    "secrets.yml",
    "secrets.*.yaml",
    "secrets.*.yml",
    "secrets.json",
    "secrets.toml",
)
# Templates committed beside a project's .env: no secrets by convention.
ENV_TEMPLATES = (".env.example", ".env.sample", ".env.template", ".env.dist", ".env.defaults")
# In a git config: a URL with a password or a token as its user, or a header, password or
# token setting.
_CREDENTIALS = re.compile(
    r"://[^/\s@:]*:[^/\s@]+@|://[A-Za-z0-9_\-]{20,}@|"
    r"^\s*(extraheader|password|\w*token)\s*=",
    re.I | re.M,
)
MAX_INODES = 20_000  # files noted under the secret places (a huge ~/.gnupg is cut there)


class SecretNames:
    """Which paths look like they hold secrets by their names: SECRET_NAMES, private keys
    named `id_*` (no dot: `id_rsa`, not `id_rsa.pub`) and `extra` patterns, all in any case
    (a case-insensitive disk opens SERVER.PEM as server.pem). A pattern is a glob on the
    name, or with a "/" on the path's last parts (`vault/*.json`). The templates of `.env`
    (ENV_TEMPLATES) are not secrets unless an `extra` pattern names them."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.extra = tuple(checked_name(pattern) for pattern in extra)
        self._extra = _by_depth(self.extra)

    def matches(self, path: str | PurePath) -> bool:
        parts = [part.lower() for part in PurePath(path).parts]
        if not parts:
            return False
        if _matches(self._extra, parts):
            return True
        name = parts[-1]
        if name in ENV_TEMPLATES:
            return False
        if name.startswith("id_") and "." not in name:  # id_rsa, id_ed25519, ...
            return True
        return _matches(_BUILT_IN, parts)


def checked_name(pattern: str) -> str:
    """A secret-name pattern, lowercased; a ValueError says what is wrong with one that
    is no name or end of a path (empty, absolute, `~`, an empty or `..` part)."""
    parts = pattern.split("/")
    if not pattern or pattern.startswith("~") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(
            f'secret file pattern {pattern!r}: give a file name such as "*.secret" or the '
            'end of a path such as "vault/*.json", not a folder or an absolute path'
        )
    return pattern.lower()


def _by_depth(patterns: Iterable[str]) -> dict[int, re.Pattern[str]]:
    """The patterns as one regular expression per number of path parts they match."""
    depths: dict[int, list[str]] = {}
    for pattern in patterns:
        depths.setdefault(pattern.count("/") + 1, []).append(fnmatch.translate(pattern))
    return {depth: re.compile("|".join(found)) for depth, found in depths.items()}


def _matches(patterns: dict[int, re.Pattern[str]], parts: list[str]) -> bool:
    return any(
        len(parts) >= depth and regex.match("/".join(parts[-depth:]))
        for depth, regex in patterns.items()
    )


_BUILT_IN = _by_depth(SECRET_NAMES)
BUILT_IN_NAMES = SecretNames()


def looks_secret(path: str | PurePath) -> bool:
    """A name that holds secrets by the built-in patterns (`id_rsa`, `server.pem`,
    `.env.local`, `.npmrc`, `sub/.aws/credentials`...); SecretNames adds more."""
    return BUILT_IN_NAMES.matches(path)


def is_git_config(path: Path) -> bool:
    return path.name == "config" and path.parent.name == ".git"


def holds_credentials(text: str) -> bool:
    """Whether a git config (or a file like it) holds a password or a token."""
    return bool(_CREDENTIALS.search(text))


def _folded(path: Path) -> Path:
    return Path(str(path).lower())


def within(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or lies in it (both resolved)."""
    return path == folder or folder in path.parents


class KnownSecrets:
    """The secret places of one user (`home`) and an application (`extra`: its keys file,
    config and data folders): by path, and by inode once asked."""

    def __init__(self, extra: Iterable[Path] = (), home: Path | None = None) -> None:
        self.home = Path(os.path.realpath(home or Path.home()))
        self.places = [self.home / name for name in HOME_SECRETS]
        self.places += [Path(os.path.realpath(os.path.expanduser(p))) for p in extra]
        self._inodes: dict[tuple[int, int], Path] | None = None

    def holds(self, path: Path) -> bool:
        """Whether the resolved `path` lies in a secret place (in any case: ~/.SSH on a
        case-insensitive disk is ~/.ssh)."""
        folded = _folded(path)
        if any(within(folded, _folded(place)) for place in self.places):
            return True
        return any(fnmatch.fnmatchcase(str(path), pattern) for pattern in PROC_SECRETS)

    def leads_to(self, given: Path) -> Path | None:
        """The secret `given` is or leads to: by a symlink, or as another name of the same
        file (a hard link); a name that only looks secret counts when a link leads to it
        from a name that does not. None if it leads to none."""
        real = Path(os.path.realpath(os.path.expanduser(given)))
        if self.holds(real):
            return real
        if looks_secret(real) and not looks_secret(Path(given)):
            return real
        try:
            return self.behind(os.stat(real))
        except OSError:
            return None

    def behind(self, st: os.stat_result) -> Path | None:
        """The secret an opened file or folder is (by device and inode), if it is one."""
        return self._known().get((st.st_dev, st.st_ino))

    def inodes(self) -> frozenset[tuple[int, int]]:
        """The (device, inode) of every file and folder in the secret places."""
        return frozenset(self._known())

    def _known(self) -> dict[tuple[int, int], Path]:
        if self._inodes is None:
            self._inodes = dict(self._walk())
        return self._inodes

    def _walk(self) -> Iterable[tuple[tuple[int, int], Path]]:
        count = 0
        for place in self.places:
            for path in _tree(place):
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    continue
                yield (st.st_dev, st.st_ino), path
                count += 1
                if count >= MAX_INODES:
                    return


def _tree(place: Path) -> Iterable[Path]:
    yield place
    if place.is_dir() and not place.is_symlink():
        for folder, dirs, names in os.walk(place):
            for name in dirs + names:
                yield Path(folder) / name
