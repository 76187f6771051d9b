"""Context windows and compaction of what is sent. Where the window comes from the server
or its refusal, against the stub answering like llama.cpp (a small window in its listing,
its exact 400 body when a request is over it); compaction under an explicit window needs
no server and runs on the scripted model (tests/support/scripted.py's summarizer)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from tests.support.long_threads import is_summary_request, note, posts, turns
from tests.support.scripted import (
    answered,
    asks_for_a_summary,
    scripted_client,
    summarizer,
    usage,
)
from tests.support.stub_provider import LlamaCppLike, Reply, openai_text
from toolnexus import ContextPolicy, ProviderError, create_client, create_toolkit, define_tool
from toolnexus.context._marks import COMPACTION_KEY, DROPPED_KEY, PINNED_KEY, pin, sendable, unpin
from toolnexus.context._summary import CUT_MARK, LEFT_OUT_HEADER, SUMMARY_HEADER
from toolnexus.context.plan import apply_compaction
from toolnexus.errors import ContextSize
from toolnexus.testing import (
    ModelRequest,
    Scripted,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    context_overflow,
)


def client_for(stub, **kw):
    kw.setdefault("api_key", "sk-test")
    kw.setdefault("retries", 0)
    return create_client(base_url=stub.base_url, style="openai", model="stub-model", **kw)


def answers(stub):
    return [r for r in posts(stub) if not is_summary_request(r)]


def prompts(messages):
    return [m["content"] for m in messages if m["role"] == "user" and COMPACTION_KEY not in m]


async def stream_on(client, history: list[dict], prompt: str) -> list[dict]:
    """The events of a turn on a thread that holds `history`."""
    await client.conversation_store.save("T", history)
    return [e async for e in client.stream(prompt, None, id="T")]


def assert_tool_groups_whole(wire_messages: list[dict]) -> None:
    """Every tool result follows its own call's group, and every call has its result."""
    for i, message in enumerate(wire_messages):
        if message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            results = [m["tool_call_id"] for m in wire_messages[i + 1 : i + 1 + len(ids)]]
            assert results == ids, (i, ids, results)
        if message["role"] == "tool":
            j = i
            while wire_messages[j]["role"] == "tool":
                j -= 1
            owner = wire_messages[j]
            assert owner.get("tool_calls"), (i, owner)
            assert message["tool_call_id"] in [c["id"] for c in owner["tool_calls"]]


# ----------------------------------------------------------------------------- long threads


