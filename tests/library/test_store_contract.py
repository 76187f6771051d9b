"""One contract for every ThreadStore: MemoryStore, SQLiteStore and PostgresStore.

The PostgreSQL cases need a server (tests/support/postgres_server.py). Each PostgreSQL test gets
its own schema, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import random
import uuid

import pytest

from tests.support.postgres_server import PG_DSN, needs_postgres
from tests.support.scripted import scripted_client
from tests.support.store_workers import turn
from tests.support.stub_provider import png_bytes
from toolnexus import Attachment
from toolnexus.context._marks import UNDONE, mark_from
from toolnexus.stores import (
    AttachmentInfo,
    ConversationStore,
    ForkPoint,
    MemoryStore,
    StoreError,
    Thread,
    ThreadConflict,
    ThreadInfo,
    ThreadStore,
    VersionedStore,
)
from toolnexus.testing import ScriptedModel


class Backend:
    """Opens handles on one storage. For sqlite and postgres every handle is a separate
    store object, as a second process would have; memory has only the one object."""

    def __init__(self, name: str, tmp_path) -> None:
        self.name = name
        self.separate_handles = name != "memory"
        self._tmp = tmp_path
        self._handles: list = []
        self._memory = MemoryStore()
        self.schema = f"tn_{uuid.uuid4().hex[:16]}"

    def open(self, **options):
        """A handle; `options` go to the store's constructor (for memory: a new store)."""
        if self.name == "memory":
            return MemoryStore(**options) if options else self._memory
        if self.name == "sqlite":
            from toolnexus.stores import SQLiteStore

            store = SQLiteStore(self._tmp / "threads.db", **options)
        else:
            from toolnexus.stores import PostgresStore

            store = PostgresStore(PG_DSN, schema=self.schema, **options)
        self._handles.append(store)
        return store

    async def rows(self, sql: str) -> list[tuple]:
        """`sql` run on the database itself ({attachments}, {messages}: the tables)."""
        if self.name == "sqlite":
            import sqlite3

            sql = sql.format(attachments="attachments", messages="messages")
            conn = sqlite3.connect(self._tmp / "threads.db")
            try:
                return conn.execute(sql).fetchall()
            finally:
                conn.close()
        import psycopg

        sql = sql.format(
            attachments=f'"{self.schema}".toolnexus_attachments',
            messages=f'"{self.schema}".toolnexus_messages',
        )
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            return await (await conn.execute(sql)).fetchall()

    async def close(self) -> None:
        for store in self._handles:
            await store.aclose()
        if self.name == "postgres":
            import psycopg

            async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


@pytest.fixture(
    params=[
        "memory",
        "sqlite",
        pytest.param("postgres", marks=needs_postgres),
    ]
)
async def backend(request, tmp_path):
    b = Backend(request.param, tmp_path)
    try:
        yield b
    finally:
        await b.close()


@pytest.fixture
def store(backend):
    return backend.open()


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def exact(messages) -> str:
    """Key order and types included (True vs 1, 1.0 vs 1)."""
    return json.dumps(messages, ensure_ascii=True)


