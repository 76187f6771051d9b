"""Continuing a thread in `toolnexus chat` (issue 13): `-c`, `--id` and `/switch` show the
thread's last exchange, and the system prompt given with /system stays with the thread. A
real pseudo-terminal against the stub endpoint (tests/support/pty_screen.py)."""

from __future__ import annotations

from tests.support.chat_session import CTRL_D, Chat, conversation, numbered_answers
from tests.support.stub_provider import Recorded, openai_stream


def system_of(request: Recorded) -> str | None:
    first = request.json["messages"][0]
    return first["content"] if first["role"] == "system" else None


def leave(chat: Chat) -> None:
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0


def test_continuing_shows_the_last_exchange(stub, cli, open_chat):
    numbered_answers(stub)
    assert cli.call("ask", "--id", "plan", "first question").code == 0
    assert cli.call("ask", "--id", "plan", "second question").code == 0
    assert cli.call("ask", "--id", "other", "a question elsewhere").code == 0

    chat = open_chat("--id", "plan")
    screen = chat.term.text()
    assert "  › second question" in screen and "answer 2." in screen, screen
    assert "first question" not in screen and "answer 1." not in screen
    chat.say("/switch other")
    screen = chat.term.text()
    assert "  › a question elsewhere" in screen and "answer 3." in screen, screen
    leave(chat)

    chat = open_chat("-c")
    screen = chat.term.text()
    assert "  › a question elsewhere" in screen and "answer 3." in screen, screen
    leave(chat)


def test_a_long_last_answer_is_shown_to_a_screenful(stub, cli, open_chat):
    long = "\n\n".join(f"paragraph {i:03d}" for i in range(1, 101))
    stub.script(openai_stream(long))
    assert cli.call("ask", "--id", "long", "tell me a lot").code == 0

    chat = open_chat("--id", "long")
    screen = chat.term.text()
    assert "paragraph 100" in screen and "paragraph 001" not in screen, screen
    assert "lines above (threads show long shows them all)" in screen
    assert any("paragraph 100" in line for line in chat.term.display())  # on screen
    leave(chat)


def test_the_system_prompt_stays_with_the_thread(stub, cli, open_chat):
    numbered_answers(stub)
    assert cli.call("ask", "--id", "plain", "no system here").code == 0

    chat = open_chat("--id", "pirate")
    chat.say("/system talk like a pirate")
    chat.say("hello")
    assert system_of(stub.requests[-1]) == "talk like a pirate"
    assert conversation(stub.requests[-1])[1:] == [("user", "hello")]  # sent once, as system
    chat.say("/thread")
    counted = chat.term.text().split("/thread")[-1]
    assert "· 2 messages ·" in counted and "not sent" not in counted, counted
    chat.say("/switch plain")
    chat.say("and here?")
    assert system_of(stub.requests[-1]) is None, "the other thread took the system prompt"
    chat.say("/switch pirate")
    chat.say("back again")
    assert system_of(stub.requests[-1]) == "talk like a pirate"
    leave(chat)

    for how in (["--id", "pirate"], ["-c"]):
        chat = open_chat(*how)
        chat.say("/system")
        assert "system: talk like a pirate" in chat.term.text()
        chat.say("still a pirate?")
        assert system_of(stub.requests[-1]) == "talk like a pirate"
        leave(chat)

    shown = cli.call("threads", "export", "pirate")
    assert shown.code == 0 and "the system prompt from here on" in shown.stdout, shown