async def test_five_long_turns_on_one_thread_fit_a_4k_window_and_the_thread_keeps_them(stub):
    llama = stub.handler = LlamaCppLike(window=4096)
    seen = []
    async with client_for(stub) as client:
        for n in range(1, 6):
            events = [e async for e in client.stream(note(n), None, id="T")]
            assert events[-1]["result"].text == "Noted."
            seen += [e for e in events if e["type"] == "compaction"]
        thread = await client.conversation_store.get("T")
    assert llama.overflows == 0  # compacted before sending, never refused
    assert all(len(r.body) // 4 <= 4096 for r in posts(stub))
    assert prompts(thread) == [note(n) for n in range(1, 6)]  # every original kept
    assert seen and all(e["before_tokens"] > 4096 * 0.8 > e["after_tokens"] for e in seen)
    assert all(e["method"] == "summary" and e["summarized"] >= 3 for e in seen)
    records = [m for m in thread if COMPACTION_KEY in m]
    assert len(records) == len(seen) == llama.summaries
    info = records[-1][COMPACTION_KEY]
    assert info["model"] == "stub-model" and info["method"] == "summary"
    assert info["before_tokens"] > info["after_tokens"] and info["estimate"] is True
    first, last = info["summarized"]
    assert first == 1 and last < thread.index(records[-1])  # after the first prompt
    assert records[-1]["content"].startswith(SUMMARY_HEADER + "\n")
    # what the last answer request carried is what the thread sends: first prompt,
    # the newest summary (older ones are inside it), the last prompt
    last_request = answers(stub)[-1].json["messages"]
    assert [m["content"] for m in last_request] == [m["content"] for m in sendable(thread)[:-1]]
    assert last_request[0]["content"] == note(1) and last_request[-1]["content"] == note(5)
    assert sum(SUMMARY_HEADER in m["content"] for m in last_request) == 1
    assert "Summary: the user sent long notes" in last_request[1]["content"]


async def test_a_verbose_summarizer_cannot_make_the_thread_unusable(stub):
    """Five long turns against a 4,096-token window, with a model that echoes its whole
    input as the "summary" (what a small local model does when it ignores max_tokens):
    the summary request asks for the share the plan gave it (max_tokens, a window's
    eighth), a longer summary is cut to it, and every turn answers without an overflow."""
    llama = stub.handler = LlamaCppLike(window=4096, echo=True)
    async with client_for(stub) as client:
        for n in range(1, 6):
            events = [e async for e in client.stream(note(n), None, id="T")]
            assert events[-1]["result"].text == "Noted."
        thread = await client.conversation_store.get("T")
    assert llama.overflows == 0 and llama.summaries >= 3
    summaries = [r for r in posts(stub) if is_summary_request(r)]
    assert [r.json["max_tokens"] for r in summaries] == [512] * len(summaries)
    records = [m["content"] for m in thread if COMPACTION_KEY in m]
    assert records and all(len(r) <= 512 * 4 and r.endswith(CUT_MARK) for r in records)
    assert prompts(thread) == [note(n) for n in range(1, 6)]


async def test_the_summary_asks_for_its_share_under_the_clients_own_budget_key(stub):
    llama = stub.handler = LlamaCppLike(window=4096)
    history = turns((note(1), "ok"), (note(2), "ok"))
    params = {"max_completion_tokens": 64}
    async with client_for(stub, request_params=params) as client:
        await stream_on(client, history, note(3))
    [summary] = [r.json for r in posts(stub) if is_summary_request(r)]
    assert summary["max_completion_tokens"] == 512 and "max_tokens" not in summary
    assert llama.summaries == 1


async def test_when_even_a_cut_summary_does_not_fit_the_first_prompt_is_summarized():
    """The first prompt stays verbatim only while it fits with what must be sent and the
    summary's share; when the summary, cut to that share, still leaves the request too
    large, the first prompt is summarized too. It stays in the thread."""
    model = ScriptedModel(respond=summarizer(echo=True))
    # estimated with their overhead: first 1,248 tokens, last 500; with the summary's share
    # of the 2,000-token window (250) they plan to 1,998, but the record itself costs 4 more
    first, last = "F" * (1244 * 4), "L" * (496 * 4)
    history = turns((first, "ok"), ("M" * 1184, "ok"))
    async with scripted_client(model, context=ContextPolicy(window=2000)) as client:
        events = await stream_on(client, history, last)
        thread = await client.conversation_store.get("T")
    assert events[-1]["result"].text == "Noted."
    [record] = [m for m in thread if COMPACTION_KEY in m]
    assert record[COMPACTION_KEY]["first_prompt_kept"] is False
    assert record[COMPACTION_KEY]["after_tokens"] <= 2000
    sent = [m["content"] for m in answered(model)[-1].body["messages"]]
    assert first not in sent and sent[-1] == last
    assert thread[0]["content"] == first  # kept in the thread


async def test_a_conversation_keeps_going_past_the_window(stub):
    stub.handler = LlamaCppLike(window=4096)
    async with client_for(stub) as client:
        conversation = client.conversation(await create_toolkit())
        for n in range(1, 5):
            assert (await conversation.send(note(n))).text == "Noted."
    assert prompts(conversation.messages) == [note(n) for n in range(1, 5)]
    assert any(COMPACTION_KEY in m for m in conversation.messages)


async def test_a_long_tool_run_compacts_between_calls_and_never_parts_a_call_from_its_result():
    calls = iter(range(1, 100))

    def answer(request: ModelRequest) -> ScriptedReply:
        if asks_for_a_summary(request):
            return ScriptedReply("Summary: pages were read.")
        spent = usage(len(json.dumps(request.body)) // 4, 5)
        if len(answered(model)) <= 8:  # eight turns of two reads each, then the answer
            n = next(calls)
            return ScriptedReply(
                tool_calls=[
                    ScriptedCall("read", {"page": n}),
                    ScriptedCall("read", {"page": n + 50}),
                ],
                usage=spent,
            )
        return ScriptedReply("Read them all.", usage=spent)

    model = ScriptedModel(respond=answer)

    def read(page: int) -> str:
        """Read a page."""
        return note(page, tokens=300)

    toolkit = (await create_toolkit()).register(define_tool(read))
    window = ContextPolicy(window=3000)
    async with scripted_client(model, max_turns=12, context=window) as client:
        events = [e async for e in client.stream("Read the pages.", toolkit)]
    result = events[-1]["result"]
    assert result.text == "Read them all."
    assert [e for e in events if e["type"] == "compaction"]  # the thread outgrew 3,000
    for request in answered(model):
        assert_tool_groups_whole(request.body["messages"])
        assert request.body["messages"][0]["content"] == "Read the pages."  # the prompt stays
    assert sum(m["role"] == "tool" for m in result.messages) == 16  # every result kept


# ----------------------------------------------------------------------------- the window


@pytest.mark.parametrize("how", ["policy", "create_client"])
async def test_an_explicit_window_is_used_without_asking_the_endpoint(stub, how):
    llama = stub.handler = LlamaCppLike(window=8192)
    kw = {"context": ContextPolicy(window=2000)} if how == "policy" else {"context_window": 2000}
    history = turns((note(1, 600), "ok"), (note(2, 600), "ok"))
    async with client_for(stub, **kw) as client:
        report = await client.context_report(history)
        result = await client.run(note(3, 600), None, history=history)
    assert (report.window, report.window_source) == (2000, "explicit")
    assert stub.lookups == []
    assert llama.summaries == 1 and COMPACTION_KEY in result.messages[-2]


async def test_the_endpoint_listing_is_asked_once_and_cached_on_disk(stub, tmp_path):
    stub.handler = LlamaCppLike(window=4096)
    cache = tmp_path / "cache" / "windows.json"
    policy = ContextPolicy(cache_path=cache)
    async with client_for(stub, context=policy, api_key="sk-secret-key") as client:
        first = await client.context_report([])
        again = await client.context_report([])
    assert (first.window, first.window_source) == (4096, "endpoint")
    assert again.window == 4096
    assert [r.path for r in stub.lookups] == ["/v1/models", "/props"]  # llama.cpp: a slot's
    assert stub.lookups[0].headers["authorization"] == "Bearer sk-secret-key"
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o600
    assert "sk-secret" not in cache.read_text()
    async with client_for(stub, context=policy) as client:  # another process, same cache
        assert (await client.context_report([])).window == 4096
    assert len(stub.lookups) == 2
    stale = ContextPolicy(cache_path=cache, cache_ttl_s=0)
    async with client_for(stub, context=stale) as client:
        assert (await client.context_report([])).window == 4096
    assert len(stub.lookups) == 4  # asked again


@pytest.mark.parametrize(
    ("listing", "window"),
    [
        (
            {
                "data": [
                    {
                        "id": "stub-model",
                        "context_length": 8192,
                        "top_provider": {"context_length": 8000},
                    }
                ]
            },
            8192,
        ),  # OpenRouter
        ({"data": [{"id": "other"}, {"id": "stub-model", "context_window": 16000}]}, 16000),
        ({"data": [{"id": "stub-model", "max_context_length": 32000}]}, 32000),  # LM Studio
        ({"data": [{"id": "stub-model", "max_model_len": 12000}]}, 12000),  # vLLM
    ],
    ids=["openrouter", "context_window", "max_context_length", "vllm"],
)
async def test_each_listing_shape_gives_the_window(stub, listing, window):
    stub.handler = lambda rec: Reply.json(listing)
    async with client_for(stub) as client:
        report = await client.context_report([])
    assert (report.window, report.window_source) == (window, "endpoint")


async def test_an_older_llama_cpp_gives_its_window_in_props(stub):
    def handler(rec):
        if rec.path == "/v1/models":
            return Reply.json({"data": [{"id": "m.gguf", "owned_by": "llamacpp", "meta": {}}]})
        if rec.path == "/props":
            return Reply.json({"default_generation_settings": {"n_ctx": 6144}})
        return Reply.error(404, "File Not Found")

    stub.handler = handler
    async with client_for(stub) as client:
        report = await client.context_report([])
    assert (report.window, report.window_source) == (6144, "endpoint")


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o-mini", 128_000),
        ("openai/gpt-4.1", 1_047_576),
        ("claude-sonnet-4-5", 200_000),
        ("o3-mini", 200_000),
        ("gemini-2.5-pro", 1_048_576),
        ("llama3.1:8b", 131_072),
        ("qwen2.5-coder-7b-instruct", 32_768),
    ],
)
async def test_the_built_in_table_when_the_endpoint_says_nothing(stub, model, window):
    stub.handler = lambda rec: Reply.json({"object": "list", "data": [{"id": model}]})
    async with create_client(
        base_url=stub.base_url, style="openai", model=model, api_key="k"
    ) as client:
        report = await client.context_report([])
    assert (report.window, report.window_source) == (window, "table")


