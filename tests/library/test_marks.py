"""toolnexus.context._marks: a thread keeps every message and marks what it no longer sends.
Marks are only added (new dicts in a new list; the caller's messages are never changed), a turn that
got nowhere is marked failed, an active compaction record goes out in place of the span
it summarizes (with the messages it keeps and the pinned ones), and a record that is
marked, malformed or superseded stands in for nothing. A tool call and its results are one
group, pinned and unpinned together."""

from __future__ import annotations

import copy

import pytest

from toolnexus.context._marks import (
    COMPACTION_KEY,
    DROPPED_KEY,
    FAILED,
    FAILED_WITH_KEY,
    INTERRUPTED_KEY,
    PINNED_KEY,
    RETRIED,
    SYSTEM_PROMPT,
    UNDONE,
    Span,
    active_spans,
    failures_in_a_row,
    group_of,
    is_prompt,
    is_record,
    is_sent,
    last_prompt,
    mark_failed_turn,
    mark_from,
    pin,
    sendable,
    sent_indices,
    unpin,
)


def user(text: str, **marks) -> dict:
    return {"role": "user", "content": text, **marks}


def answer(text: str, **marks) -> dict:
    return {"role": "assistant", "content": text, **marks}


def calls(*ids: str) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


def result(call_id: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": f"result {call_id}"}


def record(first, last, kept=None, **marks) -> dict:
    info = (
        {"summarized": [first, last]}
        if kept is None
        else {"summarized": [first, last], "kept": kept}
    )
    return {"role": "user", "content": f"summary of {first}-{last}", COMPACTION_KEY: info, **marks}


def contents(messages: list[dict]) -> list:
    return [m["content"] for m in messages]


# ----------------------------------------------------------------------------- each kind

KINDS = {
    "prompt": (user("hi"), True, False, True),
    "answer": (answer("hello"), True, False, False),
    "interrupted answer": (answer("hel", **{INTERRUPTED_KEY: True}), True, False, False),
    "tool call": (calls("a"), True, False, False),
    "tool result": (result("a"), True, False, False),
    "system": ({"role": "system", "content": "be brief"}, True, False, False),
    "thread system prompt": (
        {"role": "system", "content": "be brief", DROPPED_KEY: SYSTEM_PROMPT},
        False,
        False,
        False,
    ),
    "undone prompt": (user("hi", **{DROPPED_KEY: UNDONE}), False, False, True),
    "retried prompt": (user("hi", **{DROPPED_KEY: RETRIED}), False, False, True),
    "failed prompt": (user("hi", **{DROPPED_KEY: FAILED}), False, False, True),
    "record": (record(0, 1), True, True, False),
    "marked record": (record(0, 1, **{DROPPED_KEY: FAILED}), False, True, False),
    "malformed record": ({"role": "user", "content": "s", COMPACTION_KEY: None}, True, True, False),
    "roleless": ({"content": "?"}, True, False, False),
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_message_is_sent_a_record_or_a_prompt_as_its_marks_say(kind):
    message, sent, a_record, a_prompt = KINDS[kind]
    assert (is_sent(message), is_record(message), is_prompt(message)) == (sent, a_record, a_prompt)


def test_an_empty_mark_is_no_mark():
    for empty in ("", None, False):
        assert is_sent(user("hi", **{DROPPED_KEY: empty}))


# ----------------------------------------------------------------------------- marking


def test_mark_from_marks_only_the_unmarked_and_changes_nothing_it_was_given():
    thread = [
        user("one"),
        answer("1"),
        user("two", **{DROPPED_KEY: RETRIED}),
        user("two"),
        calls("a"),
        result("a"),
        answer("2"),
    ]
    before = copy.deepcopy(thread)
    marked = mark_from(thread, 2, UNDONE)
    assert thread == before
    assert [m.get(DROPPED_KEY) for m in marked] == [None, None, RETRIED] + [UNDONE] * 4
    assert marked[0] is thread[0] and marked[2] is thread[2]  # what keeps its mark is shared
    assert marked[3] is not thread[3]
    assert mark_from(thread, len(thread), UNDONE) == thread


def test_a_prompt_nothing_came_back_for_is_marked_failed_with_its_compaction():
    thread = [user("one"), answer("1"), user("two")]
    assert [m.get(DROPPED_KEY) for m in mark_failed_turn(thread)] == [None, None, FAILED]
    compacted = [*thread, record(0, 1)]
    assert [m.get(DROPPED_KEY) for m in mark_failed_turn(compacted)] == [None, None, FAILED, FAILED]
    assert DROPPED_KEY not in thread[2] and DROPPED_KEY not in compacted[3]


def test_a_failed_turn_notes_its_error_on_its_prompt_and_the_same_error_is_counted():
    thread = [user("one"), answer("1"), user("two")]
    failed = mark_failed_turn(thread, "HTTP 500: bad")
    assert failed[2][FAILED_WITH_KEY] == "HTTP 500: bad" and FAILED_WITH_KEY not in thread[2]
    assert failures_in_a_row(thread) == 0 and failures_in_a_row(failed) == 1
    got_somewhere = mark_failed_turn(
        [*failed, user("three"), calls("a"), result("a")], "HTTP 500: bad"
    )
    assert got_somewhere[-3][FAILED_WITH_KEY] == "HTTP 500: bad"  # kept unmarked, noted
    assert is_sent(got_somewhere[-3]) and failures_in_a_row(got_somewhere) == 2
    other = mark_failed_turn([*got_somewhere, user("four")], "HTTP 400: other")
    assert failures_in_a_row(other) == 1
    assert failures_in_a_row([*got_somewhere, answer("3"), user("five")]) == 0


@pytest.mark.parametrize(
    "tail",
    [
        [answer("part", **{INTERRUPTED_KEY: True})],  # part of an answer was shown
        [calls("a"), result("a")],  # a tool ran
        [calls("a")],  # a tool call was asked for
    ],
    ids=["partial answer", "tool ran", "tool asked"],
)
def test_a_turn_that_got_somewhere_is_left_as_it_is(tail):
    thread = [user("one"), answer("1"), user("two"), *tail]
    assert mark_failed_turn(thread) is thread


@pytest.mark.parametrize(
    "thread",
    [
        [],
        [answer("hi")],
        [{"role": "system", "content": "s"}],
        [user("one", **{DROPPED_KEY: UNDONE})],
    ],
    ids=["empty", "no prompt", "system only", "only an undone prompt"],
)
def test_without_a_prompt_to_blame_nothing_is_marked(thread):
    assert mark_failed_turn(thread) is thread


def test_the_last_prompt_is_the_last_unmarked_one_or_with_failed_too_a_failed_one():
    thread = [
        user("one"),
        answer("1"),
        user("two"),
        answer("2"),
        record(0, 3),
        user("three", **{DROPPED_KEY: FAILED}),
        user("four", **{DROPPED_KEY: UNDONE}),
    ]
    assert last_prompt(thread) == 2  # never the record, nor a marked prompt
    assert last_prompt(thread, failed_too=True) == 5  # failed, but not undone or retried
    assert last_prompt([answer("x"), record(0, 0)]) is None
    assert last_prompt([], failed_too=True) is None


# ----------------------------------------------------------------------------- compaction


def test_a_record_is_sent_in_place_of_its_span_with_what_it_keeps_and_what_is_pinned():
    thread = [
        user("p0"),
        answer("a1"),
        user("p2"),
        answer("a3", **{PINNED_KEY: True}),
        user("p4"),
        answer("a5"),
        record(1, 4, kept=[2]),
        user("p7"),
        answer("a8"),
    ]
    assert active_spans(thread) == [Span(1, 4, 6, frozenset({2}))]
    assert sent_indices(thread) == [0, 6, 2, 3, 5, 7, 8]
    assert contents(sendable(thread)) == ["p0", "summary of 1-4", "p2", "a3", "a5", "p7", "a8"]


def test_a_kept_or_pinned_message_that_is_marked_is_still_not_sent():
    thread = [
        user("p0"),
        answer("a1", **{DROPPED_KEY: UNDONE, PINNED_KEY: True}),
        user("p2", **{DROPPED_KEY: UNDONE}),
        record(0, 2, kept=[1, 2]),
        user("p4"),
    ]
    assert contents(sendable(thread)) == ["summary of 0-2", "p4"]


def test_a_newer_record_over_an_older_one_supersedes_it():
    thread = [
        user("p0"),
        answer("a1"),
        user("p2"),
        answer("a3"),
        record(0, 1),
        user("p5"),
        answer("a6"),
        record(0, 5),
        user("p8"),
    ]
    assert active_spans(thread) == [Span(0, 5, 7, frozenset())]
    assert contents(sendable(thread)) == ["summary of 0-5", "a6", "p8"]


def test_records_over_separate_spans_are_each_sent_in_their_place():
    thread = [
        user("p0"),
        answer("a1"),
        user("p2"),
        answer("a3"),
        user("p4"),
        record(3, 4),
        record(0, 1),
        user("p7"),
    ]
    assert [s.record for s in active_spans(thread)] == [6, 5]  # by position of their span
    assert contents(sendable(thread)) == ["summary of 0-1", "p2", "summary of 3-4", "p7"]


def test_a_marked_record_stands_in_for_nothing():
    thread = [user("p0"), answer("a1"), record(0, 1, **{DROPPED_KEY: UNDONE}), user("p3")]
    assert active_spans(thread) == []
    assert contents(sendable(thread)) == ["p0", "a1", "p3"]
    assert sent_indices(thread) == [0, 1, 3]


MALFORMED = {
    "no info": None,
    "info not a dict": [0, 1],
    "no span": {},
    "span not a list": {"summarized": "0-1"},
    "one bound": {"summarized": [0]},
    "three bounds": {"summarized": [0, 1, 2]},
    "text bounds": {"summarized": ["0", "1"]},
    "bool bounds": {"summarized": [False, True]},
    "float bounds": {"summarized": [0.0, 1.0]},
    "reversed": {"summarized": [1, 0]},
    "negative": {"summarized": [-1, 1]},
    "over itself": {"summarized": [0, 2]},
    "past itself": {"summarized": [1, 3]},
}


@pytest.mark.parametrize("info", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_record_hides_nothing_and_says_nothing(info):
    thread = [
        user("p0"),
        answer("a1"),
        {"role": "user", "content": "bogus summary", COMPACTION_KEY: info},
        user("p3"),
    ]
    assert active_spans(thread) == []
    assert sent_indices(thread) == [0, 1, 3]
    assert contents(sendable(thread)) == ["p0", "a1", "p3"]  # what is sent is what is shown


def test_kept_entries_that_are_not_indices_are_ignored():
    thread = [
        user("p0"),
        answer("a1"),
        user("p2"),
        record(0, 2, kept=[1, "2", 2.0, None]),
        user("p4"),
    ]
    assert active_spans(thread)[0].kept == frozenset({1})
    assert contents(sendable(thread)) == ["summary of 0-2", "a1", "p4"]
    not_a_list = [*thread[:3], record(0, 2, kept={"1": True}), user("p4")]
    assert contents(sendable(not_a_list)) == ["summary of 0-2", "p4"]


# ----------------------------------------------------------------------------- pins

THREAD = [
    user("go"),
    calls("a", "b"),
    result("a"),
    result("b"),
    answer("then"),
    calls("c"),
    result("c"),
    user("more"),
]


@pytest.mark.parametrize(
    ("index", "group"),
    [
        (0, (0, 0)),
        (1, (1, 3)),
        (2, (1, 3)),
        (3, (1, 3)),
        (4, (4, 4)),
        (5, (5, 6)),
        (6, (5, 6)),
        (7, (7, 7)),
    ],
)
def test_a_tool_call_and_its_results_are_one_group(index, group):
    assert group_of(THREAD, index) == group


def test_a_group_is_only_what_follows_its_own_call():
    back_to_back = [user("go"), calls("a"), result("a"), calls("b"), result("b"), result("x")]
    assert group_of(back_to_back, 5) == (3, 5) and group_of(back_to_back, 2) == (1, 2)
    orphan = [result("z"), user("go"), result("y")]  # no call before them
    assert group_of(orphan, 0) == (0, 0) and group_of(orphan, 2) == (2, 2)
    unanswered = [user("go"), calls("a")]
    assert group_of(unanswered, 1) == (1, 1)


def test_pinning_any_part_of_a_group_pins_all_of_it_and_unpinning_any_part_unpins_it():
    before = copy.deepcopy(THREAD)
    pinned = pin(THREAD, 6)
    assert [i for i, m in enumerate(pinned) if m.get(PINNED_KEY)] == [5, 6]
    assert THREAD == before
    assert [i for i, m in enumerate(unpin(pinned, 5)) if PINNED_KEY in m] == []
    again = pin(pin(THREAD, 2), 2)  # pinning twice is one pin
    assert [i for i, m in enumerate(again) if m.get(PINNED_KEY)] == [1, 2, 3]
    assert unpin(THREAD, 0) == THREAD  # nothing to take off


@pytest.mark.parametrize("index", [-1, 8, 10**9])
def test_a_pin_must_name_a_message_of_the_thread(index):
    for change in (pin, unpin):
        with pytest.raises(ValueError, match=f"no message {index}: the thread has 8"):
            change(THREAD, index)


def test_a_compaction_record_cannot_be_pinned():
    thread = [*THREAD, record(0, 1)]
    for change in (pin, unpin):
        with pytest.raises(ValueError, match="message 8 is a compaction record"):
            change(thread, 8)