EXOTIC = [
    {"role": "system", "content": "be brief"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "look at this ✓ 日本語 🚀"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    },
    {
        "role": "assistant",
        "content": "",
        "reasoning": "thinking\nout loud",
        "thinking_blocks": [
            {"type": "thinking", "thinking": "hmm", "signature": "c2ln=="},
            {"type": "redacted_thinking", "data": "b3BhcXVl"},
        ],
        "tool_calls": [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "a\\\\b"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "content": 'nul:\x00 ctl:\x1b[0m quote:"',
        "is_error": True,
    },
    {
        "role": "assistant",
        "content": None,
        "interrupted": True,
        "refusal": None,
        "numbers": [0, -1, 2**70, 0.1, 1.0, -0.0, 1e300],
        "flags": [True, False, None],
        "nested": {"z": 1, "a": {"": []}},
        "lone surrogate": "\ud800!",
    },
]


# ---------------------------------------------------------------- the basics


async def test_implements_the_protocols(store):
    assert isinstance(store, ConversationStore)
    assert isinstance(store, VersionedStore)
    assert isinstance(store, ThreadStore)


async def test_get_hands_out_the_version_and_save_returns_the_next(backend, store):
    missing = await store.load("t")
    assert isinstance(missing, Thread) and missing == [] and missing.version == 0
    first = await store.save("t", turn("1"), version=missing.version)
    loaded = await store.get("t")
    assert isinstance(loaded, Thread) and isinstance(loaded, list)
    assert loaded == turn("1") and loaded.version == first > 0
    second = await store.save("t", loaded + turn("2"), version=loaded.version)
    assert second > first
    assert (await backend.open().get("t")).version == second
    assert await store.save("t", loaded + turn("2"), version=second) == second  # nothing new


async def test_unknown_thread(store):
    assert await store.get("nope") is None
    assert await store.info("nope") is None
    assert await store.delete("nope") is False
    assert await store.rename("nope", "x") is False
    assert await store.record_usage("nope", usage={"total_tokens": 1}) is False
    assert await store.list_threads() == []
    assert await store.latest_id() is None
    assert await store.search("anything") == []
    assert await store.get("nope") is None  # asking did not create it


async def test_round_trip_is_exact(backend, store):
    await store.save("t", EXOTIC)
    got = await store.get("t")
    assert got == EXOTIC
    assert exact(got) == exact(EXOTIC)
    again = await backend.open().get("t")  # another handle (another process) reads it too
    assert exact(again) == exact(EXOTIC)


async def test_copies_go_in_and_out(store):
    messages = [user("hi"), assistant("hello")]
    await store.save("t", messages)
    messages[0]["content"] = "changed after save"
    messages.append(user("appended after save"))
    got = await store.get("t")
    got[1]["content"] = "changed after get"
    got.append(user("x"))
    assert await store.get("t") == [user("hi"), assistant("hello")]


async def test_empty_transcript(store):
    await store.save("t", [])
    assert await store.get("t") == []
    info = await store.info("t")
    assert (info.message_count, info.title) == (0, None)


# ---------------------------------------------------------------- append and rewrite


async def test_extending_the_transcript_appends(backend, store):
    await store.save("t", turn("1"))
    loaded = await store.get("t")
    await store.save("t", loaded + turn("2"))
    assert await store.get("t") == turn("1") + turn("2")
    assert (await store.info("t")).message_count == 8
    # saving the same transcript again changes nothing
    before = await store.info("t")
    await store.save("t", turn("1") + turn("2"))
    assert await store.get("t") == turn("1") + turn("2")
    assert (await store.info("t")).updated == before.updated
    other = backend.open()
    assert await other.get("t") == turn("1") + turn("2")


async def test_the_info_counts_what_the_thread_holds_now(store):
    """A listing says how many messages a thread holds (unmarked) without reading them."""
    first = turn("1")
    await store.save("t", first)
    undone = mark_from(await store.get("t"), 0, UNDONE)
    await store.save("t", undone)
    info = await store.info("t")
    assert (info.message_count, info.holds) == (len(first), 0)
    await store.save("t", undone + turn("2"))
    info = await store.info("t")
    assert (info.message_count, info.holds) == (2 * len(first), len(first))
    [listed] = await store.list_threads()
    assert listed.holds == len(first)


async def test_a_rewrite_replaces_the_transcript_whole(backend, store):
    await store.save("t", [user("alpha one"), assistant("alpha two"), user("alpha three")])
    compacted = [user("omega summary"), assistant("omega")]
    await store.save("t", compacted)
    assert await store.get("t") == compacted
    assert (await store.info("t")).message_count == 2
    assert await store.search("alpha") == []
    assert [info.id for info, _ in await store.search("omega")] == ["t"]
    # truncation (an undo) is a rewrite too
    await store.save("t", compacted[:1])
    assert await backend.open().get("t") == compacted[:1]


async def test_undo_then_a_new_turn_replaces_the_undone_turn(store):
    """The loop keeps the history's dicts (`list(history) + new`), as a REPL does between
    turns: dropping the last turn and running another is a rewrite of the newest version,
    not a concurrent append to the older one."""
    first = turn("1")
    await store.save("t", first)
    second = first + turn("2")
    await store.save("t", second)
    retried = second[:4] + turn("2-retry")
    await store.save("t", retried)
    assert await store.get("t") == turn("1") + turn("2-retry")


async def test_a_rewritten_tool_result_replaces_the_placeholder(store):
    """A suspended call saves a placeholder result; resuming rewrites it in place."""
    pending = turn("1")[:2] + [
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "waiting for the user",
            "pending": {"id": "r1"},
        }
    ]
    await store.save("t", pending)
    assert await store.get("t") == pending  # someone looks at it meanwhile
    resumed = pending[:2] + turn("1")[2:]
    await store.save("t", resumed)
    assert await store.get("t") == turn("1")


