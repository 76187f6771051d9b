"""What the file tools open on `--yes` (issue 33, "the sandbox is the kernel's whole
boundary"): inside the workspace every file that looks like it holds secrets asks a person,
by the built-in names and those the config adds.

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
        r.startswith("declined: read ") and "says it holds secrets" in r and r.endswith(NOBODY)
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
