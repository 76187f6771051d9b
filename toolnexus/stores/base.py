"""The store protocols, the thread summary they return, and the errors they raise.

Light on purpose: importing this module (and so `import toolnexus`) pulls in no database
driver. The SQLite and PostgreSQL backends are imported only when they are used.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import ToolnexusError
from ..types import Message

__all__ = [
    "SNIPPET_MARK",
    "AttachmentInfo",
    "ConversationStore",
    "ForkPoint",
    "StoreError",
    "Thread",
    "ThreadConflict",
    "ThreadInfo",
    "ThreadStore",
    "VersionedStore",
]

SNIPPET_MARK = "**"  # a search snippet wraps each matched word in these


@dataclass(frozen=True)
class AttachmentInfo:
    """One stored attachment: the SHA-256 (hex) of its bytes, its media type and size."""

    sha256: str
    media_type: str
    size: int


@runtime_checkable
class ConversationStore(Protocol):
    """Anything with these two methods can hold threads for `ask`/`stream` with an id."""

    async def get(self, id: str) -> list[Message] | None: ...

    async def save(self, id: str, messages: list[Message]) -> Any: ...


class Thread(list[Message]):
    """A thread's messages (a plain list of message dicts) and the `version` they are at.

    Pass the version to `save(..., version=)` when saving what was built on it: the store
    then appends only what is new (after any turn another writer saved meanwhile), and
    refuses with ThreadConflict to rewrite a version another writer has moved on from.
    Version 0: there was no such thread.
    """

    __slots__ = ("version",)

    def __init__(self, messages: Any = (), version: int = 0) -> None:
        super().__init__(messages)
        self.version = version


@runtime_checkable
class VersionedStore(ConversationStore, Protocol):
    """A ConversationStore whose saves say which version they build on."""

    async def load(self, id: str) -> Thread: ...

    async def save(
        self,
        id: str,
        messages: list[Message],
        *,
        version: int | None = None,
        model: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> int: ...


@dataclass(frozen=True, slots=True)
class ForkPoint:
    """Where a forked thread came from: the thread, and how many of its messages (from the
    start) the fork was made with."""

    id: str
    at: int


@dataclass(frozen=True)
class ThreadInfo:
    """One thread's summary, without its messages.

    `created`/`updated` are Unix times (seconds); `updated` is the last time messages were
    saved (a rename does not change it). `usage` sums the usage dicts recorded with saves
    (`save(..., usage=)` or `record_usage`), key by key.
    """

    id: str
    title: str | None
    model: str | None
    created: float
    updated: float
    message_count: int
    usage: dict[str, int] = field(default_factory=dict)
    held_count: int | None = None  # the messages it holds now (unmarked); None: all of them
    forked_from: ForkPoint | None = None  # None: not made by `fork`

    @property
    def holds(self) -> int:
        """How many messages the thread holds now: what the model is sent."""
        return self.message_count if self.held_count is None else self.held_count

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for `threads list --json` and the like)."""
        return {
            "id": self.id,
            "title": self.title,
            "model": self.model,
            "created": self.created,
            "updated": self.updated,
            "message_count": self.message_count,
            "usage": dict(self.usage),
            "forked_from": dataclasses.asdict(self.forked_from) if self.forked_from else None,
        }


@runtime_checkable
class ThreadStore(VersionedStore, Protocol):
    """A VersionedStore that can also list and manage its threads: what the
    `toolnexus threads ...` commands need. MemoryStore, SQLiteStore and PostgresStore
    all implement it.

    `get(id)` is the Thread, or None if there is no such thread; `load(id)` the same but
    an empty Thread at version 0 instead of None. `save` returns the version the thread
    is at afterwards; without `version` it builds on the newest version this store object
    handed out or wrote for the thread (a plain "set" if it has seen none).
    """

    async def record_usage(
        self, id: str, *, model: str | None = None, usage: dict[str, int] | None = None
    ) -> bool: ...

    async def info(self, id: str) -> ThreadInfo | None: ...

    async def list_threads(self, limit: int | None = None) -> list[ThreadInfo]: ...

    async def latest_id(self) -> str | None: ...

    async def delete(self, id: str) -> bool: ...

    async def rename(self, id: str, title: str | None) -> bool: ...

    async def fork(self, id: str, new_id: str, at: int | None = None) -> ThreadInfo | None: ...

    async def attachments(self, id: str | None = None) -> list[AttachmentInfo]: ...

    async def search(self, text: str, limit: int | None = None) -> list[tuple[ThreadInfo, str]]: ...

    async def aclose(self) -> None: ...


class StoreError(ToolnexusError):
    """A store could not do what was asked (database unreachable, locked too long,
    created by a newer toolnexus, ...). The message says which database and why."""


class ThreadConflict(StoreError):
    """A save would silently lose another writer's turn, so it was refused.

    Raised when a save built on a stale version (another writer saved the thread since)
    *rewrites* it (the new transcript does not extend the one at that version), or when
    the store no longer knows what that version held. Appends never raise this: they are
    merged after the other writer's messages. Load the thread again and redo the change
    on the newer transcript.
    """

    def __init__(self, id: str, detail: str = "") -> None:
        self.thread_id = id
        super().__init__(
            f"thread {id!r} was changed by another writer since it was loaded, and this save "
            "rewrites it (it does not just add messages); nothing was saved. Load the thread "
            "again and redo the change on the newer transcript" + (f" ({detail})" if detail else "")
        )
