"""Ctrl-C in every state of a chat turn (issue 13), in a real pseudo-terminal against the
stub endpoint: it stops the turn promptly wherever the turn is (streaming, waiting for the
first token or for a retry, running a tool), also after a question about a tool call was
answered; at such a question it means "no" for that call, and a second one stops the turn.

Every reply that would stop the turn for good hangs (or sleeps 30 s), so a turn that comes
back within the wait was stopped by Ctrl-C. Every wait is on the screen
(tests/support/pty_screen.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from tests.support import chat_session
from tests.support.chat_session import PROMPT
from tests.support.cli_helpers import CLI, SUSPENDING_TOOLS, tool_results
from tests.support.pty_screen import opener
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream

QUESTION = "[y]es / [n]o / [a]lways (this session):"
INTERRUPTED = "(interrupted: the partial answer is kept)"


class Chat(chat_session.Chat):
    """Waits of 15 s, shorter than the 30 s a held reply takes: a turn back within a wait
    was stopped by Ctrl-C."""

    def __init__(self, cli: CLI, *args: str) -> None:
        super().__init__(cli, *args, rows=40, cols=120, timeout=15.0)

    def interrupted(self, count: int = 1) -> None:
        """Until the turn says it was stopped and the next prompt shows."""
        self.wait_text(INTERRUPTED, count)
        self.wait_prompt()

    def stop_at(self, text: str) -> None:
        """Once `text` shows, Ctrl-C; until the turn says it was stopped and the next prompt
        shows."""
        self.wait_text(text)
        self.interrupt()
        self.interrupted()


@pytest.fixture
def open_chat(cli: CLI) -> Iterator[Callable[..., Chat]]:
    cli.in_project()  # the chat's tools work there (the home gets no file or command tools)
    yield from opener(lambda *args: Chat(cli, *args))


def script(stub: StubProvider, *replies: Reply) -> None:
    """Request n (from 1) gets replies[n-1]; any later one gets "later answer n."."""

    def handler(request: Recorded) -> Reply:
        n = len(stub.requests)
        return replies[n - 1] if n <= len(replies) else openai_stream(f"later answer {n}.")

    stub.handler = handler


def stalled(text: str) -> Reply:
    """`text` streamed, then the stream stalls: no finish, no [DONE]."""
    reply = openai_stream(text)
    reply.parts = reply.parts[:-3]
    reply.end = "hang"
    return reply


def busy_for(seconds: int) -> Reply:
    return Reply.error(503, "the stub is busy", headers={"Retry-After": str(seconds)})


def bash_call(command: str) -> Reply:
    return openai_stream(tool_calls=[("bash", {"command": command})])


def goes_on(stub: StubProvider, chat: Chat) -> None:
    """The chat still works after the stop: the next message gets its answer."""
    answer = f"later answer {len(stub.requests) + 1}."  # counted before the request can come
    chat.send_line("still there?")
    chat.wait_text(answer)
    chat.wait_prompt()
    assert stub.requests[-1].json["messages"][-1]["content"] == "still there?"


def test_ctrl_c_while_waiting_for_the_first_token(stub, open_chat):
    script(stub, Reply.hang())
    chat = open_chat()
    chat.send_line("hello")
    assert stub.wait_for_requests(1, timeout=10)
    chat.stop_at("waiting for the model")
    assert stub.requests[0].disconnected.wait(5), "the request was not cancelled"
    goes_on(stub, chat)


def test_ctrl_c_while_waiting_to_retry(stub, open_chat):
    script(stub, busy_for(30))
    chat = open_chat()
    chat.send_line("hello")
    chat.stop_at("retry 1 of 2 in 30 s")
    assert len(stub.requests) == 1, "it retried after Ctrl-C"
    goes_on(stub, chat)


def test_ctrl_c_while_bash_runs(stub, open_chat):
    script(stub, bash_call("sleep 30"))
    chat = open_chat("--builtins", "--yes")
    chat.send_line("sleep a while")
    chat.stop_at("running bash")
    goes_on(stub, chat)
    assert tool_results(stub.requests[-1]) != [], "the cancelled call has no result"


SLOW_TOOL = '''
import asyncio


async def slow_lookup(word: str) -> str:
    """Look a word up, slowly."""
    await asyncio.sleep(30)
    return "found " + word
'''


def test_ctrl_c_while_a_slow_python_tool_runs(stub, open_chat, tmp_path):
    functions = tmp_path / "slow.py"
    functions.write_text(SLOW_TOOL)
    script(stub, openai_stream(tool_calls=[("slow_lookup", {"word": "x"})]))
    chat = open_chat("--functions", str(functions))
    chat.send_line("look it up")
    chat.stop_at("running slow_lookup")
    goes_on(stub, chat)


def asked_to_run_a_call(stub: StubProvider, open_chat: Callable[..., Chat], then: Reply) -> Chat:
    """A `--builtins` chat asking whether to run `echo approved-1`, the model's answer to
    the first message; the model's next reply is `then`."""
    script(stub, bash_call("echo approved-1"), then)
    chat = open_chat("--builtins")
    chat.send_line("run it")
    chat.expect(re.escape(QUESTION))
    return chat


