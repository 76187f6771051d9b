"""The diff the approval panel shows for write_file and edit_file (toolnexus_cli/
file_change.py) is a true one: applied to the file as it is, its hunks give the new text
exactly, at the line numbers they name, whether the changed lines were matched one by one
or, past a bound, shown as removed then added. The panel itself is tested in a real
terminal in tests/terminal/test_approval_pty.py."""

from __future__ import annotations

import random
import re

import pytest

from toolnexus_cli.tools import file_change
from toolnexus_cli.tools.file_change import diff_lines

HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def patched(before: list[str], hunks: list[str]) -> list[str]:
    """`before` with `hunks` applied, as `patch` would; every context and removed line
    must be where its hunk says."""
    after: list[str] = []
    at = 0
    for line in hunks:
        header = HUNK.fullmatch(line)
        if header:
            start, length = int(header[1]), int(header[2] or 1)
            begins = start - 1 if length else start
            after += before[at:begins]
            at = begins
            continue
        mark, text = line[0], line[1:]
        if mark in " -":
            assert before[at] == text, (at, line)
            at += 1
        if mark in " +":
            after.append(text)
    return after + before[at:]


def edited(rng: random.Random, lines: list[str]) -> list[str]:
    changed = list(lines)
    for _ in range(rng.randint(0, 6)):
        where = rng.randint(0, len(changed))
        kind = rng.random()
        if kind < 0.3 and where < len(changed):
            del changed[where]
        elif kind < 0.6:
            changed.insert(where, rng.choice("abcdefg"))
        elif where < len(changed):
            changed[where] = rng.choice("xyz")
    return changed


@pytest.mark.parametrize("matched", [file_change.MAX_MATCHED, 2], ids=["matched", "bounded"])
def test_the_diff_applied_to_the_file_gives_the_new_text(monkeypatch, matched):
    monkeypatch.setattr(file_change, "MAX_MATCHED", matched)
    rng = random.Random(7)
    for _ in range(2000):
        before = [rng.choice("abcde") for _ in range(rng.randint(0, 40))]
        after = edited(rng, before)
        assert patched(before, diff_lines(before, after)) == after, (before, after)


def test_a_rewrite_of_many_repeated_lines_is_shown_without_matching_them_all():
    """Matching lines one by one takes quadratic time or worse on lines that repeat: a
    model's rewrite of a big file must not hold the question up for minutes."""
    before = [str(n % 150) for n in range(60_000)]
    after = [str((n * 7 + 3) % 150) for n in range(60_000)]
    hunks = diff_lines(before, after)
    assert hunks[0] == "@@ -1,60000 +1,60000 @@"
    assert patched(before, hunks) == after