async def test_an_overflow_teaches_the_window_the_turn_is_retried_once_and_the_cache_keeps_it(
    stub, tmp_path
):
    llama = stub.handler = LlamaCppLike(window=4096, listing=False)
    policy = ContextPolicy(cache_path=tmp_path / "windows.json")
    history = turns(*((note(n, 1000), "ok") for n in range(1, 5)))
    async with client_for(stub, context=policy) as client:
        events = await stream_on(client, [], note(5, 1000))
    assert llama.overflows == 0  # 1,000 tokens: nothing to learn yet
    async with client_for(stub, context=policy) as client:
        events = await stream_on(client, history, note(5, 1000))
    assert events[-1]["result"].text == "Noted."
    assert llama.overflows == 1 and llama.summaries == 1
    compaction = next(e for e in events if e["type"] == "compaction")
    assert compaction["reason"] == "overflow"
    async with client_for(stub, context=policy) as client:  # a new process knows it
        report = await client.context_report([])
        await client.run(note(6, 1000), None, history=history)
    assert (report.window, report.window_source) == (4096, "overflow")
    assert llama.overflows == 1  # compacted before sending this time


# ----------------------------------------------------------------------------- the threshold


async def sized_prompt(client, history: list[dict], fill: float) -> str:
    """A prompt that makes the request's estimate `fill` tokens."""
    base = (await client.context_report([*history, {"role": "user", "content": ""}])).fill
    return "x" * int((fill - base) * 4)


