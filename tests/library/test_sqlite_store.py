"""SQLiteStore beyond the contract: several processes, a writer killed mid-transaction,
migrations, append-only writes, and no SQLite call on the event loop."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import pathlib
import re
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from tests.support.store_workers import append_turns, big_messages, turn
from toolnexus.stores import ForkPoint, MemoryStore, StoreError, open_store
from toolnexus.stores.sqlite import MIGRATIONS, SCHEMA_VERSION, SQLiteStore, migrate

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path):
    return tmp_path / "threads.db"


def rows(path, sql, *args):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


# ---------------------------------------------------------------- several processes


def test_two_processes_appending_to_one_thread_keep_every_turn(db):
    rounds = 15
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(target=append_turns, args=(str(db), "shared", name, rounds, barrier))
        for name in ("p", "q")
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0]

    async def check():
        async with SQLiteStore(db) as store:
            return await store.get("shared"), await store.info("shared")

    final, info = asyncio.run(check())
    assert len(final) == info.message_count == 2 * rounds * 4
    turns = [final[i : i + 4] for i in range(0, len(final), 4)]
    expected = [turn(f"{name}-{i}") for name in ("p", "q") for i in range(rounds)]
    key = lambda t: t[0]["content"]  # noqa: E731
    assert sorted(turns, key=key) == sorted(expected, key=key)  # each turn once, whole
    for name in ("p", "q"):  # and each process's turns in its own order
        mine = [t[0]["content"] for t in turns if t[0]["content"].startswith(f"question {name}")]
        assert mine == [f"question {name}-{i}" for i in range(rounds)]


@pytest.mark.parametrize("mode", ["append", "rewrite"])
async def test_a_writer_killed_mid_transaction_leaves_the_thread_intact(db, mode):
    original = turn("1") + turn("2")
    async with SQLiteStore(db) as store:
        await store.save("t", original, usage={"total_tokens": 5})
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.store_workers", "hang", str(db), "t", mode],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout.readline() == b"ready\n"  # inside BEGIN IMMEDIATE, before COMMIT
        # ~6 MB of uncommitted pages already spilled into the WAL file
        assert os.path.getsize(f"{db}-wal") > 1_000_000
        async with SQLiteStore(db) as reader:  # readers are not blocked meanwhile
            assert await reader.get("t") == original
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL

    async with SQLiteStore(db, timeout=5) as store:
        assert await store.get("t") == original
        info = await store.info("t")
        assert info.message_count == len(original) and info.usage == {"total_tokens": 5}
        assert await store.search("uncommittedword") == []
        await store.save("t", original + turn("3"))  # the dead writer's lock is gone
        assert await store.get("t") == original + turn("3")
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    rows(db, "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    assert rows(db, "SELECT count(*) FROM messages") == [(12,)]


# ---------------------------------------------------------------- append-only writes


async def test_a_new_turn_inserts_only_the_new_rows(db):
    history = big_messages(1000, "history")
    async with SQLiteStore(db) as store:
        await store.save("t", history)
        await store.save("other", turn("x"))
        before = rows(db, "SELECT id, seq, body FROM messages WHERE thread_id = 't' ORDER BY seq")
        loaded = await store.get("t")
        await store.save("t", loaded + turn("new"))
        after = rows(db, "SELECT id, seq, body FROM messages WHERE thread_id = 't' ORDER BY seq")
        assert after[:1000] == before  # old rows untouched: same rowids, same bodies
        assert [seq for _, seq, _ in after[1000:]] == [1000, 1001, 1002, 1003]
        assert min(i for i, _, _ in after[1000:]) > max(i for i, _, _ in before)
        # and the rewrite path really replaces: only the new rows are left
        await store.save("t", turn("compacted"))
        rewritten = rows(db, "SELECT seq, body FROM messages WHERE thread_id = 't' ORDER BY seq")
        assert [seq for seq, _ in rewritten] == [0, 1, 2, 3]
        assert all("compacted" in body for _, body in rewritten)
        assert rows(db, "SELECT count(*) FROM messages")[0][0] == 8
        assert await store.get("other") == turn("x")
        assert await store.delete("other")
    # the full-text index followed every append, rewrite and delete
    rows(db, "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    assert rows(db, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'compacted'") == rows(
        db, "SELECT id FROM messages WHERE text LIKE '%compacted%' ORDER BY id"
    )
    assert rows(db, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'history'") == [
        (0,)
    ]


async def test_a_new_turn_reads_nothing_back_from_the_database(db):
    """With the thread loaded, a save appends without re-reading the stored messages
    (which would make a turn cost grow with the thread)."""
    async with SQLiteStore(db) as store:
        await store.save("t", big_messages(500, "history"))
        loaded = await store.get("t")
        statements: list[str] = []
        await store._call(lambda conn: conn.set_trace_callback(statements.append))
        await store.save("t", loaded + turn("1"))
        await store._call(lambda conn: conn.set_trace_callback(None))
    reads = [s for s in statements if "FROM messages" in s]
    assert all("seq >= 500" in s for s in reads)  # only the new rows (to index them)
    assert not any(s.lstrip().upper().startswith("DELETE") for s in statements)
    inserted = {
        int(m.group(1))
        for s in statements
        if (m := re.match(r"INSERT INTO messages .*? VALUES \('t', (\d+),", s))
    }
    assert inserted == {500, 501, 502, 503}


# ---------------------------------------------------------------- migrations


async def test_migrations_are_recorded_once(db):
    async with SQLiteStore(db) as store:
        await store.get("t")
    recorded = rows(db, "SELECT version, name, applied FROM schema_migrations ORDER BY version")
    assert [(v, n) for v, n, _ in recorded] == [(n, name) for n, name, _ in MIGRATIONS]
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    async with SQLiteStore(db) as store:  # reopening applies nothing again
        await store.save("t", turn("1"))
    assert (
        rows(db, "SELECT version, name, applied FROM schema_migrations ORDER BY version")
        == recorded
    )


async def test_an_older_database_is_migrated_and_keeps_its_threads(db):
    conn = sqlite3.connect(db, isolation_level=None)
    assert migrate(conn, upto=1) == [1]
    conn.execute(
        "INSERT INTO threads (id, title, created, updated, message_count, version) "
        "VALUES ('old', 'old one', 1, 2, 1, 1)"
    )
    conn.execute(
        "INSERT INTO messages (thread_id, seq, body, text) VALUES "
        '(\'old\', 0, \'{"role":"user","content":"legacy walrus"}\', '
        "'legacy walrus')"
    )
    conn.close()
    assert rows(db, "PRAGMA user_version") == [(1,)]
    async with SQLiteStore(db) as store:
        assert await store.get("old") == [{"role": "user", "content": "legacy walrus"}]
        hits = await store.search("walrus")  # the full-text index was built from old rows
        assert [info.id for info, _ in hits] == ["old"]
        assert (await store.info("old")).holds == 1  # saved before marks: it holds all
    assert [v for (v,) in rows(db, "SELECT version FROM schema_migrations")] == [
        n for n, _, _ in MIGRATIONS
    ]
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


async def test_attachments_saved_before_migration_4_stay_inline_and_still_fork(db):
    image = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "QUJD" * 4096}},
        ],
    }
    conn = sqlite3.connect(db, isolation_level=None)
    assert migrate(conn, upto=3) == [1, 2, 3]  # before attachments were stored once
    conn.execute(
        "INSERT INTO threads (id, title, created, updated, message_count, held_count, "
        "version) VALUES ('old', 'look', 1, 2, 1, 1, 1)"
    )
    conn.execute(
        "INSERT INTO messages (thread_id, seq, body, text) VALUES ('old', 0, ?, 'look')",
        (json.dumps(image, separators=(",", ":")),),
    )
    conn.close()
    async with SQLiteStore(db) as store:
        assert await store.get("old") == [image]  # kept inline, read as before
        assert await store.attachments() == []
        history = await store.get("old")
        await store.save(
            "old",
            history + [{"role": "assistant", "content": "ABC"}, image],
            version=history.version,
        )  # sent again: now stored once
        assert len(await store.attachments("old")) == 1
        fork = await store.fork("old", "new", at=1)
        assert fork.forked_from == ForkPoint("old", 1) and await store.get("new") == [image]
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


async def test_a_database_from_a_newer_toolnexus_is_refused(db):
    async with SQLiteStore(db) as store:
        await store.save("t", turn("1"))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', 0)")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    store = SQLiteStore(db)
    with pytest.raises(StoreError, match="newer"):
        await store.get("t")
    await store.aclose()


async def test_concurrent_first_opens_migrate_once(db):
    stores = [SQLiteStore(db) for _ in range(4)]
    await asyncio.gather(*(s.get("t") for s in stores))  # four worker threads at once
    for s in stores:
        await s.aclose()
    applied = [v for (v,) in rows(db, "SELECT version FROM schema_migrations")]
    assert applied == [number for number, _, _ in MIGRATIONS]


# ---------------------------------------------------------------- set-up and the loop


async def test_wal_mode_and_busy_timeout(db):
    async with SQLiteStore(db, timeout=7) as store:
        await store.get("t")
        settings = await store._call(
            lambda conn: (
                conn.execute("PRAGMA journal_mode").fetchone()[0],
                conn.execute("PRAGMA busy_timeout").fetchone()[0],
            )
        )
    assert settings == ("wal", 7000)


async def test_sqlite_never_runs_on_the_event_loop_thread(db):
    threads: set[int] = set()
    async with SQLiteStore(db) as store:
        await store._call(
            lambda conn: conn.set_trace_callback(lambda sql: threads.add(threading.get_ident()))
        )
        await store.save("t", turn("1"))
        await store.get("t")
        await store.list_threads()
        await store.search("question")
        await store.info("t")
        await store.rename("t", "x")
        await store.delete("t")
    assert threads and threading.get_ident() not in threads


async def test_a_save_waits_for_another_writer_without_blocking_the_loop(db):
    async with SQLiteStore(db, timeout=30) as store:
        await store.save("t", turn("1"))
        history = await store.get("t")
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process is writing
        loop = asyncio.get_running_loop()
        begun = asyncio.Event()
        await store._call(
            lambda conn: conn.set_trace_callback(
                lambda sql: (
                    sql.startswith("BEGIN IMMEDIATE") and loop.call_soon_threadsafe(begun.set)
                )
            )
        )
        saving = asyncio.create_task(store.save("t", history + turn("2")))
        await begun.wait()  # the worker is inside BEGIN IMMEDIATE, waiting for the lock
        for _ in range(50):
            await asyncio.sleep(0)  # the loop keeps running meanwhile
        assert not saving.done()
        blocker.execute("COMMIT")
        blocker.close()
        await saving
        assert await store.get("t") == turn("1") + turn("2")


async def test_a_lock_held_too_long_is_a_clear_error(db):
    async with SQLiteStore(db, timeout=0.2) as store:
        await store.save("t", turn("1"))
        history = await store.get("t")
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreError, match="locked by another process"):
                await store.save("t", history + turn("2"))
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        await store.save("t", history + turn("2"))  # and the store is still usable
        assert await store.get("t") == turn("1") + turn("2")


async def test_a_closed_store_says_so(db):
    store = SQLiteStore(db)
    await store.save("t", turn("1"))
    await store.aclose()
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await store.get("t")


async def test_parent_folders_are_created_and_memory_databases_work(tmp_path):
    async with SQLiteStore(tmp_path / "a" / "b" / "threads.db") as store:
        await store.save("t", turn("1"))
    assert (tmp_path / "a" / "b" / "threads.db").exists()
    async with SQLiteStore(":memory:") as store:
        await store.save("t", turn("1"))
        assert [i.id for i, _ in await store.search("question")] == ["t"]


@pytest.mark.parametrize("umask", [0o000, 0o022])
async def test_the_database_and_its_wal_and_shm_are_private(tmp_path, umask):
    """0600 whatever the umask and the folder's mode: the files hold transcripts."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    old = os.umask(umask)
    try:
        async with SQLiteStore(folder / "threads.db") as store:
            await store.save("t", turn("1"))
            files = sorted(folder.iterdir())
            assert [f.name for f in files] == ["threads.db", "threads.db-shm", "threads.db-wal"]
            assert {f.name: oct(f.stat().st_mode & 0o777) for f in files} == {
                f.name: "0o600" for f in files
            }
    finally:
        os.umask(old)


