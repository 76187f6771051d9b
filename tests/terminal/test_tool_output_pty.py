"""Output you can watch and keep, in a real pseudo-terminal against the stub model: a
running command's last lines stream into its panel, secrets masked even when split across
pieces; `/last` and Ctrl-O show the whole output of the last call in a pager (Ctrl-C there
is the pager's), from a 0600 file that is gone when the chat ends; Ctrl-C keeps what a
command printed, for the person and for the model, and says it was cut.

The commands run in the sandbox, whose workspace is an overlay: a file the test makes there
would not be seen by them. They wait for files in a folder the sandbox may read
(`[sandbox] read`), made by the test once the screen shows what came before. What a command
prints is computed by the shell (`$((6*7))`, `\\x` escapes), so the command line in the call's
panel never shows it.
"""

from __future__ import annotations

import json
import re
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import chat_session
from tests.support.chat_session import PROMPT
from tests.support.cli_helpers import CLI, model_calls, tool_results
from tests.support.pty_screen import opener
from tests.support.stub_provider import Reply, openai_stream

INTERRUPTED = "(interrupted: the partial answer is kept)"
QUESTION = "[y]es / [n]o / [a]lways (this session):"
KEY = "sk-live-0123456789abcdefghij"


class Chat(chat_session.Chat):
    def __init__(self, cli: CLI, *args: str, fresh: bool = False) -> None:
        super().__init__(cli, *args, rows=40, cols=120, fresh=fresh)

    def showing(self) -> str:
        """The screen as it is now (not the scrollback): the live region is drawn here."""
        return "\n".join(self.term.display())


@pytest.fixture
def signals(cli: CLI, tmp_path: Path) -> Path:
    """The folder the test makes files in for a command to go on; the sandbox may read it."""
    folder = tmp_path / "signals"
    folder.mkdir()
    cli.write_config(f'[sandbox]\nread = ["{folder}"]\n')
    return folder


@pytest.fixture
def temp(cli: CLI, tmp_path: Path) -> Path:
    """The chat's temporary folder (TMPDIR), where it keeps what tool calls printed."""
    folder = tmp_path / "chat-tmp"
    folder.mkdir()
    cli.env["TMPDIR"] = str(folder)
    return folder


@pytest.fixture
def open_chat(cli: CLI) -> Iterator[Callable[..., Chat]]:
    cli.in_project()
    yield from opener(lambda *args, **options: Chat(cli, *args, **options))


def wait_for(go: Path) -> str:
    """Shell that waits (up to two minutes) until the test makes `go`."""
    return f"for i in $(seq 1200); do [ -e {go} ] && break; sleep 0.1; done"


def hex_escaped(text: str) -> str:
    """`text` as printf escapes: the command line does not show it."""
    return "".join(f"\\x{ord(char):02x}" for char in text)


def bash(command: str) -> list[tuple[str, dict[str, str]]]:
    return [("bash", {"command": command})]


@pytest.mark.parametrize("asked", [False, True], ids=["--yes", "approved"])
def test_a_running_command_s_output_shows_before_it_ends(cli, stub, signals, open_chat, asked):
    """Repro: `toolnexus chat --builtins --yes` (or without --yes, answering `y`), ask for a
    command that prints a line, works a while, then prints more. The first line shows in
    the command's panel while it runs; before, only "running bash… 4s" showed until it
    ended."""
    go = signals / "go"
    command = f"echo first-$((6*7)); {wait_for(go)}; echo second-$((6*7))"
    model_calls(stub, bash(command), "It ran.")
    chat = open_chat("--builtins", *([] if asked else ["--yes"]))
    chat.send_line("run it")
    if asked:
        chat.wait_text(QUESTION)
        chat.child.send("y")
    # the whole frame: a frame the terminal has read only part of may lack its last line
    chat.wait(
        lambda: "first-42" in chat.showing() and "running bash" in chat.showing(),
        "the first line while it runs",
    )
    assert "second-42" not in chat.term.text() and "It ran." not in chat.term.text()
    go.touch()
    chat.wait_text("It ran.")
    chat.wait_prompt()
    assert tool_results(stub.requests[-1]) == ["exit code 0\nfirst-42\nsecond-42\n"]