async def b_added_to_what_a_loaded(backend) -> tuple[ThreadStore, ThreadStore, Thread]:
    """Writers a and b of thread "t" (turns 0 and 1), and the copy a loaded before b added
    turn B."""
    a, b = backend.open(), backend.open()
    await a.save("t", turn("0") + turn("1"))
    loaded_a = await a.get("t")
    loaded_b = await b.get("t")
    await b.save("t", loaded_b + turn("B"), version=loaded_b.version)
    return a, b, loaded_a


async def test_an_undo_on_a_stale_copy_is_refused(backend):
    """In every store, the memory one included: two tasks of one process are two writers."""
    a, b, stale = await b_added_to_what_a_loaded(backend)
    with pytest.raises(ThreadConflict):  # built on the copy without B
        await a.save("t", stale[:4] + turn("1-retry"), version=stale.version)
    assert await b.get("t") == turn("0") + turn("1") + turn("B")


async def test_a_rewrite_in_fresh_dicts_is_a_rewrite(store):
    """A wrapper that saves copies (as the CLI's redacting store does) is told apart by
    the version, not by which dict objects it passes: an undo in fresh dicts replaces the
    last turn instead of being appended after it."""
    await store.save("t", turn("1"))
    loaded = await store.get("t")
    await store.save("t", loaded + turn("2"), version=loaded.version)
    newest = await store.get("t")
    retried = copy.deepcopy(newest[:4]) + turn("2-retry")
    await store.save("t", copy.deepcopy(retried), version=newest.version)
    assert await store.get("t") == turn("1") + turn("2-retry")
    again = await store.get("t")
    await store.save("t", copy.deepcopy(again) + turn("3"), version=again.version)
    assert await store.get("t") == turn("1") + turn("2-retry") + turn("3")


async def test_a_store_that_never_loaded_the_thread_replaces_it(backend, store):
    await store.save("t", turn("1") + turn("2"))
    other = backend.open()
    await other.save("t", turn("x"))  # a blind save is a plain "set"
    assert await store.get("t") == turn("x")


# ---------------------------------------------------------------- thread info


async def test_title_is_the_first_user_line(store):
    await store.save(
        "t",
        [
            {"role": "system", "content": "You are terse."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "\n   Fix   the parser \nplease"}],
            },
            assistant("ok"),
            user("second question"),
        ],
    )
    assert (await store.info("t")).title == "Fix the parser"
    await store.save("long", [user("word " * 40)])
    title = (await store.info("long")).title
    assert len(title) == 80 and title.endswith("…") and title.startswith("word word")
    await store.save("none", [assistant("no user yet")])
    assert (await store.info("none")).title is None
    await store.save("none", [assistant("no user yet"), user("now a user")])
    assert (await store.info("none")).title == "now a user"


