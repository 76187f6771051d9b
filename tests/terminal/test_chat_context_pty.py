"""The chat's part in long threads, in a real pseudo-terminal against the stub answering
like llama.cpp (a 4,096-token window): the line an automatic compaction prints,
/compact's preview (applied only on y), /pin, /unpin and /context."""

from __future__ import annotations

import re
import threading

from tests.support.long_threads import is_summary_request, note, posts, turns
from tests.support.stub_provider import LlamaCppLike
from tests.support.waiting import WAIT_S
from toolnexus.context._marks import COMPACTION_KEY, PINNED_KEY

SIX_TURNS = turns(
    ("first, call me Ada", "hello Ada"),
    ("second", "two"),
    ("third", "three"),
    ("fourth", "four"),
    ("fifth", "five"),
    ("sixth", "six"),
)
APPLY = "apply it? [y]es / [n]o (Enter: no): "


def test_an_automatic_compaction_prints_one_line(stub, cli, open_chat):
    stub.handler = LlamaCppLike(window=4096)
    cli.seed_thread("T", turns(*[(note(n, 820), "Noted.") for n in range(1, 5)]))  # past 80%
    chat = open_chat("--id", "T")
    chat.say("one more")
    lines = [line for line in chat.term.lines() if line.startswith("compacted")]
    assert len(lines) == 1, chat.term.text()
    assert re.fullmatch(
        r"compacted \d+ earlier messages: 3\.\dk → [\d.]+k? tokens \(summary\)", lines[0]
    ), lines
    shown = chat.term.lines()
    assert shown.index(lines[0]) < shown.index("Noted.", shown.index("› one more"))
    assert any(COMPACTION_KEY in m for m in cli.thread("T"))


def test_an_automatic_compaction_shows_as_compaction_while_it_runs(stub, cli, open_chat):
    """Repro: a chat on llama.cpp (4,096 tokens) whose thread is past 80% of the window;
    send one more message. While the model wrote the summary of the older turns (a minute
    on a busy machine) the line said "waiting for the model… 41s", as if the answer were
    late. Now it says "compacting 3 earlier messages… 41s" until the summary is made,
    then waits for the model (the answer) again."""
    llama = LlamaCppLike(window=4096)
    summary_may_come = threading.Event()

    def handler(rec):
        if rec.method == "POST" and is_summary_request(rec):
            summary_may_come.wait(WAIT_S)  # until the test has seen the screen
        return llama(rec)

    stub.handler = handler
    cli.seed_thread("T", turns(*[(note(n, 820), "Noted.") for n in range(1, 5)]))
    chat = open_chat("--id", "T")
    chat.send_line("one more")
    compacting = re.compile(r"compacting \d+ earlier messages… \d+s$")
    chat.wait(
        lambda: any(compacting.search(line) for line in chat.term.display()), "the compacting line"
    )
    assert not any("waiting for the model" in line for line in chat.term.display())
    summary_may_come.set()
    chat.wait_prompt()
    shown = chat.term.lines()
    assert any(line.startswith("compacted ") for line in shown), chat.term.text()
    assert shown.index("Noted.", shown.index("› one more")) > 0
    assert not any(compacting.search(line) for line in chat.term.display())