def test_a_call_the_model_wrote_as_text_streams_its_output_once_run(cli, stub, signals, open_chat):
    """Seen live with Qwen 0.5B on llama.cpp, which writes its calls as text: `toolnexus
    chat`, "run this command with bash", `y` to the offer to run the call it wrote. The
    command's output showed only when it ended; now its lines stream into its panel as
    they come, as a call the model made does."""
    go = signals / "go"
    command = f"echo first-$((6*7)); {wait_for(go)}; echo second-$((6*7))"
    written = json.dumps({"name": "bash", "arguments": {"command": command}})
    answers = iter([openai_stream(written), openai_stream("It ran.")])
    stub.handler = lambda rec: next(answers) if rec.method == "POST" else Reply.error(404, "no")
    chat = open_chat("--builtins")
    chat.send_line("run it")
    chat.wait_text("run it? [y/N]")
    chat.child.send("y")
    chat.wait(lambda: "first-42" in chat.showing(), "the first line while it runs")
    assert "second-42" not in chat.term.text() and "It ran." not in chat.term.text()
    go.touch()
    chat.wait_text("It ran.")
    chat.wait_prompt()
    assert "first-42\nsecond-42" in stub.requests[-1].json["messages"][-1]["content"]


def test_the_live_panel_shows_the_last_lines_cut_to_the_terminal_s_width(
    cli, stub, signals, open_chat
):
    """Repro: a command prints 30 lines of 300 characters, then a progress bar redrawn with
    carriage returns, then works on. Its panel shows only the last 8 lines, each cut to the
    terminal's width (not wrapped), the progress bar as it stands last."""
    command = (
        "for i in $(seq 30); do printf 'line-%s-%0300d\\n' $((i+100)) 0; done; "
        "printf 'bar %s%%\\rbar %s%%\\n' $((6*7)) $((99)); "
        f"{wait_for(signals / 'go')}"
    )
    model_calls(stub, bash(command), "Done.")
    chat = open_chat("--builtins", "--yes")
    chat.send_line("run it")
    chat.wait(lambda: "bar 99%" in chat.showing(), "the progress bar's last state")
    shown = chat.term.display()
    lines = [line for line in shown if "line-1" in line]
    # the last 7 of the 30 and the bar: 8 lines
    assert [line.split("line-")[1][:3] for line in lines] == [str(n) for n in range(124, 131)]
    assert all(line.endswith("… │") for line in lines), lines  # cut, not wrapped
    assert not any(set(line.strip("│ ")) == {"0"} for line in shown)  # no wrapped rest
    assert "bar 42%" not in chat.term.text()
    (signals / "go").touch()
    chat.wait_text("Done.")
    chat.wait_prompt()


def test_a_key_split_across_pieces_of_output_is_masked_in_the_live_panel(
    cli, stub, signals, open_chat
):
    """Repro: a command prints the API key in two writes with a pause between (a flush),
    e.g. `printf 'key=sk-li'; sleep 5; printf 've-...'`: the live panel shows `key=***`,
    never the key's first part (held back until it is known not to be a key) nor the rest."""
    cli.env["TOOLNEXUS_API_KEY"] = KEY
    half, rest = KEY[:5], KEY[5:]
    command = (
        f"printf 'ready-%s key={hex_escaped(half)}' $((6*7)); {wait_for(signals / 'one')}; "
        f"printf '{hex_escaped(rest)}\\n'; printf 'shown-%s\\n' $((6*7)); "
        f"{wait_for(signals / 'two')}"
    )
    model_calls(stub, bash(command), "Printed.")
    chat = open_chat("--builtins", "--yes")
    chat.send_line("print it")
    # the first write came whole (one short write): its key part is held back
    chat.wait(lambda: "ready-42 key=" in chat.showing(), "the first write")
    (signals / "one").touch()
    chat.wait(lambda: "shown-42" in chat.showing(), "the second write, after a pause")
    assert "ready-42 key=***" in chat.showing()
    (signals / "two").touch()
    chat.wait_text("Printed.")
    chat.wait_prompt()
    seen = chat.term.raw_text()
    assert half not in seen and rest not in seen and KEY not in seen


def forty_lines(open_chat: Callable[..., Chat], stub, fresh: bool = False) -> Chat:
    """A chat whose one tool call printed 40 lines, row-1 to row-40 (`fresh`: see
    pty_screen.spawn)."""
    model_calls(stub, bash("seq 1 40 | sed 's/^/row-/'"), "Forty.")
    chat = open_chat("--builtins", "--yes", fresh=fresh)
    chat.send_line("count")
    chat.wait_text("Forty.")
    chat.wait_prompt()
    return chat


