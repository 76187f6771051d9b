"""SQLiteStore: durable threads in one SQLite file, safe with several processes at once.

* Every SQLite call runs on one worker thread owned by the store, never on the event loop.
* WAL mode, a busy timeout, and writes inside BEGIN IMMEDIATE: two processes saving the
  same thread are serialized, and the second one's turn is appended after the first's
  (see `toolnexus.stores._threads` for how appends, merges and rewrites are told apart).
* A save that extends the stored transcript inserts only the new messages; a rewritten
  transcript replaces the old one in the same transaction. A process killed mid-write
  leaves the last committed transcript (SQLite's rollback of the uncommitted tail).
* The schema is created and changed by numbered migrations, recorded in the table
  `schema_migrations` and mirrored in `PRAGMA user_version`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ._threads import (
    MARK,
    SNIPPET_WORDS,
    Views,
    add_usage,
    clean_title,
    decode_many,
    encode,
    fts5_query,
    message_text,
    search_terms,
    share_copy,
    storable_text,
    title_of,
)
from .base import StoreError, ThreadInfo

T = TypeVar("T")

# Numbered migrations: (number, name, statements). Append new ones; never edit old ones.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "threads and messages", [
        """CREATE TABLE threads (
            id TEXT PRIMARY KEY,
            title TEXT,
            custom_title INTEGER NOT NULL DEFAULT 0,
            model TEXT,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            message_count INTEGER NOT NULL DEFAULT 0,
            usage TEXT NOT NULL DEFAULT '{}',
            version INTEGER NOT NULL
        )""",
        "CREATE INDEX threads_by_version ON threads(version)",
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            body TEXT NOT NULL,
            text TEXT NOT NULL DEFAULT '',
            UNIQUE (thread_id, seq)
        )""",
        # One counter for every write to any thread: thread versions are never reused,
        # not even after a delete, and "newest first" is version order.
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT INTO counters (name, value) VALUES ('version', 0)",
    ]),
    # The index is kept up to date by the store, one statement per save (not by row
    # triggers: FTS5 flushes its pending terms at every statement, so a trigger per row
    # made a 10,000-message rewrite build 10,000 index segments).
    (2, "full-text search over message text", [
        """CREATE VIRTUAL TABLE messages_fts USING fts5(
            text, content='messages', content_rowid='id')""",
        "INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')",  # existing rows
    ]),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]

_INFO_COLUMNS = "id, title, model, created, updated, message_count, usage"


def migrate(conn: sqlite3.Connection, upto: int | None = None) -> list[int]:
    """Apply the migrations not yet recorded (up to `upto`), each in its own
    BEGIN IMMEDIATE transaction, so concurrent openers apply each exactly once.
    Returns the numbers applied."""
    target = SCHEMA_VERSION if upto is None else upto
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise _newer(current)
    if current >= target:
        return []
    applied_now: list[int] = []
    for number, name, statements in MIGRATIONS:
        if number > target:
            break
        with _immediate(conn):
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            if done and max(done) > SCHEMA_VERSION:
                raise _newer(max(done))
            if number in done:
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations (version, name, applied) "
                         "VALUES (?, ?, ?)", (number, name, time.time()))
            conn.execute(f"PRAGMA user_version = {int(number)}")
            applied_now.append(number)
    return applied_now


def _newer(version: int) -> StoreError:
    return StoreError(
        f"this thread database has schema version {version}, newer than this toolnexus "
        f"understands ({SCHEMA_VERSION}); upgrade toolnexus to use it"
    )


class _immediate:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any error."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


