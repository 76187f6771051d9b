"""An error the endpoint gives about a thread itself, in a real pseudo-terminal: when it
ends every turn, the chat says how to go on without what the endpoint refuses."""

from __future__ import annotations

from tests.support.stub_provider import LlamaCppLike

HINT = "so something in this thread may be what the endpoint refuses"

# What an older toolnexus stored: a tool call whose arguments are cut short.
BROKEN = [
    {"role": "user", "content": "add 1 and 2"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, '},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "error: not valid JSON",
        "is_error": True,
    },
    {"role": "assistant", "content": "Sorry, that went wrong."},
]


def words(text: str) -> str:
    """The screen's text with its line breaks and runs of spaces as single spaces."""
    return " ".join(text.split())


def test_an_error_on_every_turn_of_a_thread_names_the_way_out(stub, cli, open_chat):
    """Repro: a thread holds a tool call whose arguments llama.cpp cannot parse (stored by
    an older toolnexus); `toolnexus chat --id T` and say anything: HTTP 500, again and
    again, with nothing to say that the thread is the cause. Now the second turn that
    fails with the same error says so and names /undo, /fork and /retry; /undo then
    lets the chat go on."""
    stub.handler = LlamaCppLike(window=4096, answer="Back on track.")
    cli.seed_thread("T", BROKEN)
    chat = open_chat("--id", "T")
    chat.say("hello")
    first = words(chat.term.text())
    assert "error: HTTP 500 from the endpoint: Failed to parse tool call arguments" in first
    assert HINT not in first
    chat.say("hello again")
    second = words(chat.term.text())
    assert f"the same error ended the last 2 turns, {HINT}" in second, second
    assert (
        "/undo drops the last exchange, /fork N goes on with messages 1..N only, /retry asks again"
    ) in second
    chat.say("/undo")
    chat.say("hello")
    assert chat.term.text().count("Back on track.") == 1