@pytest.mark.parametrize(
    ("policy", "params", "limit"),
    [
        (ContextPolicy(window=1000), {}, 800),
        (ContextPolicy(window=1000, threshold=0.6, target=0.4), {}, 600),
        (ContextPolicy(window=1000), {"max_tokens": 150}, 650),  # minus the reply's max_tokens
    ],
    ids=["80%", "threshold-60%", "max_tokens"],
)
async def test_compaction_starts_just_above_the_threshold(policy, params, limit):
    history = turns(("first", "ok"), ("y" * 1200, "ok"), ("z" * 800, "ok"))
    for fill, compacts in ((limit - 8, False), (limit + 8, True)):
        model = ScriptedModel(respond=summarizer())
        async with scripted_client(model, context=policy, request_params=params) as client:
            report = await client.context_report(history)
            assert report.limit == limit
            prompt = await sized_prompt(client, history, fill)
            await client.run(prompt, None, history=history)
        assert any(asks_for_a_summary(r) for r in model.requests) is compacts, fill


# ----------------------------------------------------------------------------- fallbacks


async def test_a_summary_that_cannot_fit_drops_the_oldest_turns_and_says_so():
    model = ScriptedModel(respond=summarizer())
    history = turns(("first", "ok"), (note(2, 900), "noted two"), ("three", "noted three"))
    policy = ContextPolicy(window=1000, keep_last=1)
    async with scripted_client(model, context=policy) as client:
        events = await stream_on(client, history, "four")
    compaction = next(e for e in events if e["type"] == "compaction")
    assert compaction["method"] == "dropped" and compaction["dropped"] == 2
    assert compaction["summarized"] == 5
    record = events[-1]["result"].messages[-2]
    assert "The 2 oldest of these messages did not fit" in record["content"]
    [summary_asked] = [r for r in model.requests if asks_for_a_summary(r)]  # the newest part
    assert "Note 2" not in json.dumps(summary_asked.body)
    assert "noted three" in json.dumps(summary_asked.body)