async def test_rename_and_back_to_automatic(store):
    await store.save("t", [user("original question"), assistant("a")])
    assert await store.rename("t", "  My \n thread  ") is True
    assert (await store.info("t")).title == "My thread"
    await store.save("t", [user("original question"), assistant("a"), user("more")])
    assert (await store.info("t")).title == "My thread"  # kept over appends
    await store.save("t", [user("compacted question")])
    assert (await store.info("t")).title == "My thread"  # and over rewrites
    assert await store.rename("t", None) is True
    assert (await store.info("t")).title == "compacted question"
    assert await store.rename("t", "   ") is True  # blank: automatic as well
    assert (await store.info("t")).title == "compacted question"


async def test_model_usage_counts_and_times(backend, store):
    await store.save(
        "t",
        turn("1"),
        model="m-1",
        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    )
    first = await store.info("t")
    assert isinstance(first, ThreadInfo)
    assert (first.id, first.model, first.message_count) == ("t", "m-1", 4)
    assert first.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert first.created <= first.updated
    loaded = await store.get("t")
    await store.save(
        "t",
        loaded + turn("2"),
        model="m-2",
        usage={
            "prompt_tokens": 1,
            "completion_tokens": 2,
            "total_tokens": 3,
            "reasoning_tokens": 7,
        },
    )
    assert await store.record_usage("t", usage={"total_tokens": 100}) is True
    info = await backend.open().info("t")
    assert info.model == "m-2"
    assert info.usage == {
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 118,
        "reasoning_tokens": 7,
    }
    assert info.message_count == 8
    assert info.created == first.created and info.updated >= first.updated
    assert await store.record_usage("t", model="m-3") is True
    assert (await store.info("t")).model == "m-3"
    assert info.as_dict() == {
        "id": "t",
        "title": "question 1",
        "model": "m-2",
        "created": info.created,
        "updated": info.updated,
        "message_count": 8,
        "usage": info.usage,
        "forked_from": None,
    }
    json.dumps(info.as_dict())


async def test_list_is_newest_first(store):
    for id in ("a", "b", "c"):
        await store.save(id, [user(f"thread {id}")])
    assert [t.id for t in await store.list_threads()] == ["c", "b", "a"]
    await store.save("a", [user("thread a"), assistant("more")])
    assert [t.id for t in await store.list_threads()] == ["a", "c", "b"]
    assert [t.id for t in await store.list_threads(limit=2)] == ["a", "c"]
    assert await store.list_threads(limit=0) == []
    assert await store.latest_id() == "a"
    await store.rename("b", "renamed")  # a rename is not activity
    await store.record_usage("b", usage={"total_tokens": 1})
    assert await store.latest_id() == "a"
    listed = {t.id: t for t in await store.list_threads()}
    assert listed["b"].title == "renamed" and listed["a"].message_count == 2
    await store.delete("a")
    assert await store.latest_id() == "c"


async def test_delete(backend, store):
    await store.save("gone", [user("delete me please")])
    await store.save("kept", [user("keep me please")])
    assert await store.delete("gone") is True
    assert await store.delete("gone") is False
    assert await store.get("gone") is None
    assert await store.info("gone") is None
    assert [t.id for t in await store.list_threads()] == ["kept"]
    assert [i.id for i, _ in await store.search("please")] == ["kept"]
    assert await backend.open().get("gone") is None
    await store.save("gone", [user("fresh start")])  # the id can be used again
    assert await store.get("gone") == [user("fresh start")]
    assert (await store.info("gone")).title == "fresh start"


# ---------------------------------------------------------------- search


