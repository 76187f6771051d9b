"""How tool calls and their results are drawn in `toolnexus chat --builtins`, in a real
pseudo-terminal against the stub endpoint: every change a file tool makes shown, whether a
question showed it or not; what an "always" answer covers; each result of a batch titled
with its call; panels measured as they are drawn; a tool call the model wrote as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest

from tests.support.chat_session import Chat
from tests.support.cli_helpers import CLI, tool_results
from tests.support.pty_screen import opener
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream

QUESTION = "(this session):"
PANEL_TITLE = "approve this tool call?"


@pytest.fixture
def open_chat(cli: CLI) -> Iterator[Callable[..., Chat]]:
    cli.in_project()  # the chat's tools work there (the home gets no file or command tools)
    yield from opener(lambda *args, **options: Chat(cli, *args, **options))


def script(stub: StubProvider, *replies: Reply) -> None:
    """Request n (from 1) gets replies[n-1]."""

    def handler(request: Recorded) -> Reply:
        return replies[len(stub.requests) - 1]

    stub.handler = handler


def calls(*called: tuple[str, dict[str, object]]) -> Reply:
    return openai_stream(tool_calls=list(called))


def answer(chat: Chat, count: int, key: str) -> None:
    """Until the `count`-th question shows, then press `key`."""
    chat.wait(
        lambda: (
            chat.term.text().count(PANEL_TITLE) == count
            and QUESTION in chat.term.text().rsplit(PANEL_TITLE, 1)[1]
        ),
        f"question {count}",
    )
    chat.child.send(key)


def rows_with(chat: Chat, text: str) -> list[str]:
    return [line for line in chat.term.lines() if text in line]


def test_a_write_allowed_by_always_still_shows_its_diff(cli, stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins`; the model writes notes.txt, answer
    `a`; it writes notes.txt again. The second write showed only `✓ write_file · wrote 13
    bytes`: no word of what it changed."""
    (cli.cwd / "notes.txt").write_text("first line\nold middle\nlast line\n")
    script(
        stub,
        calls(("write_file", {"path": "notes.txt", "content": "first line\nnew middle\n"})),
        calls(("write_file", {"path": "notes.txt", "content": "first line\nnewest middle\n"})),
        openai_stream("Both written."),
    )
    chat = open_chat("--builtins", rows=45, cols=120)
    chat.send_line("write it twice")
    answer(chat, 1, "a")
    chat.wait_text("Both written.")

    assert chat.term.text().count(PANEL_TITLE) == 1
    results = chat.term.text().split("✓ write_file: notes.txt")
    assert len(results) == 3, chat.term.text()  # each result titled with its file
    second = results[2]
    assert "-new middle" in second and "+newest middle" in second
    assert (cli.cwd / "notes.txt").read_text() == "first line\nnewest middle\n"


@pytest.mark.parametrize("allowed_by", ["--yes", "rule"])
def test_a_write_run_without_a_question_shows_its_diff(cli, stub, open_chat, allowed_by):
    """Newcomer's repro: `toolnexus chat --builtins --yes` (or `edit_file = "allow"` under
    [approval]); the model edits a file. Nothing asked, and the result said only `wrote N
    bytes`: the change was never shown."""
    if allowed_by == "rule":
        cli.write_config('[approval]\nedit_file = "allow"\n')
    (cli.cwd / "app.py").write_text("x = 1\ny = 2\n")
    script(
        stub,
        calls(("edit_file", {"path": "app.py", "old": "y = 2", "new": "y = 3"})),
        openai_stream("Edited."),
    )
    flags = ["--yes"] if allowed_by == "--yes" else []
    chat = open_chat("--builtins", *flags, rows=40, cols=120)
    chat.send_line("edit it")
    chat.wait_text("Edited.")

    assert PANEL_TITLE not in chat.term.text()
    result = chat.term.text().split("✓ edit_file: app.py", 1)[1]
    assert "-y = 2" in result and "+y = 3" in result
    assert (cli.cwd / "app.py").read_text() == "x = 1\ny = 3\n"