def test_compact_previews_the_summary_and_applies_it_only_on_y(stub, cli, open_chat):
    llama = stub.handler = LlamaCppLike(window=4096)
    cli.seed_thread("T", SIX_TURNS)
    chat = open_chat("--id", "T")
    for times, refuse in enumerate(("n", "\r"), 1):  # n, or just Enter: nothing changes
        chat.send_line("/compact keep the names")
        chat.wait_text(APPLY.rstrip(), count=times)
        chat.child.send(refuse)
        chat.wait_prompt()
        assert chat.term.text().count("kept the thread as it was") == times
        assert cli.thread("T") == SIX_TURNS
    assert llama.summaries == 2
    summary_asked = [r for r in posts(stub) if is_summary_request(r)][-1]
    assert "Also: keep the names" in summary_asked.json["messages"][-1]["content"]

    chat.send_line("/compact keep the names")
    chat.wait_text(APPLY.rstrip(), count=3)
    text = chat.term.text()
    assert re.search(r"summary of messages \d+–\d+ \(\d+ → \d+ tokens, stub-model\)", text), text
    assert "Summary: the user sent long notes; the assistant noted each one." in text
    chat.child.send("y")
    chat.wait_prompt()
    assert "compacted 3 messages: the summary is sent in their place" in chat.term.text()
    stored = cli.thread("T")
    assert stored[:-1] == SIX_TURNS  # every original kept; the record appended
    assert stored[-1][COMPACTION_KEY]["instructions"] == "keep the names"

    chat.say("seventh")
    sent = [m["content"] for m in stub.requests[-1].json["messages"]]
    assert "second" not in sent and "first, call me Ada" in sent
    assert any(c.startswith("[summary of earlier conversation]") for c in sent)


def test_pin_unpin_and_context(stub, cli, open_chat):
    stub.handler = LlamaCppLike(window=4096)
    cli.seed_thread("T", SIX_TURNS)
    chat = open_chat("--id", "T")
    chat.say("/pin")
    assert "nothing is pinned: /pin N keeps message N verbatim" in chat.term.text()
    chat.say("/context")
    text = chat.term.text()
    assert "window: 4,096 tokens (from the endpoint's model listing)" in text, text
    assert re.search(r"fill: ~\d+ / 4\.1k tokens, \d+% in 12 messages", text), text
    assert "next compaction would summarize 3 messages (2–4)" in text, text

    chat.say("/pin 3")
    assert "pinned message 3 (user: second): every compaction sends it as it is" in chat.term.text()
    assert [i for i, m in enumerate(cli.thread("T")) if m.get(PINNED_KEY)] == [2]
    chat.say("/pin")
    assert "pinned: message 3 (user: second)" in chat.term.text()
    chat.say("/context")
    assert (
        "next compaction would summarize 2 messages (2–4); 1 in that range stay verbatim"
        in chat.term.text()
    )
    chat.say("/pin 99")
    assert (
        "usage: /pin N, N a message number as 'threads show T' shows them (1 to 12)"
        in chat.term.text()
    )

    chat.say("/unpin 3")
    assert "unpinned message 3 (user: second): a compaction may summarize it" in chat.term.text()
    assert not any(m.get(PINNED_KEY) for m in cli.thread("T"))
    chat.say("/unpin 3")
    assert "message 3 (user: second) is not pinned" in chat.term.text()


def test_the_first_footer_has_the_endpoints_window_and_real_counts(stub, cli, open_chat):
    """Repro: llama.cpp serves Qwen2.5-Coder-0.5B with `-c 4096`; `toolnexus chat -m
    qwen2.5-coder-0.5b-instruct`, say hi. The footer read "~34 / 32.8k tokens, 0%": the
    window of a built-in table for qwen2.5 models, not the server's, and "~" although
    the server had counted every token. Now it shows 4.1k (asked of the server once) and
    the server's count, and /context agrees."""
    qwen = "qwen2.5-coder-0.5b-instruct"
    stub.handler = LlamaCppLike(window=4096, model=qwen, answer="Hello there.")
    chat = open_chat("-m", qwen)
    chat.say("hi")
    footer = [line for line in chat.term.lines() if line.startswith(f"{qwen} · ")]
    assert len(footer) == 1 and re.match(rf"{qwen} · \d+ / 4\.1k tokens, \d+% · ", footer[0]), (
        chat.term.text()
    )
    chat.say("/context")
    text = chat.term.text()
    assert "window: 4,096 tokens (from the endpoint's model listing)" in text, text
    assert re.search(r"fill: \d+ / 4\.1k tokens, \d+% in 2 messages\n", text), text
