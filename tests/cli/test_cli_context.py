"""Long threads through `toolnexus ask --id` and `threads show`, against the stub answering
like llama.cpp: windows from the config or a cache file, --no-compact, the compaction
notes, and the summary records marked in a transcript."""

from __future__ import annotations

import re
import stat

import pytest

from tests.support.long_threads import is_summary_request, note, posts, turns
from tests.support.stub_provider import LlamaCppLike
from toolnexus.context._marks import sendable


def test_five_long_asks_on_one_thread_all_succeed_and_the_thread_keeps_every_prompt(cli, stub):
    llama = stub.handler = LlamaCppLike(window=4096)
    for n in range(1, 6):  # each about 1,500 tokens: two fill the 4,096-token window
        result = cli.call("ask", "--id", "T", note(n))
        assert result.code == 0, result
        assert result.stdout == "Noted.\n"
    assert llama.overflows == 0 and llama.summaries >= 2
    thread = cli.thread("T")
    asked = [m["content"] for m in thread if m["role"] == "user" and "compaction" not in m]
    assert asked == [note(n) for n in range(1, 6)]
    assert any("compaction" in m for m in thread)


# ----------------------------------------------------------------------------- the CLI's part


def two_long_turns() -> list[dict]:
    """About 3,000 tokens: the next long prompt passes 80% of a 4,096-token window."""
    return turns((note(1), "Noted."), (note(2), "Noted."))


def looked_up(stub) -> list[str]:
    return [r.path for r in stub.lookups]


NOTE_LINE = re.compile(
    r"toolnexus: compacted (\d+) earlier messages?: [\d.]+k → [\d.]+k tokens "
    r"\((summary|dropped: the summary did not fit)\)\n"
)


def test_the_window_is_asked_once_and_remembered_in_a_private_cache_file(cli, stub):
    stub.handler = LlamaCppLike(window=4096)
    assert cli.call("ask", "--id", "T", note(1, 2000)).code == 0  # big enough to look it up
    assert looked_up(stub) == ["/v1/models", "/props"]
    cache = cli.root / "cache" / "toolnexus" / "windows.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert '"window": 4096' in cache.read_text()
    second = cli.call("ask", "--id", "T", note(2))  # compacts: the window comes from the file
    assert second.code == 0 and NOTE_LINE.fullmatch(second.stderr), second
    assert looked_up(stub) == ["/v1/models", "/props"]


@pytest.mark.parametrize("where", ["top", "provider", "model"])
def test_a_context_window_in_the_config_is_used_without_asking_the_endpoint(cli, stub, where):
    llama = stub.handler = LlamaCppLike(window=4096)
    # each more specific place beats the one above it
    big, small = "context_window = 1000000\n", "context_window = 3000\n"
    cli.write_config(
        (small if where == "top" else big)
        + f'[providers.local]\nbase_url = "{stub.base_url}"\nstyle = "openai"\n'
        + {"top": "", "provider": small, "model": big}[where]
        + '[models.small]\nprovider = "local"\nmodel = "stub-model"\n'
        + (small if where == "model" else "")
    )
    assert cli.call("ask", "-m", "small", "--id", "T", note(1, 1300)).code == 0
    second = cli.call("ask", "-m", "small", "--id", "T", note(2, 1300))  # 2.6k > 80% of 3,000
    assert second.code == 0 and NOTE_LINE.fullmatch(second.stderr), second
    assert llama.summaries == 1 and looked_up(stub) == []


@pytest.mark.parametrize("value", ["0", "-5", "true", '"big"', "1.5"])
def test_a_context_window_that_is_not_a_number_of_tokens_is_one_error_line(cli, value):
    cli.write_config(f'[models.small]\nmodel = "stub-model"\ncontext_window = {value}\n')
    result = cli.call("ask", "hi")
    assert result.code == 2 and result.stdout == "", result
    assert len(result.stderr.splitlines()) == 1, result
    assert "config.toml:3" in result.stderr and "'models.small.context_window'" in result.stderr


