"""Failures look like failures: a command that exits nonzero is titled `exit N`, one a signal
killed `✗ ... killed by SIGNAL`, never a green ✓; a command that tried to connect while the
sandbox has no network gets the model a one-line note and the person the offer to run it
outside, decided from what the sandbox saw (its own network's counters, or the fallback's
socket filter), not from what the program printed. The real chat in a pseudo-terminal
against the stub model."""

from __future__ import annotations

import re
import shutil
import sys

import pytest

from tests.support import kernel
from tests.support.cli_helpers import CLI, model_calls, tool_results
from tests.support.pty_screen import PtySession
from tests.support.stub_provider import StubProvider

NAMESPACES_OK, NO_NAMESPACES = kernel.namespaces()
namespaces = kernel.needs(NAMESPACES_OK, NO_NAMESPACES)
NOT_REACHABLE = "servers on the host's localhost are not reachable from it"
OFFER = "run it again outside the sandbox"
ANSWER_KEYS = "[y]es / [n]o:"
FALLBACK = "[sandbox]\nnamespaces = false\n"  # Landlock and the socket filter alone


def chat_runs(cli: CLI, stub: StubProvider, command: str, *, answer: str = "") -> PtySession:
    """The chat, asked to run `command` with bash (in the sandbox, with --yes), closed once
    the model's answer after the call shows (`answer`: typed to the question about leaving
    the sandbox, which must come first)."""
    work = cli.root / "work"
    work.mkdir()
    model_calls(stub, [("bash", {"command": command})], "Done.")
    chat = PtySession(cli, "chat", "--builtins", "--yes", "--root", str(work), rows=40, cols=140)
    try:
        chat.expect("›")
        chat.send_line("run it")
        if answer:
            chat.wait_text(ANSWER_KEYS)
            chat.child.send(answer)
        chat.wait_text("Done.")
    finally:
        chat.close()
    return chat


def unwrapped(chat: PtySession) -> str:
    """The screen's text with panel borders gone and rows joined by one space, so that a
    phrase the terminal wrapped still reads whole."""
    rows = (row.strip().strip("│").strip() for row in chat.term.text().splitlines())
    return " ".join(row for row in rows if row)


def titled(screen: str, ending: str, *, failed: bool) -> bool:
    """Whether a result panel on `screen` is titled with its bash call (`bash: false`)
    and then `ending` (`exit 3`), after a ✗ when `failed` and after no mark otherwise."""
    mark = "✗ " if failed else ""
    return re.search(f"─ {mark}bash: [^\\n]*? · {re.escape(ending)}", screen) is not None


def what_the_model_read(stub: StubProvider) -> str:
    [result] = tool_results([r for r in stub.requests if r.method == "POST"][1])
    return result


@kernel.landlock
@pytest.mark.parametrize(
    ("command", "ending", "failed", "read"),
    [
        ("false", "exit 1", False, "exit code 1"),
        ("echo some output; exit 3", "exit 3", False, "exit code 3\nsome output"),
        ("kill -TERM $$", "killed by SIGTERM", True, "killed by SIGTERM"),
        ("kill -KILL $$", "killed by SIGKILL", True, "killed by SIGKILL"),
    ],
)
def test_a_command_that_fails_is_titled_with_its_exit_code_or_signal(
    cli, stub, command, ending, failed, read
):
    """Newcomer's repro: `toolnexus chat --builtins --yes`, ask for something the model
    runs as `exit 3` (or a command killed by a signal). The result's panel used to read
    `✓ bash`; now its title is `bash: exit 3 · exit 3` (`✗ bash: kill -TERM $$ · killed by
    SIGTERM`), and the
    model reads the same."""
    chat = chat_runs(cli, stub, command)
    screen = chat.term.text()
    assert titled(screen, ending, failed=failed), screen
    assert "✓ bash" not in screen, screen
    assert what_the_model_read(stub).startswith(read)


@kernel.landlock
def test_a_command_that_succeeds_keeps_its_tick(cli, stub):
    """The other side: `exit 0` is still `✓ bash`, with no exit code in the title."""
    screen = chat_runs(cli, stub, "echo fine").term.text()
    assert "✓ bash" in screen and "exit 0" not in screen, screen


