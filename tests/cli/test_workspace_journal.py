"""Each bash command writes into an overlay of the workspace (issue 34): what it changed is
read from the overlay, told to the model, and applied crash-safely; a file counts as changed
by its content and mode, never by being touched; mtimes are kept; an edit the person made
while the command ran is never overwritten; an apply a crash stopped is finished at the next
start."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support import kernel
from tests.support.cli_helpers import CLI, ENTRY, model_calls
from tests.support.pty_screen import PtySession
from tests.support.sandbox_calls import bash, run_calls
from tests.support.stub_provider import openai_stream
from tests.support.waiting import WAIT_S, eventually, running_with, wait_until
from toolnexus import create_toolkit
from toolnexus.journal import tree_digest
from toolnexus.tools.suspension import pending_request

NAMESPACES_OK, NO_NAMESPACES = kernel.namespaces()
pytestmark = kernel.needs(NAMESPACES_OK, NO_NAMESPACES)


@pytest.fixture
def work(cli: CLI) -> Path:
    folder = cli.root / "work"
    (folder / "src").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "gone.txt", "src/one.py", "src/two.py"):
        (folder / name).write_text(f"{name}\n")
    return folder


def test_a_command_s_changes_are_applied_and_told(cli, stub, work):
    [result] = run_calls(
        cli,
        stub,
        work,
        bash(
            "echo more >> a.txt && rm gone.txt && echo new > new.txt && mkdir -p d/e && "
            "echo deep > d/e/f.txt && mv src lib && chmod 600 b.txt && echo done"
        ),
        "--yes",
    )
    assert result.startswith("exit code 0\ndone\n\n[files changed: +4 ~2 -3: "), result
    for told in ("a.txt", "b.txt", "gone.txt (deleted)", "new.txt (new)", "lib/one.py (new)"):
        assert told in result, told
    assert (work / "a.txt").read_text() == "a.txt\nmore\n"
    assert not (work / "gone.txt").exists() and not (work / "src").exists()
    assert (work / "lib" / "one.py").read_text() == "src/one.py\n"
    assert (work / "d" / "e" / "f.txt").read_text() == "deep\n"
    assert (work / "b.txt").stat().st_mode & 0o777 == 0o600
    overlays = cli.root / "cache" / "toolnexus" / "sandbox" / "overlays"
    assert [p for p in overlays.rglob("*") if p.parent != overlays] == []  # none left over


@pytest.mark.parametrize(
    "config", ["[sandbox]\noverlay = false\n", "[sandbox]\nnamespaces = false\n"]
)
def test_without_an_overlay_changes_are_found_by_comparing_and_can_be_rewound(
    cli, stub, work, config
):
    cli.write_config(config)
    start = tree_digest(work)
    command = "echo new > new.txt && echo more >> a.txt && rm gone.txt && echo ok"
    replies(stub, [("bash", {"command": command})])
    asked = cli.call("ask", "--builtins", "--yes", "--id", "t-6", "--root", str(work), "go")
    assert asked.code == 0, asked
    [told] = [m["content"] for m in stub.requests[-1].json["messages"] if m["role"] == "tool"]
    assert told == (
        "exit code 0\nok\n\n[files changed: +1 ~1 -1: a.txt +1 -0, gone.txt (deleted) +0 -1, "
        "new.txt (new) +1 -0]"
    )
    assert (work / "new.txt").read_text() == "new\n"  # written as it ran
    assert cli.call("threads", "rewind", "t-6", "1").code == 0
    assert tree_digest(work) == start


def test_touching_opening_or_an_edit_that_matches_nothing_changes_nothing(cli, stub, work):
    before = (work / "a.txt").stat().st_mtime_ns
    [result] = run_calls(
        cli,
        stub,
        work,
        bash(
            "touch a.txt && python3 -c \"open('a.txt', 'r+').close()\" && "
            "sed -i s/nothing-here/x/ a.txt && touch -d 2001-01-01 new.txt && echo ok"
        ),
        "--yes",
    )
    assert result == "exit code 0\nok\n\n[files changed: +1 ~0 -0: new.txt (new) +0 -0]", result
    assert (work / "a.txt").stat().st_mtime_ns == before  # not even its time moved
    assert (work / "new.txt").stat().st_mtime == pytest.approx(978307200, abs=86400)  # kept


def test_an_apply_stopped_after_file_k_is_finished_at_the_next_start(cli, stub, work):
    model_calls(stub, bash("for n in 1 2 3 4 5; do echo $n > made-$n.txt; done"), "done")
    crashed = cli.run(
        "ask",
        "--builtins",
        "--yes",
        "--id",
        "t-8",
        "--root",
        str(work),
        "go",
        env={"TOOLNEXUS_JOURNAL_STOP_AFTER": "2"},
    )
    assert crashed.code == 70, crashed  # stopped as a crash would, after two files
    assert sorted(p.name for p in work.glob("made-*")) == ["made-1.txt", "made-2.txt"]

    model_calls(stub, [], "nothing to do")
    started = cli.run("ask", "--builtins", "--yes", "--id", "t-8", "--root", str(work), "hi")
    assert started.code == 0, started
    assert "finished applying a command's changes" in started.stderr, started
    assert {p.name: p.read_text() for p in work.glob("made-*")} == {
        f"made-{n}.txt": f"{n}\n" for n in range(1, 6)
    }
    [record] = cli.call("threads", "show", "t-8", "--changes", "--json").json  # journaled too
    assert (record["turn"], record["summary"]) == (1, "+5 ~0 -0"), record
    assert cli.call("threads", "rewind", "t-8", "1").code == 0
    assert list(work.glob("made-*")) == []


async def test_the_person_s_edit_during_a_command_is_kept_and_the_command_s_beside_it(
    tmp_path,
):
    work = tmp_path / "work"
    work.mkdir()
    (work / "shared.txt").write_text("first\n")
    marker = f"journal-{os.getpid()}-{id(tmp_path)}-42"
    toolkit = await create_toolkit(builtins=["bash"], workspace=work)
    try:
        # the trap is set before anything carries the marker (the shell computes its 42):
        # a signal found by the marker never comes before the shell can take it
        command = waiting(marker, "trap 'echo from-the-command > shared.txt; exit 0' USR1")
        call = asyncio.create_task(toolkit.execute("bash", {"command": command}))
        [shell] = await eventually(lambda: _shell(marker), "the command to run")
        (work / "shared.txt").write_text("the person's edit\n")  # while it runs
        os.kill(shell, signal.SIGUSR1)
        result = await call
    finally:
        await toolkit.close()
    assert (work / "shared.txt").read_text() == "the person's edit\n"
    assert (work / "shared.txt.toolnexus-1").read_text() == "from-the-command\n"
    asked = pending_request(result)  # a person is asked whether the command's should win
    assert asked is not None and asked["needs_person"], result
    assert "you changed shared.txt while the command wrote it too:" in asked["prompt"]
    assert "+from-the-command" in asked["prompt"] and "-the person's edit" in asked["prompt"]
    assert (  # without a person, the model reads that both were kept
        "[shared.txt was changed by the user while this command ran: kept theirs; this "
        "command's version is shared.txt.toolnexus-1]"
    ) in asked["fallback"]


def waiting(marker: str, first: str) -> str:
    """A command that does `first`, then waits for ever in a loop of `sleep`s marked with
    `marker` (which ends in -42, computed by the shell, so the command line does not hold
    it): once a marked process is seen, `first` is done."""
    unmarked = marker.removesuffix("-42") + "-$((6*7))"
    return f"{first}; export TOOLNEXUS_TEST_MARK={unmarked}; while :; do sleep 0.05; done"


def _shell(marker: str) -> list[int]:
    """The bash of the command: the parent of a `sleep` that carries the marker."""
    found = set()
    for pid in running_with(marker):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if name == "sleep":
            found.add(int(status.split("PPid:")[1].split()[0]))
    return sorted(found)


def replies(stub, *steps: list[tuple[str, dict]], answer: str = "done") -> None:
    """The stub's next requests ask for each step's calls in turn, then `answer`."""
    first = len(stub.requests) + 1

    def handler(request):
        step = len(stub.requests) - first
        if 0 <= step < len(steps):
            return openai_stream(tool_calls=steps[step])
        return openai_stream(answer)

    stub.handler = handler


def a_turn_of_changes(work: Path) -> tuple[list[tuple[str, dict]], list[tuple[str, dict]]]:
    """Three edit_file calls, then a command that deletes one file, creates two, renames a
    folder and changes a mode."""
    edits = [
        ("edit_file", {"path": str(work / name), "old": name, "new": f"{name} edited"})
        for name in ("a.txt", "b.txt", "src/one.py")
    ]
    command = (
        "rm gone.txt && echo one > made-1.txt && echo two > made-2.txt && mv src lib && "
        "chmod 755 a.txt"
    )
    return edits, [("bash", {"command": command})]


@pytest.mark.parametrize("git", [False, True], ids=["plain folder", "git repository"])
def test_threads_rewind_puts_every_file_back_and_redo_gives_the_turn_again(cli, stub, work, git):
    if git:
        subprocess.run(["git", "init", "-q", str(work)], check=True)
    start = tree_digest(work)
    edits, command = a_turn_of_changes(work)
    replies(stub, edits, command)
    asked = cli.call("ask", "--builtins", "--yes", "--id", "t-1", "--root", str(work), "go")
    assert asked.code == 0, asked
    assert not (work / "gone.txt").exists() and (work / "lib" / "one.py").exists()
    assert (work / "a.txt").stat().st_mode & 0o777 == 0o755
    end = tree_digest(work)

    shown = cli.call("threads", "show", "t-1", "--changes")
    assert "turn 1 (bash, in " in shown.stdout and "deleted   gone.txt" in shown.stdout, shown
    assert "turn 1 (edit_file, in " in shown.stdout, shown
    as_json = cli.call("threads", "show", "t-1", "--changes", "--json").json
    assert [r["summary"] for r in as_json].count("+0 ~1 -0") == 3  # the three edits

    dry = cli.call("threads", "rewind", "t-1", "1", "--dry-run")
    assert dry.code == 0 and "gone.txt" in dry.stdout, dry
    assert tree_digest(work) == end  # a dry run changes nothing

    rewound = cli.call("threads", "rewind", "t-1", "1")
    assert rewound.code == 0, rewound
    assert tree_digest(work) == start  # contents, modes and mtimes, byte for byte

    redone = cli.call("threads", "redo", "t-1")
    assert redone.code == 0, redone
    assert tree_digest(work) == end


def test_a_file_changed_between_a_turn_and_its_rewind_stops_the_rewind(cli, stub, work):
    replies(stub, [("bash", {"command": "echo from-the-model > a.txt"})])
    assert (
        cli.call("ask", "--builtins", "--yes", "--id", "t-2", "--root", str(work), "go").code == 0
    )
    (work / "a.txt").write_text("the person's later edit\n")
    (work / "b.txt").write_text("untouched by the turn\n")
    refused = cli.call("threads", "rewind", "t-2", "1")
    assert refused.code == 1
    assert refused.stderr.count("\n") == 1 and "a.txt" in refused.stderr, refused
    assert (work / "a.txt").read_text() == "the person's later edit\n"  # nothing lost


def test_threads_rewind_conversation_marks_the_turns_undone_and_dry_run_only_lists(cli, stub, work):
    def turn(command: str, question: str) -> None:
        replies(stub, [("bash", {"command": command})])
        asked = cli.call("ask", "--builtins", "--yes", "--id", "t-c", "--root", str(work), question)
        assert asked.code == 0, asked

    turn("echo first > a.txt", "first")
    turn("echo second > b.txt", "second")
    stored = cli.call("threads", "show", "t-c", "--json").json

    dry = cli.call("threads", "rewind", "t-c", "2", "--conversation", "--dry-run")
    assert dry.code == 0, dry
    assert "b.txt" in dry.stdout and "a.txt" not in dry.stdout, dry
    assert "would mark turns 2 and later of t-c (4 messages) undone" in dry.stdout, dry
    assert (work / "b.txt").read_text() == "second\n"
    assert cli.call("threads", "show", "t-c", "--json").json == stored  # nothing changed

    rewound = cli.call("threads", "rewind", "t-c", "2", "--conversation")
    assert rewound.code == 0, rewound
    assert "marked turns 2 and later of t-c (4 messages) undone" in rewound.stdout, rewound
    assert (work / "b.txt").read_text() == "b.txt\n" and (work / "a.txt").read_text() == "first\n"
    now = cli.call("threads", "show", "t-c", "--json").json
    assert len(now) == len(stored)  # append-only: every message kept, the later ones marked
    assert [m.get("dropped") for m in now] == [None] * 4 + ["undone"] * 4, now
    sent = cli.call("threads", "show", "t-c", "--sent").stdout
    assert "first" in sent and "second" not in sent, sent

    again = cli.call("threads", "rewind", "t-c", "9", "--conversation")
    assert again.code == 2 and "no turn 9" in again.stderr, again


@pytest.mark.parametrize("review", [False, True], ids=["applied at once", "--review"])
@pytest.mark.parametrize("git", [False, True], ids=["plain folder", "git repository"])
def test_the_chat_rewinds_redoes_and_shows_the_diff_of_a_turn(cli, stub, work, git, review):
    if git:
        subprocess.run(["git", "init", "-q", str(work)], check=True)
    start = tree_digest(work)
    edits, command = a_turn_of_changes(work)
    replies(stub, edits, command, answer="All done.")
    flags = ["--review"] if review else ["--yes"]
    chat = PtySession(cli, "chat", "--builtins", *flags, "--root", str(work), rows=50, cols=160)
    try:
        chat.expect("›")
        chat.send_line("change things")
        if review:  # the edits (every edit_file, this session), then the command's changes
            chat.expect(re.escape("[y]es / [n]o / [a]lways (this session):"))
            chat.child.send("e")
            # review asks about a command once, after it ran: not before too
            chat.expect(re.escape("apply what this command changed in the workspace (+"))
            chat.expect(re.escape("[y]es / [n]o"))
            chat.child.send("y")
        chat.expect("All done.")
        end = tree_digest(work)
        chat.send_line("/diff")
        chat.expect(re.escape("+a.txt edited"))
        chat.send_line("/rewind")
        chat.expect(re.escape("turn 1: 4 call(s), a.txt"))
        chat.send_line("/rewind 1")
        chat.expect("files back as before turn 1")
        assert tree_digest(work) == start
        chat.send_line("/redo")
        chat.expect("the last rewind undone")
        assert tree_digest(work) == end
        (work / "a.txt").write_text("the person's own edit\n")
        chat.send_line("/undo both")
        chat.expect(re.escape("overwrite it? [y]es"))
        chat.child.send("n")
        chat.expect("rewind cancelled: nothing was changed")
        assert (work / "a.txt").read_text() == "the person's own edit\n"
    finally:
        chat.close()


def test_changes_that_run_later_are_flagged_and_ask_json_carries_the_change_sets(cli, stub, work):
    command = (
        "printf 'all:\\n\\ttrue\\n' > Makefile && echo x > tool.sh && chmod +x tool.sh && "
        "mkdir -p .github/workflows && echo on: push > .github/workflows/ci.yml && "
        "echo ok > plain.txt"
    )
    model_calls(stub, bash(command), "done")
    result = cli.call("ask", "--builtins", "--yes", "--json", "--root", str(work), "go")
    assert result.code == 0, result
    [changes] = result.json["changes"]
    assert changes["summary"] == "+4 ~0 -0"
    assert {c[0] for c in changes["changes"]} >= {"Makefile", "tool.sh", "plain.txt"}
    [told] = [m["content"] for m in stub.requests[-1].json["messages"] if m["role"] == "tool"]
    for later in (
        "Makefile (new) +2 -0 (runs later)",
        "tool.sh (new) +1 -0 (runs later)",
        "ci.yml (new) +1 -0 (runs later)",
    ):
        assert later in told, told
    assert "plain.txt (new) +1 -0," in told or told.endswith("plain.txt (new) +1 -0]"), told


def test_a_fork_can_rewind_the_turns_it_shares_and_deleting_frees_the_contents(cli, stub, work):
    start = tree_digest(work)
    replies(stub, [("bash", {"command": "echo changed > a.txt && rm b.txt"})])
    assert (
        cli.call("ask", "--builtins", "--yes", "--id", "t-3", "--root", str(work), "go").code == 0
    )
    assert cli.call("threads", "fork", "t-3", "--id", "t-4").code == 0
    blobs = cli.root / "data" / "toolnexus" / "journal" / "blobs"
    kept = sorted(p.name for p in blobs.rglob("*") if p.is_file())
    assert kept  # a.txt and b.txt before, a.txt after

    assert cli.call("threads", "rm", "--yes", "t-3").code == 0
    assert sorted(p.name for p in blobs.rglob("*") if p.is_file()) == kept  # the fork uses them
    rewound = cli.call("threads", "rewind", "t-4", "1")
    assert rewound.code == 0, rewound
    assert tree_digest(work) == start

    assert cli.call("threads", "rm", "--yes", "t-4").code == 0
    assert [p for p in blobs.rglob("*") if p.is_file()] == []  # no thread uses them now


@pytest.mark.parametrize("review", ["--review", '[sandbox]\napply = "ask"\n'])
def test_review_in_a_pipe_applies_nothing_and_tells_the_model(cli, stub, work, review):
    config = review if review.startswith("[") else ""
    cli.write_config(config + '[approval]\nbash = "allow"\n')  # it runs; its changes wait
    model_calls(stub, bash("echo more >> a.txt && echo new > new.txt"), "done")
    flags = [review] if review == "--review" else []
    result = cli.run("ask", "--builtins", *flags, "--root", str(work), "go")  # a process
    assert result.code == 0, result
    [told] = [m["content"] for m in stub.requests[-1].json["messages"] if m["role"] == "tool"]
    assert "[not applied: the user did not approve what this command changed (" in told, told
    assert "a.txt" in told and "new.txt" in told and "nobody to ask" in told, told
    assert (work / "a.txt").read_text() == "a.txt\n" and not (work / "new.txt").exists()
    overlays = cli.root / "cache" / "toolnexus" / "sandbox" / "overlays"
    assert [p for p in overlays.rglob("*") if p.parent != overlays] != []  # held, unanswered

    model_calls(stub, bash("echo more >> a.txt"), "done")
    applied = cli.call("ask", "--builtins", "--review", "--yes", "--root", str(work), "go")
    assert "discarded changes of a command that were never approved" in applied.stderr, applied
    assert (work / "a.txt").read_text() == "a.txt\nmore\n"  # --yes: at once, still journaled
    assert [p for p in overlays.rglob("*") if p.parent != overlays] == []


@pytest.mark.parametrize("answer", ["y", "n"])
def test_review_in_the_chat_shows_the_diff_and_applies_on_yes_only(cli, stub, work, answer):
    model_calls(stub, bash("echo reviewed-line >> a.txt"), "Finished.")
    chat = PtySession(cli, "chat", "--builtins", "--review", "--root", str(work), rows=50, cols=160)
    try:
        chat.expect("›")
        chat.send_line("change a.txt")
        # asked once, after it ran in the sandbox, not before too
        chat.expect(re.escape("apply what this command changed in the workspace (+0 ~1 -0)?"))
        chat.expect(re.escape("+reviewed-line"))
        chat.child.send(answer)
        chat.expect("Finished.")
    finally:
        chat.close()
    text = (work / "a.txt").read_text()
    [told] = [m["content"] for m in stub.requests[-1].json["messages"] if m["role"] == "tool"]
    if answer == "y":
        assert text == "a.txt\nreviewed-line\n"
        assert "[files changed: +0 ~1 -0: a.txt +1 -0]" in told, told
    else:
        assert text == "a.txt\n"
        assert "[not applied: the user did not approve" in told, told


def test_a_rewind_leaves_a_regenerated_tree_it_kept_no_content_of(cli, stub, work):
    package = work / "node_modules" / "pkg"
    package.mkdir(parents=True)
    (package / "index.js").write_text("module.exports = 1;\n")
    replies(
        stub,
        [
            (
                "bash",
                {
                    "command": "echo 'module.exports = 2;' > node_modules/pkg/index.js && "
                    "echo changed > a.txt"
                },
            )
        ],
    )
    assert (
        cli.call("ask", "--builtins", "--yes", "--id", "t-5", "--root", str(work), "go").code == 0
    )
    dry = cli.call("threads", "rewind", "t-5", "1", "--dry-run")
    assert "left as is" in dry.stdout and "node_modules/pkg/index.js" in dry.stdout, dry
    rewound = cli.call("threads", "rewind", "t-5", "1")
    assert rewound.code == 0, rewound
    assert "left as they are: 1 file of regenerated trees" in rewound.stdout, rewound
    assert (work / "a.txt").read_text() == "a.txt\n"  # put back
    assert (package / "index.js").read_text() == "module.exports = 2;\n"  # left, and said so


def test_a_workspace_too_big_to_compare_whole_says_its_changes_may_not_be_undone(
    cli, stub, work, monkeypatch
):
    from toolnexus.journal import _snapshot as snapshot

    monkeypatch.setattr(snapshot, "MAX_FILES", 3)  # the work folder has seven entries
    cli.write_config("[sandbox]\noverlay = false\n")
    [told] = run_calls(cli, stub, work, bash("echo x > a.txt"), "--yes")
    assert "[the workspace is too big to compare whole: changes beyond what was seen" in told


def test_alt_r_turns_review_on_in_the_chat_and_review_says_so(cli, stub, work):
    model_calls(stub, bash("echo toggled >> a.txt"), "Finished.")
    chat = PtySession(cli, "chat", "--builtins", "--root", str(work), rows=50, cols=160)
    try:
        chat.expect("›")
        chat.child.send("\x1br")  # Alt-R
        chat.expect(re.escape("review on (Alt-R)"))
        chat.send_line("/review")
        chat.expect(re.escape("review on: each command's changes are shown"))
        chat.send_line("change a.txt")
        # asked once, after it ran in the sandbox, not before too
        chat.expect(re.escape("apply what this command changed in the workspace (+0 ~1 -0)?"))
        chat.child.send("n")
        chat.expect("Finished.")
        chat.send_line("/review off")
        chat.expect(re.escape("review off: each command's changes apply when it ends"))
    finally:
        chat.close()
    assert (work / "a.txt").read_text() == "a.txt\n"  # not applied: the person said no


@pytest.mark.parametrize("answer", ["y", "n"])
def test_the_chat_shows_both_versions_of_a_file_the_person_edited_and_asks(cli, stub, work, answer):
    marker = f"clash-{os.getpid()}-{id(work)}-{answer}-42"
    command = waiting(marker, "trap 'echo from-the-command > a.txt; exit 0' USR1")
    model_calls(stub, bash(command), "Finished.")
    chat = PtySession(cli, "chat", "--builtins", "--yes", "--root", str(work), rows=50, cols=160)
    try:
        chat.expect("›")
        chat.send_line("work on a.txt")
        [shell] = wait_until(lambda: _shell(marker), "the command to run")
        (work / "a.txt").write_text("the person's edit\n")  # while it runs
        os.kill(shell, signal.SIGUSR1)
        chat.expect(re.escape("you changed a.txt while the command wrote it too:"))
        chat.expect(re.escape("+from-the-command"))
        chat.expect(re.escape("[y]es / [n]o"))  # --yes does not answer this: a person does
        chat.child.send(answer)
        chat.expect("Finished.")
    finally:
        chat.close()
    [told] = [m["content"] for m in stub.requests[-1].json["messages"] if m["role"] == "tool"]
    if answer == "y":
        assert (work / "a.txt").read_text() == "from-the-command\n"
        assert not (work / "a.txt.toolnexus-1").exists()
        assert "[the user chose this command's version of a.txt]" in told, told
    else:
        assert (work / "a.txt").read_text() == "the person's edit\n"
        assert (work / "a.txt.toolnexus-1").read_text() == "from-the-command\n"
        assert "kept theirs; this command's version is a.txt.toolnexus-1]" in told, told


def test_a_chat_rewind_shows_both_versions_of_a_file_changed_since_and_asks(cli, stub, work):
    """Repro: `toolnexus chat --builtins --yes`; the model writes a.txt and b.txt; edit both
    in an editor; `/rewind 1`: each file shows what the rewind would put back against your
    version; `n` cancels (nothing changes); `/rewind 1` again, `y` for a.txt (yours is kept
    as a.txt.toolnexus-1) and `s` for b.txt (left as you made it); `/redo` puts yours back."""
    replies(stub, [("bash", {"command": "echo model-a > a.txt && echo model-b > b.txt"})])
    chat = PtySession(cli, "chat", "--builtins", "--yes", "--root", str(work), rows=50, cols=160)
    try:
        chat.expect("›")
        chat.send_line("write the files")
        chat.expect("done")
        (work / "a.txt").write_text("the person's a\n")
        (work / "b.txt").write_text("the person's b\n")
        edited = tree_digest(work)
        chat.send_line("/rewind 1")
        chat.expect(re.escape("- what the rewind puts back, + yours now"))
        chat.expect(re.escape("-a.txt"))
        chat.expect(re.escape("+the person's a"))
        chat.expect(re.escape("y overwrites it, yours kept as a.txt.toolnexus-1"))
        chat.expect(re.escape("overwrite it? [y]es / [s]kip / [a]ll / [n]o:"))
        chat.child.send("n")
        chat.expect("rewind cancelled: nothing was changed")
        assert tree_digest(work) == edited

        chat.send_line("/rewind 1")
        chat.expect(re.escape("+the person's a"))
        chat.expect(re.escape("overwrite it? [y]es"))
        chat.child.send("y")
        chat.expect(re.escape("+the person's b"))
        chat.expect(re.escape("overwrite it? [y]es"))
        chat.child.send("s")
        chat.expect("files back as before turn 1")
        chat.expect(re.escape("your version of a.txt is kept as a.txt.toolnexus-1"))
        chat.expect(re.escape("left as you changed them: b.txt"))
        assert (work / "a.txt").read_text() == "a.txt\n"
        assert (work / "a.txt.toolnexus-1").read_text() == "the person's a\n"
        assert (work / "b.txt").read_text() == "the person's b\n"
        chat.send_line("/redo")  # back to where the person was: their a.txt in its place
        chat.expect("the last rewind undone")
        assert tree_digest(work) == edited
    finally:
        chat.close()


def test_a_rewind_never_touches_git_s_own_files_and_says_so(cli, stub, work):
    replies(stub, [("bash", {"command": "git init -q . && echo x > f.txt"})])
    assert (
        cli.call("ask", "--builtins", "--yes", "--id", "t-7", "--root", str(work), "go").code == 0
    )
    head = (work / ".git" / "HEAD").read_text()
    rewound = cli.call("threads", "rewind", "t-7", "1")
    assert rewound.code == 0, rewound
    assert not (work / "f.txt").exists()
    assert (work / ".git" / "HEAD").read_text() == head  # git's HEAD, index, refs: untouched
    assert "of git's own (or another version control's): a rewind never touches HEAD" in (
        rewound.stdout
    ), rewound


async def test_a_file_too_big_to_keep_is_said_to_be_not_undoable(tmp_path):
    from toolnexus.journal import Journal
    from toolnexus.tools.workspace import Workspace

    work = tmp_path / "work"
    work.mkdir()
    journal = Journal(tmp_path / "journal")
    journal.blobs.max_file_bytes = 100
    toolkit = await create_toolkit(builtins=["bash"], workspace=Workspace(work, journal=journal))
    try:
        command = "head -c 1000 /dev/zero > big.bin && echo small > small.txt"
        result = await toolkit.execute("bash", {"command": command})
    finally:
        await toolkit.close()
    assert "big.bin (new) (too big to keep: not undoable)" in result.output, result.output
    assert "small.txt (new) +1 -0" in result.output


def test_what_a_command_stopped_by_ctrl_c_changed_is_applied_and_journaled(cli, stub, work):
    marker = f"stopped-{os.getpid()}-{id(work)}-42"
    command = waiting(marker, "echo before-the-stop > stopped.txt")
    model_calls(stub, bash(command), "never read")
    chat = PtySession(cli, "chat", "--builtins", "--yes", "--root", str(work), rows=50, cols=160)
    try:
        chat.expect("›")
        chat.send_line("start it")
        wait_until(lambda: _shell(marker), "the command to run")
        chat.child.send("\x03")  # Ctrl-C
        chat.expect("›")
        chat.send_line("/rewind")
        chat.expect(re.escape("turn 1: 1 call(s), stopped.txt"))
    finally:
        chat.close()
    assert (work / "stopped.txt").read_text() == "before-the-stop\n"  # as far as it got


def test_what_a_command_had_changed_when_toolnexus_was_killed_is_applied_at_the_next_start(
    cli, stub, work
):
    """A command writes files, then waits; toolnexus is killed outright (SIGKILL to its
    process group). The next start applies what the command had changed (the person's own
    newer edit kept, the command's version beside it), says so in one line, and journals it
    with its turn as interrupted, so that a rewind of the turn takes it back."""
    model_calls(stub, [], "the first turn")
    assert cli.run("ask", "--builtins", "--yes", "--id", "t-9", "--root", str(work), "hi").code == 0
    marker = f"killed-{os.getpid()}-{id(work)}-42"
    first = "echo made > made.txt && echo more >> a.txt && rm gone.txt && echo mine > b.txt"
    model_calls(stub, bash(waiting(marker, first)), "never read")
    killed = subprocess.Popen(
        [*ENTRY, "ask", "--builtins", "--yes", "--id", "t-9", "--root", str(work), "go"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=cli.merged_env(),
        cwd=cli.cwd,
        start_new_session=True,
    )
    overlays = cli.root / "cache" / "toolnexus" / "sandbox" / "overlays"
    wait_until(lambda: _shell(marker), "the command to have written its files")
    assert [p.read_text() for p in overlays.glob("*/*/upper/made.txt")] == ["made\n"]
    (work / "b.txt").write_text("the person's edit\n")  # while the command runs
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(timeout=WAIT_S)
    wait_until(lambda: not running_with(marker), "the command to end with toolnexus")
    assert not (work / "made.txt").exists()  # nothing applied by the killed toolnexus

    model_calls(stub, [], "started again")
    started = cli.run("ask", "--builtins", "--yes", "--id", "t-9", "--root", str(work), "again")
    assert started.code == 0, started
    assert (
        "applied what a command interrupted when toolnexus stopped had changed: +2 ~1 -1 "
        "(thread t-9, turn 2); b.txt kept as b.txt.toolnexus-1 (yours is newer)"
    ) in started.stderr, started
    assert (work / "made.txt").read_text() == "made\n"
    assert (work / "a.txt").read_text() == "a.txt\nmore\n" and not (work / "gone.txt").exists()
    assert (work / "b.txt").read_text() == "the person's edit\n"  # the person's edit wins
    assert (work / "b.txt.toolnexus-1").read_text() == "mine\n"
    assert [p for p in overlays.rglob("*") if p.parent != overlays] == []  # none left over

    [record] = cli.call("threads", "show", "t-9", "--changes", "--json").json
    assert (record["turn"], record["interrupted"], record["summary"]) == (2, True, "+2 ~1 -1")
    assert cli.call("threads", "rewind", "t-9", "2").code == 0
    assert not (work / "made.txt").exists() and not (work / "b.txt.toolnexus-1").exists()
    assert (work / "a.txt").read_text() == "a.txt\n"
    assert (work / "gone.txt").read_text() == "gone.txt\n"


def test_an_overlay_without_its_record_is_removed_unapplied_with_a_line(cli, stub, work):
    """An overlay a killed older toolnexus left has no record of what it belongs to: the
    next start removes it, applying nothing, and says so."""
    run_calls(cli, stub, work, bash("true"), "--yes")  # makes the workspace's overlays folder
    [overlays] = (cli.root / "cache" / "toolnexus" / "sandbox" / "overlays").iterdir()
    left = overlays / "999999999-left"  # the number of no process
    (left / "upper").mkdir(parents=True)
    (left / "upper" / "made.txt").write_text("made\n")
    model_calls(stub, [], "started")
    started = cli.run("ask", "--builtins", "--yes", "--root", str(work), "hi")
    assert started.code == 0, started
    assert "removed the overlay of a command that never finished" in started.stderr, started
    assert not (work / "made.txt").exists() and not left.exists()


@pytest.mark.parametrize(
    "config", ["", "[sandbox]\nnamespaces = false\n"], ids=["overlay", "no overlay"]
)
def test_files_the_file_tools_created_are_removed_by_a_rewind_and_made_again_by_redo(
    cli, stub, work, config
):
    cli.write_config(config)
    start = tree_digest(work)
    writes = [
        ("write_file", {"path": str(work / "made.txt"), "content": "made\n"}),
        ("write_file", {"path": str(work / "new" / "deep" / "f.txt"), "content": "deep\n"}),
    ]
    edit = [("edit_file", {"path": str(work / "made.txt"), "old": "made", "new": "edited"})]
    replies(stub, writes, edit, bash("echo more >> new/deep/f.txt"))
    asked = cli.call("ask", "--builtins", "--yes", "--id", "t-8", "--root", str(work), "go")
    assert asked.code == 0, asked
    assert (work / "made.txt").read_text() == "edited\n"
    end = tree_digest(work)
    as_json = cli.call("threads", "show", "t-8", "--changes", "--json").json
    assert [r["summary"] for r in as_json] == ["+1 ~0 -0"] * 2 + ["+0 ~1 -0"] * 2

    rewound = cli.call("threads", "rewind", "t-8", "1")
    assert rewound.code == 0, rewound
    assert not (work / "made.txt").exists() and not (work / "new").exists()  # not left empty
    assert tree_digest(work) == start

    redone = cli.call("threads", "redo", "t-8")
    assert redone.code == 0, redone
    assert (work / "new" / "deep" / "f.txt").read_text() == "deep\nmore\n"
    assert tree_digest(work) == end


@pytest.mark.parametrize(
    "config", ["", "[sandbox]\nnamespaces = false\n"], ids=["overlay", "no overlay"]
)
def test_a_rewind_gives_a_folder_its_time_back_when_the_turn_made_or_removed_files_in_it(
    cli, stub, work, config
):
    cli.write_config(config)
    os.utime(work / "src", ns=(10**18, 10**18))  # a time the turn's writes surely move
    start = tree_digest(work)
    write = [("write_file", {"path": str(work / "src" / "three.py"), "content": "three\n"})]
    replies(stub, write, bash("echo four > src/four.py && rm src/two.py"))
    asked = cli.call("ask", "--builtins", "--yes", "--id", "t-9", "--root", str(work), "go")
    assert asked.code == 0, asked
    assert (work / "src").stat().st_mtime_ns != 10**18
    end = tree_digest(work)

    rewound = cli.call("threads", "rewind", "t-9", "1")
    assert rewound.code == 0, rewound
    assert (work / "src").stat().st_mtime_ns == 10**18
    assert tree_digest(work) == start
    shown = cli.call("threads", "show", "t-9", "--changes")
    assert " src\n" not in shown.stdout, shown  # a folder's time is no file changed

    redone = cli.call("threads", "redo", "t-9")
    assert redone.code == 0, redone
    assert tree_digest(work) == end


def test_a_secret_looking_file_is_journaled_by_its_hash_never_by_its_content(cli, stub, work):
    [told] = run_calls(
        cli, stub, work, bash("echo API_KEY=JOURNAL-SECRET-5 > .env && echo x > a.txt"), "--yes"
    )
    assert ".env (new)" in told and "a.txt" in told, told
    journal = cli.root / "data" / "toolnexus" / "journal"
    kept = [p.read_bytes() for p in journal.rglob("*") if p.is_file()]
    assert any(b"x\n" == k for k in kept)  # an ordinary file's content is kept
    assert not any(b"JOURNAL-SECRET-5" in k for k in kept)


def test_a_command_s_panel_ends_with_the_files_it_changed(cli, stub, work):
    """Repro: `toolnexus chat --builtins --yes`; the model runs `echo more >> a.txt && echo
    new > new.txt && rm gone.txt`, writes a binary file and a `.env`: its panel ends with
    what it changed, counted and named, with the lines each text file gained and lost
    (a binary file says so; a file whose content is not kept, like `.env`, has no count)."""
    command = (
        "echo more >> a.txt && echo new > new.txt && rm gone.txt && printf 'x\\0y' > blob.bin "
        "&& echo TOKEN=1 > .env"
    )
    model_calls(stub, bash(command), "Done.")
    chat = PtySession(cli, "chat", "--builtins", "--yes", "--root", str(work), rows=50, cols=200)
    try:
        chat.expect("›")
        chat.send_line("change things")
        chat.expect(
            re.escape(
                "[files changed: +3 ~1 -1: .env (new), a.txt +1 -0, blob.bin (new) binary, "
                "gone.txt (deleted) +0 -1, new.txt (new) +1 -0]"
            )
        )
        chat.expect("Done.")
    finally:
        chat.close()


def test_a_command_ended_by_its_timeout_is_applied_as_far_as_it_got_and_marked_so(cli, stub, work):
    command = "echo before-the-timeout > slow.txt && sleep 60 && echo never > never.txt"
    model_calls(stub, [("bash", {"command": command, "timeout": 1})], "done")
    result = cli.call("ask", "--builtins", "--yes", "--json", "--root", str(work), "go")
    assert result.code == 0, result
    [changes] = result.json["changes"]
    assert changes["interrupted"] is True and changes["summary"] == "+1 ~0 -0", changes
    assert (work / "slow.txt").read_text() == "before-the-timeout\n"
    assert not (work / "never.txt").exists()
