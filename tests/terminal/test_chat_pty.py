"""`toolnexus chat` in a real pseudo-terminal against the stub endpoint (issue 6, acceptance
points 1 and 2).

The real console script runs in a pty with an emulated screen
(tests/support/chat_session.py), so the tests look at the screen (and its scrollback) a person
would see, not at a stream of escape codes. Every wait is on output: `Chat.wait` reads from
the pty until a condition on the emulated screen holds (or fails with the screen in the
message). Nothing sleeps and hopes.
"""

from __future__ import annotations

import re
from collections import Counter

from tests.support.chat_session import CTRL_D, PROMPT, ROWS, conversation, numbered_answers
from tests.support.stub_provider import Recorded, Reply, openai_stream
from tests.support.waiting import WAIT_S

# ----------------------------------------------------------------------- acceptance 1


def test_two_turns_remember_and_ctrl_d_exits(stub, open_chat):
    numbered_answers(stub)
    chat = open_chat()
    chat.say("my name is Ada")
    chat.say("what is my name?")
    assert conversation(stub.requests[0]) == [("user", "my name is Ada")]
    assert conversation(stub.requests[1]) == [
        ("user", "my name is Ada"),
        ("assistant", "answer 1."),
        ("user", "what is my name?"),
    ]
    assert stub.requests[1].json["model"] == "stub-model"
    lines = chat.term.lines()
    assert "› my name is Ada" in lines and "› what is my name?" in lines
    assert lines.index("answer 1.") < lines.index("› what is my name?") < lines.index("answer 2.")
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0
    assert len(stub.requests) == 2


WORDS = " ".join(f"w{i:02d}" for i in range(1, 61))  # w01 ... w60, a word per delta


