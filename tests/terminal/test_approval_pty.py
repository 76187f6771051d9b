"""Approving tool calls in `toolnexus chat --builtins`, in a real pseudo-terminal against the
stub endpoint (issue 7, acceptance point 3): yes, no, always; and the inline answers a
suspended tool asks for (issue 6: a URL to open, a line of input).

The real console script runs in a pty with an emulated screen (tests/support/pty_screen.py). Every
step waits with expect() on the text it needs (the approval question, an answer, the next
input prompt): nothing sleeps and hopes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from tests.support.cli_helpers import CLI, SUSPENDING_TOOLS, tool_results
from tests.support.pty_screen import PtySession, opener
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream
from toolnexus.tools.sandbox import support

ROWS, COLS = 40, 120
QUESTION = re.escape("[y]es / [n]o / [a]lways (this session):")
PANEL_TITLE = "approve this tool call?"
INPUT_PROMPT = "›"


class Chat(PtySession):
    """`toolnexus chat ARGS`, waited on with expect() on its output."""

    def __init__(self, cli: CLI, *args: str) -> None:
        super().__init__(cli, "chat", *args, rows=ROWS, cols=COLS)
        self.expect(INPUT_PROMPT)

    def say(self, text: str, answer: str) -> None:
        """Send a message that needs no approval; wait for the answer and the next prompt."""
        self.send_line(text)
        self.answered(answer)

    def answered(self, answer: str) -> None:
        """Until `answer` and then the next input prompt show."""
        self.expect(re.escape(answer))
        self.expect(INPUT_PROMPT)

    def approve(self, command: str, reply: str) -> None:
        """Wait for the question about `command` (if given) and give `reply`."""
        if command:
            self.expect(re.escape(f"bash: {command}"))
        self.expect(QUESTION)
        self.child.send(reply)  # one key: no Enter

    def questions(self) -> int:
        return self.term.text().count(PANEL_TITLE)


@pytest.fixture
def open_chat(cli: CLI) -> Iterator[Callable[..., Chat]]:
    cli.in_project()  # the chat's tools work there (the home gets no file or command tools)
    yield from opener(lambda *args: Chat(cli, *args))


def script(stub: StubProvider, *replies: Reply) -> None:
    """Request n (from 1) gets replies[n-1]."""

    def handler(request: Recorded) -> Reply:
        return replies[len(stub.requests) - 1]

    stub.handler = handler


def bash_call(command: str, **more: object) -> Reply:
    return openai_stream(tool_calls=[("bash", {"command": command, **more})])


def test_yes_runs_the_command_and_the_model_gets_its_output(stub, open_chat, cli):
    workdir = cli.cwd / "work"  # in the workspace, where a sandboxed command runs
    workdir.mkdir()
    script(
        stub,
        bash_call("echo approved-123 && pwd", cwd=str(workdir), timeout=5),
        openai_stream("It printed the number."),
    )
    chat = open_chat("--builtins")

    chat.send_line("run the echo")
    chat.expect(re.escape(PANEL_TITLE))
    # the question shows every argument, not only the command
    chat.expect(re.escape(f"cwd: {workdir}"))
    chat.expect(re.escape("timeout: 5"))
    chat.approve("", "y")
    chat.answered("It printed the number.")

    assert tool_results(stub.requests[1]) == [f"exit code 0\napproved-123\n{workdir}\n"]
    assert chat.questions() == 1


def test_no_tells_the_model_and_the_conversation_goes_on(stub, open_chat):
    script(
        stub,
        bash_call("echo approved-123"),
        openai_stream("Understood, I will not."),
        openai_stream("Still here."),
    )
    chat = open_chat("--builtins")

    chat.send_line("run the echo")
    chat.approve("echo approved-123", "n")
    chat.answered("Understood, I will not.")
    assert tool_results(stub.requests[1]) == ["Error: denied by the user"]

    chat.say("are you there?", "Still here.")
    messages = stub.requests[2].json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert messages[2]["content"] == "Error: denied by the user"
    assert messages[-1]["content"] == "are you there?"


def test_always_is_not_asked_again_for_the_same_call(stub, open_chat):
    script(
        stub,
        bash_call("echo approved-123"),
        bash_call("echo approved-123"),
        openai_stream("Ran it twice."),
        bash_call("echo approved-123"),
        openai_stream("And a third time."),
    )
    chat = open_chat("--builtins")

    chat.send_line("run the echo twice")
    chat.approve("echo approved-123", "a")
    chat.answered("Ran it twice.")
    # a later turn of the same session is not asked either
    chat.say("once more", "And a third time.")

    assert chat.questions() == 1
    assert tool_results(stub.requests[2]) == ["exit code 0\napproved-123\n"] * 2
    assert tool_results(stub.requests[4])[-1] == "exit code 0\napproved-123\n"


def test_a_suspended_tool_asks_inline_for_a_url_visit_and_for_input(stub, open_chat):
    script(
        stub,
        openai_stream(tool_calls=[("sign_in", {"service": "forge"})]),
        openai_stream(tool_calls=[("ask_name", {})]),
        openai_stream("Hello, Ada."),
    )
    chat = open_chat("--functions", str(SUSPENDING_TOOLS))

    chat.send_line("sign me in and greet me")
    chat.expect(re.escape("a tool needs you (url)"))
    chat.expect(re.escape("https://example.test/login"))
    chat.expect(re.escape("open it, then press Enter"))
    chat.send_line("")
    chat.expect(re.escape("a tool needs you (input)"))
    chat.expect(re.escape("what is your name?"))
    chat.send_line("Ada")
    chat.answered("Hello, Ada.")

    assert tool_results(stub.requests[1]) == ["signed in to forge"]
    assert tool_results(stub.requests[2])[-1] == "the name is Ada"


def test_always_covers_the_same_call_repeated_in_one_reply(stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins`, ask for something the model answers
    with the same command three times in one reply (`echo same-call` x3); answer `a` at
    the first question. The other two used to ask again, one after the other."""
    same = ("bash", {"command": "echo same-call"})
    script(stub, openai_stream(tool_calls=[same, same, same]), openai_stream("Ran all three."))
    chat = open_chat("--builtins")

    chat.send_line("run it three times")
    chat.approve("echo same-call", "a")
    chat.answered("Ran all three.")

    assert chat.questions() == 1
    assert tool_results(stub.requests[1]) == ["exit code 0\nsame-call\n"] * 3


