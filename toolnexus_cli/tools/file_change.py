"""What a `write_file` or `edit_file` call would change, as the question that approves it
shows it: the resolved path, whether the file is new or overwritten, and a coloured unified
diff against the file as it is now, its first lines and a count of the rest.

The file is read only as the tools themselves may read it (the workspace's judged open): a
secret, a special file, or a file the tools would have to ask about first (outside the
workspace, or one that looks like it holds secrets) is not read, and the panel says why
instead of showing a diff. It is read up to MAX_COMPARED bytes. Every character shown comes
through `unmistakable`, as plain text: nothing in a file or in the model's arguments acts on
the terminal or is read as markup.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from toolnexus.app_support import unmistakable
from toolnexus.tools.workspace import ApprovalNeeded, Refused, Workspace

from ..render.words import counted

MAX_COMPARED = 256 * 1024  # bytes of each side a diff is made of
MAX_MATCHED = 500  # changed lines of each side matched line by line (see diff_lines)
CONTEXT = 3  # unchanged lines shown around a change
SHOWN_LINES = 30  # of the diff; the rest is counted
SHOWN_LINE_CHARS = 400  # of one line; the rest is counted
STYLES = {"+": "green", "-": "red", "@": "cyan"}
Opcode = tuple[str, int, int, int, int]  # as difflib.SequenceMatcher gives them


@dataclass(frozen=True)
class Current:
    """The file as it is now: its text; or none, as it is `missing` or for `why_not`."""

    text: str | None = None
    why_not: str = ""
    missing: bool = False


def file_change(
    workspace: Workspace, name: str, args: Any, *, shown_lines: int = SHOWN_LINES
) -> Text | None:
    """The change a built-in `write_file` or `edit_file` call would make, shown for
    approval (or, made before it runs, in its result panel), the first `shown_lines` of
    its diff; None when its arguments are not what the tool takes (they are then shown as
    they are)."""
    if not isinstance(args, dict) or not isinstance(args.get("path"), str):
        return None
    if name == "write_file" and isinstance(args.get("content"), str):
        shown = _written(workspace, args["path"], args["content"])
    elif (
        name == "edit_file"
        and isinstance(args.get("old"), str)
        and isinstance(args.get("new"), str)
    ):
        shown = _edited(workspace, args["path"], args["old"], args["new"])
    else:
        return None
    return shown.text(shown_lines)


@dataclass(frozen=True)
class _Shown:
    """A change as it is shown: its heading, then its diff lines."""

    heading: Text
    lines: list[str]

    def text(self, limit: int) -> Text:
        return _with_lines(self.heading, self.lines, limit)


def _written(workspace: Workspace, given: str, content: str) -> _Shown:
    shown = _heading("write_file", workspace, given)
    current = read_current(workspace, given)
    if current.text is not None:
        shown.append(
            f"overwrites the file: {_lines(current.text)} → {_lines(content)}\n", style="yellow"
        )
        return _with_diff(shown, current.text, content)
    if current.missing:
        shown.append(f"a new file, {_lines(content)}\n")
    else:
        shown.append(
            f"{current.why_not}; what it would write, {_lines(content)}:\n", style="yellow"
        )
    return _Shown(shown, _added(content))


def _edited(workspace: Workspace, given: str, old: str, new: str) -> _Shown:
    shown = _heading("edit_file", workspace, given)
    current = read_current(workspace, given)
    if current.text is None:
        why = "the file does not exist" if current.missing else current.why_not
        shown.append(f"{why}; the text it would replace:\n", style="yellow")
        return _with_diff(shown, old, new)
    count = current.text.count(old)
    if count != 1:
        where = "does not occur" if count == 0 else f"occurs {count} times"
        shown.append(
            f"the text to replace {where} in the file: the edit will fail\n", style="yellow"
        )
        return _with_diff(shown, old, new)
    return _with_diff(shown, current.text, current.text.replace(old, new, 1))


def read_current(workspace: Workspace, given: str) -> Current:
    """The file's text, as far as a tool may read it without asking, or why not."""
    try:
        path, fd = workspace.open(given, None, action="read")
    except FileNotFoundError:
        return Current(missing=True)
    except ApprovalNeeded:
        return Current(None, _needs_asking(workspace, given))
    except Refused as exc:  # a secret, a special file...: the message says which
        return Current(None, str(exc))
    except (OSError, ValueError) as exc:
        return Current(
            None, f"the current file cannot be read ({getattr(exc, 'strerror', None) or exc})"
        )
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_COMPARED + 1)
    if len(data) > MAX_COMPARED:
        return Current(
            None, f"the current file is over {MAX_COMPARED // 1024} KiB: too big to compare here"
        )
    if b"\0" in data:
        return Current(None, f"{path} is a binary file: no diff")
    return Current(data.decode("utf-8", "replace"))


def _needs_asking(workspace: Workspace, given: str) -> str:
    if workspace.inside(workspace.resolve(given)):
        return "the current file looks like it holds secrets: not shown"
    return "the current file is outside the workspace: not read without asking"