def test_ctrl_c_mid_stream_keeps_the_partial_answer_and_the_session_goes_on(stub, open_chat):
    def handler(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            return openai_stream(WORDS, pause=0.05)  # 3 s in all: never finishes here
        return openai_stream(f"answer {len(stub.requests)}.")

    stub.handler = handler
    chat = open_chat()
    chat.child.send("count slowly\r")
    chat.wait_text("w03")
    chat.interrupt()
    chat.wait_prompt()
    assert stub.requests[0].disconnected.wait(WAIT_S), "the request was not cancelled"
    screen = chat.term.text()
    assert "interrupted" in screen
    assert "w60" not in screen, "the answer ran to the end: Ctrl-C did not stop it"
    shown = re.findall(r"w\d\d", screen)
    assert shown[:3] == ["w01", "w02", "w03"]
    assert len(shown) == len(set(shown)), f"partial answer shown twice:\n{screen}"

    chat.say("go on")
    sent = conversation(stub.requests[1])
    assert [role for role, _ in sent] == ["user", "assistant", "user"]
    assert sent[0] == ("user", "count slowly") and sent[2] == ("user", "go on")
    partial = sent[1][1]
    assert partial.startswith("w01 w02 w03") and "w60" not in partial
    assert partial.split() == shown, "the request's partial answer differs from the screen"
    chat.wait_text("answer 2.")

    chat.say("and then?")  # the session keeps going on the same thread
    assert conversation(stub.requests[2])[:4] == [*sent, ("assistant", "answer 2.")]
    chat.child.send("/exit\r")
    assert chat.exit_code() == 0


def test_undo_and_retry(stub, open_chat):
    numbered_answers(stub)
    chat = open_chat()
    chat.say("one")
    chat.say("two")
    chat.say("/undo")
    assert "dropped the last exchange" in chat.term.text()
    chat.say("three")
    assert conversation(stub.requests[2]) == [
        ("user", "one"),
        ("assistant", "answer 1."),
        ("user", "three"),
    ]

    chat.say("/retry")
    chat.wait_text("answer 4.")
    assert conversation(stub.requests[3]) == [
        ("user", "one"),
        ("assistant", "answer 1."),
        ("user", "three"),
    ]
    chat.say("four")
    assert conversation(stub.requests[4]) == [
        ("user", "one"),
        ("assistant", "answer 1."),
        ("user", "three"),
        ("assistant", "answer 4."),
        ("user", "four"),
    ]
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0


def test_model_reset_and_unknown_command(stub, open_chat):
    numbered_answers(stub)
    chat = open_chat()
    chat.say("hello")
    chat.say("/model other-model")
    assert "model: other-model" in chat.term.text()
    chat.say("again")
    assert stub.requests[1].json["model"] == "other-model"
    assert conversation(stub.requests[1]) == [
        ("user", "hello"),
        ("assistant", "answer 1."),
        ("user", "again"),
    ]

    chat.say("/reset")
    assert "new thread" in chat.term.text()
    chat.say("fresh start")
    assert conversation(stub.requests[2]) == [("user", "fresh start")]
    assert stub.requests[2].json["model"] == "other-model", "/reset kept the settings"

    chat.say("/modle gpt")
    assert "did you mean /model?" in chat.term.text()
    chat.say("/retyr")
    assert "did you mean /retry?" in chat.term.text()
    assert len(stub.requests) == 3, "an unknown command reached the model"
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0


def test_ctrl_c_at_the_prompt_clears_the_line(stub, open_chat):
    numbered_answers(stub)
    chat = open_chat()
    chat.child.send("half a thought")
    chat.wait(lambda: "half a thought" in chat.term.cursor_line(), "the typed text")
    chat.child.sendcontrol("c")
    chat.wait(lambda: chat.term.cursor_line().strip() == PROMPT, "the line cleared")
    chat.resync_prompts()
    chat.say("a whole thought")
    assert len(stub.requests) == 1, "the cleared line was sent"
    assert conversation(stub.requests[0]) == [("user", "a whole thought")]
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0


def test_ctrl_c_twice_on_an_empty_prompt_exits(stub, open_chat):
    chat = open_chat()
    chat.child.sendcontrol("c")
    chat.wait_prompt()
    assert "Ctrl-C again" in chat.term.text()
    chat.child.sendcontrol("c")
    assert chat.exit_code() == 0
    assert stub.requests == []


def test_a_provider_error_is_shown_and_the_session_goes_on(stub, open_chat):
    stub.script(Reply.error(400, "the stub refuses this request"), openai_stream("recovered."))
    chat = open_chat()
    chat.say("first try")
    screen = chat.term.text()
    assert "error" in screen and "the stub refuses this request" in screen
    chat.say("second try")
    chat.wait_text("recovered.")
    sent = conversation(stub.requests[1])
    assert sent[-1] == ("user", "second try")
    assert all("refuses" not in content for _, content in sent)
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0


# ----------------------------------------------------------------------- acceptance 2


def tall_answer() -> tuple[str, int]:
    """About 3.3 screens of Markdown, every visible line numbered: one-line paragraphs, a
    bullet list and a numbered list each taller than the screen, and a last block (still
    live when the stream ends) taller than the screen too."""
    n = 0

    def line() -> str:
        nonlocal n
        n += 1
        return f"line {n:03d}"

    parts = ["\n\n".join(line() for _ in range(8))]
    parts.append("\n".join(f"- {line()} of the first list" for _ in range(36)))
    parts.append("\n\n".join(f"{line()} is a paragraph" for _ in range(6)))
    parts.append("\n".join(f"{i}. {line()} counted" for i in range(1, 11)))
    parts.append("\n".join(f"- {line()} closes it" for _ in range(40)))
    return "\n\n".join(parts), n


def numbers_seen(lines: list[str]) -> Counter[int]:
    return Counter(int(m) for text in lines for m in re.findall(r"line (\d{3})", text))


def test_an_answer_three_screens_tall_shows_every_line_once(stub, open_chat):
    text, count = tall_answer()
    assert count >= 3 * ROWS
    # Small deltas (a word each, several per line), with pauses so the live view refreshes
    # many times while each block grows.
    stub.script(openai_stream(text, pause=0.003))
    chat = open_chat()
    chat.say("tell me a long story")
    chat.wait_text("tokens")  # the footer: the answer is complete
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0
    lines = chat.term.lines()
    seen = numbers_seen(lines)
    missing = [i for i in range(1, count + 1) if seen[i] == 0]
    twice = {i: c for i, c in seen.items() if c > 1}
    assert not missing and not twice and set(seen) == set(range(1, count + 1)), (
        f"missing {missing}, duplicated {twice}; the terminal:\n" + "\n".join(lines)
    )
    # In order, and as Markdown: list bullets and numbers survived.
    order = [int(m) for text in lines for m in re.findall(r"line (\d{3})", text)]
    assert order == sorted(order)
    assert any(re.match(r"\s*•\s+line 009 of the first list", t) for t in lines), lines
    assert any(re.match(r"\s*1\.?\s+line 051 counted", t) for t in lines), lines


def test_the_newest_line_of_a_block_taller_than_the_screen_stays_visible(stub, open_chat):
    """While one block is taller than the screen, the live view shows its newest lines;
    Ctrl-C then leaves the partial block printed once, whole."""
    rows = 2 * ROWS
    body = "\n".join(f"- line {i:03d} of a long list" for i in range(1, rows + 1))
    reply = openai_stream(body + "\n", pause=0.002)
    reply.parts = reply.parts[:-3]  # no finish, no usage, no [DONE]: the stream stalls here
    reply.end = "hang"
    stub.script(reply)
    chat = open_chat()
    chat.child.send("a long list please\r")
    last = f"line {rows:03d}"
    chat.wait(
        lambda: any(last in line for line in chat.term.display()),
        "the newest line on the screen while the block is live",
    )
    assert not any(last in line for line in chat.term.scrollback())
    chat.interrupt()
    chat.wait_prompt()
    lines = chat.term.lines()
    seen = numbers_seen(lines)
    assert seen == Counter(range(1, rows + 1)), f"{dict(seen)}; the terminal:\n" + "\n".join(lines)
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0


def test_a_key_the_endpoint_echoes_never_reaches_the_screen(stub, cli, open_chat):
    key = "sk-test-SECRET-9876543210"
    cli.env["TOOLNEXUS_API_KEY"] = key
    pieces = ["Your key is sk-te", "st-SECRET-98", "76543210, keep it safe."]
    stub.handler = lambda rec: Reply.sse(
        [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces], done=True
    )
    chat = open_chat()
    chat.say("what is my key?")
    screen = "\n".join(chat.term.lines())
    assert "Your key is ***, keep it safe." in screen
    assert "SECRET" not in screen and "9876543210" not in screen
    assert stub.requests[0].headers["authorization"] == f"Bearer {key}"


def test_chat_continues_the_thread_of_a_one_shot_with_c_and_with_id(stub, cli, open_chat):
    numbered_answers(stub)
    assert cli.call("ask", "--id", "plan", "first in plan").code == 0
    assert cli.call("ask", "--id", "other", "first in other").code == 0

    chat = open_chat("-c")  # the most recent thread: "other"
    chat.say("go on")
    assert conversation(stub.requests[2]) == [
        ("user", "first in other"),
        ("assistant", "answer 2."),
        ("user", "go on"),
    ]
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0

    chat = open_chat("--id", "plan")
    chat.say("back to the plan")
    assert conversation(stub.requests[3])[:2] == [
        ("user", "first in plan"),
        ("assistant", "answer 1."),
    ]


def test_while_waiting_the_line_counts_the_seconds_of_each_wait(stub, open_chat):
    """Repro: a chat on a busy llama.cpp; the first try of an answer got HTTP 503 and was
    retried. For the whole second try (a minute) the line said "the server answered 503,
    retrying in 1 s (attempt 1)", with no count, as if nothing moved. Now, once the retry
    is sent, it says "waiting for the model, retry 1 of 2… Ns", counting the seconds of
    that try."""
    import threading

    answer_may_come = threading.Event()

    def handler(request: Recorded) -> Reply:
        if request.method == "GET":
            return Reply.error(404, "File Not Found")
        if len(stub.requests) == 1:
            return Reply.error(503, "Loading model", headers={"Retry-After": "1"})
        answer_may_come.wait(WAIT_S)  # until the test has seen the screen
        return openai_stream("Here now.")

    stub.handler = handler
    chat = open_chat()
    chat.send_line("hello")
    retry = re.compile(r"the server answered 503: retry 1 of 2 in 1 s… \d+s")
    counted = re.compile(r"waiting for the model, retry 1 of 2… [1-9]\d*s")

    def counting_after_the_retry() -> bool:
        """The retry was shown (in any frame drawn), then the wait for its answer counted
        at least a second, and it is what the live line shows now."""
        drawn = retry.search(chat.term.raw_text())
        return bool(
            drawn
            and counted.search(chat.term.raw_text(), drawn.end())
            and any(counted.search(line) for line in chat.term.display())
        )

    chat.wait(counting_after_the_retry, "the retry, then its wait counted")
    answer_may_come.set()
    chat.wait_text("Here now.")
    chat.wait_prompt()
    assert len(stub.requests) == 2