async def test_search(store):
    await store.save("old", [user("How do I parse TOML?"), assistant("Use tomllib.")])
    await store.save(
        "new",
        [
            user("Tell me about parsers"),
            assistant("A parser turns text into structure. Parsing is fun."),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "grep", "arguments": '{"pattern": "zanzibar"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "no match"},
        ],
    )
    await store.save("other", [user("nothing relevant here")])

    hits = await store.search("PARS")  # case-insensitive, matches word starts
    assert [info.id for info, _ in hits] == ["new", "old"]  # newest first, once each
    assert all(isinstance(info, ThreadInfo) for info, _ in hits)
    assert "**" in hits[0][1] and "pars" in hits[0][1].lower()
    assert "**parse**" in hits[1][1]

    assert [i.id for i, _ in await store.search("tomllib")] == ["old"]
    assert [i.id for i, _ in await store.search("parse toml")] == ["old"]  # all words
    assert await store.search("parse zanzibar") == []  # ...in the same message
    assert [i.id for i, _ in await store.search("zanzibar")] == ["new"]  # tool arguments
    assert await store.search("arse") == []  # word starts only
    assert [i.id for i, _ in await store.search("pars", limit=1)] == ["new"]
    assert await store.search("  ?!  ") == []
    for nasty in ['"parse', "parse*", "pars OR -x", "NEAR(a b)", "col:parse", "a'b", "(", "\\"]:
        await store.search(nasty)  # query syntax never leaks through


# ---------------------------------------------------------------- several writers


async def test_two_writers_appending_keep_both_turns(backend):
    a, b = backend.open(), backend.open()
    await a.save("t", turn("0"))
    base_a = await a.get("t")
    base_b = await b.get("t")
    await a.save("t", base_a + turn("A"), version=base_a.version)
    # b's base is stale: merged after A's turn
    merged = await b.save("t", base_b + turn("B"), version=base_b.version)
    expected = turn("0") + turn("A") + turn("B")
    assert await a.get("t") == expected
    assert (await b.info("t")).message_count == len(expected)
    # b keeps going from its own view without reloading: still nothing lost...
    await b.save("t", base_b + turn("B") + turn("B2"), version=merged)
    assert await a.get("t") == expected + turn("B2")
    # ...but a rewrite of that view (which is not what the thread holds) is refused
    with pytest.raises(ThreadConflict):
        await b.save("t", base_b + turn("B-rewritten"), version=merged)


async def test_a_rewrite_over_another_writers_turn_is_refused(backend):
    a, b, loaded_a = await b_added_to_what_a_loaded(backend)
    with pytest.raises(ThreadConflict) as caught:  # a compacts the version it loaded
        await a.save("t", loaded_a[4:], version=loaded_a.version)
    assert caught.value.thread_id == "t" and "another writer" in str(caught.value)
    assert await a.get("t") == turn("0") + turn("1") + turn("B")  # nothing lost
    reloaded = await a.get("t")
    await a.save("t", reloaded[4:], version=reloaded.version)  # redone on the newer one
    assert await b.get("t") == turn("1") + turn("B")


async def test_a_stale_version_the_store_no_longer_holds_is_a_conflict(backend):
    a, b = backend.open(), backend.open()
    await a.save("t", turn("0"))
    old = await a.get("t")
    for i in range(20):  # many versions later (more than any store keeps)
        now = await b.load("t")
        await b.save("t", now + turn(str(i)), version=now.version)
    fresh = backend.open()  # has never seen the old version
    with pytest.raises(ThreadConflict):
        await fresh.save("t", old + turn("late"), version=old.version)
    assert len(await b.get("t")) == 4 * 21


async def test_concurrent_tasks_on_one_store(store):
    await store.save("t", turn("0"))
    n = 6
    loaded = 0
    all_loaded = asyncio.Event()

    async def one(tag: str) -> None:
        nonlocal loaded
        history = await store.get("t")
        loaded += 1
        if loaded == n:
            all_loaded.set()
        await all_loaded.wait()  # every task holds the same version before any saves
        await store.save("t", history + turn(tag), version=history.version)

    await asyncio.gather(*(one(str(i)) for i in range(1, n + 1)))
    final = await store.get("t")
    assert final[:4] == turn("0")
    turns = [final[i : i + 4] for i in range(4, len(final), 4)]
    assert sorted(turns, key=lambda t: t[0]["content"]) == [turn(str(i)) for i in range(1, n + 1)]


