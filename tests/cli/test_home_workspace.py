"""A workspace that holds the home gets no file or command tools (issue 33): `cd ~ &&
toolnexus ask --builtins --yes` would have let a model `cat ~/.ssh/id_rsa`. `ask` refuses
when it is asked for them (--builtins), the config's `builtins` are only withheld (a piped
question still goes), and a folder inside the home is a workspace like any other. The chat
side (its banner, /workspace) is in tests/terminal/test_home_workspace_pty.py."""

from __future__ import annotations

import os

from tests.support import cli_helpers
from tests.support.cli_helpers import model_calls, tool_results, write_files
from tests.support.stub_provider import Recorded

cli, stub = cli_helpers.cli, cli_helpers.stub

WORKSPACE_TOOLS = {"read_file", "list_dir", "glob", "grep", "write_file", "edit_file", "bash"}
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- NEVER-SENT"


def tool_names(request: Recorded) -> set[str]:
    return {tool["function"]["name"] for tool in request.json.get("tools", [])}


def test_ask_with_builtins_in_the_home_is_refused_in_one_line(cli, stub):
    write_files(cli.home, {".ssh/id_rsa": KEY})
    model_calls(stub, [("bash", {"command": "cat ~/.ssh/id_rsa"})])

    result = cli.call("ask", "--builtins", "--yes", "show me the key")

    assert result.code == 2, result
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: --builtins is refused here: the workspace {cli.home} is your home folder, "
        "where the file and command tools would reach every key and secret; cd into a "
        "project folder, or give --root PATH"
    ]
    assert stub.requests == []  # nothing was sent, no tool ran


def test_ask_with_builtins_and_a_root_holding_the_home_is_refused(cli, stub):
    cli.in_project()
    for root in ("/", str(cli.home.parent)):
        result = cli.call("ask", "--builtins", "--root", root, "hi")
        assert result.code == 2, result
        assert result.stderr.splitlines() == [
            f"error: --builtins is refused here: the workspace {root} holds your home "
            "folder, where the file and command tools would reach every key and secret; cd "
            "into a project folder, or give --root PATH"
        ]
    assert stub.requests == []


def test_a_link_to_the_home_is_judged_as_the_home(cli, stub):
    project = cli.in_project()
    (project / "up").symlink_to(cli.home)

    result = cli.call("ask", "--builtins", "--root", "up", "hi")

    assert result.code == 2, result
    assert f"the workspace {cli.home} is your home folder" in result.stderr


def test_a_piped_question_in_the_home_is_answered_as_before(cli, stub):
    result = cli.call("ask", "review this", input="diff --git a/x b/x\n+new line\n")

    assert result.code == 0, result
    assert result.stdout == f"{cli_helpers.DEFAULT_ANSWER}\n"
    assert result.stderr == ""
    assert stub.requests[0].json["messages"][-1]["content"] == (
        "review this\n\ndiff --git a/x b/x\n+new line\n"
    )


def test_the_configs_builtins_are_withheld_in_the_home_with_a_note(cli, stub):
    write_files(cli.home, {".ssh/id_rsa": KEY})
    cli.write_config("builtins = true\n")
    model_calls(stub, [("read_file", {"path": ".ssh/id_rsa"})], "no such tool")

    result = cli.call("ask", "--yes", "show me the key")

    assert result.code == 0, result
    assert tool_names(stub.requests[0]) == {"fetch_url"}  # the web stays; files do not
    assert KEY not in tool_results(stub.requests[1])[0]
    assert result.stderr.splitlines() == [
        f"toolnexus: file and command tools are off: the workspace {cli.home} is your home "
        "folder, where they would reach every key and secret; cd into a project folder, or "
        "give --root PATH"
    ]


def test_a_folder_inside_the_home_gets_every_tool(cli, stub):
    project = cli.in_project()
    write_files(project, {"notes.txt": "buy milk\n"})
    model_calls(stub, [("read_file", {"path": "notes.txt"})])

    result = cli.call("ask", "--builtins", "read my notes")

    assert result.code == 0, result
    assert WORKSPACE_TOOLS <= tool_names(stub.requests[0])
    assert tool_results(stub.requests[1]) == ["     1\tbuy milk"]
    assert result.stderr == ""


def test_tools_lists_none_of_them_in_the_home_and_says_why(cli):
    result = cli.call("tools", "--builtins")

    assert result.code == 0, result
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == ["fetch_url"]
    assert result.stderr.startswith("toolnexus: file and command tools are off: the workspace")


def test_the_home_is_read_by_its_real_path(cli, stub, tmp_path):
    """HOME spelled through a link still names the home."""
    link = tmp_path / "link-to-home"
    link.symlink_to(cli.home)
    result = cli.call("ask", "--builtins", "hi", env={"HOME": str(link)})
    assert result.code == 2, result
    assert f"the workspace {os.path.realpath(cli.home)} is your home folder" in result.stderr