def test_no_compact_refuses_a_thread_too_long_for_the_window_with_the_numbers(cli, stub):
    stub.handler = LlamaCppLike(window=4096)
    cli.seed_thread("T", two_long_turns())
    refused = cli.call("ask", "--id", "T", "--no-compact", note(3))
    assert refused.code == 1 and refused.stdout == "", refused
    assert len(refused.stderr.splitlines()) == 1, refused
    assert re.search(r"\([\d,]+ tokens; its window is 4,096\)", refused.stderr), refused
    assert not any(is_summary_request(r) for r in posts(stub))
    assert cli.call("ask", "--id", "T", note(3)).code == 0  # compaction on: it fits


def test_ask_says_it_compacted_in_one_stderr_line_and_json_carries_the_event(cli, stub):
    stub.handler = LlamaCppLike(window=4096)
    for thread in ("A", "B", "C"):
        cli.seed_thread(thread, two_long_turns())
    plain = cli.call("ask", "--id", "A", note(3))
    assert plain.code == 0 and plain.stdout == "Noted.\n", plain
    assert NOTE_LINE.fullmatch(plain.stderr).group(2) == "summary", plain

    as_json = cli.call("ask", "--id", "B", "--json", note(3))
    assert as_json.code == 0 and NOTE_LINE.fullmatch(as_json.stderr), as_json
    (event,) = as_json.json["compactions"]
    assert event["type"] == "compaction" and event["method"] == "summary"
    assert event["before_tokens"] > 3277 > event["after_tokens"]

    events = cli.call("ask", "--id", "C", "--events", note(3))
    assert events.code == 0 and NOTE_LINE.fullmatch(events.stderr), events
    kinds = [e["type"] for e in events.json_lines]
    assert kinds.count("compaction") == 1 and kinds.index("compaction") < kinds.index("text")
    assert "compacted" not in events.stdout.replace('"compaction"', "")


def test_ask_says_when_older_turns_were_dropped_because_the_summary_did_not_fit(cli, stub):
    llama = LlamaCppLike(window=4096)
    stub.handler = lambda rec: (
        LlamaCppLike(window=10)(rec)
        if rec.method == "POST" and is_summary_request(rec)
        else llama(rec)
    )
    cli.seed_thread("T", two_long_turns())
    result = cli.call("ask", "--id", "T", note(3))
    assert result.code == 0 and result.stdout == "Noted.\n", result
    assert NOTE_LINE.fullmatch(result.stderr).group(2) == "dropped: the summary did not fit"


def test_threads_show_marks_the_summary_and_sent_shows_what_the_model_sees(cli, stub):
    stub.handler = LlamaCppLike(window=4096)
    cli.seed_thread("T", two_long_turns())
    assert cli.call("ask", "--id", "T", note(3)).code == 0
    stored = cli.thread("T")
    (at,) = [i for i, m in enumerate(stored) if "compaction" in m]
    info = stored[at]["compaction"]
    first, last = info["summarized"]

    shown = cli.call("threads", "show", "T")
    assert shown.code == 0, shown
    rule = re.search(
        r"^── summary of messages (\d+)–(\d+) \(([\d.]+k) → ([\d.]+k) tokens, "
        r"stub-model\) ──$",
        shown.stdout,
        re.M,
    )
    assert rule and (int(rule[1]), int(rule[2])) == (first + 1, last + 1), shown.stdout
    assert "Summary: the user sent long notes" in shown.stdout
    for n in (1, 2, 3):  # every original is still shown, numbered as /pin takes them
        assert note(n) in shown.stdout
    assert shown.stdout.startswith("## 1 · User\n\nNote 1:")
    assert f"## {at + 2} · Assistant\n\nNoted." in shown.stdout

    sent = cli.call("threads", "show", "T", "--sent")
    assert sent.code == 0 and rule[0] in sent.stdout, sent
    assert note(2) not in sent.stdout and note(1) in sent.stdout and note(3) in sent.stdout
    as_json = cli.call("threads", "show", "T", "--json")
    assert as_json.json[at] == stored[at] and as_json.json[at]["compaction"] == info
    sent_json = cli.call("threads", "show", "T", "--sent", "--json").json
    assert sent_json == sendable(stored) and stored[at] in sent_json
