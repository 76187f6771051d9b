"""`toolnexus threads ...` end to end, on threads made by real `ask` runs."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from tests.support.cli_helpers import STUB_MODEL
from tests.support.stub_provider import Reply, openai_stream
from toolnexus import MemoryStore
from toolnexus_cli.threads.listing import latest_holding

OLD_Q, OLD_A = "Tell me about penguins", "Penguins are flightless birds."
NEW_Q, NEW_A = "What is a volcano?", "A vent in the crust of a planet."


@pytest.fixture
def two_threads(cli, stub):
    answers = {OLD_Q: OLD_A, NEW_Q: NEW_A}
    stub.handler = lambda rec: openai_stream(answers[rec.json["messages"][-1]["content"]])
    for thread, question in (("t-old", OLD_Q), ("t-new", NEW_Q)):
        r = cli.call("ask", question, "--id", thread)
        assert r.code == 0, r
    return cli


def test_list_show_rename_export_search(two_threads):
    cli = two_threads
    renamed = cli.call("threads", "rename", "t-old", "Penguin facts")
    assert renamed.code == 0, renamed

    listed = cli.call("threads", "list", "--json")
    assert listed.code == 0, listed
    infos = listed.json
    assert [t["id"] for t in infos] == ["t-new", "t-old"]  # newest first
    new, old = infos
    assert new["title"] == NEW_Q and old["title"] == "Penguin facts"
    assert new["model"] == STUB_MODEL and new["message_count"] == 2
    assert new["updated"] >= old["updated"]

    table = cli.call("threads", "list").stdout.splitlines()
    rows = [line for line in table if line.startswith("t-")]
    assert [row.split()[0] for row in rows] == ["t-new", "t-old"]
    assert "Penguin facts" in rows[1] and STUB_MODEL in rows[1]

    raw = cli.call("threads", "show", "t-old", "--json")
    assert raw.code == 0, raw
    transcript = [{"role": "user", "content": OLD_Q}, {"role": "assistant", "content": OLD_A}]
    assert raw.json == transcript
    shown = cli.call("threads", "show", "t-old")
    assert shown.code == 0 and OLD_Q in shown.stdout and OLD_A in shown.stdout, shown

    md = cli.call("threads", "export", "t-old", "--format", "md")
    assert md.code == 0, md
    assert md.stdout.index(OLD_Q) < md.stdout.index(OLD_A)
    assert "## User" in md.stdout and "## Assistant" in md.stdout
    as_json = cli.call("threads", "export", "t-old", "--format", "json")
    assert json.loads(as_json.stdout) == transcript
    bad = cli.call("threads", "export", "t-old", "--format", "txt")
    assert bad.code == 2 and "md or json" in bad.stderr, bad

    found = cli.call("threads", "search", "volcano")
    assert found.code == 0 and "t-new" in found.stdout and "t-old" not in found.stdout, found
    # the answers are searched too, not only the titles
    found = cli.call("threads", "search", "flightless")
    assert "t-old" in found.stdout and "t-new" not in found.stdout, found
    nothing = cli.call("threads", "search", "zebra")
    assert nothing.code == 0 and "t-" not in nothing.stdout, nothing


def test_rm_asks_first_and_unknown_ids_fail_clearly(two_threads):
    cli = two_threads
    kept = cli.call("threads", "rm", "t-new", input="n\n")
    assert kept.code == 0 and "t-new" in kept.stdout, kept  # the question names the thread
    assert cli.call("threads", "show", "t-new", "--json").code == 0

    gone = cli.call("threads", "rm", "t-new", input="y\n")
    assert gone.code == 0, gone
    quiet = cli.call("threads", "rm", "t-old", "--yes", input="")
    assert quiet.code == 0, quiet
    assert cli.call("threads", "list", "--json").json == []

    for args in (
        ["show", "t-new"],
        ["rm", "nope", "--yes"],
        ["rename", "nope", "x"],
        ["export", "nope"],
    ):
        r = cli.call("threads", *args)
        assert r.code == 1, r
        assert r.stdout == ""
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and args[1] in lines[0], r


def test_a_tool_call_turn_shows_its_calls_never_null(cli, stub):
    def handler(rec):
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("lookup", {"query": "weather"})])
        return openai_stream("It is sunny.")

    stub.handler = handler
    assert cli.call("ask", "weather?", "--id", "t-tool").code == 0
    assert cli.thread("t-tool")[1]["content"] is None  # what the endpoint sent
    for args in (["export", "t-tool"], ["show", "t-tool"]):
        shown = cli.call("threads", *args)
        assert shown.code == 0, shown
        assert "null" not in shown.stdout
        assert '`lookup({"query": "weather"})`' in shown.stdout
        assert shown.stdout.index("lookup") < shown.stdout.index("It is sunny.")


def test_search_shows_plain_text(two_threads):
    found = two_threads.call("threads", "search", "volcano")
    assert found.code == 0, found
    assert found.stdout.splitlines()[1] == "    What is a volcano?"  # not **volcano?**


def _age(cli, thread: str, days: float) -> None:
    """Make `thread` look last saved `days` ago."""
    conn = sqlite3.connect(cli.db_path)
    with conn:
        conn.execute(
            "UPDATE threads SET updated = ? WHERE id = ?", (time.time() - days * 86400, thread)
        )
    conn.close()


def test_threads_holding_only_failed_turns_do_not_litter(two_threads, stub):
    cli = two_threads
    stub.handler = lambda rec: Reply.error(400, "bad request")
    for thread in ("t-fail1", "t-fail2"):
        assert cli.call("ask", "hello?", "--id", thread).code == 1
    assert [m.get("dropped") for m in cli.thread("t-fail1")] == ["failed"]  # kept, marked

    listed = cli.call("threads", "list", "--json").json
    assert [t["id"] for t in listed] == ["t-new", "t-old"]
    table = cli.call("threads", "list").stdout
    assert "t-fail" not in table
    everything = cli.call("threads", "list", "--all", "--json").json
    assert [(t["id"], t["message_count"]) for t in everything] == [
        ("t-fail2", 0),
        ("t-fail1", 0),
        ("t-new", 2),
        ("t-old", 2),
    ]  # counts what it holds

    _age(cli, "t-fail1", 40)
    _age(cli, "t-old", 40)  # old, but it holds an answer: never pruned
    kept = cli.call("threads", "prune", "--failed", "--older-than", "30d", input="n\n")
    assert kept.code == 0 and "t-fail1" in kept.stdout and "t-fail2" not in kept.stdout, kept
    pruned = cli.call("threads", "prune", "--failed", "--older-than", "30d", "--yes")
    assert pruned.code == 0, pruned
    assert pruned.stdout.splitlines() == ["deleted thread t-fail1 (hello?)"]
    ids = [t["id"] for t in cli.call("threads", "list", "--all", "--json").json]
    assert ids == ["t-fail2", "t-new", "t-old"]
    bad = cli.call("threads", "prune", "--failed", "--older-than", "soon")
    assert bad.code == 2 and "30d" in bad.stderr, bad
    assert cli.call("threads", "prune").code == 2  # says what it would prune

    several = cli.call("threads", "rm", "t-fail2", "t-new", "--yes")
    assert several.code == 0, several
    assert [t["id"] for t in cli.call("threads", "list", "--all", "--json").json] == ["t-old"]
    missing = cli.call("threads", "rm", "t-old", "nope", "--yes")
    assert missing.code == 1 and "nope" in missing.stderr, missing
    assert [t["id"] for t in cli.call("threads", "list", "--json").json] == ["t-old"]


async def test_continue_picks_the_newest_thread_that_holds_a_turn():
    store = MemoryStore()
    await store.save(
        "t-answered", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )
    await store.save("t-failed", [{"role": "user", "content": "hi", "dropped": "failed"}])
    assert await store.latest_id() == "t-failed"
    assert await latest_holding(store) == "t-answered"
    assert await latest_holding(MemoryStore()) is None


def test_show_fences_tool_output_and_marks_failed_results(cli):
    """`threads show` of a thread whose tool printed Markdown and whose other call failed:
    the output is a code block (its `## Hello` is no heading, its ``` no fence end) and
    the failed result is headed as an error."""
    call = {"type": "function", "function": {"name": "read", "arguments": "{}"}}
    cli.seed_thread(
        "t-md",
        [
            {"role": "user", "content": "read both"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**call, "id": "c1"}, {**call, "id": "c2"}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "## Hello\n```py\nx = 1\n```"},
            {"role": "tool", "tool_call_id": "c2", "content": "no such file", "is_error": True},
        ],
    )
    shown = cli.call("threads", "show", "t-md")
    assert shown.code == 0, shown
    assert "````\n## Hello\n```py\nx = 1\n```\n````" in shown.stdout
    assert "## 3 · Tool result\n" in shown.stdout
    assert "## 4 · Tool result · error\n\n```\nno such file\n```" in shown.stdout
