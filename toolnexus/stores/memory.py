"""MemoryStore: threads in this process's memory, through the same save planner as the
SQL stores."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..content import MAX_ATTACHMENT_BYTES
from ..context._marks import is_sent
from ..types import Message
from ._attachments import Blob, Ref, Split, join, split_all
from ._planner import Versions
from ._threads import (
    add_usage,
    clean_title,
    fork_length,
    message_text,
    search_terms,
    share_copy,
    snippet,
    text_matches,
    title_of,
)
from .base import AttachmentInfo, ForkPoint, StoreError, Thread, ThreadInfo

__all__ = [
    "MemoryStore",
]


@dataclass
class _Thread:
    messages: list[Message]  # never mutated in place: replaced by a new list
    version: int
    created: float
    updated: float
    title: str | None = None
    custom_title: bool = False
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    digests: list[tuple[str, ...]] = field(default_factory=list)  # per message, its attachments
    forked_from: ForkPoint | None = None

    def linked(self, upto: int | None = None) -> set[str]:
        return {sha for shas in self.digests[:upto] for sha in shas}


@dataclass
class _Attachment:
    info: AttachmentInfo
    threads: int = 0  # how many threads refer to it
    texts: dict[str, str] = field(default_factory=dict)  # by prefix: the one copy of each


class MemoryStore:
    """The default store: threads in a dict, gone when the process exits. Copies go in
    and out, so a caller mutating its list cannot change a saved thread.

    Same semantics as the durable stores, through the same planner (see
    `toolnexus.stores._planner`): a save that extends the version it was built on is
    appended, after any turn another task saved meanwhile; a rewrite of a version another
    task moved on from is a ThreadConflict.

    Attachments are kept once per SHA-256, like the durable stores do: every message that
    carries the same attachment shares one string of it."""

    def __init__(self, *, max_attachment_bytes: int = MAX_ATTACHMENT_BYTES) -> None:
        self.max_attachment_bytes = max_attachment_bytes
        self._attachments: dict[str, _Attachment] = {}
        self._threads: dict[str, _Thread] = {}
        self._versions = Versions()
        self._counter = 0
        self._lock = threading.Lock()

    async def get(self, id: str) -> Thread | None:
        """The thread (a fresh copy, with its version), or None if there is no such thread."""
        thread = await self.load(id)
        return thread if thread.version else None

    async def load(self, id: str) -> Thread:
        """The thread (a fresh copy, with its version); empty at version 0 if there is none."""
        with self._lock:
            thread = self._threads.get(id)
            if thread is None:
                self._versions.note(id, 0, [])
                return Thread()
            self._versions.note(id, thread.version, thread.messages)
            return Thread(share_copy(thread.messages), thread.version)

    async def save(
        self,
        id: str,
        messages: list[Message],
        *,
        version: int | None = None,
        model: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> int:
        """See SQLStore.save: the same planner decides append, merge, replace or conflict."""
        with self._lock:
            thread = self._threads.get(id)
            plan = self._versions.plan(
                id,
                list(messages),
                version,
                (thread.version, len(thread.messages)) if thread else None,
                lambda: thread.messages if thread else [],
            )
            now = time.time()
            if plan.kind == "noop":
                assert thread is not None
                self._annotate(thread, model, usage)
                return thread.version
            splits = split_all(id, plan.start, plan.write, self.max_attachment_bytes)
            written = [
                self._shared(message, split)
                for message, split in zip(share_copy(plan.write), splits, strict=True)
            ]
            digests = [tuple(ref[1] for ref in split.refs) for split in splits]
            self._counter += 1
            if thread is None:
                thread = self._threads[id] = _Thread([], self._counter, now, now)
            if plan.kind == "replace":
                self._relink(thread, digests)
                thread.messages = written
                if not thread.custom_title:
                    thread.title = title_of(written)
            else:
                self._relink(thread, thread.digests + digests)
                thread.messages = thread.messages + written
                if thread.title is None and not thread.custom_title:
                    thread.title = title_of(written)
            thread.version = self._counter
            thread.updated = now
            self._annotate(thread, model, usage)
            self._versions.committed(id, plan, thread.version, written)
            return thread.version

    def _shared(self, message: Message, split: Split) -> Message:
        """`message` (a copy) with each attachment the one string kept of it."""
        if not split.refs:
            return message

        def kept(index: int, ref: Ref) -> str:
            blob: Blob = split.blobs[index]
            held = self._attachments.setdefault(ref[1], _Attachment(blob.info))
            return held.texts.setdefault(ref[2], split.texts[index])

        return join(message, split.refs, kept)

    def _relink(self, thread: _Thread, digests: list[tuple[str, ...]]) -> None:
        """The thread now refers to `digests` (per message); forget what nothing refers to."""
        before = thread.linked() if any(thread.digests) else set()
        thread.digests = digests
        after = thread.linked() if any(digests) else set()
        for sha in after - before:
            self._attachments[sha].threads += 1
        self._unlink(before - after)

    def _unlink(self, digests: set[str]) -> None:
        for sha in digests:
            held = self._attachments[sha]
            held.threads -= 1
            if held.threads == 0:
                del self._attachments[sha]

    @staticmethod
    def _annotate(thread: _Thread, model: str | None, usage: dict[str, int] | None) -> None:
        if model:
            thread.model = model
        if usage:
            thread.usage = add_usage(thread.usage, usage)

    async def record_usage(
        self, id: str, *, model: str | None = None, usage: dict[str, int] | None = None
    ) -> bool:
        with self._lock:
            thread = self._threads.get(id)
            if thread is None:
                return False
            self._annotate(thread, model, usage)
            return True

    async def info(self, id: str) -> ThreadInfo | None:
        with self._lock:
            thread = self._threads.get(id)
            return _info(id, thread) if thread else None

    async def list_threads(self, limit: int | None = None) -> list[ThreadInfo]:
        with self._lock:
            ordered = sorted(self._threads.items(), key=lambda kv: kv[1].version, reverse=True)
            if limit is not None:
                ordered = ordered[: max(limit, 0)]
            return [_info(id, thread) for id, thread in ordered]

    async def latest_id(self) -> str | None:
        with self._lock:
            if not self._threads:
                return None
            return max(self._threads.items(), key=lambda kv: kv[1].version)[0]

    async def delete(self, id: str) -> bool:
        with self._lock:
            self._versions.forget(id)
            thread = self._threads.pop(id, None)
            if thread is not None:
                self._unlink(thread.linked())
            return thread is not None

    async def fork(self, id: str, new_id: str, at: int | None = None) -> ThreadInfo | None:
        """See SQLStore.fork."""
        with self._lock:
            if new_id in self._threads:
                raise StoreError(f"there is already a thread {new_id!r}")
            source = self._threads.get(id)
            if source is None:
                return None
            count = fork_length(id, len(source.messages), at)
            self._counter += 1
            now = time.time()
            messages = source.messages[:count]  # pristine dicts, never changed: shared
            fork = self._threads[new_id] = _Thread(
                messages,
                self._counter,
                now,
                now,
                source.title if source.custom_title else title_of(messages),
                source.custom_title,
                source.model,
                forked_from=ForkPoint(id, count),
            )
            self._relink(fork, source.digests[:count])
            return _info(new_id, fork)

    async def attachments(self, id: str | None = None) -> list[AttachmentInfo]:
        """See SQLStore.attachments."""
        with self._lock:
            if id is None:
                wanted = set(self._attachments)
            else:
                thread = self._threads.get(id)
                wanted = thread.linked() if thread else set()
            return [self._attachments[sha].info for sha in sorted(wanted)]

    async def rename(self, id: str, title: str | None) -> bool:
        with self._lock:
            thread = self._threads.get(id)
            if thread is None:
                return False
            title = clean_title(title)
            thread.custom_title = title is not None
            thread.title = title if title is not None else title_of(thread.messages)
            return True

    async def search(self, text: str, limit: int | None = None) -> list[tuple[ThreadInfo, str]]:
        terms = search_terms(text)
        if not terms:
            return []
        found: list[tuple[ThreadInfo, str]] = []
        with self._lock:
            ordered = sorted(self._threads.items(), key=lambda kv: kv[1].version, reverse=True)
            for id, thread in ordered:
                if limit is not None and len(found) >= limit:
                    break
                for message in thread.messages:
                    body = message_text(message)
                    if text_matches(body, terms):
                        found.append((_info(id, thread), snippet(body, terms)))
                        break
        return found

    async def aclose(self) -> None:
        """Nothing to release; here so every store closes the same way."""

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _info(id: str, thread: _Thread) -> ThreadInfo:
    return ThreadInfo(
        id,
        thread.title,
        thread.model,
        thread.created,
        thread.updated,
        len(thread.messages),
        dict(thread.usage),
        sum(map(is_sent, thread.messages)),
        thread.forked_from,
    )