def test_a_deny_rule_says_which_rule_refused_which_command(cli, stub, open_chat):
    """Newcomer's repro: `"rm *" = "deny"` under [approval.commands], `toolnexus chat
    --builtins`, and the model runs `rm -rf build`. The panel used to say only "denied by
    policy: bash may not run", as if bash itself were forbidden."""
    cli.write_config('[approval.commands]\n"rm *" = "deny"\n')
    script(stub, bash_call("rm -rf build"), openai_stream("I will clean up another way."))
    chat = open_chat("--builtins")

    chat.send_line("clean the build")
    chat.answered("I will clean up another way.")

    told = 'denied by the rule "rm *" = "deny" in [approval.commands]: rm -rf build'
    assert told in chat.term.text()
    assert tool_results(stub.requests[1]) == [f"Error: {told}"]
    assert chat.questions() == 0


def shown(chat: Chat) -> str:
    """The screen's text with every run of blanks and line ends as one space (a long line
    wraps where the terminal's width says)."""
    return " ".join(chat.term.text().split())


def footer(chat: Chat) -> str:
    return next(line for line in chat.term.lines() if "completion tokens" in line)


@pytest.mark.skipif(support().abi == 0, reason=f"no Landlock: {support().why_not}")
def test_yes_says_that_approvals_are_off_and_what_still_asks(stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins --yes`. Nothing on the screen said
    that tool calls now run without a question, nor what still asks a person (leaving
    the sandbox, secret-looking files, new hosts); /tools listed bash as "ask"."""
    script(stub, openai_stream("Hi."))
    chat = open_chat("--builtins", "--yes")
    assert (
        "approvals off (--yes): tool calls run without asking; still asked: leaving "
        "the sandbox, secret-looking files, files beyond the workspace and the system "
        "folders, new hosts"
    ) in shown(chat)

    chat.say("hello", "Hi.")
    chat.wait(lambda: any("completion tokens" in line for line in chat.term.lines()), "the footer")
    assert footer(chat).endswith(" · approvals off (--yes)")
    chat.send_line("/tools")
    chat.wait_text("allow (--yes, sandbox)")
    rows = {line.split()[0]: line for line in chat.term.lines() if line.strip()}
    assert " builtin allow (--yes) " in rows["write_file"]
    assert " builtin allow " in rows["read_file"]


def test_yes_without_a_sandbox_says_bash_still_asks(stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins --yes --sandbox off`: every bash
    command asks a person all the same, and neither the banner nor /tools said so."""
    chat = open_chat("--builtins", "--yes", "--sandbox", "off")
    assert (
        "approvals off (--yes): tool calls run without asking; still asked: every "
        "bash command (no sandbox), secret-looking files, files beyond the workspace and "
        "the system folders, new hosts"
    ) in shown(chat)
    chat.send_line("/tools")
    chat.wait_text("ask (no sandbox)")


def question(chat: Chat, count: int) -> str:
    """Until the `count`-th question stands on the screen; the text of the panel it asks
    about, its rows joined by spaces (a long line wraps onto the next row)."""

    def after_title() -> str:
        return chat.term.text().rsplit(PANEL_TITLE, 1)[1]

    chat.wait(
        lambda: chat.questions() == count and "(this session):" in after_title(),
        f"question {count}",
    )
    rows = after_title().split("\n")[1:]
    inside = [row.strip().strip("│").strip() for row in rows if row.startswith("│")]
    return " ".join(" ".join(inside).split())


def colour(chat: Chat, text: str) -> str:
    """The foreground colour of `text` where the screen shows it."""
    for y, line in enumerate(chat.term.display()):
        x = line.find(text)
        if x >= 0:
            return chat.term.screen.buffer[y][x].fg
    raise AssertionError(f"no {text!r} on the screen:\n{chat.term.text()}")


def test_a_file_write_is_approved_by_the_change_it_makes(cli, stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins`, and the model edits a file, creates
    one and rewrites another. Each question showed the call's JSON, the file's whole new
    text as one escaped string ("line 1\\nline 2\\n..."), not what would change, nor where
    the path really leads."""
    home = cli.cwd  # the project folder the chat works in
    (home / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (home / "big.txt").write_text("old\n" * 5)
    hostile = "line three [bold red]x[/] \x1b]0;pwned\x07"
    script(
        stub,
        openai_stream(
            tool_calls=[
                ("edit_file", {"path": "notes.txt", "old": "line 3", "new": hostile}),
                ("write_file", {"path": "sub/new.txt", "content": "alpha\nbeta\n"}),
                ("write_file", {"path": "big.txt", "content": "new\n" * 400}),
            ]
        ),
        openai_stream("Files updated."),
    )
    chat = open_chat("--builtins")
    chat.send_line("tidy my files")

    panel = question(chat, 1)
    assert f"edit_file notes.txt → {home}/notes.txt" in panel
    assert "@@ -1,6 +1,6 @@" in panel
    assert colour(chat, "-line 3") == "red"
    assert colour(chat, "+line three [bold red]x[/] ^[]0;pwned^G") == "green"
    assert "\x1b]0;pwned" not in chat.term.raw_text()
    chat.child.send("y")

    panel = question(chat, 2)
    assert f"write_file sub/new.txt → {home}/sub/new.txt" in panel
    assert "a new file, 2 lines" in panel
    assert colour(chat, "+beta") == "green"
    chat.child.send("y")

    panel = question(chat, 3)
    assert "overwrites the file: 5 lines → 400 lines" in panel
    # the hunk's line, 5 removed and 400 added lines: 30 shown
    assert "… 376 more lines" in panel
    chat.child.send("y")
    chat.answered("Files updated.")

    assert "line three" in (home / "notes.txt").read_text()
    assert (home / "sub" / "new.txt").read_text() == "alpha\nbeta\n"


def test_the_change_shown_never_reads_what_the_tools_may_not(cli, stub, open_chat):
    """Newcomer's repro: `toolnexus chat --builtins --root work`, and the model writes to
    a link to ~/.ssh/id_rsa, edits .env, writes outside the workspace and over a huge
    log. Showing the change must not read, or show, what the tools themselves may not:
    the panel says why instead of a diff."""
    home, work = cli.home, cli.home / "work"
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-TEXT\n")
    work.mkdir()
    (work / "notes.txt").symlink_to(home / ".ssh" / "id_rsa")
    (work / ".env").write_text("API_TOKEN=hunter2\n")
    (home / "outside.txt").write_text("OUTSIDE-TEXT\n")
    (work / "big.log").write_text("LOG-TEXT\n" * 40_000)
    script(
        stub,
        openai_stream(
            tool_calls=[
                ("write_file", {"path": "notes.txt", "content": "x\n"}),
                ("edit_file", {"path": ".env", "old": "API_TOKEN", "new": "TOKEN"}),
                ("write_file", {"path": "../outside.txt", "content": "y\n"}),
                ("write_file", {"path": "big.log", "content": "z\n"}),
            ]
        ),
        openai_stream("Nothing written."),
    )
    chat = open_chat("--builtins", "--root", str(work))
    chat.send_line("write them")

    refusals = [
        f"{home}/.ssh/id_rsa holds secrets: no tool may read or change it",
        "the current file looks like it holds secrets: not shown",
        "the current file is outside the workspace: not read without asking",
        "the current file is over 256 KiB: too big to compare here",
    ]
    for count, said in enumerate(refusals, 1):
        assert said in question(chat, count)
        chat.child.send("n")
    chat.answered("Nothing written.")

    for content in ("PRIVATE-KEY-TEXT", "hunter2", "OUTSIDE-TEXT", "LOG-TEXT"):
        assert content not in chat.term.text()


def test_ask_in_a_terminal_asks_before_a_command_runs(stub, cli):
    """Repro: in a project folder, `toolnexus ask --builtins "say hello with echo"` in a
    terminal; the model calls bash. The question shows (as in the chat), y runs the
    command, and its output goes to the model: it is not refused as if nobody could be
    asked."""
    cli.in_project()
    script(stub, bash_call("echo asked-in-ask-77", timeout=5), openai_stream("done: it said hi"))
    ask = PtySession(cli, "ask", "--builtins", "say hello with echo", rows=ROWS, cols=COLS)
    try:
        ask.expect(PANEL_TITLE)
        ask.expect(QUESTION)
        ask.child.send("y")
        ask.expect("done: it said hi")
    finally:
        ask.close()
    assert tool_results(stub.requests[1]) == ["exit code 0\nasked-in-ask-77\n"]
