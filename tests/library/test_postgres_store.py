"""PostgresStore beyond the contract: migrations, connections, errors without the password.
Needs TOOLNEXUS_TEST_PG_DSN (see tests/support/postgres_server.py)."""

from __future__ import annotations

import asyncio
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.support.postgres_server import PG_DSN, needs_postgres
from tests.support.store_workers import turn
from toolnexus.stores import StoreError

pytestmark = needs_postgres


@pytest.fixture
async def schema():
    import psycopg

    name = f"tn_{uuid.uuid4().hex[:16]}"
    yield name
    async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


async def query(sql, *args):
    import psycopg

    async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
        cur = await conn.execute(sql, args)
        return await cur.fetchall()


async def test_migrations_are_recorded_once(schema):
    from toolnexus.stores.postgres import MIGRATIONS, PostgresStore

    async with PostgresStore(PG_DSN, schema=schema) as store:
        await store.save("t", turn("1"))
    recorded = await query(
        f'SELECT version, name, applied FROM "{schema}".toolnexus_schema_migrations '
        "ORDER BY version"
    )
    assert [(v, n) for v, n, _ in recorded] == [(n, name) for n, name, _ in MIGRATIONS]
    async with PostgresStore(PG_DSN, schema=schema) as store:
        assert await store.get("t") == turn("1")
    assert (
        await query(
            f'SELECT version, name, applied FROM "{schema}".toolnexus_schema_migrations '
            "ORDER BY version"
        )
        == recorded
    )


async def test_concurrent_first_opens_migrate_once(schema):
    from toolnexus.stores.postgres import MIGRATIONS, PostgresStore

    stores = [PostgresStore(PG_DSN, schema=schema) for _ in range(4)]
    await asyncio.gather(*(s.get("t") for s in stores))
    for s in stores:
        await s.aclose()
    rows = await query(f'SELECT version FROM "{schema}".toolnexus_schema_migrations')
    assert sorted(v for (v,) in rows) == [n for n, _, _ in MIGRATIONS]


async def test_a_schema_from_a_newer_toolnexus_is_refused(schema):
    from toolnexus.stores.postgres import PostgresStore

    async with PostgresStore(PG_DSN, schema=schema) as store:
        await store.save("t", turn("1"))
    await query(
        f'INSERT INTO "{schema}".toolnexus_schema_migrations VALUES '
        "(99, 'from the future', 0) RETURNING version"
    )
    store = PostgresStore(PG_DSN, schema=schema)
    with pytest.raises(StoreError, match="newer"):
        await store.get("t")
    await store.aclose()


async def test_tasks_starting_together_open_one_connection(schema, monkeypatch):
    import psycopg

    from toolnexus.stores.postgres import PostgresStore

    opened = []
    real_connect = psycopg.connect

    def counting_connect(*args, **kwargs):
        opened.append(1)
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(psycopg, "connect", counting_connect)
    async with PostgresStore(PG_DSN, schema=schema) as store:
        await asyncio.gather(*(store.info(str(i)) for i in range(5)))
        await store.list_threads()
    assert len(opened) == 1


async def test_a_failed_connection_names_the_server_but_not_the_password():
    from toolnexus.stores.postgres import PostgresStore

    parts = urlsplit(PG_DSN)
    wrong = parts._replace(netloc=f"{parts.username}:not-the-s3cret@{parts.hostname}:{parts.port}")
    store = PostgresStore(urlunsplit(wrong))
    with pytest.raises(StoreError) as caught:
        await store.get("t")
    assert "not-the-s3cret" not in str(caught.value)
    assert "not-the-s3cret" not in repr(store)
    assert str(parts.port) in str(caught.value)
    await store.aclose()


def test_a_bad_schema_name_is_refused():
    from toolnexus.stores.postgres import PostgresStore

    with pytest.raises(ValueError):
        PostgresStore(PG_DSN, schema='x"; DROP TABLE y; --')