def test_a_batch_of_commands_titles_each_result_with_its_call(stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins`; the model runs three commands in one
    reply, each approved with `y`. The results showed as three `✓ bash` in a row, none
    saying which command it belonged to."""
    script(
        stub,
        calls(
            ("bash", {"command": "echo one-1"}),
            ("bash", {"command": "echo two-2"}),
            ("bash", {"command": "echo three-3 \x1b[31m"}),
        ),
        openai_stream("Ran three."),
    )
    chat = open_chat("--builtins", rows=40, cols=120)
    chat.send_line("run three")
    for count in (1, 2, 3):
        answer(chat, count, "y")
    chat.wait_text("Ran three.")

    for command, printed in (("echo one-1", "one-1"), ("echo two-2", "two-2")):
        title = rows_with(chat, f"✓ bash: {command}")
        assert len(title) == 1, chat.term.text()
        lines = chat.term.lines()
        assert printed in lines[lines.index(title[0]) + 2]  # its output under it
    assert rows_with(chat, "✓ bash: echo three-3 ^[[31m")  # made visible
    assert "\x1b[31m" not in "".join(chat.term.raw).split("Ran three.")[0].split("✓ bash")[-1]


def test_a_tab_indented_file_is_read_in_a_panel_as_wide_as_it_is_drawn(cli, stub, open_chat):
    """Newcomer's repro: on a 140-column terminal, `toolnexus chat --builtins`, the model
    reads a tab-indented Python file. Its panel was about 24 columns too narrow (the line
    numbers' tab and the indentation counted as no width), so code wrapped mid-statement."""
    code = "".join(
        f"def f{n}():\n\t\tresult_{n} = compute(alpha, beta, gamma, delta) + total_{n}\n"
        for n in range(1, 4)
    )
    (cli.cwd / "app.py").write_text(code)
    script(stub, calls(("read_file", {"path": "app.py"})), openai_stream("Read it."))
    chat = open_chat("--builtins", rows=40, cols=140)
    chat.send_line("read app.py")
    chat.wait_text("Read it.")

    for n in range(1, 4):  # each statement whole on its row
        assert rows_with(chat, f"result_{n} = compute(alpha, beta, gamma, delta) + total_{n}")
    assert rows_with(chat, "✓ read_file: app.py")


def test_a_write_question_shows_the_diff_not_the_json_and_fits_the_screen(cli, stub, open_chat):
    """Newcomer's repro: a 45-row terminal, `toolnexus chat --builtins`; the model rewrites
    a 30-line file. The call's raw JSON (the whole content as one escaped string) was
    printed above the diff, and pushed the question's top off the screen."""
    (cli.cwd / "table.py").write_text("".join(f"row_{n} = {n}\n" for n in range(30)))
    content = "".join(f"row_{n} = {n * 10}  # scaled by ten for the report\n" for n in range(30))
    script(
        stub,
        calls(("write_file", {"path": "table.py", "content": content})),
        openai_stream("Scaled."),
    )
    chat = open_chat("--builtins", rows=45, cols=120)
    chat.send_line("scale the table")
    chat.wait(lambda: QUESTION in chat.term.cursor_line(), "the question")

    screen = "\n".join(chat.term.display())
    assert '"content"' not in chat.term.text() and json.dumps(content)[:40] not in screen
    assert "⚙ write_file: table.py" in screen
    assert PANEL_TITLE in screen  # the whole question stands on the screen
    assert re.search(r"write_file table\.py → \S+/table\.py", screen)
    assert "-row_1 = 1" in screen and "… 31 more lines (+30 -30 in all)" in screen
    chat.child.send("y")
    chat.wait_text("Scaled.")
    assert tool_results(stub.requests[1])[0].startswith("wrote ")


def test_the_always_answers_say_what_they_cover_and_cover_only_that(cli, stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins`; `a` on a command covered only that
    exact command, `a` on a write covered every write_file in the workspace: one key, two
    meanings, and nothing on the screen said which. Now the question says what each key
    covers, `e` offers the wider scope, and the answer is echoed in those words."""
    script(
        stub,
        calls(("bash", {"command": "echo alpha"})),
        calls(("bash", {"command": "echo beta"})),
        calls(("bash", {"command": "echo gamma && echo delta"})),
        calls(("write_file", {"path": "a.txt", "content": "1\n"})),
        calls(("write_file", {"path": "./a.txt", "content": "2\n"})),
        calls(("write_file", {"path": "b.txt", "content": "3\n"})),
        openai_stream("All done."),
    )
    chat = open_chat("--builtins", rows=40, cols=140)
    chat.send_line("go")

    answer(chat, 1, "e")
    chat.wait_text("(this session): always: every plain echo command (nothing chained)")
    assert rows_with(chat, "a = always this command · e = always every plain echo command")
    answer(chat, 2, "n")  # `echo beta` ran unasked; a chain is asked about
    chat.wait_text("✗ bash: echo gamma && echo delta")

    answer(chat, 3, "a")
    chat.wait_text("(this session): always: write_file of a.txt")
    assert rows_with(
        chat, "a = always write_file of a.txt · e = always every write_file in this workspace"
    )
    answer(chat, 4, "y")  # ./a.txt ran unasked: the same file; b.txt is asked about
    chat.wait_text("All done.")

    assert chat.term.text().count(PANEL_TITLE) == 4
    assert "echo gamma" in chat.term.text().rsplit(PANEL_TITLE, 3)[1]
    assert "b.txt" in chat.term.text().rsplit(PANEL_TITLE, 1)[1]
    assert tool_results(stub.requests[2])[-1] == "exit code 0\nbeta\n"
    assert (cli.cwd / "a.txt").read_text() == "2\n" and (cli.cwd / "b.txt").read_text() == "3\n"


def test_a_tool_call_written_as_text_is_said_not_to_have_run_and_runs_only_on_yes(
    cli, stub, open_chat
):
    """Newcomer's repro: `toolnexus chat --builtins` with a small model that writes its
    calls as text (`{"name": "write_file", "arguments": {...}}`, or Qwen's
    `<tool_call>{...}</tool_call>`). The answer passed silently: nothing said the tool
    never ran. Now a dim line says so and why, and an offer shows the exact arguments;
    Enter declines, `y` runs it and its result goes to the model as the next message."""
    (cli.cwd / "notes.txt").write_text("the notes\n")
    written = {"name": "write_file", "arguments": {"path": "new.txt", "content": "hi\n"}}
    qwen = {"name": "read_file", "arguments": {"path": "notes.txt"}}
    script(
        stub,
        openai_stream(json.dumps(written)),
        openai_stream(f"Let me look.\n<tool_call>\n{json.dumps(qwen)}\n</tool_call>"),
        openai_stream("The notes say: the notes."),
    )
    chat = open_chat("--builtins", rows=40, cols=120)
    chat.send_line("make a file")
    chat.wait_text("write_file did not run: the model wrote the call as text (this model, or")
    chat.wait_text("run it? [y/N]")
    assert re.search(r"write_file new\.txt → \S+/new\.txt", chat.term.text())
    assert "+hi" in chat.term.text()
    chat.child.send("\r")  # Enter: not run
    chat.wait_prompt()
    assert not (cli.cwd / "new.txt").exists() and len(stub.requests) == 1

    chat.send_line("read my notes")
    chat.wait_text("read_file did not run")
    chat.wait_text("run it? [y/N]")
    assert '"path": "notes.txt"' in chat.term.text().rsplit("run the call it wrote?", 1)[1]
    chat.child.send("y")
    chat.wait_text("The notes say: the notes.")
    assert rows_with(chat, "✓ read_file: notes.txt")
    told = stub.requests[2].json["messages"][-1]
    assert told["role"] == "user"
    assert told["content"].startswith(
        'I ran the tool call you wrote as text, read_file with the arguments {"path": '
        '"notes.txt"}. It returned:\n'
    )
    assert "the notes" in told["content"]


def test_a_command_asked_about_shows_once_and_one_run_without_asking_shows_whole(stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins`; the model runs a two-line script.
    Its JSON (`{"command": "echo first-line\\necho second-line"}`) was printed, then the
    question showed the command again. Now the call is announced by its title and the
    question shows the command; a command run without a question (`a` answered before)
    is shown whole, without JSON."""
    script_text = "echo first-line\necho second-line"
    script(
        stub,
        calls(("bash", {"command": script_text})),
        calls(("bash", {"command": script_text})),
        openai_stream("Ran it twice."),
    )
    chat = open_chat("--builtins", rows=40, cols=120)
    chat.send_line("run the script")
    answer(chat, 1, "a")
    chat.wait_text("Ran it twice.")

    text = chat.term.text()
    assert '"command"' not in text and "\\n" not in text
    asked, unasked = text.split("✓ bash: echo first-line …", 1)
    assert asked.count("echo second-line") == 1  # in the question only
    assert "⚙ bash: echo first-line …" in asked
    announced = unasked.split("✓ bash: echo first-line …", 1)[0]
    assert "│ echo first-line" in announced and "│ echo second-line" in announced


def test_what_a_call_written_as_text_changed_is_kept_with_the_turn(cli, stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins`; the model writes a write_file call
    as text, `y` runs it. What it wrote is in the journal with the turn that tells the
    model its result: /diff shows it, as it shows what a turn's own calls changed."""
    written = {"name": "write_file", "arguments": {"path": "new.txt", "content": "hello-text\n"}}
    script(stub, openai_stream(json.dumps(written)), openai_stream("Written."))
    chat = open_chat("--builtins", rows=40, cols=120)
    chat.send_line("make a file")
    chat.wait_text("run it? [y/N]")
    chat.child.send("y")
    chat.wait_text("Written.")
    chat.wait_prompt()
    assert (cli.cwd / "new.txt").read_text() == "hello-text\n"

    chat.send_line("/diff")
    chat.wait_text("+hello-text", count=3)  # the offer, the result, and /diff
