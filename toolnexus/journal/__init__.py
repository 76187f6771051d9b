"""The workspace journal: what each tool call changed in the workspace, as values
(changes.py); the contents kept by hash so a change can be undone and redone (blobs.py)."""

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

__all__ = [
    "ABSENT",
    "Blobs",
    "ChangeSet",
    "FileChange",
    "FileState",
    "Kind",
    "file_digest",
    "state_of",
]
