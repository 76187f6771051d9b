"""The numbers the chat shows while and after a model answers, in a real pseudo-terminal
against the stub endpoint: the speed over generation only with a long prompt read shown
apart, a stall counted from the last token, and retries that say which of how many.
What the figures are computed from is tested with given timestamps in
tests/cli/test_render.py and tests/cli/test_markdown_stream.py; here, the words."""

from __future__ import annotations

import re

from tests.support.chat_session import CTRL_D, PROMPT, Chat
from tests.support.stub_provider import Recorded, Reply, openai_stream


def footer_of(chat: Chat) -> str:
    """The last footer, on one line (it wraps on a narrow screen), up to the prompt."""
    text = chat.term.text()
    start = text.rindex("stub-model · ")
    return " ".join(text[start : text.index(PROMPT, start)].split())


def test_a_slow_prompt_read_shows_apart_from_the_generation_speed(stub, open_chat):
    """Repro: on llama.cpp, ask something with a long context: the server reads the
    2.9k-token prompt for a long while, then answers quickly. The footer gave one rate
    over it all ("1 tok/s"). It now says how long reading the prompt took, then the rate
    of the generation alone: "read 2.9k tokens in 2.5 s · 40 tok/s"."""
    answer = "one two three four five six seven eight"
    # the stub waits before its first byte (the prompt read), then streams quickly
    stub.script(openai_stream(answer, usage=(2900, 40), delay=2.5, pause=0.03))
    chat = open_chat()
    chat.say("summarize the log")
    footer = footer_of(chat)
    assert re.search(r"2\.9k prompt tokens · 40 completion tokens · [\d.]+ s · ", footer)
    assert re.search(r" · read 2\.9k tokens in [\d.]+ s · \d+ tok/s$", footer), footer
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0


def test_a_quick_answer_shows_no_prompt_read(stub, open_chat):
    """A prompt read quickly is not worth a word: the footer gives the rate alone."""
    stub.script(openai_stream("one two three four five six", usage=(30, 6), pause=0.03))
    chat = open_chat()
    chat.say("hello")
    footer = footer_of(chat)
    assert "read" not in footer and re.search(r" · \d+ tok/s$", footer), footer


def test_a_stall_in_the_middle_of_an_answer_is_counted_from_the_last_token(stub, open_chat):
    """Repro: a model streams a few words, then stops sending for a while (a server
    swapping, a slow network). The live line under the words said nothing, or, after a
    paragraph, "waiting for the model… 95s", counted from the question. It now says
    "waiting for the next token… Ns", counted from the last word that came."""
    reply = openai_stream("w01 w02 w03 ")
    reply.parts = reply.parts[:-3]  # no finish, no usage, no [DONE]: the stream stalls here
    reply.end = "hang"
    stub.script(reply)
    chat = open_chat()
    chat.send_line("count")
    chat.wait_text("w03")
    stall = re.compile(r"waiting for the next token… \d+s")
    chat.wait(
        lambda: any(stall.search(line) for line in chat.term.display()),
        "the stall counted under the answer",
    )
    shown = chat.term.display()
    words = next(i for i, line in enumerate(shown) if "w03" in line)
    line = next(i for i, line in enumerate(shown) if stall.search(line))
    assert words < line, shown  # under the words that came
    assert "waiting for the model" not in "\n".join(shown)
    chat.interrupt()
    chat.wait_prompt()


def test_idle_timeout_retries_say_which_of_how_many(stub, cli, open_chat):
    """Repro: llama.cpp reads a long prompt for longer than the idle timeout; toolnexus
    tries again, twice. The live line's count went back to 0 s each time, with no word
    of a retry. Now, with `retries = 3` in the config, it says "the server sent nothing
    for 1 s: retry 1 of 3", then "retry 2 of 3", and while a retry's answer is awaited,
    "waiting for the model, retry 1 of 3… Ns"."""

    def handler(request: Recorded) -> Reply:
        if request.method == "GET":  # no /slots: nothing says the server is busy
            return Reply.error(404, "File Not Found")
        if len(stub.requests) <= 2:
            return Reply.hang()
        return openai_stream("Awake now.")

    stub.handler = handler
    cli.write_config("retries = 3\n")
    chat = open_chat("--idle-timeout", "1")
    chat.say("hello")
    assert "Awake now." in chat.term.lines()
    drawn = chat.term.raw_text()
    first = drawn.index("the server sent nothing for 1 s: retry 1 of 3 in ")
    second = drawn.index("the server sent nothing for 1 s: retry 2 of 3 in ", first)
    # the wait for the first retry's answer named it, and its seconds counted from it
    assert re.compile(r"waiting for the model, retry 1 of 3… \d+s").search(drawn, first, second)
    assert len(stub.requests) == 3
