"""PostgresStore: threads in PostgreSQL, for teams that share them across machines.

Needs psycopg 3: `pip install 'toolnexus[postgres]'`. Same semantics as SQLiteStore:
appends write only the new messages, after any turn another writer saved meanwhile; a
rewrite replaces the thread in one transaction or raises ThreadConflict; saves of one
thread are serialized with a transaction-scoped advisory lock. The tables live in the
schema given (default: the connection's search_path, normally "public") and carry a
`toolnexus_` prefix; numbered migrations are recorded in `toolnexus_schema_migrations`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._threads import (
    MARK,
    SNIPPET_WORDS,
    Views,
    add_usage,
    clean_title,
    decode_many,
    encode,
    message_text,
    search_terms,
    share_copy,
    storable_text,
    title_of,
    tsquery,
)
from .base import StoreError, ThreadInfo

# Numbered migrations: (number, name, statements). `{s}` is the schema prefix.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "threads and messages", [
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
    ]),
    (2, "full-text search over message text", [
        """ALTER TABLE {s}toolnexus_messages ADD COLUMN words tsvector
            GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED""",
        "CREATE INDEX toolnexus_messages_words ON {s}toolnexus_messages USING GIN (words)",
    ]),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INFO_COLUMNS = "id, title, model, created, updated, message_count, usage"


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StoreError(
            "PostgresStore needs psycopg 3: pip install 'toolnexus[postgres]'") from exc
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


class PostgresStore:
    """Threads in the PostgreSQL database at `dsn` ("postgresql://user:pw@host/db").

    `schema`: put the tables in this schema (created if missing) instead of the
    search_path default. `cache_threads`: see SQLiteStore. One connection per store,
    opened on first use (again if the event loop changes); operations on one store run
    one at a time.
    """

    def __init__(self, dsn: str, *, schema: str | None = None, connect_timeout: float = 10.0,
                 cache_threads: int = 64) -> None:
        if schema is not None and not _IDENT.match(schema):
            raise ValueError(f"schema must be a plain identifier, not {schema!r}")
        self.dsn = dsn
        self.schema = schema
        self.connect_timeout = connect_timeout
        self._s = f'"{schema}".' if schema else ""
        self._lock_prefix = f"toolnexus:{schema or ''}:"
        self._views = Views(cache_threads)
        self._conn: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._connecting: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresStore({redact(self.dsn)!r})"

    def _sql(self, text: str) -> str:
        return text.replace("{s}", self._s)

    # ------------------------------------------------------------------ plumbing

    async def _connection(self) -> Any:
        if self._closed:
            raise StoreError(f"{self!r} is closed")
        loop = asyncio.get_running_loop()
        if self._conn is not None and self._loop is loop and not self._conn.closed:
            return self._conn
        if self._connecting is None or self._connecting[0] is not loop:
            self._connecting = (loop, asyncio.Lock())
        async with self._connecting[1]:  # tasks starting together open one connection
            if self._conn is not None and self._loop is loop and not self._conn.closed:
                return self._conn
            return await self._connect(loop)

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> Any:
        if self._conn is not None:  # made on another event loop (or broken): drop it
            try:
                self._conn.pgconn.finish()
            except Exception:  # noqa: BLE001 - best effort
                pass
            self._conn = None
        psycopg = _psycopg()
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout)))
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {redact(self.dsn)}: {exc}") from exc
        try:
            await self._migrate(conn)
        except BaseException:
            await conn.close()
            raise
        self._conn, self._loop, self._lock = conn, loop, asyncio.Lock()
        return conn

    async def _run(self, fn: Any, *args: Any) -> Any:
        """`await fn(conn, *args)` with this store's lock held, database errors wrapped."""
        psycopg = _psycopg()
        conn = await self._connection()
        assert self._lock is not None
        async with self._lock:
            try:
                return await fn(conn, *args)
            except psycopg.Error as exc:
                raise StoreError(f"thread database {redact(self.dsn)}: {exc}") from exc

    async def _migrate(self, conn: Any) -> list[int]:
        applied: list[int] = []
        s = self._s
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                               (self._lock_prefix + "migrate",))
            if self.schema:
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {s}toolnexus_schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied DOUBLE PRECISION "
                "NOT NULL)")
            cur = await conn.execute(f"SELECT version FROM {s}toolnexus_schema_migrations")
            done = {row[0] for row in await cur.fetchall()}
            if done and max(done) > SCHEMA_VERSION:
                raise StoreError(
                    f"the thread tables in {redact(self.dsn)} have schema version {max(done)}, "
                    f"newer than this toolnexus understands ({SCHEMA_VERSION}); upgrade "
                    "toolnexus to use them")
            for number, name, statements in MIGRATIONS:
                if number in done:
                    continue
                for statement in statements:
                    await conn.execute(self._sql(statement))
                await conn.execute(
                    f"INSERT INTO {s}toolnexus_schema_migrations (version, name, applied) "
                    "VALUES (%s, %s, %s)", (number, name, time.time()))
                applied.append(number)
        return applied

    async def _thread_lock(self, conn: Any, id: str) -> None:
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                           (self._lock_prefix + id,))

    # ------------------------------------------------------------------ protocol

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        """The thread's transcript (a fresh copy), or None if there is no such thread."""
        return await self._run(self._get, id)

    async def _get(self, conn: Any, id: str) -> list[dict[str, Any]] | None:
        held = self._views.pristine(id)
        # One statement, one snapshot: the version and the messages belong together. The
        # messages are not even sent when the thread is still at the version we hold.
        cur = await conn.execute(self._sql(
            "SELECT t.version, CASE WHEN t.version = %s THEN NULL ELSE "
            "(SELECT string_agg(m.body, ',' ORDER BY m.seq) FROM {s}toolnexus_messages m "
            "WHERE m.thread_id = t.id) END FROM {s}toolnexus_threads t WHERE t.id = %s"),
            (held[0] if held else None, id))
        row = await cur.fetchone()
        if row is None:
            self._views.note(id, None, [], [], True)
            return None
        if held is not None and held[0] == row[0]:
            pristine = held[1]
        else:
            pristine = json.loads("[" + (row[1] or "") + "]")
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
        """Store `messages` as thread `id`; see SQLiteStore.save."""
        await self._run(self._save, id, list(messages), model, usage)

    async def _save(self, conn: Any, id: str, messages: list[dict[str, Any]],
                    model: str | None, usage: dict[str, int] | None) -> None:
        s = self._s
        async with conn.transaction():
            await self._thread_lock(conn, id)
            cur = await conn.execute(
                f"SELECT version, message_count, title, custom_title, usage "
                f"FROM {s}toolnexus_threads WHERE id = %s", (id,))
            row = await cur.fetchone()
            stored: list[dict[str, Any]] | None = None
            if row is not None and not self._views.holds(id):
                stored = await self._stored(conn, id)  # the planner will want it
            plan = self._views.plan(id, messages, row[0] if row else None,
                                    row[1] if row else 0, lambda: stored or [])
            if plan.kind == "noop":
                await self._annotate(conn, id, model, usage, row[4] if row else "{}")
                return
            bodies = [encode(m) for m in plan.write]
            texts = [storable_text(message_text(m)) for m in plan.write]
            written = decode_many(bodies)
            cur = await conn.execute(f"SELECT nextval('{s}toolnexus_version')")
            version = (await cur.fetchone())[0]
            now = time.time()
            if row is None:
                await conn.execute(
                    f"INSERT INTO {s}toolnexus_threads (id, title, created, updated, version) "
                    "VALUES (%s, %s, %s, %s, %s)", (id, title_of(written), now, now, version))
            elif plan.kind == "replace":
                await conn.execute(f"DELETE FROM {s}toolnexus_messages WHERE thread_id = %s",
                                   (id,))
                await conn.execute(
                    f"UPDATE {s}toolnexus_threads SET title = CASE WHEN custom_title "
                    "THEN title ELSE %s END WHERE id = %s", (title_of(written), id))
            elif row[2] is None and not row[3]:
                await conn.execute(f"UPDATE {s}toolnexus_threads SET title = %s WHERE id = %s",
                                   (title_of(written), id))
            start = plan.start if plan.kind == "append" else 0
            rows = [(id, start + i, body, text)
                    for i, (body, text) in enumerate(zip(bodies, texts, strict=True))]
            if len(rows) > 64:
                async with conn.cursor() as copy_cur:
                    async with copy_cur.copy(
                            f"COPY {s}toolnexus_messages (thread_id, seq, body, text) "
                            "FROM STDIN") as copy:
                        for item in rows:
                            await copy.write_row(item)
            elif rows:
                async with conn.cursor() as ins:
                    await ins.executemany(
                        f"INSERT INTO {s}toolnexus_messages (thread_id, seq, body, text) "
                        "VALUES (%s, %s, %s, %s)", rows)
            await conn.execute(
                f"UPDATE {s}toolnexus_threads SET message_count = %s, updated = %s, "
                "version = %s WHERE id = %s", (start + len(rows), now, version, id))
            await self._annotate(conn, id, model, usage, row[4] if row else "{}")
        self._views.committed(id, plan, version, messages, written)

    async def _stored(self, conn: Any, id: str) -> list[dict[str, Any]]:
        cur = await conn.execute(self._sql(
            "SELECT body FROM {s}toolnexus_messages WHERE thread_id = %s ORDER BY seq"), (id,))
        return decode_many([r[0] for r in await cur.fetchall()])

    async def _annotate(self, conn: Any, id: str, model: str | None,
                        usage: dict[str, int] | None, current: str) -> None:
        s = self._s
        if model:
            await conn.execute(f"UPDATE {s}toolnexus_threads SET model = %s WHERE id = %s",
                               (model, id))
        if usage:
            total = add_usage(json.loads(current or "{}"), usage)
            await conn.execute(f"UPDATE {s}toolnexus_threads SET usage = %s WHERE id = %s",
                               (json.dumps(total), id))

    # ------------------------------------------------------------------ management

    async def record_usage(
        self, id: str, *, model: str | None = None, usage: dict[str, int] | None = None
    ) -> bool:
        """See SQLiteStore.record_usage."""
        return await self._run(self._record_usage, id, model, usage)

    async def _record_usage(self, conn: Any, id: str, model: str | None,
                            usage: dict[str, int] | None) -> bool:
        async with conn.transaction():
            cur = await conn.execute(self._sql(
                "SELECT usage FROM {s}toolnexus_threads WHERE id = %s FOR UPDATE"), (id,))
            row = await cur.fetchone()
            if row is None:
                return False
            await self._annotate(conn, id, model, usage, row[0])
            return True

    async def info(self, id: str) -> ThreadInfo | None:
        return await self._run(self._info, id)

    async def _info(self, conn: Any, id: str) -> ThreadInfo | None:
        cur = await conn.execute(self._sql(
            f"SELECT {_INFO_COLUMNS} FROM {{s}}toolnexus_threads WHERE id = %s"), (id,))
        row = await cur.fetchone()
        return _thread_info(row) if row else None

    async def list_threads(self, limit: int | None = None) -> list[ThreadInfo]:
        """Every thread, most recently saved first (at most `limit`)."""
        return await self._run(self._list, limit)

    async def _list(self, conn: Any, limit: int | None) -> list[ThreadInfo]:
        cur = await conn.execute(self._sql(
            f"SELECT {_INFO_COLUMNS} FROM {{s}}toolnexus_threads ORDER BY version DESC "
            "LIMIT %s"), (None if limit is None else max(limit, 0),))
        return [_thread_info(row) for row in await cur.fetchall()]

    async def latest_id(self) -> str | None:
        return await self._run(self._latest_id)

    async def _latest_id(self, conn: Any) -> str | None:
        cur = await conn.execute(self._sql(
            "SELECT id FROM {s}toolnexus_threads ORDER BY version DESC LIMIT 1"))
        row = await cur.fetchone()
        return row[0] if row else None

    async def delete(self, id: str) -> bool:
        return await self._run(self._delete, id)

    async def _delete(self, conn: Any, id: str) -> bool:
        async with conn.transaction():
            await self._thread_lock(conn, id)
            await conn.execute(self._sql(
                "DELETE FROM {s}toolnexus_messages WHERE thread_id = %s"), (id,))
            cur = await conn.execute(self._sql(
                "DELETE FROM {s}toolnexus_threads WHERE id = %s"), (id,))
            gone = cur.rowcount > 0
        self._views.forget(id)
        return gone

    async def rename(self, id: str, title: str | None) -> bool:
        """See SQLiteStore.rename."""
        return await self._run(self._rename, id, clean_title(title))

    async def _rename(self, conn: Any, id: str, title: str | None) -> bool:
        async with conn.transaction():
            custom = title is not None
            if title is None:
                title = title_of(await self._stored(conn, id))
            cur = await conn.execute(self._sql(
                "UPDATE {s}toolnexus_threads SET title = %s, custom_title = %s WHERE id = %s"),
                (title, custom, id))
            return cur.rowcount > 0

    async def search(self, text: str, limit: int | None = None) -> list[tuple[ThreadInfo, str]]:
        """See SQLiteStore.search (here over a tsvector index, 'simple' configuration)."""
        terms = search_terms(text)
        if not terms:
            return []
        return await self._run(self._search, tsquery(terms), limit)

    async def _search(self, conn: Any, query: str,
                      limit: int | None) -> list[tuple[ThreadInfo, str]]:
        options = (f'StartSel="{MARK}", StopSel="{MARK}", MaxWords={SNIPPET_WORDS}, '
                   f"MinWords={max(SNIPPET_WORDS // 3, 1)}, HighlightAll=false")
        cur = await conn.execute(self._sql(
            f"""WITH q AS (SELECT to_tsquery('simple', %s) AS q),
            best AS (
                SELECT DISTINCT ON (m.thread_id) m.thread_id, m.text, ts_rank(m.words, q.q) AS r
                FROM {{s}}toolnexus_messages m, q WHERE m.words @@ q.q
                ORDER BY m.thread_id, r DESC, m.seq)
            SELECT {', '.join('t.' + c.strip() for c in _INFO_COLUMNS.split(','))},
                   ts_headline('simple', best.text, q.q, %s)
            FROM best JOIN {{s}}toolnexus_threads t ON t.id = best.thread_id, q
            ORDER BY t.version DESC LIMIT %s"""),
            (query, options, None if limit is None else max(limit, 0)))
        return [(_thread_info(row[:7]), row[7]) for row in await cur.fetchall()]

    # ------------------------------------------------------------------ lifetime

    async def aclose(self) -> None:
        """Close the connection. Idempotent."""
        self._closed = True
        conn, self._conn = self._conn, None
        self._views.clear()
        if conn is not None:
            if self._loop is asyncio.get_running_loop():
                await conn.close()
            else:
                conn.pgconn.finish()

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _thread_info(row: Any) -> ThreadInfo:
    id, title, model, created, updated, count, usage = row
    return ThreadInfo(id, title, model, created, updated, count, json.loads(usage or "{}"))