class _read:
    """A deferred read transaction: one consistent snapshot for several SELECTs."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN")
        return self.conn

    def __exit__(self, *exc: object) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")


class SQLiteStore:
    """Threads in the SQLite database at `path` (created, with its folder, if missing;
    ":memory:" for a private in-memory database).

    `timeout`: seconds a write waits for another process's write lock before giving up
    with StoreError. `cache_threads`: how many threads' last transcripts are kept in
    memory to tell appends from rewrites without reading them back.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, timeout: float = 30.0, cache_threads: int = 64
    ) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self._views = Views(cache_threads)
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # ------------------------------------------------------------------ plumbing

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(conn, *args)` on the store's worker thread."""
        if self._closed:
            raise StoreError(f"{self!r} is closed")
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="toolnexus-sqlite")
            executor = self._executor
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, functools.partial(self._work, fn, *args))

    def _work(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            if self._conn is None:
                try:
                    self._conn = self._open()
                except OSError as exc:  # e.g. its folder cannot be created
                    raise StoreError(f"cannot open the thread database {self.path}: "
                                     f"{exc.strerror or exc}") from exc
            return fn(self._conn, *args)
        except sqlite3.Error as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise StoreError(
                    f"thread database {self.path} stayed locked by another process for "
                    f"more than {self.timeout:g}s ({exc})") from exc
            raise StoreError(f"thread database {self.path}: {exc}") from exc

    def _open(self) -> sqlite3.Connection:
        if self.path != ":memory:" and not self.path.startswith("file:"):
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            os.path.expanduser(self.path), timeout=self.timeout, isolation_level=None,
            uri=self.path.startswith("file:"),
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if self.path != ":memory:":
                mode = self._use_wal(conn)
                if str(mode).lower() != "wal":
                    raise StoreError(f"thread database {self.path}: cannot use WAL ({mode})")
            # WAL + NORMAL: a killed process never loses or corrupts a commit.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> str:
        """Switch the file to WAL (it stays so). The switch needs the file to itself for
        a moment and SQLite does not wait for that (no busy handler there), so a process
        opening a new database at the same time as another one retries."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() == "wal":
                    return str(mode)
                return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    # ------------------------------------------------------------------ protocol

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        """The thread's transcript (a fresh copy), or None if there is no such thread."""
        return await self._call(self._get, id)

    def _get(self, conn: sqlite3.Connection, id: str) -> list[dict[str, Any]] | None:
        held = self._views.pristine(id)
        with _read(conn):
            row = conn.execute("SELECT version FROM threads WHERE id = ?", (id,)).fetchone()
            if row is None:
                self._views.note(id, None, [], [], True)
                return None
            if held is not None and held[0] == row[0]:
                pristine = held[1]  # unchanged since we last read or wrote it
            else:
                pristine = self._stored(conn, id)
        handout = share_copy(pristine)
        self._views.note(id, row[0], pristine, handout, True)
        return handout

    async def save(
        self,
        id: str,
        messages: list[dict[str, Any]],
        *,
        model: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> None:
        """Store `messages` as thread `id`: new messages are appended (after any turn
        another writer saved meanwhile); a rewritten transcript replaces the old one.
        `model` and `usage` (summed into the thread's totals) are optional extras.
        Raises ThreadConflict rather than overwrite another writer's turn."""
        messages = list(messages)
        await self._call(self._save, id, messages, model, usage)

    def _save(self, conn: sqlite3.Connection, id: str, messages: list[dict[str, Any]],
              model: str | None, usage: dict[str, int] | None) -> None:
        with _immediate(conn):
            row = conn.execute(
                "SELECT version, message_count, title, custom_title, usage FROM threads "
                "WHERE id = ?", (id,)).fetchone()
            plan = self._views.plan(
                id, messages, row[0] if row else None, row[1] if row else 0,
                lambda: self._stored(conn, id))
            if plan.kind == "noop":
                _annotate(conn, id, model, usage, row[4] if row else "{}")
                return
            bodies = [encode(m) for m in plan.write]
            texts = [storable_text(message_text(m)) for m in plan.write]
            written = decode_many(bodies)
            conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'version'")
            version = conn.execute(
                "SELECT value FROM counters WHERE name = 'version'").fetchone()[0]
            now = time.time()
            if row is None:
                conn.execute(
                    "INSERT INTO threads (id, title, created, updated, version) "
                    "VALUES (?, ?, ?, ?, ?)", (id, title_of(written), now, now, version))
            elif plan.kind == "replace":
                _delete_messages(conn, id)
                conn.execute(
                    "UPDATE threads SET title = CASE WHEN custom_title THEN title ELSE ? END "
                    "WHERE id = ?", (title_of(written), id))
            elif row[2] is None and not row[3]:
                conn.execute("UPDATE threads SET title = ? WHERE id = ?",
                             (title_of(written), id))
            start = plan.start if plan.kind == "append" else 0
            conn.executemany(
                "INSERT INTO messages (thread_id, seq, body, text) VALUES (?, ?, ?, ?)",
                [(id, start + i, body, text)
                 for i, (body, text) in enumerate(zip(bodies, texts, strict=True))])
            conn.execute("INSERT INTO messages_fts (rowid, text) SELECT id, text FROM messages "
                         "WHERE thread_id = ? AND seq >= ?", (id, start))
            conn.execute(
                "UPDATE threads SET message_count = ?, updated = ?, version = ? WHERE id = ?",
                (start + len(bodies), now, version, id))
            _annotate(conn, id, model, usage, row[4] if row else "{}")
        self._views.committed(id, plan, version, messages, written)

    @staticmethod
    def _stored(conn: sqlite3.Connection, id: str) -> list[dict[str, Any]]:
        return decode_many([r[0] for r in conn.execute(
            "SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", (id,))])

    # ------------------------------------------------------------------ management

    async def record_usage(
        self, id: str, *, model: str | None = None, usage: dict[str, int] | None = None
    ) -> bool:
        """Set the thread's model and add `usage` to its totals without touching its
        messages (for callers that save through `Client.ask`). False if no such thread."""
        return await self._call(self._record_usage, id, model, usage)

    def _record_usage(self, conn: sqlite3.Connection, id: str, model: str | None,
                      usage: dict[str, int] | None) -> bool:
        with _immediate(conn):
            row = conn.execute("SELECT usage FROM threads WHERE id = ?", (id,)).fetchone()
            if row is None:
                return False
            _annotate(conn, id, model, usage, row[0])
            return True

    async def info(self, id: str) -> ThreadInfo | None:
        return await self._call(self._info, id)

    def _info(self, conn: sqlite3.Connection, id: str) -> ThreadInfo | None:
        row = conn.execute(f"SELECT {_INFO_COLUMNS} FROM threads WHERE id = ?",
                           (id,)).fetchone()
        return _thread_info(row) if row else None

    async def list_threads(self, limit: int | None = None) -> list[ThreadInfo]:
        """Every thread, most recently saved first (at most `limit`)."""
        return await self._call(self._list, limit)

    def _list(self, conn: sqlite3.Connection, limit: int | None) -> list[ThreadInfo]:
        rows = conn.execute(
            f"SELECT {_INFO_COLUMNS} FROM threads ORDER BY version DESC LIMIT ?",
            (-1 if limit is None else max(limit, 0),))
        return [_thread_info(row) for row in rows]

    async def latest_id(self) -> str | None:
        """The id of the most recently saved thread (for `--continue`), or None."""
        return await self._call(self._latest_id)

    def _latest_id(self, conn: sqlite3.Connection) -> str | None:
        row = conn.execute("SELECT id FROM threads ORDER BY version DESC LIMIT 1").fetchone()
        return row[0] if row else None

    async def delete(self, id: str) -> bool:
        """Delete the thread; False if there was none."""
        return await self._call(self._delete, id)

    def _delete(self, conn: sqlite3.Connection, id: str) -> bool:
        with _immediate(conn):
            _delete_messages(conn, id)
            gone = conn.execute("DELETE FROM threads WHERE id = ?", (id,)).rowcount > 0
        self._views.forget(id)
        return gone

    async def rename(self, id: str, title: str | None) -> bool:
        """Set the thread's title; None or "" goes back to the automatic title (its first
        user line). False if there is no such thread."""
        return await self._call(self._rename, id, clean_title(title))

    def _rename(self, conn: sqlite3.Connection, id: str, title: str | None) -> bool:
        with _immediate(conn):
            if title is None:
                row = conn.execute("SELECT 1 FROM threads WHERE id = ?", (id,)).fetchone()
                if row is None:
                    return False
                title = title_of(self._stored(conn, id))
                custom = 0
            else:
                custom = 1
            return conn.execute("UPDATE threads SET title = ?, custom_title = ? WHERE id = ?",
                                (title, custom, id)).rowcount > 0

    async def search(self, text: str, limit: int | None = None) -> list[tuple[ThreadInfo, str]]:
        """Threads with a message containing every word of `text` (each word matches the
        start of a word, case-insensitively), most recently saved first, each with a
        snippet of its best-matching message (matches wrapped in `**`)."""
        terms = search_terms(text)
        if not terms:
            return []
        return await self._call(self._search, fts5_query(terms), limit)

    def _search(self, conn: sqlite3.Connection, query: str,
                limit: int | None) -> list[tuple[ThreadInfo, str]]:
        best: dict[str, str] = {}
        rows = conn.execute(
            f"SELECT m.thread_id, snippet(messages_fts, 0, '{MARK}', '{MARK}', '…', "
            f"{SNIPPET_WORDS}) FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
            "WHERE messages_fts MATCH ? ORDER BY rank", (query,))
        for thread_id, snip in rows:
            best.setdefault(thread_id, snip)
        if not best:
            return []
        infos = self._infos(conn, list(best))
        infos.sort(key=lambda pair: pair[0], reverse=True)
        if limit is not None:
            infos = infos[: max(limit, 0)]
        return [(info, best[info.id]) for _, info in infos]

    @staticmethod
    def _infos(conn: sqlite3.Connection, ids: list[str]) -> list[tuple[int, ThreadInfo]]:
        out: list[tuple[int, ThreadInfo]] = []
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                    f"SELECT version, {_INFO_COLUMNS} FROM threads WHERE id IN ({marks})",
                    chunk):
                out.append((row[0], _thread_info(row[1:])))
        return out

    # ------------------------------------------------------------------ lifetime

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

    def _close_conn(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _finish(self) -> None:
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        self._views.clear()

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _delete_messages(conn: sqlite3.Connection, id: str) -> None:
    conn.execute("INSERT INTO messages_fts (messages_fts, rowid, text) "
                 "SELECT 'delete', id, text FROM messages WHERE thread_id = ?", (id,))
    conn.execute("DELETE FROM messages WHERE thread_id = ?", (id,))


def _annotate(conn: sqlite3.Connection, id: str, model: str | None,
              usage: dict[str, int] | None, current_usage: str) -> None:
    if model:
        conn.execute("UPDATE threads SET model = ? WHERE id = ?", (model, id))
    if usage:
        total = add_usage(json.loads(current_usage or "{}"), usage)
        conn.execute("UPDATE threads SET usage = ? WHERE id = ?", (json.dumps(total), id))


def _thread_info(row: tuple[Any, ...]) -> ThreadInfo:
    id, title, model, created, updated, count, usage = row
    return ThreadInfo(id, title, model, created, updated, count, json.loads(usage or "{}"))
