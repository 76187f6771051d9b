"""SQLiteStore: durable threads in one SQLite file, safe with several processes at once.

* The algorithm is `SQLStore`'s (stores/_sql.py); this module supplies SQLite's part.
* Every SQLite call runs on one worker thread owned by the store, never on the event loop.
* The database file (and so its -wal and -shm files, which SQLite creates with the same
  mode) is created 0600: it holds transcripts.
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

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from ..content import MAX_ATTACHMENT_BYTES
from ._sql import INFO_COLUMNS, Row, SQLStore
from ._threads import SNIPPET_WORDS, fts5_query
from .base import SNIPPET_MARK, StoreError

__all__ = [
    "SQLiteStore",
]

# Numbered migrations: (number, name, statements). Append new ones; never edit old ones.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "threads and messages",
        [
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
        ],
    ),
    # The index is kept up to date by the store, one statement per save (not by row
    # triggers: FTS5 flushes its pending terms at every statement, so a trigger per row
    # made a 10,000-message rewrite build 10,000 index segments).
    (
        2,
        "full-text search over message text",
        [
            """CREATE VIRTUAL TABLE messages_fts USING fts5(
            text, content='messages', content_rowid='id')""",
            "INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')",  # existing rows
        ],
    ),
    # How many messages a thread holds now (unmarked: what the model is sent), so listings
    # need not read every message. Threads saved before marks existed hold all of theirs.
    (
        3,
        "held message count",
        [
            "ALTER TABLE threads ADD COLUMN held_count INTEGER NOT NULL DEFAULT 0",
            "UPDATE threads SET held_count = message_count",
        ],
    ),
    # Attachment bytes once per SHA-256 (see stores/_attachments.py), which threads refer
    # to which, and per message where its references are (NULL: it has none). Messages
    # saved before keep their attachments inline.
    (
        4,
        "attachments stored once",
        [
            """CREATE TABLE attachments (
            sha256 TEXT PRIMARY KEY,
            media_type TEXT NOT NULL,
            size INTEGER NOT NULL,
            data BLOB NOT NULL,
            created REAL NOT NULL
        )""",
            """CREATE TABLE thread_attachments (
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            sha256 TEXT NOT NULL REFERENCES attachments(sha256),
            PRIMARY KEY (thread_id, sha256)
        )""",
            "CREATE INDEX thread_attachments_by_sha256 ON thread_attachments(sha256)",
            "ALTER TABLE messages ADD COLUMN attachments TEXT",
        ],
    ),
    (
        5,
        "forks",
        [
            "ALTER TABLE threads ADD COLUMN forked_from TEXT",
            "ALTER TABLE threads ADD COLUMN forked_at INTEGER",
        ],
    ),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
FILE_MODE = 0o600


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
        with _transaction(conn, "BEGIN IMMEDIATE"):
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
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)",
                (number, name, time.time()),
            )
            conn.execute(f"PRAGMA user_version = {int(number)}")
            applied_now.append(number)
    return applied_now


def _newer(version: int) -> StoreError:
    return StoreError(
        f"this thread database has schema version {version}, newer than this toolnexus "
        f"understands ({SCHEMA_VERSION}); upgrade toolnexus to use it"
    )


class _transaction:
    """BEGIN ... COMMIT, or ROLLBACK on any error. `BEGIN IMMEDIATE` takes the write lock
    at once; a plain (deferred) `BEGIN` gives several SELECTs one consistent snapshot."""

    def __init__(self, conn: sqlite3.Connection, begin: str = "BEGIN") -> None:
        self.conn, self.begin = conn, begin

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute(self.begin)
        return self.conn

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if not self.conn.in_transaction:
            return
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


class SQLiteStore(SQLStore):
    """Threads in the SQLite database at `path` (created, with its folder, if missing;
    ":memory:" for a private in-memory database).

    `timeout`: seconds a write waits for another process's write lock before giving up
    with StoreError. `cache_threads`: how many threads' last transcripts are kept in
    memory to tell appends from rewrites without reading them back.
    `max_attachment_bytes`: a save carrying a larger attachment is refused (StoreError).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        cache_threads: int = 64,
        max_attachment_bytes: int = MAX_ATTACHMENT_BYTES,
    ) -> None:
        super().__init__(cache_threads=cache_threads, max_attachment_bytes=max_attachment_bytes)
        self.path = os.fspath(path)
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # ------------------------------------------------------------------ connection

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:" and not self.path.startswith("file:"):
            try:
                _create_private(Path(self.path).expanduser())
            except OSError as exc:  # e.g. its folder cannot be created
                raise StoreError(
                    f"cannot open the thread database {self.path}: {exc.strerror or exc}"
                ) from exc
        conn = sqlite3.connect(
            os.path.expanduser(self.path),
            timeout=self.timeout,
            isolation_level=None,
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

    def _driver_error(self, exc: BaseException) -> StoreError | None:
        if not isinstance(exc, sqlite3.Error):
            return None
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return StoreError(
                f"thread database {self.path} stayed locked by another process "
                f"for more than {self.timeout:g}s ({exc})"
            )
        return StoreError(f"thread database {self.path}: {exc}")

    # ------------------------------------------------------------------ primitives

    def _writing(self, conn: sqlite3.Connection, *ids: str) -> _transaction:
        return _transaction(conn, "BEGIN IMMEDIATE")  # one writer per database file at a time

    def _read_thread(
        self, conn: sqlite3.Connection, id: str, unless: int | None
    ) -> tuple[int, list[Row] | None] | None:
        with _transaction(conn):
            row = conn.execute("SELECT version FROM threads WHERE id = ?", (id,)).fetchone()
            if row is None:
                return None
            if row[0] == unless:
                return row[0], None
            return row[0], conn.execute(
                "SELECT body, attachments FROM messages WHERE thread_id = ? ORDER BY seq", (id,)
            ).fetchall()

    def _next_version(self, conn: sqlite3.Connection) -> int:
        conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'version'")
        return int(conn.execute("SELECT value FROM counters WHERE name = 'version'").fetchone()[0])

    def _insert_messages(
        self,
        conn: sqlite3.Connection,
        id: str,
        start: int,
        bodies: list[str],
        texts: list[str],
        refs: list[str | None],
    ) -> None:
        conn.executemany(
            "INSERT INTO messages (thread_id, seq, body, text, attachments) VALUES (?, ?, ?, ?, ?)",
            [
                (id, start + i, body, text, ref)
                for i, (body, text, ref) in enumerate(zip(bodies, texts, refs, strict=True))
            ],
        )
        conn.execute(
            "INSERT INTO messages_fts (rowid, text) SELECT id, text FROM messages "
            "WHERE thread_id = ? AND seq >= ?",
            (id, start),
        )

    def _delete_messages(self, conn: sqlite3.Connection, id: str) -> None:
        conn.execute(
            "INSERT INTO messages_fts (messages_fts, rowid, text) "
            "SELECT 'delete', id, text FROM messages WHERE thread_id = ?",
            (id,),
        )
        conn.execute("DELETE FROM messages WHERE thread_id = ?", (id,))

    def _search_rows(
        self, conn: sqlite3.Connection, terms: list[str], limit: int | None
    ) -> list[tuple[tuple[Any, ...], str]]:
        best: dict[str, str] = {}
        rows = conn.execute(
            "SELECT m.thread_id, "
            f"snippet(messages_fts, 0, '{SNIPPET_MARK}', '{SNIPPET_MARK}', '…', "
            f"{SNIPPET_WORDS}) FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
            "WHERE messages_fts MATCH ? ORDER BY rank",
            (fts5_query(terms),),
        )
        for thread_id, snip in rows:
            best.setdefault(thread_id, snip)
        found: list[tuple[int, tuple[Any, ...]]] = []
        ids = list(best)
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found += [
                (row[0], row[1:])
                for row in conn.execute(
                    f"SELECT version, {INFO_COLUMNS} FROM threads WHERE id IN ({marks})", chunk
                )
            ]
        found.sort(key=lambda pair: pair[0], reverse=True)
        if limit is not None:
            found = found[: max(limit, 0)]
        return [(row, best[row[0]]) for _, row in found]


def _create_private(path: Path) -> None:
    """Create the database file (and its folder) readable by its owner only, whatever the
    umask or the folder's default permissions; tighten an existing file that is not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o777 != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    for extra in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            if extra.stat().st_mode & 0o777 != FILE_MODE:
                extra.chmod(FILE_MODE)
        except FileNotFoundError:
            pass
