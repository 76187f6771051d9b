"""A chat rewind meets files the person changed since toolnexus wrote them: each is shown (the
version the rewind would put back against the one in the workspace now) and the person
chooses, file by file or once for all: overwrite it (their version kept beside it as
`NAME.toolnexus-N`, so nothing is lost), skip it, or cancel the whole rewind."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from toolnexus.app_support import unmistakable
from toolnexus.journal.rewind import beside_names

from ..tools.approve import choose, panel
from ..tools.file_change import MAX_COMPARED, compared

if TYPE_CHECKING:
    from rich.console import Console

    from toolnexus.journal import Blobs, FileState, RewindPlan, Step

OVERWRITE = {"y": "overwrite", "s": "skip", "a": "all", "n": "cancel"}
SKIP_ONLY = {"s": "skip", "n": "cancel"}  # a folder or link of the person's: no copy kept


@dataclass
class Settled:
    """What the person chose: the paths to overwrite, those of them kept first under the
    name `beside` gives them, and the paths to leave as they are."""

    overwrite: set[str] = field(default_factory=set)
    beside: dict[str, str] = field(default_factory=dict)
    skip: set[str] = field(default_factory=set)


async def settle_conflicts(
    console: Console, root: Path, plan: RewindPlan, blobs: Blobs
) -> Settled | None:
    """Ask about each path of `plan.conflicts`; None when the person cancels the rewind."""
    settled = Settled()
    steps = {step.path: step for step in plan.steps}
    files = [path for path in plan.conflicts if steps[path].now.kind == "file"]
    names = beside_names(root, files)
    everyone = False
    for path in plan.conflicts:
        kind = steps[path].now.kind
        if everyone and kind in ("file", "absent"):
            answer = "overwrite"
        else:
            shown = _both_versions(root, steps[path], blobs)
            shown.append("\n" + _choices(kind, names.get(path, "")), style="bold")
            panel(console, shown, "a file you changed since")
            answer = await choose(_question(kind), _keys(kind))
        if answer == "cancel" or answer not in (*OVERWRITE.values(), *SKIP_ONLY.values()):
            return None
        if answer == "skip":
            settled.skip.add(path)
            continue
        everyone = everyone or answer == "all"
        settled.overwrite.add(path)
        if path in names:
            settled.beside[path] = names[path]
    return settled


def _keys(kind: str) -> dict[str, str]:
    return OVERWRITE if kind in ("file", "absent") else SKIP_ONLY


def _question(kind: str) -> str:
    if kind in ("file", "absent"):
        return "overwrite it? [y]es / [s]kip / [a]ll / [n]o: "
    return "[s]kip it / [n]o: "


def _choices(kind: str, beside: str) -> str:
    """What each answer does, under the two versions."""
    if kind not in ("file", "absent"):
        return "it is yours now, not a file: s leaves it as it is; n cancels the rewind"
    kept = f", yours kept as {unmistakable(beside)}" if beside else ""
    return (
        f"y overwrites it{kept}; s leaves it as it is; a says y to every file changed "
        "since; n cancels the rewind (nothing changes)"
    )


def _both_versions(root: Path, step: Step, blobs: Blobs) -> Text:
    """The version the rewind would put back (-) against the person's (+), bounded."""
    heading = Text(unmistakable(step.path) + "\n", style="bold")
    heading.append("changed since toolnexus wrote it; - what the rewind puts back, + yours now\n")
    back, why_not = _text(step.target, lambda: blobs.read(step.target.digest))
    yours, why_not_yours = _text(step.now, lambda: _read(root / step.path))
    if back is None or yours is None:
        heading.append(why_not or why_not_yours, style="yellow")
        return heading
    return compared(heading, back, yours)


def _text(state: FileState, read: Callable[[], bytes]) -> tuple[str | None, str]:
    """A version's text (empty: there is none), or why it is not shown."""
    if state.kind == "absent":
        return "", ""
    if state.kind != "file":
        return None, f"one side is a {'folder' if state.kind == 'dir' else 'link'}: not compared"
    if state.size > MAX_COMPARED:
        return None, f"over {MAX_COMPARED // 1024} KiB: not compared"
    try:
        data = read()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc}): not compared"
    if b"\0" in data:
        return None, "binary: not compared"
    return data.decode("utf-8", "replace"), ""


def _read(path: Path) -> bytes:
    """The person's file, not through a link, up to MAX_COMPARED bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_COMPARED + 1)
