"""SQLStore: what the SQLite and PostgreSQL stores share, the whole algorithm of every
operation (load, save, usage, listing, rename, delete), once.

Every database call runs on one worker thread owned by the store, never on the event
loop, over a DB-API connection of the backend's driver. A backend supplies primitives:
connecting (and migrating), its table names and placeholder, the write transaction that
serializes saves of one thread, the version counter, message writes and search. SQL text
here is written with `?` placeholders and `{threads}`/`{messages}` for the tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..marks import is_sent
from ._threads import (
    add_usage,
    clean_title,
    decode_many,
    encode,
    message_text,
    search_terms,
    share_copy,
    storable_text,
    title_of,
)
from .base import StoreError, Thread, ThreadInfo
from .planner import Versions

T = TypeVar("T")
Conn = Any
Message = dict[str, Any]
INFO_COLUMNS = "id, title, model, created, updated, message_count, usage, held_count"


class SQLStore:
    """The shared algorithm; see the module doc. Subclasses implement the primitives
    below the "primitives" line."""

    threads_table = "threads"
    messages_table = "messages"
    placeholder = "?"

    def __init__(self, *, cache_threads: int = 64) -> None:
        self._versions = Versions(cache_threads)
        self._conn: Conn | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ primitives

    def _connect(self) -> Conn:
        """A new connection, the schema migrated (raise StoreError if impossible)."""
        raise NotImplementedError

    def _usable(self, conn: Conn) -> bool:
        """False when the connection broke and a new one must be opened."""
        return True

    def _driver_error(self, exc: BaseException) -> StoreError | None:
        """The StoreError for a driver exception (None: not the driver's)."""
        raise NotImplementedError

    def _writing(self, conn: Conn, id: str) -> contextlib.AbstractContextManager[Any]:
        """A write transaction that holds thread `id` against other writers."""
        raise NotImplementedError

    def _read_thread(self, conn: Conn, id: str, unless: int | None
                     ) -> tuple[int, list[str] | None] | None:
        """The thread's version and its message bodies in order, read in one snapshot
        (bodies None when the version is `unless`: the caller holds them); None if there
        is no such thread."""
        raise NotImplementedError

    def _next_version(self, conn: Conn) -> int:
        """A new version number, larger than any before (never reused)."""
        raise NotImplementedError

    def _insert_messages(self, conn: Conn, id: str, start: int, bodies: list[str],
                         texts: list[str]) -> None:
        raise NotImplementedError

    def _delete_messages(self, conn: Conn, id: str) -> None:
        raise NotImplementedError

    def _search_rows(self, conn: Conn, terms: list[str], limit: int | None
                     ) -> list[tuple[tuple[Any, ...], str]]:
        """(info row in INFO_COLUMNS order, snippet) per matching thread, newest first."""
        raise NotImplementedError

    # ------------------------------------------------------------------ plumbing

    def _sql(self, text: str) -> str:
        text = text.replace("{threads}", self.threads_table)
        text = text.replace("{messages}", self.messages_table)
        return text.replace("?", self.placeholder) if self.placeholder != "?" else text

    def _q(self, conn: Conn, sql: str, *params: Any) -> Any:
        return conn.execute(self._sql(sql), params)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(conn, *args)` on the store's worker thread."""
        if self._closed:
            raise StoreError(f"{self!r} is closed")
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"toolnexus-{type(self).__name__}")
            executor = self._executor
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, functools.partial(self._work, fn, *args))

    def _work(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            if self._conn is None or not self._usable(self._conn):
                self._conn = None
                self._conn = self._connect()
            return fn(self._conn, *args)
        except Exception as exc:
            wrapped = self._driver_error(exc)
            if wrapped is None:
                raise
            raise wrapped from exc

    def _stored(self, conn: Conn, id: str) -> list[Message]:
        return decode_many([r[0] for r in self._q(
            conn, "SELECT body FROM {messages} WHERE thread_id = ? ORDER BY seq", id)])

    # ------------------------------------------------------------------ loading and saving

    async def get(self, id: str) -> Thread | None:
        """The thread (a fresh copy, with its version), or None if there is no such thread."""
        thread = await self.load(id)
        return thread if thread.version else None

    async def load(self, id: str) -> Thread:
        """The thread (a fresh copy, with its version); empty at version 0 if there is none."""
        return await self._call(self._load, id)

    def _load(self, conn: Conn, id: str) -> Thread:
        held = self._versions.exact(id)
        found = self._read_thread(conn, id, held[0] if held else None)
        if found is None:
            self._versions.note(id, 0, [])
            return Thread()
        version, bodies = found
        if bodies is None:
            assert held is not None
            pristine = held[1]  # unchanged since we last read or wrote it
        else:
            pristine = decode_many(bodies)
        self._versions.note(id, version, pristine)
        return Thread(share_copy(pristine), version)

    async def save(
        self,
        id: str,
        messages: list[Message],
        *,
        version: int | None = None,
        model: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> int:
        """Store `messages` as thread `id`, built on `version` (what `load`/`get` gave):
        new messages are appended (after any turn another writer saved meanwhile); a
        rewritten transcript replaces the old one, or raises ThreadConflict if another
        writer moved on from `version`. `model` and `usage` (summed into the thread's
        totals) are optional extras. Returns the thread's version afterwards."""
        return await self._call(self._save, id, list(messages), version, model, usage)

    def _save(self, conn: Conn, id: str, messages: list[Message], version: int | None,
              model: str | None, usage: dict[str, int] | None) -> int:
        with self._writing(conn, id):
            row = self._q(conn, "SELECT version, message_count, title, custom_title, usage, "
                                "held_count FROM {threads} WHERE id = ?", id).fetchone()
            plan = self._versions.plan(id, messages, version, (row[0], row[1]) if row else None,
                                       lambda: self._stored(conn, id))
            if plan.kind == "noop":
                self._annotate(conn, id, model, usage, row[4])
                return int(row[0])
            bodies = [encode(m) for m in plan.write]
            texts = [storable_text(message_text(m)) for m in plan.write]
            written = decode_many(bodies)
            new_version = self._next_version(conn)
            now = time.time()
            if row is None:
                self._q(conn, "INSERT INTO {threads} (id, title, created, updated, version) "
                              "VALUES (?, ?, ?, ?, ?)", id, title_of(written), now, now,
                        new_version)
            elif plan.kind == "replace":
                self._delete_messages(conn, id)
                self._q(conn, "UPDATE {threads} SET title = CASE WHEN custom_title THEN title "
                              "ELSE ? END WHERE id = ?", title_of(written), id)
            elif row[2] is None and not row[3]:
                self._q(conn, "UPDATE {threads} SET title = ? WHERE id = ?",
                        title_of(written), id)
            self._insert_messages(conn, id, plan.start, bodies, texts)
            kept = row[5] if row is not None and plan.kind == "append" else 0
            self._q(conn, "UPDATE {threads} SET message_count = ?, held_count = ?, updated = ?, "
                          "version = ? WHERE id = ?", plan.start + len(bodies),
                    kept + sum(map(is_sent, written)), now, new_version, id)
            self._annotate(conn, id, model, usage, row[4] if row else "{}")
        self._versions.committed(id, plan, new_version, written)
        return new_version

    def _annotate(self, conn: Conn, id: str, model: str | None,
                  usage: dict[str, int] | None, current: str) -> None:
        if model:
            self._q(conn, "UPDATE {threads} SET model = ? WHERE id = ?", model, id)
        if usage:
            total = add_usage(json.loads(current or "{}"), usage)
            self._q(conn, "UPDATE {threads} SET usage = ? WHERE id = ?", json.dumps(total), id)

    # ------------------------------------------------------------------ management

    async def record_usage(
        self, id: str, *, model: str | None = None, usage: dict[str, int] | None = None
    ) -> bool:
        """Set the thread's model and add `usage` to its totals without touching its
        messages (for callers that save through `Client.ask`). False if no such thread."""
        return await self._call(self._record_usage, id, model, usage)

    def _record_usage(self, conn: Conn, id: str, model: str | None,
                      usage: dict[str, int] | None) -> bool:
        with self._writing(conn, id):
            row = self._q(conn, "SELECT usage FROM {threads} WHERE id = ?", id).fetchone()
            if row is None:
                return False
            self._annotate(conn, id, model, usage, row[0])
            return True

    async def info(self, id: str) -> ThreadInfo | None:
        return await self._call(self._info, id)

    def _info(self, conn: Conn, id: str) -> ThreadInfo | None:
        row = self._q(conn, f"SELECT {INFO_COLUMNS} FROM {{threads}} WHERE id = ?",
                      id).fetchone()
        return thread_info(row) if row else None

    async def list_threads(self, limit: int | None = None) -> list[ThreadInfo]:
        """Every thread, most recently saved first (at most `limit`)."""
        return await self._call(self._list, limit)

    def _list(self, conn: Conn, limit: int | None) -> list[ThreadInfo]:
        sql = f"SELECT {INFO_COLUMNS} FROM {{threads}} ORDER BY version DESC"
        rows = (self._q(conn, sql) if limit is None
                else self._q(conn, sql + " LIMIT ?", max(limit, 0)))
        return [thread_info(row) for row in rows.fetchall()]

    async def latest_id(self) -> str | None:
        """The id of the most recently saved thread (for `--continue`), or None."""
        return await self._call(self._latest_id)

    def _latest_id(self, conn: Conn) -> str | None:
        row = self._q(conn, "SELECT id FROM {threads} ORDER BY version DESC LIMIT 1").fetchone()
        return row[0] if row else None

    async def delete(self, id: str) -> bool:
        """Delete the thread; False if there was none."""
        return await self._call(self._delete, id)

    def _delete(self, conn: Conn, id: str) -> bool:
        with self._writing(conn, id):
            self._delete_messages(conn, id)
            gone = self._q(conn, "DELETE FROM {threads} WHERE id = ?", id).rowcount > 0
        self._versions.forget(id)
        return gone

    async def rename(self, id: str, title: str | None) -> bool:
        """Set the thread's title; None or "" goes back to the automatic title (its first
        user line). False if there is no such thread."""
        return await self._call(self._rename, id, clean_title(title))

    def _rename(self, conn: Conn, id: str, title: str | None) -> bool:
        with self._writing(conn, id):
            custom = title is not None
            if title is None:
                title = title_of(self._stored(conn, id))
            return self._q(conn, "UPDATE {threads} SET title = ?, custom_title = ? "
                                 "WHERE id = ?", title, custom, id).rowcount > 0

    async def search(self, text: str, limit: int | None = None) -> list[tuple[ThreadInfo, str]]:
        """Threads with a message containing every word of `text` (each word matches the
        start of a word, case-insensitively), most recently saved first, each with a
        snippet of its best-matching message (matches wrapped in `**`)."""
        terms = search_terms(text)
        if not terms:
            return []
        rows = await self._call(self._search_rows, terms, limit)
        return [(thread_info(row), snip) for row, snip in rows]

    # ------------------------------------------------------------------ lifetime

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def aclose(self) -> None:
        """Close the database connection and the worker thread. Idempotent."""
        if self._closed:
            return
        executor = self._executor
        if executor is not None:
            await asyncio.get_running_loop().run_in_executor(executor, self._close_conn)
        self._finish()

    def close(self) -> None:
        """Like aclose, for code without an event loop."""
        if self._closed:
            return
        if self._executor is not None:
            self._executor.submit(self._close_conn).result()
        self._finish()

    def _finish(self) -> None:
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        self._versions.clear()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def thread_info(row: tuple[Any, ...]) -> ThreadInfo:
    id, title, model, created, updated, count, usage, held = row
    return ThreadInfo(id, title, model, created, updated, count, json.loads(usage or "{}"),
                      held)