def rows_shown(chat: Chat) -> list[int]:
    """The numbers of the rows shown as lines of their own (not in a panel)."""
    return [int(n) for n in re.findall(r"^row-(\d+)$", chat.term.text(), re.M)]


def test_slash_last_and_ctrl_o_show_all_forty_lines_of_the_last_call(cli, stub, open_chat):
    """Repro: a command prints 40 lines; its panel shows 8 and "... 33 more lines (Ctrl-O
    or /last shows it all)". `/last` shows all 40 in the pager ($PAGER, here cat), and so
    does Ctrl-O at the prompt; before, the rest could not be seen in the chat."""
    cli.env["PAGER"] = "cat"
    chat = forty_lines(open_chat, stub)
    assert "... 33 more lines (Ctrl-O or /last shows it all)" in chat.term.text()
    assert "row-40" not in chat.term.text() and rows_shown(chat) == []
    chat.say("/last")
    assert rows_shown(chat)[-40:] == list(range(1, 41))
    before = len(rows_shown(chat))
    chat.child.send("\x0f")  # Ctrl-O
    chat.wait(lambda: len(rows_shown(chat)) == before + 40, "the forty lines again")
    assert rows_shown(chat)[-40:] == list(range(1, 41))


def test_without_a_pager_slash_last_prints_the_output(cli, stub, open_chat):
    """Repro: `PAGER=no-such-pager toolnexus chat ...`, a command prints 40 lines, `/last`:
    the output is printed under a line saying whose it is, not an error."""
    cli.env["PAGER"] = "no-such-pager-anywhere"
    chat = forty_lines(open_chat, stub)
    chat.say("/last")
    assert "the whole output of bash:" in chat.term.text()
    assert rows_shown(chat)[-40:] == list(range(1, 41))


PAGER = """#!/bin/sh
trap 'echo pager-got-ctrl-c' INT
echo pager-open
cat > /dev/null
until [ -e {go} ]; do sleep 0.1; done
echo pager-closed
"""


@pytest.mark.parametrize("key", ["/last", "Ctrl-O"])
def test_ctrl_c_in_the_pager_is_the_pager_s(cli, stub, tmp_path, open_chat, key):
    """Repro: `/last` (or Ctrl-O) opens less; Ctrl-C there (to stop a search) reaches less
    and leaves the chat as it was: no "(Ctrl-C again or Ctrl-D to leave)", no prompt drawn
    over the pager, and a second Ctrl-C does not end the chat."""
    go = tmp_path / "pager-go"
    pager = tmp_path / "pager.sh"
    pager.write_text(PAGER.format(go=go))
    pager.chmod(0o700)
    cli.env["PAGER"] = str(pager)
    chat = forty_lines(open_chat, stub, fresh=True)  # the pager in the terminal's group
    if key == "/last":
        chat.send_line("/last")
    else:
        chat.child.send("\x0f")
    chat.wait_text("pager-open")
    chat.interrupt()
    chat.wait_text("pager-got-ctrl-c")
    chat.interrupt()
    chat.wait_text("pager-got-ctrl-c", 2)
    go.touch()
    chat.wait_text("pager-closed")
    # /last's is a new prompt; Ctrl-O's is the one it put aside, drawn again
    chat.wait(lambda: chat.term.cursor_line().strip() == PROMPT, "the prompt")
    chat.resync_prompts()
    assert "Ctrl-C again" not in chat.term.text()
    chat.send_line("still there?")
    chat.wait_text("Forty.", 2)  # the stub's answer to every later message
    chat.wait_prompt()


def kept_files(temp: Path) -> list[Path]:
    return [file for folder in temp.glob("toolnexus-output-*") for file in folder.iterdir()]


@pytest.mark.parametrize("leave", ["ctrl-d", "ctrl-c twice", "sigterm", "sighup"])
def test_the_kept_output_is_a_private_file_removed_when_the_chat_ends(
    cli, stub, temp, open_chat, leave
):
    """Repro: run a command in the chat, look for its output file in $TMPDIR (0600, in a
    0700 folder), leave the chat (Ctrl-D, Ctrl-C twice, a SIGTERM, or close the terminal):
    the file is gone."""
    chat = forty_lines(open_chat, stub)
    [file] = kept_files(temp)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE(file.parent.stat().st_mode) == 0o700
    assert file.read_text().splitlines() == [f"row-{n}" for n in range(1, 41)]
    if leave == "ctrl-d":
        chat.child.send(chat_session.CTRL_D)
    elif leave == "ctrl-c twice":
        chat.interrupt()
        chat.wait_text("(Ctrl-C again or Ctrl-D to leave)")
        chat.interrupt()
    else:  # a signal (SIGHUP: the terminal window was closed)
        chat.child.kill(signal.SIGTERM if leave == "sigterm" else signal.SIGHUP)
    chat.exit_code()
    assert list(temp.iterdir()) == []


