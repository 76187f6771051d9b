"""toolnexus.journal's storage and undo, on real files: contents kept once by hash in private
files, never half-written, never when too big or changed meanwhile; change sets rewound to a
workspace identical to the byte and the time (tree_digest), the rewind's own change set
rewound as the redo; nothing changed when a person's edit or an unknown file is in the way;
paths out of the workspace refused."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolnexus.errors import ToolnexusError
from toolnexus.journal import (
    ABSENT,
    Blobs,
    Blocked,
    ChangeSet,
    FileChange,
    FileState,
    RewindConflict,
    RewindInterrupted,
    RewindPlan,
    Step,
    UnsafePath,
    apply_rewind,
    plan_rewind,
    state_of,
    tree_digest,
)
from toolnexus.journal.diffs import line_counts
from toolnexus.journal.rewind import beside_names

OLD = 1_600_000_000_000_000_000  # a time in the past, in ns


def entries(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        found += [os.path.relpath(os.path.join(folder, name), root) for name in dirs + files]
    return sorted(found)


def snapshot(root: Path) -> dict[str, FileState]:
    return {path: state_of(root / path) for path in entries(root)}


def age(root: Path) -> None:
    """Give every entry its own old mtime (to the nanosecond), folders last."""
    for n, path in enumerate(sorted(entries(root), key=lambda p: -p.count("/"))):
        when = OLD + n * 1_000_000_007
        os.utime(root / path, ns=(when, when), follow_symlinks=False)


class Recorder:
    """What the overlay will do: every path whose state differs after an edit, its contents
    kept before and after."""

    def __init__(self, root: Path, blobs: Blobs) -> None:
        self.root, self.blobs = root, blobs
        self.states = snapshot(root)
        for path, state in self.states.items():
            blobs.keep(root / path, state)

    def record(self, source: str) -> ChangeSet:
        after = snapshot(self.root)
        changes = []
        for path in sorted(self.states.keys() | after.keys()):
            before, now = self.states.get(path, ABSENT), after.get(path, ABSENT)
            if before != now:
                changes.append(FileChange(path, before, now))
                self.blobs.keep(self.root / path, now)
        self.states = after
        return ChangeSet(tuple(changes), source)


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


# -- tree_digest ------------------------------------------------------------------------------


def test_tree_digest_sees_every_difference(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: main\n")
    (ws / "f").write_text("abc")
    (ws / "link").symlink_to("f")
    age(ws)
    seen = [tree_digest(ws)]
    assert tree_digest(ws) == seen[0]

    def changed() -> None:
        seen.append(tree_digest(ws))
        assert len(set(seen)) == len(seen)

    mtime = state_of(ws / "f").mtime_ns
    os.utime(ws / "f", ns=(mtime, mtime + 1))
    changed()
    (ws / "f").chmod(0o600)
    changed()
    (ws / "f").write_text("abd")
    os.utime(ws / "f", ns=(mtime, mtime + 1))
    changed()
    (ws / "link").unlink()
    (ws / "link").symlink_to("g")
    os.utime(ws / "link", ns=(mtime, mtime), follow_symlinks=False)
    changed()
    mtime = state_of(ws / ".git").mtime_ns
    (ws / ".git" / "index").write_bytes(b"")
    os.utime(ws / ".git", ns=(mtime, mtime))
    changed()


# -- rewind and redo --------------------------------------------------------------------------


def test_change_sets_rewound_then_redone_to_the_byte_and_the_time(ws: Path, blobs: Blobs) -> None:
    for name in ("a.txt", "b.txt", "c.txt", "gone.txt", "script.sh"):
        (ws / name).write_text(f"{name} at the start\n")
    for name in ("old/x.txt", "old/sub/y.txt", "keep/z.txt", "swap/f.txt", "docs/notes.txt"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(f"{name} at the start\n")
    (ws / "pointer").symlink_to("b.txt")
    (ws / "script.sh").chmod(0o644)
    (ws / "old" / "sub").chmod(0o750)
    age(ws)
    start = tree_digest(ws)
    recorder = Recorder(ws, blobs)

    with open(ws / "a.txt", "a") as handle:  # edited in place: its folder keeps its time
        handle.write("one more line\n")
    (ws / "b.txt").write_text("b rewritten\n")
    (ws / "keep" / "z.txt").write_text("z rewritten\n")
    (ws / "docs" / "notes.txt").write_text("notes rewritten in place\n")
    first = recorder.record("bash")

    (ws / "gone.txt").unlink()
    (ws / "new.txt").write_text("new\n")
    (ws / "keep" / "new").mkdir()
    (ws / "keep" / "new" / "deep.txt").write_text("deep\n")
    (ws / "link").symlink_to("a.txt")
    (ws / "pointer").unlink()
    (ws / "pointer").write_text("a file where a link was\n")
    second = recorder.record("write_file")

    os.rename(ws / "old", ws / "moved")
    (ws / "script.sh").chmod(0o755)
    (ws / "c.txt").write_text("c edited\n")
    (ws / "a.txt").write_text("a edited again\n")
    (ws / "swap" / "f.txt").unlink()
    (ws / "swap").rmdir()
    (ws / "swap").symlink_to("moved")  # a folder become a link: rewound through no link
    third = recorder.record("bash")
    end = tree_digest(ws)
    assert {c.path for c in third.changes} >= {"old/sub/y.txt", "moved/sub/y.txt", "swap"}

    plan = plan_rewind(ws, [first, second, third], blobs)
    assert (plan.conflicts, plan.unavailable, plan.blocked) == ((), (), ())
    assert len(plan.summary()) == len(plan.steps)
    assert "docs" not in {s.path for s in plan.steps}  # restoring notes.txt keeps its time
    undo = apply_rewind(ws, plan, blobs)
    assert tree_digest(ws) == start
    assert undo.source == "rewind" and not undo.interrupted
    assert {c.path for c in undo.changes} == {s.path for s in plan.steps}

    redo = plan_rewind(ws, [undo], blobs)
    assert (redo.conflicts, redo.unavailable, redo.blocked) == ((), (), ())
    apply_rewind(ws, redo, blobs)
    assert tree_digest(ws) == end


def test_a_persons_edit_stops_the_rewind_until_overwritten(ws: Path, blobs: Blobs) -> None:
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text(f"{name} at the start\n")
    age(ws)
    start = tree_digest(ws)
    recorder = Recorder(ws, blobs)
    (ws / "a.txt").write_text("the model's a\n")
    (ws / "b.txt").write_text("the model's b\n")
    change_set = recorder.record("bash")
    (ws / "b.txt").write_text("the person's b\n")
    persons = tree_digest(ws)

    plan = plan_rewind(ws, [change_set], blobs)
    assert plan.conflicts == ("b.txt",)
    assert [line for line in plan.summary() if "conflict" in line] == [
        "restore       b.txt  (conflict: changed since toolnexus changed it)"
    ]
    with pytest.raises(RewindConflict, match="b.txt") as refused:
        apply_rewind(ws, plan, blobs)
    assert refused.value.path == "b.txt" and isinstance(refused.value, ToolnexusError)
    assert tree_digest(ws) == persons  # not even a.txt was touched

    undo = apply_rewind(ws, plan, blobs, overwrite=frozenset({"b.txt"}))
    assert tree_digest(ws) == start
    apply_rewind(ws, plan_rewind(ws, [undo], blobs), blobs)  # the person's b was kept first
    assert tree_digest(ws) == persons


def test_a_person_s_file_overwritten_is_kept_beside_it_and_a_skipped_one_is_left(
    ws: Path, blobs: Blobs
) -> None:
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text(f"{name} at the start\n")
    recorder = Recorder(ws, blobs)
    (ws / "a.txt").write_text("the model's a\n")
    (ws / "b.txt").write_text("the model's b\n")
    change_set = recorder.record("bash")
    (ws / "a.txt").write_text("the person's a\n")
    (ws / "b.txt").write_text("the person's b\n")
    persons = tree_digest(ws)

    plan = plan_rewind(ws, [change_set], blobs)
    beside = beside_names(ws, ["a.txt"])
    assert beside == {"a.txt": "a.txt.toolnexus-1"}
    (ws / "a.txt.toolnexus-1").write_text("taken meanwhile\n")
    with pytest.raises(RewindConflict, match="a.txt.toolnexus-1 exists already"):
        apply_rewind(
            ws, plan.without({"b.txt"}), blobs, overwrite=frozenset({"a.txt"}), beside=beside
        )
    (ws / "a.txt.toolnexus-1").unlink()
    assert tree_digest(ws) == persons  # nothing changed

    undo = apply_rewind(
        ws, plan.without({"b.txt"}), blobs, overwrite=frozenset({"a.txt"}), beside=beside
    )
    assert (ws / "a.txt").read_text() == "a.txt at the start\n"
    assert (ws / "a.txt.toolnexus-1").read_text() == "the person's a\n"
    assert (ws / "b.txt").read_text() == "the person's b\n"
    apply_rewind(ws, plan_rewind(ws, [undo], blobs), blobs)  # a redo: the person's, in place
    assert tree_digest(ws) == persons


def test_a_change_s_lines_are_counted_in_bounded_time(ws: Path, blobs: Blobs) -> None:
    lines = [f"line {i}\n" for i in range(5000)]
    (ws / "long.txt").write_text("".join(lines))
    (ws / "small.txt").write_text("one\ntwo\nthree\n")
    (ws / "data.bin").write_bytes(b"\0\1")
    recorder = Recorder(ws, blobs)
    (ws / "long.txt").write_text("".join(lines[:10] + [f"new {i}\n" for i in range(3000)]))
    (ws / "small.txt").write_text("one\n2\nthree\nfour\n")
    (ws / "data.bin").write_bytes(b"\0\2")
    counts = {c.path: line_counts(blobs, c) for c in recorder.record("bash").changes}
    assert counts == {"data.bin": "binary", "long.txt": "+3000 -4990", "small.txt": "+2 -1"}


def test_a_plan_gone_stale_is_refused(ws: Path, blobs: Blobs) -> None:
    (ws / "a.txt").write_text("start\n")
    recorder = Recorder(ws, blobs)
    (ws / "a.txt").write_text("model\n")
    plan = plan_rewind(ws, [recorder.record("bash")], blobs)
    (ws / "a.txt").write_text("person, after the dry run\n")
    before = tree_digest(ws)
    with pytest.raises(RewindConflict, match="a.txt changed since the rewind was planned"):
        apply_rewind(ws, plan, blobs, overwrite=frozenset({"a.txt"}))
    assert tree_digest(ws) == before


def test_a_content_not_kept_stops_the_rewind(ws: Path, tmp_path: Path) -> None:
    blobs = Blobs(tmp_path / "blobs", max_file_bytes=16)
    (ws / "small.txt").write_text("small\n")
    (ws / "big.txt").write_text("more than sixteen bytes\n")
    recorder = Recorder(ws, blobs)
    (ws / "small.txt").write_text("small, edited\n")
    (ws / "big.txt").write_text("edited\n")
    plan = plan_rewind(ws, [recorder.record("bash")], blobs)
    assert plan.unavailable == ("big.txt",) and plan.conflicts == ()
    before = tree_digest(ws)
    with pytest.raises(RewindConflict, match="big.txt: its content was not kept"):
        apply_rewind(ws, plan, blobs, overwrite=frozenset({"big.txt"}))
    assert tree_digest(ws) == before


def test_a_file_toolnexus_did_not_make_blocks_removing_its_folder(ws: Path, blobs: Blobs) -> None:
    recorder = Recorder(ws, blobs)
    (ws / "new").mkdir()
    (ws / "new" / "a.txt").write_text("the model's\n")
    change_set = recorder.record("bash")
    (ws / "new" / "mine.txt").write_text("the person's\n")
    before = tree_digest(ws)

    plan = plan_rewind(ws, [change_set], blobs)
    assert [b.path for b in plan.blocked] == ["new/mine.txt"]
    with pytest.raises(RewindConflict, match="new/mine.txt"):
        apply_rewind(ws, plan, blobs, overwrite=frozenset({"new", "new/a.txt", "new/mine.txt"}))
    assert tree_digest(ws) == before


def test_a_file_whose_folder_is_gone_blocks_the_rewind(ws: Path, blobs: Blobs) -> None:
    """A change set that recorded the files of a removed folder but not the folder."""
    (ws / "gone").mkdir()
    (ws / "gone" / "f.txt").write_text("f\n")
    (ws / "a.txt").write_text("a\n")
    recorder = Recorder(ws, blobs)
    (ws / "a.txt").write_text("a, edited\n")
    (ws / "gone" / "f.txt").unlink()
    (ws / "gone").rmdir()
    change_set = recorder.record("bash")
    partial = ChangeSet(tuple(c for c in change_set.changes if c.path != "gone"), "bash")
    before = tree_digest(ws)

    plan = plan_rewind(ws, [partial], blobs)
    assert plan.blocked == (Blocked("gone/f.txt", "its folder gone will not be a folder"),)
    with pytest.raises(RewindConflict, match="cannot rewind gone/f.txt: its folder gone"):
        apply_rewind(ws, plan, blobs)
    assert tree_digest(ws) == before


def test_a_rewind_stopped_halfway_reports_what_it_did(
    ws: Path, blobs: Blobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_text(f"{name} at the start\n")
    age(ws)
    recorder = Recorder(ws, blobs)
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_text(f"{name} edited\n")
    (ws / "d.txt").write_text("new\n")
    plan = plan_rewind(ws, [recorder.record("bash")], blobs)
    end = tree_digest(ws)

    restore = Blobs.restore
    calls = []

    def full_disk(self: Blobs, digest: str, target: Path, state: FileState) -> None:
        calls.append(target.name)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        restore(self, digest, target, state)

    monkeypatch.setattr(Blobs, "restore", full_disk)
    with pytest.raises(RewindInterrupted, match="No space left on device") as stopped:
        apply_rewind(ws, plan, blobs)
    done = stopped.value.change_set
    assert done.interrupted and done.source == "rewind"
    assert [(c.path, c.action) for c in done.changes] == [
        ("a.txt", "modified"),
        ("d.txt", "deleted"),
    ]
    monkeypatch.undo()
    apply_rewind(ws, plan_rewind(ws, [done], blobs), blobs)  # what it did, undone exactly
    assert tree_digest(ws) == end


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../outside.txt", "a/../../outside.txt", "a//b", "./a", "a/", ""]
)
def test_a_path_out_of_the_workspace_is_refused(ws: Path, blobs: Blobs, path: str) -> None:
    state = FileState("file", "0" * 64, 0o644, 1, OLD)
    with pytest.raises(UnsafePath, match="not a path inside the workspace"):
        plan_rewind(ws, [ChangeSet((FileChange(path, ABSENT, state),), "bash")], blobs)
    forged = RewindPlan((Step(path, ABSENT, state, ABSENT),), (), (), ())
    with pytest.raises(UnsafePath):
        apply_rewind(ws, forged, blobs)


def test_a_path_beneath_a_link_is_refused(ws: Path, blobs: Blobs, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("outside the workspace\n")
    (ws / "link").symlink_to(outside)
    (ws / "kept.txt").write_text("replacement\n")
    replacement = state_of(ws / "kept.txt")
    assert blobs.keep(ws / "kept.txt", replacement)
    victim = state_of(outside / "victim.txt")
    link = state_of(ws / "link")
    (ws / "door").mkdir()
    door = state_of(ws / "door")
    forged = [
        [FileChange("link/victim.txt", replacement, victim)],
        [FileChange("link/victim.txt", ABSENT, victim)],  # a deletion through the link
        [FileChange("link", link, link), FileChange("link/victim.txt", replacement, ABSENT)],
        # a folder now, a link to outside before: the file would be written through it
        [FileChange("door", link, door), FileChange("door/victim.txt", replacement, ABSENT)],
    ]
    for changes in forged:
        with pytest.raises(UnsafePath, match="victim.txt: its folder (link|door) is a symlink"):
            plan_rewind(ws, [ChangeSet(tuple(changes), "bash")], blobs)
    assert (outside / "victim.txt").read_text() == "outside the workspace\n"
