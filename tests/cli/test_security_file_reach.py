"""What the file tools open on `--yes` (issue 33, "the sandbox is the kernel's whole
boundary"): inside the workspace every file that looks like it holds secrets asks a person,
by the built-in names and those the config adds; outside it, `--yes` opens only what a
command in the sandbox could read too (the system folders, the toolchains in the home
folder, the sandbox's read folders), and anything else, the home folder above all, needs a
person or a path rule.

`toolnexus ask --builtins --yes` runs in a pipe (nobody to ask) against the loopback stub,
which scripts a hostile model's tool calls; every user has a fake HOME under tmp_path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import cli_helpers
from tests.support.cli_helpers import CLI, model_calls, tool_results, write_files

cli, stub = cli_helpers.cli, cli_helpers.stub
NOBODY = "(not approved: nobody to ask)"
NOT_BY_YES = "--yes does not answer this, only a person or a rule in the config"

# The secret-looking files issue 33 found read with --yes, each with its own marker.
EIGHT = {
    ".envrc": "export TOKEN=ENVRC-0001",
    "credentials.json": '{"key": "CREDS-0002"}',
    "service-account.json": '{"private_key": "GCP-0003"}',
    "sub/.aws/credentials": "aws_secret_access_key = AWS-0004",
    "terraform.tfstate": '{"password": "TFSTATE-0005"}',
    "deploy/.docker/config.json": '{"auths": {"r": {"auth": "DOCKER-0006"}}}',
    "secrets.yaml": "db: SECRETS-0007",
    ".htpasswd": "admin:HTPASSWD-0008",
}


@pytest.fixture
def work(cli: CLI) -> Path:
    """A workspace folder beside (not inside) the fake HOME."""
    folder = cli.root / "work"
    folder.mkdir()
    return folder


def ask_with_yes(cli: CLI, stub, work: Path, calls: list[tuple[str, dict]]) -> list[str]:
    """What the model reads back from `calls`, run by `ask --builtins --yes` in a pipe; every
    line on stderr says why a question was declined."""
    model_calls(stub, calls, "done")
    result = cli.call("ask", "--builtins", "--yes", "--root", str(work), "go")
    assert result.code == 0, result
    assert all(line.startswith("toolnexus: declined") for line in result.stderr.splitlines())
    return tool_results(stub.requests[-1])


def test_the_eight_secret_looking_files_ask_a_person_whatever_yes_says(cli, stub, work):
    write_files(work, {**EIGHT, "notes.txt": "a plain note"})
    calls = [("read_file", {"path": name}) for name in EIGHT]
    calls += [("grep", {"pattern": "-000", "path": "."}), ("read_file", {"path": "notes.txt"})]

    *asked, searched, plain = ask_with_yes(cli, stub, work, calls)

    assert all(
        r.startswith("Error: declined: read ")
        and "says it holds secrets" in r
        and r.endswith(NOBODY)
        for r in asked
    ), asked
    assert searched == "no matches"  # grep does not search them either
    assert plain.endswith("a plain note")
    sent = str([request.json for request in stub.requests])
    for text in EIGHT.values():
        marker = re.search(r"[A-Z]+-\d{4}", text)
        assert marker is not None and marker[0] not in sent, marker


def test_a_name_the_config_adds_asks_a_person(cli, stub, work):
    cli.write_config('[approval]\nsecret_files = ["*.vault", "deploy/keys/*"]\n')
    write_files(
        work,
        {"prod.VAULT": "VAULT-0009", "deploy/keys/main": "DEPLOY-0010", "keys/main": "plain"},
    )
    calls = [("read_file", {"path": p}) for p in ("prod.VAULT", "deploy/keys/main", "keys/main")]
    calls.append(("grep", {"pattern": "-00|plain", "path": "."}))

    vault, key, plain, searched = ask_with_yes(cli, stub, work, calls)

    assert "says it holds secrets" in vault and vault.endswith(NOBODY)
    assert "says it holds secrets" in key and key.endswith(NOBODY)
    assert plain.endswith("plain")
    assert searched == f"{work / 'keys' / 'main'}:1: plain"  # nor are they searched
    assert "VAULT-0009" not in str(stub.requests[-1].json)
    assert "DEPLOY-0010" not in str(stub.requests[-1].json)


def test_a_secret_files_entry_that_is_no_file_name_is_refused_naming_its_line(cli):
    path = cli.write_config('[approval]\nwrite_file = "ask"\nsecret_files = ["~/.vault"]\n')
    result = cli.call("ask", "--builtins", "hi")
    assert result.code != 0
    assert f"{path}:3: 'approval.secret_files': secret file pattern '~/.vault'" in result.stderr
    cli.write_config('[approval]\nsecret_files = "*.vault"\n')
    result = cli.call("ask", "--builtins", "hi")
    assert result.code != 0 and 'or a list of file names, e.g. ["*.vault"]' in result.stderr


def test_yes_opens_no_file_of_the_home_folder_outside_the_workspace(cli, stub, work):
    write_files(
        cli.home,
        {
            ".vault-token": "hvs.VAULT-TOKEN-0011",
            ".bash_history": "export PASSWORD=HISTORY-0012",
            "id_rsa.bak": "BACKUP-KEY-0013",
            "notes.txt": "NOTES-0014",
        },
    )
    write_files(cli.root / "elsewhere", {"shared.txt": "ELSEWHERE-0015"})
    calls = [
        ("read_file", {"path": p})
        for p in ("~/.bash_history", "~/id_rsa.bak", "~/notes.txt", "../elsewhere/shared.txt")
    ]
    calls += [
        ("grep", {"pattern": "-00", "path": "~"}),
        ("write_file", {"path": "~/notes.txt", "content": "overwritten"}),
        ("read_file", {"path": "~/.vault-token"}),
    ]
    model_calls(stub, calls, "done")

    result = cli.call("ask", "--builtins", "--yes", "--root", str(work), "go")

    assert result.code == 0, result
    *declined, vault = tool_results(stub.requests[-1])
    assert all(r.startswith("Error: declined: ") and r.endswith(NOBODY) for r in declined), declined
    assert vault.endswith(
        "holds secrets: no tool may read or change it (a path rule naming it "
        "exactly is the only way to allow it)"
    )
    for line in result.stderr.splitlines():
        assert NOT_BY_YES in line, line
    sent = str([request.json for request in stub.requests])
    for marker in ("VAULT-TOKEN", "HISTORY-0012", "BACKUP-KEY", "NOTES-0014", "ELSEWHERE"):
        assert marker not in sent, marker
    assert (cli.home / "notes.txt").read_text() == "NOTES-0014"


def test_yes_still_opens_what_a_sandboxed_command_could_read(cli, stub, work):
    cli.write_config('[sandbox]\nread = ["~/docs"]\n')
    write_files(cli.home, {"docs/guide.txt": "the guide", ".cargo/bin/README": "toolchain"})
    system_file = Path("/etc/passwd")
    first_line = system_file.read_text().splitlines()[0]
    calls = [
        ("read_file", {"path": p})
        for p in (str(system_file), "~/docs/guide.txt", "~/.cargo/bin/README")
    ]

    system, configured, toolchain = ask_with_yes(cli, stub, work, calls)

    assert system.splitlines()[0] == f"     1\t{first_line}"
    assert configured.endswith("the guide")
    assert toolchain.endswith("toolchain")


def test_a_path_rule_still_opens_a_home_file_with_or_without_yes(cli, stub, work):
    cli.write_config('[approval.paths]\n"~/notes.txt" = "allow"\n')
    write_files(cli.home, {"notes.txt": "my notes", "diary.txt": "DIARY-0016"})
    calls = [("read_file", {"path": "~/notes.txt"}), ("read_file", {"path": "~/diary.txt"})]
    for flags in (["--yes"], []):
        model_calls(stub, calls, "done")
        result = cli.call("ask", "--builtins", *flags, "--root", str(work), "go")
        assert result.code == 0, result
        notes, diary = tool_results(stub.requests[-1])
        assert notes.endswith("my notes")
        assert diary.startswith("Error: declined: read ~/diary.txt") and diary.endswith(NOBODY)