def test_ctrl_c_keeps_what_the_command_printed_for_the_model_and_says_it_was_cut(
    cli, stub, signals, open_chat
):
    """Repro: a command prints a line and goes on working; Ctrl-C. Its panel stays with the
    line it printed, marked as cut, `/last` shows it, and the next message's request gives
    the model that line and a note that the user stopped it; before, the output was lost."""
    cli.env["PAGER"] = "cat"
    command = f"echo printed-$((6*7)); {wait_for(signals / 'never')}"
    model_calls(stub, bash(command), "Carrying on.")
    chat = open_chat("--builtins", "--yes")
    chat.send_line("run it")
    chat.wait(lambda: "printed-42" in chat.showing(), "the line the command printed")
    chat.interrupt()
    chat.wait_text(INTERRUPTED)
    chat.wait_prompt()
    screen = chat.term.text()
    assert "✗ bash · cut" in screen
    assert "cut by Ctrl-C: the model gets what it printed until then" in screen
    assert "printed-42" in screen.split("✗ bash · cut")[1]
    chat.say("/last")
    assert "\nprinted-42\n" in chat.term.text()
    chat.send_line("what did it print?")
    chat.wait_text("Carrying on.")
    [result] = tool_results(stub.requests[-1])
    assert result == (
        "Error: printed-42\n[cut: the user stopped the run before this tool finished; above is "
        "what it printed until then]"
    )


def test_five_mb_of_output_are_cut_for_the_model_and_kept_whole_for_slash_last(
    cli, stub, temp, tmp_path, open_chat
):
    """Repro: `toolnexus chat --builtins --yes`, a command prints about 5 MB (`seq 1
    800000`). The model gets its first and last lines and, between them, how many bytes
    were cut of how many; the whole output is in a 0600 file while the chat runs, `/last`
    shows all of it, and the file is gone when the chat ends. Before, the model got the
    beginning of its first MiB, told nothing of its end nor its size."""
    whole = "".join(f"{n}\n" for n in range(1, 800_001))
    paged = tmp_path / "paged.txt"
    cli.env["PAGER"] = f"sh -c 'cat > {paged}'"
    model_calls(stub, bash("seq 1 800000"), "Counted.")
    chat = open_chat("--builtins", "--yes")
    chat.send_line("count")
    chat.wait_text("Counted.")
    chat.wait_prompt()
    [result] = tool_results(stub.requests[-1])
    assert len(result) < 100_000  # under the toolkit's cap: nothing of it cut again
    assert result.startswith("exit code 0\n1\n2\n3\n")
    assert result.endswith("\n799999\n800000\n")
    cut = len(whole) - 80_000
    assert f"[{cut:,} bytes cut here: the command printed {len(whole):,} bytes" in result
    [file] = kept_files(temp)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE(file.parent.stat().st_mode) == 0o700
    assert file.read_text() == whole
    chat.say("/last")
    assert paged.read_text() == whole
    chat.child.send(chat_session.CTRL_D)
    chat.exit_code()
    assert list(temp.iterdir()) == []


def test_what_a_killed_chat_kept_is_removed_when_the_next_chat_starts(cli, stub, temp, open_chat):
    """Repro: a chat runs a command and is killed (`kill -9`): its output file stays in
    $TMPDIR. Start another chat: that file is gone, while the file of a chat still running
    stays."""
    cli.env["PAGER"] = "cat"
    killed = forty_lines(open_chat, stub)
    [left] = kept_files(temp)
    running = forty_lines(open_chat, stub)
    [kept] = set(kept_files(temp)) - {left}
    killed.child.kill(signal.SIGKILL)
    killed.wait(lambda: not killed.child.isalive(), "the chat to be killed")
    assert left.exists()
    open_chat("--builtins", "--yes")
    assert kept_files(temp) == [kept] and not left.parent.exists()
    running.say("/last")  # its output still there
    assert rows_shown(running)[-40:] == list(range(1, 41))