@namespaces
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_to_a_local_server_while_the_network_is_off_fails_with_a_note_and_an_offer(cli, stub):
    """Newcomer's repro: a server runs on this machine's localhost (here the model's own
    endpoint); `toolnexus chat --builtins --yes`, ask the model to fetch from it. `curl`
    in the sandbox exits 7 ("Couldn't connect"): it used to show under a green ✓ with no
    word for the model and no offer. Now the person is asked whether to run it outside the
    sandbox, told that the host's localhost is out of the sandbox's reach; on no, the
    result is titled `exit 7`, and the model reads the note."""
    chat = chat_runs(cli, stub, f"curl -sS {stub.base_url}/models", answer="n")
    screen, words = chat.term.text(), unwrapped(chat)
    assert "tried to reach the network" in words and NOT_REACHABLE in words, screen
    assert OFFER in words, screen
    assert titled(screen, "exit 7", failed=True) and "✓ bash" not in screen, screen
    read = what_the_model_read(stub)
    assert read.startswith("Error: exit code 7\ncurl: (7)"), read
    assert NOT_REACHABLE in read and "declined" in read


@namespaces
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_yes_to_the_offer_runs_the_curl_outside_where_it_reaches_the_server(cli, stub):
    """The same curl, and `y` to the offer: it runs again outside the sandbox, reaches the
    server on localhost and ends well (`✓ bash`); the model reads what it fetched (the
    stub's reply, a stream)."""
    chat = chat_runs(cli, stub, f"curl -sS {stub.base_url}/models", answer="y")
    screen = chat.term.text()
    assert "✓ bash" in screen and "exit 7" not in screen, screen
    assert what_the_model_read(stub).startswith("exit code 0\ndata: ")  # the server's reply


@pytest.mark.parametrize("mode", [pytest.param("namespaces", marks=namespaces), "fallback"])
@kernel.landlock
def test_a_silent_socket_connect_is_recognised_whatever_the_program_prints(cli, stub, mode):
    """A Python program connects to the host's localhost and, refused, exits 5 printing
    nothing at all: no "Permission denied", no "Couldn't connect". The sandbox saw the
    connection fail (its network's counters; in the fallback, its socket filter), so the
    model is told and the person asked all the same."""
    if mode == "fallback":
        cli.write_config(FALLBACK)
    port = stub.base_url.split(":")[2].split("/")[0]
    program = (
        "import socket, sys\ntry:\n"
        f"    socket.create_connection(('127.0.0.1', {port}))\n"
        "except OSError:\n    sys.exit(5)"
    )
    chat = chat_runs(cli, stub, f'{sys.executable} -c "{program}"', answer="n")
    screen, words = chat.term.text(), unwrapped(chat)
    assert "tried to reach the network" in words and OFFER in words, screen
    assert titled(screen, "exit 5", failed=True), screen
    read = what_the_model_read(stub)
    assert read.startswith("Error: exit code 5\n\n[sandbox: "), read
    assert NOT_REACHABLE in read


@namespaces
def test_a_command_that_fails_without_touching_the_network_gets_no_note(cli, stub):
    """`exit 3` after only a successful connection of its own (a server it started on the
    sandbox's loopback) is not the sandbox's doing: no note, no offer."""
    program = (
        "import socket, sys\nserver = socket.create_server(('127.0.0.1', 0))\n"
        "socket.create_connection(server.getsockname()).close()\nsys.exit(3)"
    )
    chat = chat_runs(cli, stub, f'{sys.executable} -c "{program}"')
    screen = chat.term.text()
    assert titled(screen, "exit 3", failed=False) and OFFER not in unwrapped(chat), screen
    assert "[sandbox: " not in what_the_model_read(stub)


@kernel.landlock
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_fallback_counts_the_sockets_its_filter_refused(cli, stub):
    """With `[sandbox] namespaces = false` (Landlock and a socket filter, no network of the
    sandbox's own to count) the same curl: the filter hands each network socket it refuses
    to the launcher, which counts it. The failure reads `exit 7`, the person is offered to
    run it outside, and the model reads the note."""
    cli.write_config(FALLBACK)
    chat = chat_runs(cli, stub, f"curl -sS {stub.base_url}/models", answer="n")
    screen, words = chat.term.text(), unwrapped(chat)
    assert "tried to reach the network" in words and OFFER in words, screen
    assert titled(screen, "exit 7", failed=True) and "✓ bash" not in screen, screen
    read = what_the_model_read(stub)
    assert read.startswith("Error: exit code 7\ncurl: (7)") and NOT_REACHABLE in read, read
