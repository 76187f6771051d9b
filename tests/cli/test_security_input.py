"""Security promises: files holding typed text or keys are 0600 whatever the umask and the
folder's mode; a config file others can write is refused, as ssh refuses one; no input
gives a traceback - undecodable stdin or config, a config path that is a folder, a number
out of its range, huge stdin, a broken or locked thread database, a closed stdout. Each runs
the real CLI as a subprocess (or in a pty where it needs a terminal)."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess

import pexpect
import pytest

from tests.support import pty_screen
from tests.support.cli_helpers import ENTRY, user_text


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def run_bytes(cli, *args: str, data: bytes, env: dict | None = None) -> tuple[int, str, str]:
    done = subprocess.run(
        [*ENTRY, *args],
        input=data,
        capture_output=True,
        env=cli.merged_env(env),
        cwd=cli.home,
        timeout=60,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def under_umask_000(cli, *args: str) -> pexpect.spawn:
    """`toolnexus ARGS` in a pty, started by a shell that set umask 000 first."""
    command = " ".join(f"'{part}'" for part in [*ENTRY, *args])
    return pexpect.spawn(
        "/bin/sh",
        ["-c", f"umask 000; exec {command}"],
        env=cli.merged_env({"LANG": "C.UTF-8"}),
        encoding="utf-8",
        dimensions=(30, 100),
        timeout=20,
        cwd=str(cli.home),
    )


# ------------------------------------------------------------------------- file modes


def test_the_prompt_history_is_0600_under_umask_000_in_an_open_folder(cli, stub):
    state = cli.root / "state" / "toolnexus"
    state.mkdir(parents=True)
    state.chmod(0o777)
    child = under_umask_000(cli, "chat")
    child.logfile_read = pty_screen.Terminal(child, 30, 100)
    child.expect("›")
    child.send("hello\r")
    child.expect("Hello from the stub")
    child.expect("›")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert mode(state / "history") == 0o600


def test_the_keys_file_is_0600_under_umask_000_in_an_open_folder(cli):
    cli.config_dir.mkdir(parents=True)
    cli.config_dir.chmod(0o777)
    child = under_umask_000(cli, "keys", "set", "openai")
    child.expect("API key for openai")
    child.send("sk-test-0123456789\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert mode(cli.keys_file) == 0o600


def test_a_config_file_toolnexus_writes_is_0600_under_umask_000_and_it_reads_it(cli):
    child = under_umask_000(cli, "config", "init")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert mode(cli.config_file) == 0o600
    assert cli.call("config", "show").code == 0


# ------------------------------------------------------------------------- bad input


def test_non_utf8_stdin_goes_through_with_replacement_and_one_warning(cli, stub):
    code, out, err = run_bytes(cli, "ask", "translate", data="café olé".encode("latin-1"))
    assert code == 0, err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and "not valid UTF-8" in err
    assert user_text(stub.requests[0]) == ["translate\n\ncaf\ufffd ol\ufffd"]


def test_stdin_over_16_mib_is_one_line_and_nothing_is_sent(cli, stub):
    code, out, err = run_bytes(cli, "ask", data=b"a" * (16 * 1024 * 1024 + 1))
    assert code == 2
    assert err.startswith("error: stdin is over 16 MiB") and err.count("\n") == 1, err
    assert stub.requests == []


def test_a_non_utf8_config_file_is_one_line(cli, stub):
    cli.config_dir.mkdir(parents=True)
    cli.config_file.write_bytes(b'system = "caf\xe9"\n')
    result = cli.call("ask", "hi")
    assert result.code == 2, result
    assert "UTF-8" in result.stderr and str(cli.config_file) in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


def one_line_before_anything_is_sent(result, stub) -> str:
    assert result.code == 2, result
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result
    assert stub.requests == []
    return result.stderr


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_config_file_others_can_write_is_refused(cli, stub, mode):
    cli.write_config('system = "answer in French"\n').chmod(mode)
    for args in (("ask", "hi"), ("config", "show")):
        line = one_line_before_anything_is_sent(cli.call(*args), stub)
        assert line == (
            f"error: {cli.config_file} is writable by other users than you: "
            f"'chmod go-w {cli.config_file}' fixes it\n"
        )


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_config_file_owned_by_another_user_is_refused(cli, stub):
    cli.write_config('system = "answer in French"\n')
    os.chown(cli.config_file, 65534, 65534)  # nobody
    line = one_line_before_anything_is_sent(cli.call("ask", "hi"), stub)
    assert line == (
        f"error: {cli.config_file} belongs to another user (uid 65534): only "
        "a config file of your own (or root's) is read\n"
    )


@pytest.mark.parametrize(
    "setting, said",
    [
        (
            "max_turns = 0",
            "config.toml:1: 'max_turns' must be a whole number from 1 to 1000 "
            "(model calls per question)",
        ),
        ("max_turns = 5000", "'max_turns' must be a whole number from 1 to 1000"),
        (
            "timeout = nan",
            "config.toml:1: 'timeout' must be a number of seconds above 0 and "
            "at most 86400 (a day)",
        ),
        ("timeout = inf", "'timeout' must be a number of seconds above 0 and at most 86400"),
        (
            "[models.m]\ncontext_window = 10_000_000_000",
            "config.toml:2: 'models.m.context_window' must be a whole number from 1 to 100000000 "
            "(tokens)",
        ),
        (
            "[providers.p]\napi_key_cmd_timeout = 1e9",
            "config.toml:2: 'providers.p.api_key_cmd_timeout' must be a number of seconds above 0 "
            "and at most 3600 (an hour)",
        ),
    ],
)
def test_a_number_out_of_its_range_is_one_line(cli, stub, setting, said):
    cli.write_config(setting + "\n")
    line = one_line_before_anything_is_sent(cli.call("ask", "hi"), stub)
    assert said in line, line


def test_a_config_path_that_is_a_folder_is_one_line(cli, stub, tmp_path):
    for args in (("ask", "hi"), ("config", "show"), ("threads", "list")):
        result = cli.call(*args, "--config", str(tmp_path))
        assert result.code == 2, result
        assert str(tmp_path) in result.stderr and "directory" in result.stderr
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


THREADS = [
    ("list",),
    ("show", "t1"),
    ("rm", "--yes", "t1"),
    ("rename", "t1", "new"),
    ("export", "t1"),
    ("search", "hello"),
]


def break_database(cli) -> None:
    cli.db_path.parent.mkdir(parents=True, exist_ok=True)
    cli.db_path.write_bytes(b"this is not a database at all\x00\xff" * 100)


@pytest.mark.parametrize("args", THREADS, ids=lambda args: args[0])
def test_a_broken_thread_database_is_one_line_in_every_threads_command(cli, args):
    break_database(cli)
    result = cli.call("threads", *args)
    assert result.code == 1, result
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error:") and result.stderr.count("\n") == 1, result
    assert str(cli.db_path) in result.stderr


def test_a_broken_thread_database_is_one_line_in_ask(cli, stub):
    break_database(cli)
    for args in (("ask", "hi"), ("ask", "-c", "hi")):
        result = cli.call(*args)
        assert result.code == 1, result
        assert "Traceback" not in result.stderr
        assert result.stderr.splitlines()[-1].startswith("error:"), result


def test_a_broken_thread_database_in_chat_is_a_line_and_the_chat_goes_on(cli, stub):
    break_database(cli)
    child = pty_screen.spawn(cli, "chat", rows=30, cols=100, timeout=20)
    term = pty_screen.Terminal(child, 30, 100)
    child.logfile_read = term
    child.expect("›")
    child.send("hello\r")
    child.expect("error: ")
    child.expect("›")
    child.send("/threads\r")
    child.expect("error: ")
    child.expect("›")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert "Traceback" not in term.text(), term.text()
    assert child.exitstatus == 0


def test_a_locked_thread_database_is_one_line(cli, stub):
    assert cli.call("ask", "--id", "t1", "hello").code == 0
    holder = sqlite3.connect(cli.db_path, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        quick = {"TOOLNEXUS_STORE": f"sqlite://{cli.db_path}?timeout=0.5"}
        result = cli.call("threads", "rename", "t1", "new", env=quick)
    finally:
        holder.close()
    assert result.code == 1, result
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result
    assert "locked" in result.stderr


def piped(cli, command: str) -> subprocess.CompletedProcess:
    """`toolnexus ...` piped into `command` by bash; prints toolnexus's own exit code."""
    line = " ".join(ENTRY) + f' {command}; echo "toolnexus exit ${{PIPESTATUS[0]}}"'
    return subprocess.run(
        ["bash", "-c", line],
        capture_output=True,
        text=True,
        env=cli.merged_env(),
        cwd=cli.home,
        timeout=60,
    )


def test_a_closed_stdout_ends_quietly(cli, stub):
    for command in (
        'ask -v "x" | head -c 1',
        "ask --json x | true",
        "ask --events x | true",
        "threads list | true",
    ):
        done = piped(cli, command)
        assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done
        assert "toolnexus exit" in done.stdout
