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
from pathlib import Path

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
)
PROC_SECRETS = ("/proc/*/environ", "/proc/*/task/*/environ", "/proc/*/mem")
# Names that look like secrets wherever they are: private keys and certificates with their
# keys, environment files, package registry and network logins.
SECRET_NAMES = (
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    ".env",
    ".env.*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
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


def looks_secret(path: Path) -> bool:
    """A name that holds secrets (`id_rsa`, `server.pem`, `.env.local`, `.npmrc`...)."""
    name = path.name.lower()  # a case-insensitive disk opens SERVER.PEM as server.pem
    if name.startswith("id_") and "." not in name:  # id_rsa, id_ed25519, ...
        return True
    if name in ENV_TEMPLATES:
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_NAMES)


def is_git_config(path: Path) -> bool:
    return path.name == "config" and path.parent.name == ".git"


def holds_credentials(text: str) -> bool:
    """Whether a git config (or a file like it) holds a password or a token."""
    return bool(_CREDENTIALS.search(text))


def _folded(path: Path) -> Path:
    return Path(str(path).lower())


def _within(path: Path, folder: Path) -> bool:
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
        if any(_within(folded, _folded(place)) for place in self.places):
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
        if self._inodes is None:
            self._inodes = dict(self._walk())
        return self._inodes.get((st.st_dev, st.st_ino))

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
