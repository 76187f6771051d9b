"""SQLStore: what the SQLite and PostgreSQL stores share, the whole algorithm of every
operation (load, save, usage, listing, rename, delete), once.

Every database call runs on one worker thread owned by the store, never on the event
loop, over a DB-API connection of the backend's driver. A backend supplies primitives:
connecting (and migrating), its table names and placeholder, the write transaction that
serializes saves of one thread, the version counter, message writes and search. SQL text
here is written with `?` placeholders and `{threads}`/`{messages}`/`{attachments}`/`{links}`
for the tables.

Attachment bytes are stored once per SHA-256 (see `_attachments.py`) in `{attachments}`;
`{links}` says which threads refer to which. Deleting or rewriting a thread deletes the
attachments no thread refers to any more, in the same transaction.
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

from ..content import MAX_ATTACHMENT_BYTES
from ..context._marks import is_sent
from ..types import Message
from ._attachments import Blob, Ref, digests, join, restored_text, split_all
from ._planner import Versions
from ._threads import (
    add_usage,
    clean_title,
    decode_many,
    encode,
    fork_length,
    message_text,
    search_terms,
    share_copy,
    storable_text,
    title_of,
)
from .base import AttachmentInfo, ForkPoint, StoreError, Thread, ThreadInfo

T = TypeVar("T")
Conn = Any

Row = tuple[str, str | None]  # a stored message: its body and its refs (JSON), if any
INFO_COLUMNS = (
    "id, title, model, created, updated, message_count, usage, held_count, forked_from, forked_at"
)


def _nth(texts: list[str]) -> Callable[[int, Ref], str]:
    """For `join`: the original text of each reference, by its index."""
    return lambda index, _ref: texts[index]


_READ_TRIES = 3  # a read racing a rewrite that dropped an attachment is read again


class SQLStore:
    """The shared algorithm; see the module doc. Subclasses implement the primitives
    below the "primitives" line."""

    threads_table = "threads"
    messages_table = "messages"
    attachments_table = "attachments"
    links_table = "thread_attachments"
    placeholder = "?"

    def __init__(
        self, *, cache_threads: int = 64, max_attachment_bytes: int = MAX_ATTACHMENT_BYTES
    ) -> None:
        self._versions = Versions(cache_threads)
        self.max_attachment_bytes = max_attachment_bytes
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

    def _writing(self, conn: Conn, *ids: str) -> contextlib.AbstractContextManager[Any]:
        """A write transaction that holds threads `ids` against other writers."""
        raise NotImplementedError

    def _lock_attachments(self, conn: Conn) -> None:
        """Inside a write transaction: hold the attachments against other writers, so one
        does not delete an attachment another is linking. Nothing to do where a write
        transaction holds the whole database."""

    def _read_thread(
        self, conn: Conn, id: str, unless: int | None
    ) -> tuple[int, list[Row] | None] | None:
        """The thread's version and its messages (body, refs) in order, read in one
        snapshot (None when the version is `unless`: the caller holds them); None if there
        is no such thread."""
        raise NotImplementedError

    def _next_version(self, conn: Conn) -> int:
        """A new version number, larger than any before (never reused)."""
        raise NotImplementedError

    def _insert_messages(
        self,
        conn: Conn,
        id: str,
        start: int,
        bodies: list[str],
        texts: list[str],
        refs: list[str | None],
    ) -> None:
        raise NotImplementedError

    def _delete_messages(self, conn: Conn, id: str) -> None:
        raise NotImplementedError

    def _search_rows(
        self, conn: Conn, terms: list[str], limit: int | None
    ) -> list[tuple[tuple[Any, ...], str]]:
        """(info row in INFO_COLUMNS order, snippet) per matching thread, newest first."""
        raise NotImplementedError

    # ------------------------------------------------------------------ plumbing

    def _sql(self, text: str) -> str:
        text = text.replace("{threads}", self.threads_table)
        text = text.replace("{messages}", self.messages_table)
        text = text.replace("{attachments}", self.attachments_table)
        text = text.replace("{links}", self.links_table)
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
                    max_workers=1, thread_name_prefix=f"toolnexus-{type(self).__name__}"
                )
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
        """The thread's messages, read inside a write transaction that holds it."""
        rows = self._q(
            conn, "SELECT body, attachments FROM {messages} WHERE thread_id = ? ORDER BY seq", id
        ).fetchall()
        messages = self._restored(conn, rows)
        if messages is None:
            raise _lost(id)
        return messages

    def _restored(self, conn: Conn, rows: list[Row]) -> list[Message] | None:
        """Stored messages with their attachments put back; None if one is missing."""
        messages = decode_many([body for body, _ in rows])
        with_refs = [(i, json.loads(refs)) for i, (_, refs) in enumerate(rows) if refs]
        if not with_refs:
            return messages
        wanted = sorted({sha for _, refs in with_refs for sha in digests(refs)})
        marks = ",".join("?" * len(wanted))
        data = dict(
            self._q(
                conn, f"SELECT sha256, data FROM {{attachments}} WHERE sha256 IN ({marks})", *wanted
            ).fetchall()
        )
        if len(data) < len(wanted):
            return None
        texts: dict[tuple[str, str], str] = {}  # one string per payload, however often used

        def text_of(_: int, ref: Ref) -> str:
            key = (ref[1], ref[2])
            if key not in texts:
                texts[key] = restored_text(ref, bytes(data[ref[1]]))
            return texts[key]

        for index, refs in with_refs:
            join(messages[index], refs, text_of)
        return messages

    def _link(
        self, conn: Conn, id: str, blobs: list[Blob] | None, known: set[str] | None = None
    ) -> None:
        """Store the attachments not stored yet (`blobs`, with their bytes) and link them
        and those `known` to be stored to thread `id`."""
        new = {blob.info.sha256: blob for blob in blobs or ()}
        every = set(new) | (known or set())
        if not every:
            return
        self._lock_attachments(conn)
        if new:
            marks = ",".join("?" * len(new))
            have = {
                row[0]
                for row in self._q(
                    conn, f"SELECT sha256 FROM {{attachments}} WHERE sha256 IN ({marks})", *new
                )
            }
            for sha, blob in new.items():
                if sha not in have:
                    self._q(
                        conn,
                        "INSERT INTO {attachments} (sha256, media_type, size, data, "
                        "created) VALUES (?, ?, ?, ?, ?)",
                        sha,
                        blob.info.media_type,
                        blob.info.size,
                        blob.data,
                        time.time(),
                    )
        for sha in sorted(every):
            self._q(
                conn,
                "INSERT INTO {links} (thread_id, sha256) VALUES (?, ?) ON CONFLICT DO NOTHING",
                id,
                sha,
            )

    def _unlink(self, conn: Conn, id: str) -> list[str]:
        """Drop every link of thread `id`; the digests it linked."""
        old = [
            row[0] for row in self._q(conn, "SELECT sha256 FROM {links} WHERE thread_id = ?", id)
        ]
        if old:
            self._lock_attachments(conn)
            self._q(conn, "DELETE FROM {links} WHERE thread_id = ?", id)
        return old

    def _collect(self, conn: Conn, unlinked: set[str]) -> None:
        """Delete the attachments among `unlinked` that no thread links any more."""
        for sha in sorted(unlinked):
            self._q(
                conn,
                "DELETE FROM {attachments} WHERE sha256 = ? AND NOT EXISTS "
                "(SELECT 1 FROM {links} WHERE sha256 = ?)",
                sha,
                sha,
            )

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
        for _ in range(_READ_TRIES):
            found = self._read_thread(conn, id, held[0] if held else None)
            if found is None:
                self._versions.note(id, 0, [])
                return Thread()
            version, rows = found
            if rows is None:
                assert held is not None
                pristine = held[1]  # unchanged since we last read or wrote it
                break
            restored = self._restored(conn, rows)
            if restored is not None:
                pristine = restored
                break
        else:
            raise _lost(id)
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

    def _save(
        self,
        conn: Conn,
        id: str,
        messages: list[Message],
        version: int | None,
        model: str | None,
        usage: dict[str, int] | None,
    ) -> int:
        with self._writing(conn, id):
            row = self._q(
                conn,
                "SELECT version, message_count, title, custom_title, usage, "
                "held_count FROM {threads} WHERE id = ?",
                id,
            ).fetchone()
            plan = self._versions.plan(
                id,
                messages,
                version,
                (row[0], row[1]) if row else None,
                lambda: self._stored(conn, id),
            )
            if plan.kind == "noop":
                self._annotate(conn, id, model, usage, row[4])
                return int(row[0])
            splits = split_all(id, plan.start, plan.write, self.max_attachment_bytes)
            bodies = [encode(split.body) for split in splits]
            texts = [storable_text(message_text(m)) for m in plan.write]
            written = decode_many(bodies)
            for message, split in zip(written, splits, strict=True):
                if split.refs:
                    join(message, split.refs, _nth(split.texts))
            new_version = self._next_version(conn)
            now = time.time()
            unlinked: list[str] = []
            if row is None:
                self._q(
                    conn,
                    "INSERT INTO {threads} (id, title, created, updated, version) "
                    "VALUES (?, ?, ?, ?, ?)",
                    id,
                    title_of(written),
                    now,
                    now,
                    new_version,
                )
            elif plan.kind == "replace":
                unlinked = self._unlink(conn, id)
                self._delete_messages(conn, id)
                self._q(
                    conn,
                    "UPDATE {threads} SET title = CASE WHEN custom_title THEN title "
                    "ELSE ? END WHERE id = ?",
                    title_of(written),
                    id,
                )
            elif row[2] is None and not row[3]:
                self._q(conn, "UPDATE {threads} SET title = ? WHERE id = ?", title_of(written), id)
            self._insert_messages(
                conn,
                id,
                plan.start,
                bodies,
                texts,
                [json.dumps(s.refs) if s.refs else None for s in splits],
            )
            self._link(conn, id, [blob for split in splits for blob in split.blobs])
            self._collect(conn, set(unlinked) - {b.info.sha256 for s in splits for b in s.blobs})
            kept = row[5] if row is not None and plan.kind == "append" else 0
            self._q(
                conn,
                "UPDATE {threads} SET message_count = ?, held_count = ?, updated = ?, "
                "version = ? WHERE id = ?",
                plan.start + len(bodies),
                kept + sum(map(is_sent, written)),
                now,
                new_version,
                id,
            )
            self._annotate(conn, id, model, usage, row[4] if row else "{}")
        self._versions.committed(id, plan, new_version, written)
        return new_version

    def _annotate(
        self, conn: Conn, id: str, model: str | None, usage: dict[str, int] | None, current: str
    ) -> None:
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

    def _record_usage(
        self, conn: Conn, id: str, model: str | None, usage: dict[str, int] | None
    ) -> bool:
        with self._writing(conn, id):
            row = self._q(conn, "SELECT usage FROM {threads} WHERE id = ?", id).fetchone()
            if row is None:
                return False
            self._annotate(conn, id, model, usage, row[0])
            return True

    async def info(self, id: str) -> ThreadInfo | None:
        return await self._call(self._info, id)

    def _info(self, conn: Conn, id: str) -> ThreadInfo | None:
        row = self._q(conn, f"SELECT {INFO_COLUMNS} FROM {{threads}} WHERE id = ?", id).fetchone()
        return thread_info(row) if row else None

    async def list_threads(self, limit: int | None = None) -> list[ThreadInfo]:
        """Every thread, most recently saved first (at most `limit`)."""
        return await self._call(self._list, limit)

    def _list(self, conn: Conn, limit: int | None) -> list[ThreadInfo]:
        sql = f"SELECT {INFO_COLUMNS} FROM {{threads}} ORDER BY version DESC"
        rows = (
            self._q(conn, sql) if limit is None else self._q(conn, sql + " LIMIT ?", max(limit, 0))
        )
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
            unlinked = self._unlink(conn, id)
            self._delete_messages(conn, id)
            gone: bool = self._q(conn, "DELETE FROM {threads} WHERE id = ?", id).rowcount > 0
            self._collect(conn, set(unlinked))
        self._versions.forget(id)
        return gone

    async def fork(self, id: str, new_id: str, at: int | None = None) -> ThreadInfo | None:
        """A new thread `new_id` holding thread `id`'s first `at` messages (all of them
        when None), recorded as forked from it (`ThreadInfo.forked_from`). Attachments are
        shared, not copied. None if there is no thread `id`; StoreError if `new_id` exists
        or `at` is not between 1 and the thread's message count."""
        return await self._call(self._fork, id, new_id, at)

    def _fork(self, conn: Conn, id: str, new_id: str, at: int | None) -> ThreadInfo | None:
        with self._writing(conn, id, new_id):
            if self._q(conn, "SELECT 1 FROM {threads} WHERE id = ?", new_id).fetchone():
                raise StoreError(f"there is already a thread {new_id!r}")
            source = self._q(
                conn,
                "SELECT title, custom_title, model, message_count FROM {threads} WHERE id = ?",
                id,
            ).fetchone()
            if source is None:
                return None
            count = fork_length(id, source[3], at)
            rows = self._q(
                conn,
                "SELECT body, text, attachments FROM {messages} "
                "WHERE thread_id = ? AND seq < ? ORDER BY seq",
                id,
                count,
            ).fetchall()
            bodies = [row[0] for row in rows]
            messages = decode_many(bodies)  # attachments stay references: not needed here
            now = time.time()
            self._q(
                conn,
                "INSERT INTO {threads} (id, title, custom_title, model, created, "
                "updated, message_count, held_count, version, forked_from, forked_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                new_id,
                source[0] if source[1] else title_of(messages),
                bool(source[1]),
                source[2],
                now,
                now,
                count,
                sum(map(is_sent, messages)),
                self._next_version(conn),
                id,
                count,
            )
            self._insert_messages(
                conn, new_id, 0, bodies, [row[1] for row in rows], [row[2] for row in rows]
            )
            self._link(
                conn,
                new_id,
                None,
                {sha for row in rows if row[2] for sha in digests(json.loads(row[2]))},
            )
            return self._info(conn, new_id)

    async def attachments(self, id: str | None = None) -> list[AttachmentInfo]:
        """The attachments stored (each once, however many messages and threads refer to
        it), or those thread `id` refers to; by digest."""
        return await self._call(self._attachments, id)

    def _attachments(self, conn: Conn, id: str | None) -> list[AttachmentInfo]:
        if id is None:
            rows = self._q(
                conn, "SELECT sha256, media_type, size FROM {attachments} ORDER BY sha256"
            )
        else:
            rows = self._q(
                conn,
                "SELECT a.sha256, a.media_type, a.size FROM {attachments} a "
                "JOIN {links} l ON l.sha256 = a.sha256 WHERE l.thread_id = ? "
                "ORDER BY a.sha256",
                id,
            )
        return [AttachmentInfo(*row) for row in rows.fetchall()]

    async def rename(self, id: str, title: str | None) -> bool:
        """Set the thread's title; None or "" goes back to the automatic title (its first
        user line). False if there is no such thread."""
        return await self._call(self._rename, id, clean_title(title))

    def _rename(self, conn: Conn, id: str, title: str | None) -> bool:
        with self._writing(conn, id):
            custom = title is not None
            if title is None:
                title = title_of(self._stored(conn, id))
            renamed: bool = (
                self._q(
                    conn,
                    "UPDATE {threads} SET title = ?, custom_title = ? WHERE id = ?",
                    title,
                    custom,
                    id,
                ).rowcount
                > 0
            )
            return renamed

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
    id, title, model, created, updated, count, usage, held, forked_from, forked_at = row
    return ThreadInfo(
        id,
        title,
        model,
        created,
        updated,
        count,
        json.loads(usage or "{}"),
        held,
        None if forked_from is None else ForkPoint(forked_from, forked_at),
    )


def _lost(id: str) -> StoreError:
    return StoreError(f"thread {id!r} refers to an attachment the database no longer holds")
