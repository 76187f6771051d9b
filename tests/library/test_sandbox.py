"""toolnexus.tools.sandbox and its launcher (_sandbox_exec.py): what a confined command may reach,
the environment it sees, what the banner says where there is no sandbox, and that nothing a
command starts outlives it, whichever way the launcher keeps it in. The end-to-end promises
(a hostile model with --yes) are in tests/cli/test_security_sandbox.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import kernel
from tests.support.waiting import running_with, wait_until
from toolnexus.tools import sandbox as sandbox_module
from toolnexus.tools.sandbox import LAUNCHER, Sandbox, SandboxPolicy, Support, reaped, support

LINUX = sys.platform.startswith("linux")
landlock = kernel.landlock


def run(
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, start_new_session=True
    )


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_rsa").write_text("KEY")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


# ----------------------------------------------------------------------------- the policy


def test_an_unknown_mode_is_one_clear_error():
    with pytest.raises(
        ValueError, match="sandbox mode 'strict': use one of workspace-write, read-only, off"
    ):
        SandboxPolicy(mode="strict")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"tmp_bytes": -5}, "sandbox tmp_size -5: give a size in bytes of at least 1048576"),
        ({"tmp_bytes": 0}, "sandbox tmp_size 0: give a size in bytes"),
        ({"env": (3,)}, "sandbox env 3: give names of environment variables"),
        ({"apply": "later"}, "sandbox apply 'later': use one of auto, ask"),
    ],
)
def test_a_setting_that_would_weaken_the_sandbox_is_one_clear_error(given, said):
    """A wrong size would make bubblewrap refuse and commands fall back to Landlock alone:
    refused at once instead, in one line."""
    with pytest.raises(ValueError, match=re.escape(said)):
        SandboxPolicy(**given)


def test_where_there_is_no_sandbox_the_line_says_why_and_that_bash_asks(monkeypatch):
    monkeypatch.setattr(
        sandbox_module,
        "support",
        lambda: Support(0, "no sandbox on darwin yet (toolnexus uses Linux's Landlock)"),
    )
    box = Sandbox()
    assert not box.active
    assert box.describe() == (
        "no sandbox: no sandbox on darwin yet (toolnexus uses Linux's "
        "Landlock); bash asks before every command"
    )
    assert "the user is asked before each command" in box.for_model()
    off = Sandbox(SandboxPolicy(mode="off"))
    assert off.why_not == 'the sandbox is off (sandbox mode "off")'


def test_support_names_the_reason_on_another_system(monkeypatch):
    support.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    try:
        assert support() == Support(0, "no sandbox on darwin yet (toolnexus uses Linux's Landlock)")
    finally:
        support.cache_clear()


@landlock
def test_the_rules_open_the_system_and_the_workspace_not_the_home(home, root, monkeypatch):
    monkeypatch.setenv("PATH", f"{home}{os.pathsep}{home / '.ssh'}{os.pathsep}/usr/bin")
    (home / ".pyenv").mkdir()
    rules = Sandbox(SandboxPolicy(), [root], [home / ".ssh"]).landlock_rules()
    assert str(root) in rules["write"] and "/usr" in rules["read"]
    assert str(home / ".pyenv") in rules["read"]  # a toolchain in the home folder
    everything = [*rules["read"], *rules["write"]]
    assert str(home) not in everything and str(home / ".ssh") not in everything  # via PATH
    read_only = Sandbox(SandboxPolicy(mode="read-only"), [root]).landlock_rules()
    assert str(root) in read_only["read"] and str(root) not in read_only["write"]
    assert rules["network"] is False


# Names the old name filter let through, and doors to the person's session.
LEAKED_BEFORE = {
    "GITHUB_PAT": "ghp_x",
    "DB_PASS": "p",
    "MYSQL_PWD": "p",
    "SENTRY_DSN": "https://k@o1.ingest.sentry.io/1",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/X",
    "DATABASE_URL": "postgres://h/d?password=p",
    "OPENAI_API_KEY": "k",
    "TOOLNEXUS_STORE": "x",
    "KEEP": "v",
}
SESSION_DOORS = (
    "TMUX",
    "STY",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "KRB5CCNAME",
)


@landlock
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_a_confined_command_gets_its_environment_by_allow_list_and_a_private_tmp(root, namespaces):
    doors = {name: "/tmp/door" for name in SESSION_DOORS}
    base = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C", **LEAKED_BEFORE, **doors}
    policy = SandboxPolicy(namespaces=namespaces, env=("KEEP", "TMUX", "DATABASE_URL"))
    box = Sandbox(policy, [root])
    env = box.environment(base)
    assert {k: env[k] for k in ("PATH", "LANG", "LC_ALL", "KEEP")} == {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "KEEP": "v",  # named in [sandbox] env
    }
    leaked = sorted(set(env) & (set(LEAKED_BEFORE) | set(SESSION_DOORS)) - {"KEEP"})
    assert leaked == [], leaked  # a door stays shut even when [sandbox] env names it
    done = run(
        box.command(["sh", "-c", "echo scratch > $TMPDIR/x && cat $TMPDIR/x && env"]), root, env
    )
    assert done.stdout.startswith("scratch\n"), done
    assert "ghp_x" not in done.stdout and "/tmp/door" not in done.stdout


# ----------------------------------------------------------------------------- the launcher


def launch(
    spec: dict[str, object], argv: list[str], cwd: Path, python: str = sys.executable
) -> subprocess.CompletedProcess[str]:
    return run([python, "-I", "-S", str(LAUNCHER), json.dumps(spec), "--", *argv], cwd)


@pytest.mark.skipif(not LINUX, reason="the launcher is Linux's")
@pytest.mark.parametrize("reaper", ["namespace", "subreaper"])
def test_the_command_s_exit_status_comes_back(tmp_path, reaper):
    spec = {"parent": os.getpid(), "landlock": None, "reaper": reaper}
    assert launch(spec, ["sh", "-c", "exit 3"], tmp_path).returncode == 3
    assert launch(spec, ["sh", "-c", "kill -TERM $$"], tmp_path).returncode == 128 + 15
    missing = launch(spec, ["toolnexus-no-such-program"], tmp_path)
    assert missing.returncode == 127
    assert missing.stderr == "cannot run 'toolnexus-no-such-program': No such file or directory\n"


@pytest.mark.skipif(not LINUX, reason="the launcher is Linux's")
@pytest.mark.parametrize("reaper", ["namespace", "subreaper"])
def test_nothing_the_command_started_outlives_it(tmp_path, reaper):
    marker = f"outlive-{reaper}-{id(tmp_path)}-42"
    spec = {"parent": os.getpid(), "landlock": None, "reaper": reaper}
    script = (
        f"export TOOLNEXUS_TEST_MARK={marker.removesuffix('-42')}-$((6*7)); "
        "sleep 300 & setsid sleep 300 & (setsid sh -c 'sleep 300 &') ; echo started"
    )
    done = launch(spec, ["sh", "-c", script], tmp_path)
    assert done.stdout == "started\n", done
    wait_until(lambda: not running_with(marker), "every process the command left")


@pytest.mark.skipif(
    not LINUX
    or os.geteuid() != 0
    or shutil.which("setpriv") is None
    or not os.path.exists("/usr/bin/python3"),
    reason="running as another user needs root and setpriv",
)
def test_another_user_s_command_keeps_its_uid_and_leaves_nothing(tmp_path):
    """An ordinary user gets the PID namespace through a user namespace of their own."""
    marker = f"nobody-{id(tmp_path)}-42"
    script = (
        f"export TOOLNEXUS_TEST_MARK={marker.removesuffix('-42')}-$((6*7)); "
        "setsid sleep 300 & id -u"
    )
    spec = json.dumps({"parent": 0, "landlock": None})
    with tempfile.TemporaryDirectory() as shared:  # pytest's own folders are root's only
        folder = Path(shared)
        folder.chmod(0o755)
        launcher = folder / "launcher.py"
        shutil.copy(LAUNCHER, launcher)
        launcher.chmod(0o644)
        done = run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/python3",
                "-I",
                "-S",
                str(launcher),
                spec,
                "--",
                "sh",
                "-c",
                script,
            ],
            folder,
        )
    assert done.stdout == "65534\n", done
    wait_until(lambda: not running_with(marker), "the setsid sleep to end")


@landlock
def test_a_confined_command_sees_only_its_own_processes(root):
    box = Sandbox(SandboxPolicy(), [root])
    done = run(box.command(["sh", "-c", "ls /proc | grep -c '^[0-9]'"]), root, box.environment())
    assert int(done.stdout) <= 6, done  # init, sh, ls, grep: not the machine's hundreds


def test_without_a_confinement_a_command_is_only_kept_in(tmp_path):
    argv = reaped(["true"])
    if LINUX:
        assert argv[:4] == [sys.executable, "-I", "-S", str(LAUNCHER)]
        assert json.loads(argv[4])["landlock"] is None
    assert argv[-1] == "true"


@pytest.mark.parametrize(
    ("namespaces", "abi", "said"),
    [
        ((), 5, "the network allowed (abstract UNIX sockets of the host reachable too)"),
        ((), 6, "the network allowed, "),  # Landlock 6 scopes abstract sockets
        (("user", "mnt", "pid"), 4, "the network allowed (abstract"),  # no net namespace
    ],
)
def test_network_true_says_when_the_host_s_abstract_sockets_are_reachable(namespaces, abi, said):
    from toolnexus.tools._sandbox_report import Enforced

    granted = Enforced("landlock", namespaces=namespaces, landlock=abi, network_granted=True)
    line = granted.summary()
    assert said in line, line
    assert "processes and memory not capped" in line, line  # no cgroup: said so
