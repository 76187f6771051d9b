"""A program forked by tests/support/prefork.py behaves as the same program started anew: the
suite's `toolnexus` processes and MCP test servers are such forks, so what they show a test
must be what a real process would."""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

from tests.support import prefork
from tests.support.waiting import WAIT_S, alive, wait_until

SCRIPT = """\
import json, os, sys
sys.stdout.write(json.dumps({
    "argv": sys.argv, "cwd": os.getcwd(), "mark": os.environ.get("PREFORK_MARK"),
    "stdin": sys.stdin.read(), "path0": sys.path[0], "pid": os.getpid(),
}))
"""


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "program.py"
    path.write_text(body, encoding="utf-8")
    return str(path)


def run(command: list[str], **options) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=WAIT_S, **options)


def test_a_fork_gets_the_arguments_environment_folder_and_stdin_of_its_launcher(tmp_path):
    program = script(tmp_path, SCRIPT)
    done = run(
        prefork.command("script", program, "one", "two words"),
        input="piped text\n",
        cwd=tmp_path,
        env={**os.environ, "PREFORK_MARK": "seen"},
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["argv"] == [program, "one", "two words"]
    assert seen["cwd"] == str(tmp_path) and seen["path0"] == str(tmp_path)
    assert seen["mark"] == "seen" and seen["stdin"] == "piped text\n"
    assert seen["pid"] != os.getpid()


def test_a_fork_ends_with_its_own_status_and_traceback(tmp_path):
    assert run(prefork.command("script", script(tmp_path, "raise SystemExit(7)"))).returncode == 7
    done = run(prefork.command("script", script(tmp_path, "raise ValueError('broken')")))
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "ValueError: broken" in done.stderr
    said = run(prefork.command("script", script(tmp_path, "import sys; sys.exit('bye')")))
    assert said.returncode == 1 and said.stderr == "bye\n"


def test_the_console_script_runs_as_toolnexus(tmp_path):
    done = run(prefork.command("toolnexus", "--version"), cwd=tmp_path)
    real = run([str(Path(sys.executable).parent / "toolnexus"), "--version"], cwd=tmp_path)
    assert real.returncode == 0 and real.stdout.startswith("toolnexus ")
    assert (done.returncode, done.stdout, done.stderr) == (0, real.stdout, real.stderr)


def start(tmp_path: Path, body: str) -> tuple[subprocess.Popen, int]:
    """The launcher of a program that prints its pid first, and that pid."""
    program = script(tmp_path, "import os, signal, sys, time\n" + body)
    launcher = subprocess.Popen(
        prefork.command("script", program), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert launcher.stdout is not None
    return launcher, int(launcher.stdout.readline())


def test_a_signal_to_the_launcher_reaches_the_fork_whose_status_is_the_launchers(tmp_path):
    launcher, fork = start(
        tmp_path,
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(5))\n"
        "print(os.getpid(), flush=True)\nsys.stdin.read()\n",
    )
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(WAIT_S) == 5  # the fork's handler ran
    wait_until(lambda: not alive(fork), "the fork to end")


def test_a_fork_killed_by_a_signal_is_a_launcher_killed_by_it(tmp_path):
    launcher, fork = start(tmp_path, "print(os.getpid(), flush=True)\nsys.stdin.read()\n")
    os.kill(fork, signal.SIGKILL)
    assert launcher.wait(WAIT_S) == -signal.SIGKILL


def test_a_killed_launcher_takes_its_fork_along(tmp_path):
    launcher, fork = start(
        tmp_path,
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print(os.getpid(), flush=True)\ntime.sleep(600)\n",
    )
    launcher.kill()
    launcher.wait(WAIT_S)
    wait_until(lambda: not alive(fork), "the fork to be killed with its launcher")


def test_a_launcher_gone_before_it_read_the_pid_leaves_the_zygote_serving(tmp_path):
    """A launcher killed before it read the fork's pid resets its connection: the zygote
    takes that as the launcher gone (the fork goes too) and serves the next one."""
    request = json.dumps(
        {
            "run": "script",
            "argv": [script(tmp_path, "import time\ntime.sleep(600)\n")],
            "env": dict(os.environ),
            "cwd": str(tmp_path),
        }
    ).encode()
    with open(os.devnull, "rb") as null, socket.socket(socket.AF_UNIX) as launcher:
        launcher.connect(prefork._zygote_socket())
        fds = array.array("i", [null.fileno()] * 3)
        launcher.sendmsg(
            [struct.pack("!I", len(request)) + request],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)],
        )
        assert select.select([launcher], [], [], WAIT_S)[0]
        fork = int(launcher.recv(64, socket.MSG_PEEK).split()[1])  # b"pid N", left unread
        launcher.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    wait_until(lambda: not alive(fork), "the fork to end")
    done = run(prefork.command("script", script(tmp_path, "print('still here')")))
    assert (done.returncode, done.stdout) == (0, "still here\n"), done.stderr


def test_with_the_switch_off_every_command_is_the_program_started_anew(tmp_path, monkeypatch):
    """TOOLNEXUS_TEST_PREFORK=0: the program is this process's own child, no zygote's fork;
    on, its parent is the zygote."""
    program = script(tmp_path, "import os\nprint(os.getppid())\n")
    monkeypatch.setenv(prefork.SWITCH, "1")
    forked = run(prefork.command("script", program))
    monkeypatch.setenv(prefork.SWITCH, "0")
    fresh = run(prefork.command("script", program))
    assert int(fresh.stdout) == os.getpid(), fresh.stderr
    assert int(forked.stdout) != os.getpid(), forked.stderr
    assert prefork.command("toolnexus", "--version") == [
        str(Path(sys.executable).parent / "toolnexus"),
        "--version",
    ]
    done = run(prefork.command("toolnexus", "--version"), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("toolnexus "), done.stderr