async def test_a_summary_request_the_endpoint_refuses_leaves_the_turns_out_and_says_so():
    answer = summarizer()

    def refuse_summaries(request: ModelRequest) -> Scripted:
        if asks_for_a_summary(request):
            return context_overflow(len(json.dumps(request.body)) // 4, 10)  # too large
        return answer(request)

    model = ScriptedModel(respond=refuse_summaries)
    history = turns(("first " * 100, "ok"), ("two " * 300, "ok"), ("three " * 300, "ok"))
    async with scripted_client(model, context=ContextPolicy(window=1000)) as client:
        events = await stream_on(client, history, "four")
    compaction = next(e for e in events if e["type"] == "compaction")
    assert compaction["method"] == "dropped" and compaction["dropped"] == compaction["summarized"]
    assert any(asks_for_a_summary(r) for r in model.requests)  # asked, and refused
    record = events[-1]["result"].messages[-2]
    assert record["content"].startswith(LEFT_OUT_HEADER)
    assert events[-1]["result"].text == "Noted."


async def test_an_overflow_is_retried_once_never_in_a_loop(stub):
    def handler(rec):
        if is_summary_request(rec):
            return Reply.json(openai_text("Summary."))
        return LlamaCppLike(window=40)(rec)  # every answer request is refused

    stub.handler = handler
    history = turns(("first", "ok"), ("two " * 300, "ok"), ("three " * 300, "ok"))
    async with client_for(stub) as client:
        await client.conversation_store.save("T", history)
        with pytest.raises(ProviderError) as caught:
            await client.ask("four", None, id="T")
        thread = await client.conversation_store.get("T")
    assert len(answers(stub)) == 2  # the request and its one retry
    assert len(posts(stub)) <= 3  # and at most one summary between them
    message = str(caught.value)
    assert "does not fit the model's context window" in message and "window is 40" in message
    assert caught.value.context_overflow.window == 40
    # the failed prompt is kept, marked failed, with the compaction made for it
    assert thread[-2]["content"] == "four" and thread[-2][DROPPED_KEY] == "failed"
    assert COMPACTION_KEY in thread[-1] and thread[-1][DROPPED_KEY] == "failed"
    assert sendable(thread) == history


@pytest.mark.parametrize(
    "history",
    [[], turns((note(1, 900), "ok"), (note(2, 900), "ok"))],
    ids=["alone", "after two long turns"],
)
async def test_a_message_larger_than_the_window_is_refused_before_any_summary(stub, history):
    """Repro: chat with llama.cpp serving a 4,096-token window, a few turns in; paste a
    file of ~10,000 tokens and send it. Two summaries of the earlier turns were asked for
    (one before sending, one after the overflow error), neither could make room, and then
    it failed anyway. Now it fails at once, saying how large the message is and the window,
    and no request goes out."""
    llama = stub.handler = LlamaCppLike(window=4096)
    async with client_for(stub) as client:
        await client.conversation_store.save("T", history)
        with pytest.raises(ProviderError) as caught:
            await client.ask("word " * 8000, None, id="T")
        thread = await client.conversation_store.get("T")
    message = str(caught.value)
    assert "the message is ~10,004 tokens; the model's window is 4,096" in message
    assert "too long for this model" in message
    assert caught.value.context_overflow == ContextSize(10_004, 4096)
    assert llama.summaries == 0 and posts(stub) == []
    assert thread[-1][DROPPED_KEY] == "failed" and sendable(thread) == history


async def test_without_a_policy_an_overflow_is_just_the_error_with_its_numbers(stub):
    llama = stub.handler = LlamaCppLike(window=4096)
    history = turns((note(1), "ok"), (note(2), "ok"))
    async with client_for(stub, context=None) as client:
        with pytest.raises(ProviderError) as caught:
            await client.run(note(3), None, history=history)
    overflow = caught.value.context_overflow
    assert overflow.window == 4096 and overflow.used > 4096
    assert f"({overflow.used:,} tokens; its window is 4,096)" in str(caught.value)
    assert llama.overflows == 1 and len(stub.requests) == 1  # no lookup, no summary, no retry


# ----------------------------------------------------------------------------- pins


async def test_a_pinned_message_is_sent_verbatim_through_compaction():
    model = ScriptedModel(respond=summarizer())
    rule = "Always answer in French. " + note(9, 100)
    history = pin(
        turns(("first", "ok"), (rule, "d'accord"), (note(2, 500), "ok"), (note(3, 500), "ok")), 2
    )
    assert history[2][PINNED_KEY] is True and PINNED_KEY not in history[3]
    async with scripted_client(model, context=ContextPolicy(window=1200)) as client:
        events = await stream_on(client, history, "four")
    assert any(e["type"] == "compaction" for e in events)
    sent = [m["content"] for m in answered(model)[-1].body["messages"]]
    assert sent[0] == "first" and sent[2] == rule and sent[-1] == "four"
    assert sent[1].startswith(SUMMARY_HEADER)
    record = events[-1]["result"].messages[-2]
    assert 2 in record[COMPACTION_KEY]["kept"]


def test_pin_takes_a_tool_call_with_its_results_and_unpin_undoes_it():
    thread = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "assistant", "content": "done"},
    ]
    pinned = pin(thread, 3)
    assert [bool(m.get(PINNED_KEY)) for m in pinned] == [False, True, True, True, False]
    assert thread[1] is not pinned[1] and PINNED_KEY not in thread[1]  # a new list
    assert [bool(m.get(PINNED_KEY)) for m in unpin(pinned, 1)] == [False] * 5
    with pytest.raises(ValueError, match="no message 9"):
        pin(thread, 9)
    with pytest.raises(ValueError, match="compaction record"):
        pin([*thread, {"role": "user", "content": "s", COMPACTION_KEY: {}}], 5)