async def test_an_existing_readable_database_is_made_private(db):
    async with SQLiteStore(db) as store:
        await store.save("t", turn("1"))
    db.chmod(0o644)
    async with SQLiteStore(db) as store:
        assert await store.get("t") == turn("1")
    assert db.stat().st_mode & 0o777 == 0o600


def test_importing_toolnexus_loads_no_database_driver():
    code = (
        "import sys, toolnexus, toolnexus.stores as s; "
        "print(sorted(m for m in ('sqlite3', 'psycopg', 'toolnexus.stores.sqlite', "
        "'toolnexus.stores.postgres') if m in sys.modules)); "
        "s.SQLiteStore; print('sqlite3' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "True"]


def test_open_store_picks_the_backend(tmp_path):
    assert isinstance(open_store("memory"), MemoryStore)
    store = open_store(tmp_path / "x.db")
    assert isinstance(store, SQLiteStore) and store.path == str(tmp_path / "x.db")
    assert open_store(f"sqlite://{tmp_path}/y.db").path == f"{tmp_path}/y.db"
    quick = open_store(f"sqlite://{tmp_path}/y.db?timeout=0.5")
    assert quick.path == f"{tmp_path}/y.db" and quick.timeout == 0.5
    for bad, words in [
        ("?timeout=soon", "must be seconds, not 'soon'"),
        ("?timeout=-1", "must be seconds"),
        ("?wait=1", "unknown SQLite"),
    ]:
        with pytest.raises(StoreError, match=words):
            open_store(f"sqlite://{tmp_path}/y.db{bad}")
    pg = open_store("postgresql://u:secret@127.0.0.1/db")
    assert type(pg).__name__ == "PostgresStore"
    assert "secret" not in repr(pg)
