"""The workspace journal: what each tool call changed in the workspace, as values
(changes.py); the contents kept by hash (blobs.py); a workspace seen without following links,
and its digest (tree.py); undoing and redoing change sets (rewind.py)."""

from toolnexus.journal.blobs import Blobs
from toolnexus.journal.changes import (
    ABSENT,
    ChangeSet,
    FileChange,
    FileState,
    Kind,
    file_digest,
    state_of,
)
from toolnexus.journal.rewind import (
    Blocked,
    RewindConflict,
    RewindInterrupted,
    RewindPlan,
    Step,
    apply_rewind,
    plan_rewind,
)
from toolnexus.journal.tree import UnsafePath, tree_digest

__all__ = [
    "ABSENT",
    "Blobs",
    "Blocked",
    "ChangeSet",
    "FileChange",
    "FileState",
    "Kind",
    "RewindConflict",
    "RewindInterrupted",
    "RewindPlan",
    "Step",
    "UnsafePath",
    "apply_rewind",
    "file_digest",
    "plan_rewind",
    "state_of",
    "tree_digest",
]