# ----------------------------------------------------------------------------- /context, /compact


async def test_the_context_report_shows_window_fill_and_what_would_be_summarized(stub):
    stub.handler = LlamaCppLike(window=4096)
    history = turns((note(1, 800), "ok"), (note(2, 800), "ok"), (note(3, 800), "ok"))
    async with client_for(stub) as client:
        cold = await client.context_report(history)
        result = await client.run("four", None, history=history)
        warm = await client.context_report(result.messages)
    assert (cold.window, cold.window_source, cold.limit) == (4096, "endpoint", 3277)
    assert cold.estimated and cold.counted == 0 and cold.sent_messages == 6
    assert 2400 < cold.fill < 2500 and cold.percent == pytest.approx(100 * cold.fill / 4096)
    # all but the first and last prompt (the last answer does not fit the target with them)
    assert cold.would_summarize == [1, 2, 3, 5]
    # after a reply, the fill is what the endpoint counted: the request and the answer
    assert warm.counted == len(answers(stub)[-1].body) // 4 + len("Noted.") // 4
    assert not warm.estimated and warm.fill == warm.counted
    # a prompt added since is estimated on top of that count
    more = await client.context_report([*result.messages, {"role": "user", "content": "x"}])
    assert more.estimated and more.counted == warm.counted and more.fill > warm.fill


async def test_compact_previews_a_summary_and_applies_it_only_when_asked(stub):
    llama = stub.handler = LlamaCppLike(window=4096)
    history = turns(
        (note(1, 300), "ok"),
        (note(2, 300), "ok"),
        (note(3, 300), "ok"),
        (note(4, 300), "ok"),
        (note(5, 300), "ok"),
    )
    before = [dict(m) for m in history]
    async with client_for(stub, context=ContextPolicy(keep_last=2)) as client:
        preview = await client.compact(history, instructions="keep every note number")
        assert history == before  # a preview changes nothing
        assert preview is not None and preview.summary.startswith(SUMMARY_HEADER)
        assert preview.info["reason"] == "manual"
        assert preview.info["instructions"] == "keep every note number"
        asked = next(r for r in posts(stub) if is_summary_request(r))
        assert "keep every note number" in asked.json["messages"][-1]["content"]
        applied = preview.apply(history)
        sent = sendable(applied)
        assert [m["content"] for m in sent][:2] == [note(1, 300), preview.summary]
        assert [m["content"] for m in sent][-4:] == [note(4, 300), "ok", note(5, 300), "ok"]
        with pytest.raises(ValueError, match="changed"):
            apply_compaction(history[:-1], preview)
        assert await client.compact(turns(("only", "one"))) is None  # nothing older
    assert llama.summaries == 1


async def test_compact_works_on_a_client_without_automatic_compaction(stub):
    stub.handler = LlamaCppLike(window=4096)
    history = turns(*((f"prompt {n}", "ok") for n in range(7)))
    async with client_for(stub, context=None) as client:
        preview = await client.compact(history)
    assert preview is not None and preview.info["messages"] >= 2
