from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..marks import is_sent
from ._threads import (
    add_usage,
    clean_title,
    message_text,
    search_terms,
    share_copy,
    snippet,
    text_matches,
    title_of,
)
from .base import Thread, ThreadInfo
from .planner import Versions


@dataclass
class _Thread:
    messages: list[dict[str, Any]]  # never mutated in place: replaced by a new list
    version: int
    created: float
    updated: float
    title: str | None = None
    custom_title: bool = False
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


class MemoryStore:
    """The default store: threads in a dict, gone when the process exits. Copies go in
    and out, so a caller mutating its list cannot change a saved thread.

    Same semantics as the durable stores, through the same planner (see
    `toolnexus.stores.planner`): a save that extends the version it was built on is
    appended, after any turn another task saved meanwhile; a rewrite of a version another
    task moved on from is a ThreadConflict."""

    def __init__(self) -> None:
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
        messages: list[dict[str, Any]],
        *,
        version: int | None = None,
        model: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> int:
        """See SQLStore.save: the same planner decides append, merge, replace or conflict."""
        with self._lock:
            thread = self._threads.get(id)
            plan = self._versions.plan(
                id, list(messages), version,
                (thread.version, len(thread.messages)) if thread else None,
                lambda: thread.messages if thread else [],
            )
            now = time.time()
            if plan.kind == "noop":
                assert thread is not None
                self._annotate(thread, model, usage)
                return thread.version
            written = share_copy(plan.write)
            self._counter += 1
            if thread is None:
                thread = self._threads[id] = _Thread([], self._counter, now, now)
            if plan.kind == "replace":
                thread.messages = written
                if not thread.custom_title:
                    thread.title = title_of(written)
            else:
                thread.messages = thread.messages + written
                if thread.title is None and not thread.custom_title:
                    thread.title = title_of(written)
            thread.version = self._counter
            thread.updated = now
            self._annotate(thread, model, usage)
            self._versions.committed(id, plan, thread.version, written)
            return thread.version

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
            return self._threads.pop(id, None) is not None

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
    return ThreadInfo(id, thread.title, thread.model, thread.created, thread.updated,
                      len(thread.messages), dict(thread.usage),
                      sum(map(is_sent, thread.messages)))