async def test_concurrent_writers_on_separate_handles(backend):
    """Like separate processes: each handle has its own connection (SQLite: its own worker
    thread), all load the same version, then all save at once."""
    n = 5
    handles = [backend.open() for _ in range(n)]
    await handles[0].save("t", turn("0"))
    histories = await asyncio.gather(*(h.get("t") for h in handles))
    await asyncio.gather(
        *(
            h.save("t", history + turn(str(i)), version=history.version)
            for i, (h, history) in enumerate(zip(handles, histories, strict=True), start=1)
        )
    )
    final = await backend.open().get("t")
    assert final[:4] == turn("0") and len(final) == 4 * (n + 1)
    turns = [final[i : i + 4] for i in range(4, len(final), 4)]
    assert sorted(turns, key=lambda t: t[0]["content"]) == [turn(str(i)) for i in range(1, n + 1)]
    assert (await handles[0].info("t")).message_count == len(final)


async def test_saving_a_thread_deleted_meanwhile_recreates_it(backend):
    a, b = backend.open(), backend.open()
    await a.save("t", turn("0"))
    loaded = await a.get("t")
    await b.delete("t")
    await a.save("t", loaded + turn("1"))
    assert await b.get("t") == turn("0") + turn("1")


async def test_a_thread_created_meanwhile_is_merged(backend):
    a, b = backend.open(), backend.open()
    loaded_a, loaded_b = await a.load("t"), await b.load("t")
    await a.save("t", turn("A"), version=loaded_a.version)
    await b.save("t", turn("B"), version=loaded_b.version)
    assert await a.get("t") == turn("A") + turn("B")
    if not backend.separate_handles:
        return  # one MemoryStore object: a save that names no version builds on its last
    # the same with saves that name no version, after a get that found nothing
    assert await a.get("u") is None
    assert await b.get("u") is None
    await a.save("u", turn("A"))
    await b.save("u", turn("B"))
    assert await a.get("u") == turn("A") + turn("B")


# ---------------------------------------------------------------- through the client


async def test_client_ask_with_an_id_persists_through_the_store(backend):
    model = ScriptedModel(["Nice to meet you, Ada.", "Your name is Ada."])
    first = scripted_client(model, api_key="k", store=backend.open())
    await first.ask("My name is Ada.", None, id="thread-1")
    await first.aclose()
    second = scripted_client(model, api_key="k", store=backend.open())
    result = await second.ask("What is my name?", None, id="thread-1")
    await second.aclose()
    sent = model.requests[1].messages
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        "My name is Ada.",
        "What is my name?",
    ]
    saved = await backend.open().get("thread-1")
    assert saved == result.messages
    assert [m["role"] for m in saved] == ["user", "assistant", "user", "assistant"]
    info = await backend.open().info("thread-1")
    assert (info.title, info.message_count) == ("My name is Ada.", 4)


async def test_a_deep_copy_of_the_saved_list_is_not_needed_by_callers(store):
    """Saving, then mutating nested parts of the saved messages, leaves the store alone
    (guards the append path, which keeps its own copies of the new messages)."""
    messages = turn("1")
    await store.save("t", messages)
    extended = copy.copy(messages) + turn("2")
    await store.save("t", extended)
    extended[5]["tool_calls"][0]["function"]["name"] = "mutated"
    extended[4]["content"] = "mutated"
    assert await store.get("t") == turn("1") + turn("2")


@pytest.mark.parametrize(
    "name",
    [
        "memory",
        "sqlite",
        pytest.param("postgres", marks=needs_postgres),
    ],
)
def test_one_store_serves_several_event_loops(name, tmp_path):
    """`asyncio.run` twice with the same store, as the seed examples do."""
    backend = Backend(name, tmp_path)
    store = backend.open()
    try:
        asyncio.run(store.save("t", turn("1")))
        loaded = asyncio.run(store.get("t"))
        asyncio.run(store.save("t", loaded + turn("2")))
        assert asyncio.run(store.get("t")) == turn("1") + turn("2")
        assert [i.id for i in asyncio.run(store.list_threads())] == ["t"]
    finally:
        asyncio.run(backend.close())


