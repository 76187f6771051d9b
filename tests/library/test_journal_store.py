"""toolnexus.journal's storage, on real files: contents kept once by hash in private files,
never half-written, never when too big or changed meanwhile."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolnexus.journal import ABSENT, Blobs, state_of

OLD = 1_600_000_000_000_000_000  # a time in the past, in ns


def entries(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        found += [os.path.relpath(os.path.join(folder, name), root) for name in dirs + files]
    return sorted(found)


def age(root: Path) -> None:
    """Give every entry its own old mtime (to the nanosecond), folders last."""
    for n, path in enumerate(sorted(entries(root), key=lambda p: -p.count("/"))):
        when = OLD + n * 1_000_000_007
        os.utime(root / path, ns=(when, when), follow_symlinks=False)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def blobs(tmp_path: Path) -> Blobs:
    return Blobs(tmp_path / "blobs")


def blob_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if not p.is_dir())


# -- blobs ------------------------------------------------------------------------------------


def test_a_content_is_kept_once_in_private_files(ws: Path, tmp_path: Path) -> None:
    (ws / "one.txt").write_bytes(b"same\n")
    (ws / "two.txt").write_bytes(b"same\n")
    (ws / "two.txt").chmod(0o755)
    (ws / "link").symlink_to("one.txt")
    age(ws)
    folder = tmp_path / "blobs"
    blobs = Blobs(folder)
    one, two, link = (state_of(ws / name) for name in ("one.txt", "two.txt", "link"))

    assert blobs.keep(ws / "one.txt", one) and blobs.keep(ws / "two.txt", two)
    assert one.digest == two.digest and blobs.has(one.digest)
    [kept] = blob_files(folder)
    assert kept.read_bytes() == b"same\n" and stat.S_IMODE(kept.stat().st_mode) == 0o600
    for sub in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        assert stat.S_IMODE(sub.stat().st_mode) == 0o700
    assert blobs.size() == 5
    assert blobs.keep(ws, state_of(ws)) and blobs.keep(ws / "none", ABSENT)  # nothing to keep

    assert blobs.keep(ws / "link", link)
    assert blobs.read(link.digest) == b"one.txt"
    with blobs.open(one.digest) as handle:
        assert handle.read() == b"same\n"
    assert Blobs(folder).size() == 5 + len("one.txt")  # counted again on opening

    blobs.restore(two.digest, ws / "copy.txt", two)
    blobs.restore(link.digest, ws / "copy-link", link)
    assert state_of(ws / "copy.txt") == two  # content, mode and mtime
    assert state_of(ws / "copy-link") == link
    assert os.readlink(ws / "copy-link") == "one.txt"

    blobs.prune({one.digest})
    assert not blobs.has(link.digest) and blobs.has(one.digest)
    assert blobs.size() == 5 and len(blob_files(folder)) == 1


def test_too_big_or_over_the_budget_is_not_kept(ws: Path, tmp_path: Path) -> None:
    for name, text in [("big", "x" * 11), ("ten", "0123456789"), ("other", "abcdefghij")]:
        (ws / name).write_text(text)
    states = {name: state_of(ws / name) for name in ("big", "ten", "other")}

    small_files = Blobs(tmp_path / "a", max_file_bytes=10)
    assert not small_files.keep(ws / "big", states["big"])
    assert blob_files(tmp_path / "a") == [] and small_files.size() == 0
    assert small_files.keep(ws / "ten", states["ten"])

    budget = Blobs(tmp_path / "b", budget_bytes=15)
    assert budget.keep(ws / "ten", states["ten"])
    assert not budget.keep(ws / "other", states["other"])
    assert not budget.has(states["other"].digest) and budget.size() == 10
    assert budget.keep(ws / "ten", states["ten"])  # kept already: costs nothing
    assert len(blob_files(tmp_path / "b")) == 1


def test_a_file_changed_meanwhile_is_not_kept(ws: Path, blobs: Blobs, tmp_path: Path) -> None:
    names = ("same-size", "longer", "to-link", "to-folder", "gone")
    for name in names:
        (ws / name).write_text("before")
    states = {name: state_of(ws / name) for name in names}
    (ws / "same-size").write_text("after!")
    (ws / "longer").write_text("before and after")
    (ws / "to-link").unlink()
    (ws / "to-link").symlink_to("longer")
    (ws / "to-folder").unlink()
    (ws / "to-folder").mkdir()
    (ws / "gone").unlink()

    for name, state in states.items():
        assert not blobs.keep(ws / name, state), name
    assert blob_files(tmp_path / "blobs") == [] and blobs.size() == 0


def test_a_writer_that_dies_leaves_no_blob(ws: Path, tmp_path: Path) -> None:
    """Killed after writing and syncing but before the rename: the leftover is not a blob,
    the content can be kept again, and prune removes what the dead writer left."""
    (ws / "data").write_bytes(b"precious" * 1000)
    state = state_of(ws / "data")
    folder = tmp_path / "blobs"
    script = textwrap.dedent(
        """
        import os, sys
        from pathlib import Path
        from toolnexus.journal import Blobs, state_of
        os.replace = lambda *args: os._exit(3)  # the process dies where the rename would be
        path = Path(sys.argv[1])
        Blobs(Path(sys.argv[2])).keep(path, state_of(path))
        """
    )
    died = subprocess.run([sys.executable, "-c", script, str(ws / "data"), str(folder)])
    assert died.returncode == 3
    [leftover] = blob_files(folder)
    assert leftover.read_bytes() == b"precious" * 1000 and leftover.name != state.digest

    blobs = Blobs(folder)
    assert not blobs.has(state.digest) and blobs.size() == 0
    with pytest.raises(FileNotFoundError):
        blobs.read(state.digest)
    assert blobs.keep(ws / "data", state) and blobs.read(state.digest) == b"precious" * 1000
    blobs.prune({state.digest})
    assert [p.name for p in blob_files(folder)] == [state.digest]
