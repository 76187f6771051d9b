"""The workspace journal: what each tool call changed in the workspace, as values
(changes.py); which thread's turn changed what, and rewinding a thread's files to before a
turn (records.py); undoing and redoing change sets (rewind.py); a change as a diff for a
person (diffs.py). Internal: the contents kept by hash (`_blobs`), a workspace seen without
following links and its digest (`_tree`), an overlay's writes applied (`_apply`) and a
command's changes found by comparison (`_snapshot`)."""

import importlib as _importlib
import typing as _typing

# The names load on first use (PEP 562): the event types need changes.py alone, and every
# import of toolnexus would otherwise pull in the store and the rewind.
_HOMES = {
    "Blobs": "_blobs",
    **dict.fromkeys(
        ("ABSENT", "ChangeSet", "FileChange", "FileState", "Kind", "file_digest", "state_of"),
        "changes",
    ),
    "Journal": "records",
    **dict.fromkeys(
        (
            "Blocked",
            "RewindConflict",
            "RewindInterrupted",
            "RewindPlan",
            "Step",
            "apply_rewind",
            "beside_names",
            "plan_rewind",
        ),
        "rewind",
    ),
    **dict.fromkeys(("UnsafePath", "tree_digest"), "_tree"),
}

if _typing.TYPE_CHECKING:
    from toolnexus.journal._blobs import Blobs
    from toolnexus.journal._tree import UnsafePath, tree_digest
    from toolnexus.journal.changes import (
        ABSENT,
        ChangeSet,
        FileChange,
        FileState,
        Kind,
        file_digest,
        state_of,
    )
    from toolnexus.journal.records import Journal
    from toolnexus.journal.rewind import (
        Blocked,
        RewindConflict,
        RewindInterrupted,
        RewindPlan,
        Step,
        apply_rewind,
        beside_names,
        plan_rewind,
    )

__all__ = [
    "ABSENT",
    "Blobs",
    "Blocked",
    "ChangeSet",
    "FileChange",
    "FileState",
    "Journal",
    "Kind",
    "RewindConflict",
    "RewindInterrupted",
    "RewindPlan",
    "Step",
    "UnsafePath",
    "apply_rewind",
    "beside_names",
    "file_digest",
    "plan_rewind",
    "state_of",
    "tree_digest",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'toolnexus.journal' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"toolnexus.journal.{home}"), name)
    globals()[name] = value
    return value