def _heading(tool: str, workspace: Workspace, given: str) -> Text:
    """The tool and the path it would write, resolved (`notes.txt → /home/u/.bashrc`
    when a link leads there)."""
    try:
        resolved = str(workspace.resolve(given))
    except (OSError, ValueError):  # a NUL byte, a loop of links: the tool fails on it too
        resolved = given
    shown = Text(f"{tool} ", style="bold")
    where = given if resolved == given else f"{given} → {resolved}"
    shown.append(unmistakable(where) + "\n", style="bold")
    return shown


def _with_diff(shown: Text, before: str, after: str) -> _Shown:
    """`shown` with the unified diff of `before` and `after`; a side bigger than
    MAX_COMPARED is not compared, and `after` is shown instead."""
    if max(len(before), len(after)) > MAX_COMPARED:
        shown.append(
            f"too big to compare here (over {MAX_COMPARED // 1024} KiB); the new text:\n",
            style="yellow",
        )
        return _Shown(shown, _added(after))
    lines = diff_lines(_split(before), _split(after))
    if not lines:
        shown.append("(no change)", style="dim")
    return _Shown(shown, lines)


def diff_lines(before: list[str], after: list[str]) -> list[str]:
    """The hunks of a unified diff of `before` and `after`, made in bounded time: the
    lines both start and end with are set aside first, and a changed middle longer than
    MAX_MATCHED lines is shown as all removed then all added instead of being matched
    line by line (matching takes time quadratic in the lines, or worse)."""
    shortest = min(len(before), len(after))
    start = next((i for i in range(shortest) if before[i] != after[i]), shortest)
    end = next(
        (i for i in range(shortest - start) if before[-1 - i] != after[-1 - i]), shortest - start
    )
    first = max(0, start - CONTEXT)
    old = before[first : len(before) - end + CONTEXT]
    new = after[first : len(after) - end + CONTEXT]
    groups: Iterable[list[Opcode]]
    if max(len(old), len(new)) <= MAX_MATCHED:
        groups = difflib.SequenceMatcher(None, old, new).get_grouped_opcodes(CONTEXT)
    else:
        lead, tail = start - first, min(end, CONTEXT)
        groups = [
            [
                ("equal", 0, lead, 0, lead),
                ("replace", lead, len(old) - tail, lead, len(new) - tail),
                ("equal", len(old) - tail, len(old), len(new) - tail, len(new)),
            ]
        ]
    return [line for group in groups for line in _hunk(group, old, new, first)]


def _hunk(group: list[Opcode], old: list[str], new: list[str], first: int) -> list[str]:
    """One hunk: its `@@ -12,7 +12,8 @@` line (the file's line numbers: `old` and `new`
    begin at its line `first` + 1), then its lines."""
    (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
    lines = [f"@@ -{_span(first + i1, first + i2)} +{_span(first + j1, first + j2)} @@"]
    for tag, a1, a2, b1, b2 in group:
        if tag == "equal":
            lines += [f" {line}" for line in old[a1:a2]]
        else:
            lines += [f"-{line}" for line in old[a1:a2]] + [f"+{line}" for line in new[b1:b2]]
    return lines


def _span(start: int, stop: int) -> str:
    """Lines start..stop (from 0, stop excluded) as a unified diff writes them."""
    if stop - start == 1:
        return str(start + 1)
    return f"{start + 1 if stop > start else start},{stop - start}"


def _added(text: str) -> list[str]:
    return [f"+{line}" for line in _split(text)]


def _split(text: str) -> list[str]:
    """The lines of `text`, split at line feeds only: every other separator (form feed,
    U+2028...) stays in its line, to be shown by `unmistakable`."""
    return text.removesuffix("\n").split("\n") if text else []


def _with_lines(heading: Text, lines: list[str], limit: int) -> Text:
    """`heading` with the first `limit` of diff `lines`, coloured by their first
    character, and how many more there are, with the lines the whole diff adds and
    removes (`+400 -5`)."""
    shown = heading.copy()
    for line in lines[:limit]:
        shown.append(_cut(unmistakable(line)) + "\n", style=STYLES.get(line[:1], ""))
    if len(lines) > limit:
        added = sum(1 for line in lines if line.startswith("+"))
        removed = sum(1 for line in lines if line.startswith("-"))
        more = counted(len(lines) - limit, "more line")
        shown.append(f"… {more} (+{added} -{removed} in all)", style="dim")
    shown.rstrip()
    return shown


def _cut(line: str) -> str:
    """A line shown whole, or its beginning and how much of it is not shown."""
    if len(line) <= SHOWN_LINE_CHARS:
        return line
    return f"{line[:SHOWN_LINE_CHARS]}… ({counted(len(line) - SHOWN_LINE_CHARS, 'more character')})"


def _lines(text: str) -> str:
    count = len(_split(text))
    return counted(count, "line")