def test_ctrl_c_still_stops_the_answer_after_a_tool_call_was_approved(stub, open_chat):
    chat = asked_to_run_a_call(stub, open_chat, stalled("w01 w02 w03 "))
    chat.child.send("y")
    chat.stop_at("w03")
    assert stub.requests[1].disconnected.wait(5), "the request was not cancelled"
    goes_on(stub, chat)


def test_ctrl_c_still_stops_a_retry_wait_after_a_tool_call_was_approved(stub, open_chat):
    chat = asked_to_run_a_call(stub, open_chat, busy_for(30))
    chat.child.send("y")
    chat.stop_at("retry 1 of 2 in 30 s")
    assert len(stub.requests) == 2, "it retried after Ctrl-C"
    goes_on(stub, chat)


def test_ctrl_c_at_an_approval_declines_and_the_answer_goes_on(stub, open_chat):
    chat = asked_to_run_a_call(stub, open_chat, openai_stream("Understood, I will not."))
    chat.interrupt()
    chat.wait_text("Understood, I will not.")
    chat.wait_prompt()
    assert tool_results(stub.requests[1]) == ["Error: denied by the user"]
    assert f"{QUESTION} no" in chat.term.text()
    assert "Ctrl-C again stops the answer" in chat.term.text()
    assert INTERRUPTED not in chat.term.text()


def test_a_second_ctrl_c_at_an_approval_stops_the_turn(stub, open_chat):
    chat = asked_to_run_a_call(stub, open_chat, bash_call("echo approved-2"))
    chat.interrupt()
    chat.expect(re.escape("bash: echo approved-2"))
    chat.expect(re.escape(QUESTION))
    chat.interrupt()
    chat.interrupted()
    assert len(stub.requests) == 2, "the turn went on after the second Ctrl-C"
    goes_on(stub, chat)


def test_ctrl_c_at_a_suspended_tools_question_declines_it(stub, open_chat):
    script(stub, openai_stream(tool_calls=[("ask_name", {})]), openai_stream("No name, then."))
    chat = open_chat("--functions", str(SUSPENDING_TOOLS))
    chat.send_line("greet me")
    chat.expect(re.escape("what is your name?"))
    chat.wait(lambda: chat.term.cursor_line().strip() == ">", "the input line")
    chat.interrupt()
    chat.wait_text("No name, then.")
    chat.wait_prompt()
    assert any("declined by the user" in result for result in tool_results(stub.requests[1]))


KEY_HINT = (
    "(Enter queues it for when the answer ends, Esc drops the queue, Ctrl-C stops the answer)"
)


def test_a_key_pressed_while_the_answer_streams_shows_how_to_stop_it(stub, open_chat):
    script(stub, stalled("w01 w02 w03 "))
    chat = open_chat()
    chat.send_line("count")
    chat.wait_text("w03")
    chat.child.send("x")
    chat.wait_text(KEY_HINT)
    chat.child.send("y")  # once per answer, not once per key
    chat.interrupt()
    chat.wait_text(INTERRUPTED)
    # the keys wait for the next prompt, unechoed while the answer streamed
    chat.wait(lambda: chat.term.cursor_line() == f"{PROMPT} xy", "the typed keys at the prompt")
    screen = chat.term.text()
    assert screen.count(KEY_HINT) <= 1, screen
    words = re.findall(r"w\d\d", screen)
    assert words == ["w01", "w02", "w03"], f"the live region broke:\n{screen}"
