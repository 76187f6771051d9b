"""Slash commands that cannot end the chat, and that say what they do (issue 13), in a real
pseudo-terminal against the stub endpoint: a failing command is one line and the prompt
comes back; /edit shows the message and asks before sending it."""

from __future__ import annotations

import re
import stat

import pytest

from tests.support.chat_session import CTRL_D, Chat, conversation, numbered_answers
from tests.support.stub_provider import StubProvider


def no_traceback(chat: Chat) -> str:
    screen = chat.term.text()
    assert "Traceback" not in screen and "Error:" not in screen, screen
    return screen


def shows(chat: Chat, line: str) -> bool:
    """Whether the screen shows `line`, wrapped however the width wraps it (a path in a
    message is as long as the test's tmp_path)."""
    return "".join(line.split()) in "".join(no_traceback(chat).split())


def still_chatting(stub: StubProvider, chat: Chat) -> None:
    chat.say("are you there?")
    chat.wait_text(f"answer {len(stub.requests)}.")
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0


def test_export_into_a_folder_writes_the_threads_file_there(stub, cli, open_chat, tmp_path):
    numbered_answers(stub)
    folder = tmp_path / "exports"
    folder.mkdir()
    chat = open_chat()
    chat.say("hello")
    chat.say(f"/export {folder}")
    written = list(folder.iterdir())
    assert len(written) == 1 and written[0].suffix == ".md", no_traceback(chat)
    assert "answer 1." in written[0].read_text()
    assert stat.S_IMODE(written[0].stat().st_mode) == 0o600
    assert shows(chat, f"wrote {written[0]}"), no_traceback(chat)
    still_chatting(stub, chat)


def test_export_into_a_missing_folder_is_one_line(stub, open_chat, tmp_path):
    numbered_answers(stub)
    chat = open_chat()
    chat.say("hello")
    chat.say(f"/export {tmp_path}/missing/dir/x.md")
    assert shows(chat, f"there is no folder {tmp_path}/missing/dir"), no_traceback(chat)
    still_chatting(stub, chat)


def test_any_failure_inside_a_command_is_one_line(stub, open_chat, tmp_path):
    numbered_answers(stub)
    chat = open_chat()
    chat.say("/export " + "n" * 300 + "/x.md")  # a name longer than a file system allows
    assert re.search(r"error: /export: .*File name too long", no_traceback(chat))
    still_chatting(stub, chat)


@pytest.mark.parametrize(
    ("editor", "said"),
    [
        ("no-such-editor-4711", "the editor 'no-such-editor-4711' ($EDITOR) could not be started"),
        ("false", "the editor 'false' ($EDITOR) exited with status 1; nothing was sent"),
    ],
)
def test_edit_with_a_bad_editor_is_one_line(stub, cli, open_chat, editor, said):
    numbered_answers(stub)
    cli.env.pop("VISUAL", None)
    cli.env["EDITOR"] = editor
    chat = open_chat()
    chat.say("/edit")
    assert said in no_traceback(chat)
    assert stub.requests == []
    still_chatting(stub, chat)


WRITES_A_MESSAGE = 'sh -c \'printf "a message from the editor" > "$1"\' sh'


def test_edit_shows_the_message_and_asks_before_sending(stub, cli, open_chat):
    numbered_answers(stub)
    cli.env.pop("VISUAL", None)
    cli.env["EDITOR"] = WRITES_A_MESSAGE
    chat = open_chat()
    chat.send_line("/edit")
    chat.expect(re.escape("your message"))
    chat.expect(re.escape("send it? [Y/n]"))
    assert "a message from the editor" in chat.term.text()
    chat.child.send("n")
    chat.wait_prompt()
    assert "not sent" in chat.term.text()
    assert stub.requests == []

    chat.send_line("/edit")
    chat.wait_text("send it? [Y/n]", 2)
    chat.child.send("\r")
    chat.wait_text("answer 1.")
    chat.wait_prompt()
    assert conversation(stub.requests[0]) == [("user", "a message from the editor")]


def test_edit_of_an_empty_message_sends_nothing(stub, cli, open_chat):
    numbered_answers(stub)
    cli.env.pop("VISUAL", None)
    cli.env["EDITOR"] = "true"
    chat = open_chat()
    chat.say("/edit")
    assert "nothing to send: the message is empty" in chat.term.text()
    assert stub.requests == []


def test_the_banner_names_the_tools_and_no_tools_turns_them_off(stub, cli, open_chat):
    cli.in_project()
    numbered_answers(stub)
    chat = open_chat("--builtins")
    banner = chat.term.text()
    assert re.search(r"tools: read_file, .*, … \(\d+ built-in\)", banner), banner
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0

    cli.write_config("builtins = true\n")
    chat = open_chat("--no-tools")
    assert "tools:" not in chat.term.text()
    chat.say("hello")
    assert not stub.requests[0].json.get("tools")


def test_tools_shows_whole_descriptions_wrapped(stub, cli, open_chat):
    cli.in_project()
    chat = open_chat("--builtins")
    chat.say("/tools")
    screen = chat.term.text()
    assert "(stdout+stderr)" in screen, screen  # the end of bash's description
    assert all(len(line) <= 100 for line in chat.term.lines())


def test_an_unknown_model_name_says_what_it_may_have_meant(stub, cli, open_chat):
    numbered_answers(stub)
    cli.write_config(
        f'[providers.stub]\nbase_url = "{stub.base_url}"\n\n'
        '[models.fast]\nprovider = "stub"\nmodel = "stub-model"\n'
        'aliases = ["quick"]\n'
    )
    chat = open_chat()
    chat.say("/model fsat")
    screen = " ".join(chat.term.text().split())
    assert "'fsat' is not a model the config or the model lists know" in screen, screen
    assert "did you mean 'fast'?" in screen
    chat.say("/model zzz")  # nothing near: the names it knows
    assert "known: fast, quick" in " ".join(chat.term.text().split())
    chat.say("/model quick")
    assert "is not a model" not in chat.term.text().split("/model quick")[-1]