# ---------------------------------------------------------------- attachments, stored once

IMAGE = png_bytes(512, 512) + random.Random(7).randbytes(46 * 1024)  # a 48 KB 512x512 png
IMAGE_SHA = hashlib.sha256(IMAGE).hexdigest()
IMAGE_B64 = base64.b64encode(IMAGE).decode()


def with_image(text: str, role: str = "user") -> dict:
    return {
        "role": role,
        "content": [
            {"type": "text", "text": text},
            Attachment.from_bytes(IMAGE, name="cat.png").part(),
        ],
    }


async def stored_bodies(backend) -> str:
    """Every message body as the database holds it, joined (not for memory)."""
    return "".join(body for (body,) in await backend.rows("SELECT body FROM {messages}"))


async def test_an_attachment_is_stored_once_however_often_it_is_sent(backend, store):
    a = [with_image("look"), assistant("a cat")]
    await store.save("a", a)
    for k in range(4):  # four more turns sending the same image: five copies in "a"
        a = a + [with_image(f"again {k}"), assistant("still a cat")]
        await store.save("a", a)
    b = [user("another thread"), assistant("ok"), with_image("the same picture")]
    await store.save("b", b)

    assert await store.attachments() == [AttachmentInfo(IMAGE_SHA, "image/png", len(IMAGE))]
    assert await store.attachments("a") == await store.attachments("b")
    other = backend.open()  # another process would read back exactly what was saved
    assert exact(await other.get("a")) == exact(a) and exact(await other.get("b")) == exact(b)
    assert exact(await store.get("a")) == exact(a)
    if backend.name != "memory":
        assert await backend.rows("SELECT count(*) FROM {attachments}") == [(1,)]
        bodies = await stored_bodies(backend)
        assert IMAGE_B64[:200] not in bodies
        assert bodies.count("toolnexus-attachment:sha256:" + IMAGE_SHA) == 6


async def test_deleting_a_thread_keeps_attachments_another_refers_to(backend, store):
    await store.save("a", [with_image("one"), assistant("a cat")])
    await store.save("b", [with_image("two"), assistant("a cat")])
    assert await store.delete("a")
    assert await store.attachments() == [AttachmentInfo(IMAGE_SHA, "image/png", len(IMAGE))]
    assert await backend.open().get("b") == [with_image("two"), assistant("a cat")]
    assert await store.delete("b")  # the last reference: the bytes go with it
    assert await store.attachments() == []
    if backend.name != "memory":
        assert await backend.rows("SELECT count(*) FROM {attachments}") == [(0,)]


async def test_a_rewrite_that_drops_an_attachment_drops_its_bytes(store):
    history = [with_image("look"), assistant("a cat")]
    version = await store.save("t", history)
    compacted = [user("summary: the user showed a cat"), assistant("a cat")]
    await store.save("t", compacted, version=version)
    assert await store.get("t") == compacted
    assert await store.attachments() == [] and await store.attachments("t") == []


async def test_every_kind_of_part_round_trips_exactly(backend, store):
    pdf = b"%PDF-1.4\n" + random.Random(1).randbytes(4096)
    wav = b"RIFF\0\0\0\0WAVEfmt " + random.Random(2).randbytes(4096)
    odd = base64.encodebytes(IMAGE).decode()  # base64 with newlines: kept inline, exactly
    messages = [
        {
            "role": "user",
            "content": [
                {
                    "type": "file",
                    "file": {
                        "filename": "report.pdf",
                        "file_data": "data:application/pdf;base64,"
                        + base64.b64encode(pdf).decode(),
                    },
                },
                {
                    "type": "input_audio",
                    "input_audio": {"data": base64.b64encode(wav).decode(), "format": "wav"},
                },
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64," + odd, "detail": "low"},
                },
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "snap", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [
                {"type": "text", "text": "[image 512x512 png]"},
                Attachment.from_bytes(IMAGE, name="shot.png").part(),
            ],
        },
        {"role": "user", "content": "toolnexus-attachment:sha256:" + IMAGE_SHA},  # just text
    ]
    await store.save("t", messages)
    assert exact(await backend.open().get("t")) == exact(messages)
    assert {(i.media_type, i.size) for i in await store.attachments("t")} == {
        ("application/pdf", len(pdf)),
        ("audio/wav", len(wav)),
        ("image/png", len(IMAGE)),
    }


