"""PostgresStore: threads in PostgreSQL, for teams that share them across machines.

Needs psycopg 3: `pip install 'toolnexus[postgres]'`. The algorithm is `SQLStore`'s
(stores/_sql.py), so the semantics are SQLiteStore's: appends write only the new messages,
after any turn another writer saved meanwhile; a rewrite replaces the thread in one
transaction or raises ThreadConflict. Saves of one thread are serialized with a
transaction-scoped advisory lock. Like SQLite, the connection is used from the store's
own worker thread, so one store serves any number of event loops. The tables live in the
schema given (default: the connection's search_path, normally "public") and carry a
`toolnexus_` prefix; numbered migrations are recorded in `toolnexus_schema_migrations`.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..content import MAX_ATTACHMENT_BYTES
from ._sql import INFO_COLUMNS, Row, SQLStore
from ._threads import SNIPPET_WORDS, tsquery
from .base import SNIPPET_MARK, StoreError

__all__ = [
    "PostgresStore",
]

# Numbered migrations: (number, name, statements). `{s}` is the schema prefix.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "threads and messages",
        [
            """CREATE TABLE {s}toolnexus_threads (
            id TEXT PRIMARY KEY,
            title TEXT,
            custom_title BOOLEAN NOT NULL DEFAULT FALSE,
            model TEXT,
            created DOUBLE PRECISION NOT NULL,
            updated DOUBLE PRECISION NOT NULL,
            message_count INTEGER NOT NULL DEFAULT 0,
            usage TEXT NOT NULL DEFAULT '{}',
            version BIGINT NOT NULL
        )""",
            "CREATE INDEX toolnexus_threads_by_version ON {s}toolnexus_threads (version)",
            """CREATE TABLE {s}toolnexus_messages (
            thread_id TEXT NOT NULL REFERENCES {s}toolnexus_threads (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            body TEXT NOT NULL,
            text TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (thread_id, seq)
        )""",
            "CREATE SEQUENCE {s}toolnexus_version",
        ],
    ),
    (
        2,
        "full-text search over message text",
        [
            """ALTER TABLE {s}toolnexus_messages ADD COLUMN words tsvector
            GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED""",
            "CREATE INDEX toolnexus_messages_words ON {s}toolnexus_messages USING GIN (words)",
        ],
    ),
    # See the SQLite store's migration 3.
    (
        3,
        "held message count",
        [
            "ALTER TABLE {s}toolnexus_threads ADD COLUMN held_count INTEGER NOT NULL DEFAULT 0",
            "UPDATE {s}toolnexus_threads SET held_count = message_count",
        ],
    ),
    # See the SQLite store's migrations 4 and 5.
    (
        4,
        "attachments stored once",
        [
            """CREATE TABLE {s}toolnexus_attachments (
            sha256 TEXT PRIMARY KEY,
            media_type TEXT NOT NULL,
            size BIGINT NOT NULL,
            data BYTEA NOT NULL,
            created DOUBLE PRECISION NOT NULL
        )""",
            """CREATE TABLE {s}toolnexus_thread_attachments (
            thread_id TEXT NOT NULL REFERENCES {s}toolnexus_threads (id) ON DELETE CASCADE,
            sha256 TEXT NOT NULL REFERENCES {s}toolnexus_attachments (sha256),
            PRIMARY KEY (thread_id, sha256)
        )""",
            "CREATE INDEX toolnexus_thread_attachments_by_sha256 "
            "ON {s}toolnexus_thread_attachments (sha256)",
            "ALTER TABLE {s}toolnexus_messages ADD COLUMN attachments TEXT",
        ],
    ),
    (
        5,
        "forks",
        [
            "ALTER TABLE {s}toolnexus_threads ADD COLUMN forked_from TEXT",
            "ALTER TABLE {s}toolnexus_threads ADD COLUMN forked_at INTEGER",
        ],
    ),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COPY_OVER = 64  # rows: more than this many are sent with COPY


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StoreError(
            "PostgresStore needs psycopg 3: pip install 'toolnexus[postgres]'"
        ) from exc
    return psycopg


def redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return "<dsn>"
    if parts.password is None:
        return re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn)
    netloc = parts.netloc.replace(":" + parts.password + "@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresStore(SQLStore):
    """Threads in the PostgreSQL database at `dsn` ("postgresql://user:pw@host/db").

    `schema`: put the tables in this schema (created if missing) instead of the
    search_path default. `cache_threads`, `max_attachment_bytes`: see SQLiteStore. One
    connection per store, opened on first use (again if it broke); operations on one store
    run one at a time.
    """

    placeholder = "%s"

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        connect_timeout: float = 10.0,
        cache_threads: int = 64,
        max_attachment_bytes: int = MAX_ATTACHMENT_BYTES,
    ) -> None:
        if schema is not None and not _IDENT.match(schema):
            raise ValueError(f"schema must be a plain identifier, not {schema!r}")
        super().__init__(cache_threads=cache_threads, max_attachment_bytes=max_attachment_bytes)
        self.dsn = dsn
        self.schema = schema
        self.connect_timeout = connect_timeout
        self._s = f'"{schema}".' if schema else ""
        self.threads_table = f"{self._s}toolnexus_threads"
        self.messages_table = f"{self._s}toolnexus_messages"
        self.attachments_table = f"{self._s}toolnexus_attachments"
        self.links_table = f"{self._s}toolnexus_thread_attachments"
        self._lock_prefix = f"toolnexus:{schema or ''}:"

    def __repr__(self) -> str:
        return f"PostgresStore({redact(self.dsn)!r})"

    # ------------------------------------------------------------------ connection

    def _connect(self) -> Any:
        psycopg = _psycopg()
        try:
            conn = psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
            )
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {redact(self.dsn)}: {exc}") from exc
        try:
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _usable(self, conn: Any) -> bool:
        return not conn.closed and not conn.broken

    def _driver_error(self, exc: BaseException) -> StoreError | None:
        if not isinstance(exc, _psycopg().Error):
            return None
        return StoreError(f"thread database {redact(self.dsn)}: {exc}")

    def _migrate(self, conn: Any) -> list[int]:
        applied: list[int] = []
        s = self._s
        with conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (self._lock_prefix + "migrate",),
            )
            if self.schema:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {s}toolnexus_schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied DOUBLE PRECISION "
                "NOT NULL)"
            )
            done = {
                row[0]
                for row in conn.execute(
                    f"SELECT version FROM {s}toolnexus_schema_migrations"
                ).fetchall()
            }
            if done and max(done) > SCHEMA_VERSION:
                raise StoreError(
                    f"the thread tables in {redact(self.dsn)} have schema version {max(done)}, "
                    f"newer than this toolnexus understands ({SCHEMA_VERSION}); upgrade "
                    "toolnexus to use them"
                )
            for number, name, statements in MIGRATIONS:
                if number in done:
                    continue
                for statement in statements:
                    conn.execute(statement.replace("{s}", s))
                conn.execute(
                    f"INSERT INTO {s}toolnexus_schema_migrations (version, name, applied) "
                    "VALUES (%s, %s, %s)",
                    (number, name, time.time()),
                )
                applied.append(number)
        return applied

    # ------------------------------------------------------------------ primitives

    @contextlib.contextmanager
    def _writing(self, conn: Any, *ids: str) -> Iterator[None]:
        with conn.transaction():
            for id in sorted(set(ids)):  # one order for everyone: no deadlock
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (self._lock_prefix + id,),
                )
            yield

    def _lock_attachments(self, conn: Any) -> None:
        # Taken after the thread locks, never before: the order stays the same for all.
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            ("toolnexus-attachments:" + (self.schema or ""),),
        )

    def _read_thread(
        self, conn: Any, id: str, unless: int | None
    ) -> tuple[int, list[Row] | None] | None:
        # One statement, one snapshot: the version and the messages belong together. The
        # messages are not even sent when the thread is still at the version we hold.
        row = self._q(
            conn,
            "SELECT t.version, m.bodies, m.refs FROM {threads} t LEFT JOIN LATERAL "
            "(SELECT array_agg(body ORDER BY seq) AS bodies, "
            "array_agg(attachments ORDER BY seq) AS refs FROM {messages} "
            "WHERE thread_id = t.id AND t.version IS DISTINCT FROM ?) m ON TRUE "
            "WHERE t.id = ?",
            unless,
            id,
        ).fetchone()
        if row is None:
            return None
        if row[0] == unless:
            return row[0], None
        return row[0], list(zip(row[1] or [], row[2] or [], strict=True))

    def _next_version(self, conn: Any) -> int:
        return int(conn.execute(f"SELECT nextval('{self._s}toolnexus_version')").fetchone()[0])

    def _insert_messages(
        self,
        conn: Any,
        id: str,
        start: int,
        bodies: list[str],
        texts: list[str],
        refs: list[str | None],
    ) -> None:
        rows = [
            (id, start + i, body, text, ref)
            for i, (body, text, ref) in enumerate(zip(bodies, texts, refs, strict=True))
        ]
        columns = f"{self.messages_table} (thread_id, seq, body, text, attachments)"
        with conn.cursor() as cur:
            if len(rows) > _COPY_OVER:
                with cur.copy(f"COPY {columns} FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            elif rows:
                cur.executemany(f"INSERT INTO {columns} VALUES (%s, %s, %s, %s, %s)", rows)

    def _delete_messages(self, conn: Any, id: str) -> None:
        self._q(conn, "DELETE FROM {messages} WHERE thread_id = ?", id)

    def _search_rows(
        self, conn: Any, terms: list[str], limit: int | None
    ) -> list[tuple[tuple[Any, ...], str]]:
        options = (
            f'StartSel="{SNIPPET_MARK}", StopSel="{SNIPPET_MARK}", MaxWords={SNIPPET_WORDS}, '
            f"MinWords={max(SNIPPET_WORDS // 3, 1)}, HighlightAll=false"
        )
        columns = ", ".join("t." + c.strip() for c in INFO_COLUMNS.split(","))
        rows = conn.execute(
            f"""WITH q AS (SELECT to_tsquery('simple', %s) AS q),
            best AS (
                SELECT DISTINCT ON (m.thread_id) m.thread_id, m.text, ts_rank(m.words, q.q) AS r
                FROM {self.messages_table} m, q WHERE m.words @@ q.q
                ORDER BY m.thread_id, r DESC, m.seq)
            SELECT {columns}, ts_headline('simple', best.text, q.q, %s)
            FROM best JOIN {self.threads_table} t ON t.id = best.thread_id, q
            ORDER BY t.version DESC LIMIT %s""",
            (tsquery(terms), options, None if limit is None else max(limit, 0)),
        ).fetchall()
        return [(tuple(row[:-1]), row[-1]) for row in rows]