async def test_an_attachment_over_the_cap_is_refused_naming_its_size(backend, store):
    too_big = "data:image/png;base64," + "A" * (28 * 1024 * 1024)  # 21 MiB of bytes
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": too_big}}]}
    with pytest.raises(
        StoreError,
        match=r"thread 't', message 1: an attachment of 21 MiB is "
        r"larger than the 20 MiB",
    ):
        await store.save("t", [user("hi"), message])
    assert await store.get("t") is None
    small = backend.open(max_attachment_bytes=10_000)
    with pytest.raises(StoreError, match="an attachment of 48 KB is larger than the 10 KB"):
        await small.save("u", [with_image("look")])
    assert await small.get("u") is None


# ---------------------------------------------------------------- forks


async def test_fork_copies_the_thread_up_to_a_message(backend, store):
    history = turn("1") + [with_image("look"), assistant("a cat")] + turn("2")
    await store.save("t", history, model="m-1", usage={"total_tokens": 9})
    info = await store.fork("t", "f", at=6)
    assert isinstance(info, ThreadInfo)
    assert (info.id, info.forked_from, info.message_count, info.model) == (
        "f",
        ForkPoint("t", 6),
        6,
        "m-1",
    )
    assert info.forked_from.id == "t" and info.forked_from.at == 6 and info.usage == {}
    assert info.as_dict()["forked_from"] == {"id": "t", "at": 6}
    other = backend.open()
    fork = await other.get("f")
    assert exact(fork) == exact(history[:6])
    assert (await other.info("f")).title == "question 1"
    assert (await other.info("t")).forked_from is None
    await other.save("f", fork + turn("3"), version=fork.version)  # the fork goes on alone
    assert await store.get("t") == history
    assert await store.get("f") == history[:6] + turn("3")
    listed = {i.id: i.forked_from for i in await store.list_threads()}
    assert listed == {"f": ForkPoint("t", 6), "t": None}


async def test_fork_shares_attachments_and_outlives_its_source(backend, store):
    await store.save("t", [with_image("look"), assistant("a cat")])
    whole = await store.fork("t", "f")
    assert whole.forked_from == ForkPoint("t", 2) and whole.message_count == 2
    assert (
        await store.attachments()
        == await store.attachments("f")
        == [AttachmentInfo(IMAGE_SHA, "image/png", len(IMAGE))]
    )
    assert await store.delete("t")
    assert await backend.open().get("f") == [with_image("look"), assistant("a cat")]
    assert len(await store.attachments()) == 1
    await store.delete("f")
    assert await store.attachments() == []


async def test_fork_keeps_marks_and_a_custom_title(store):
    history = mark_from(turn("1"), 0, UNDONE) + turn("2")
    await store.save("t", history)
    await store.rename("t", "my title")
    info = await store.fork("t", "f")
    assert info.title == "my title" and info.message_count == 8 and info.holds == 4
    assert await store.get("f") == history


async def test_fork_refuses_what_it_cannot_do(store):
    assert await store.fork("missing", "f") is None
    await store.save("t", turn("1"))
    await store.save("other", turn("2"))
    with pytest.raises(StoreError, match="already a thread 'other'"):
        await store.fork("t", "other")
    for at in (0, 5, -1):
        with pytest.raises(
            StoreError, match=f"thread 't' has 4 messages: a fork keeps 1 to 4 of them, not {at}"
        ):
            await store.fork("t", "f", at=at)
    assert await store.get("f") is None
    assert await store.get("other") == turn("2")
