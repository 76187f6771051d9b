"""The roots MCP servers are told of (issue 33): the workspace, but none where it is the
home or holds it (the filesystem server takes its roots for the folders it may serve: told
the home, it served toolnexus's own token file); a server's `roots` in mcp.json, `false`
(none) or a list of folders, are exactly what it is told; `mcp list` (and `/mcp`) show
what each server was given; a malformed `roots` is one clear line. The servers are the
test ones of tests/support/mcp_servers (`calc_roots` answers the roots it was told)."""

from __future__ import annotations

import json

import pytest

from tests.support import cli_helpers
from tests.support.cli_helpers import model_calls, tool_results
from tests.support.mcp_helpers import calc, mcp_file

cli, stub = cli_helpers.cli, cli_helpers.stub

pytest.importorskip("mcp")


def roots_told(cli, stub, config, *calls: str) -> list[str]:
    """What each server's `roots` tool (by its tool name) answered, called by the model in
    `ask --yes`."""
    model_calls(stub, [(name, {}) for name in calls])
    result = cli.call("ask", "--yes", "--mcp", str(config), "which roots?")
    assert result.code == 0 and result.stderr == "", result
    return tool_results(stub.requests[-1])


def test_a_server_is_told_no_roots_when_the_workspace_is_the_home(cli, stub, tmp_path):
    config = mcp_file(tmp_path / "mcp.json", {"calc": calc()})
    assert roots_told(cli, stub, config, "calc_roots") == [""]

    project = cli.in_project()
    assert roots_told(cli, stub, config, "calc_roots") == [project.as_uri()]


def test_roots_false_gives_none_and_a_list_gives_exactly_that_list(cli, stub, tmp_path):
    project = cli.in_project()
    data, docs = tmp_path / "data", cli.home / "docs"
    config = mcp_file(
        tmp_path / "mcp.json",
        {
            "none": calc(roots=False),
            "listed": calc(roots=[str(data), "~/docs"]),
            "usual": calc(roots=True),
        },
    )
    told = roots_told(cli, stub, config, "none_roots", "listed_roots", "usual_roots")
    assert told == ["", f"{data.as_uri()}\n{docs.as_uri()}", project.as_uri()]


def test_mcp_list_shows_the_roots_each_server_was_given(cli, tmp_path):
    project = cli.in_project()
    config = mcp_file(
        tmp_path / "mcp.json",
        {"usual": calc(), "none": calc(roots=False), "listed": calc(roots=["/srv/a", "/srv/b"])},
    )
    result = cli.call("mcp", "list", "--mcp", str(config))
    assert result.code == 0, result
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("  roots")] == [
        f"  roots (1): {project}",
        "  roots: none",
        "  roots (2): /srv/a, /srv/b",
    ]

    listed = cli.call("mcp", "list", "--json", "--mcp", str(config))
    assert [row["roots"] for row in json.loads(listed.stdout)] == [
        [str(project)],
        [],
        ["/srv/a", "/srv/b"],
    ]

    cli.cwd = cli.home
    at_home = cli.call("mcp", "list", "--json", "--mcp", str(config))
    assert json.loads(at_home.stdout)[0]["roots"] == []


@pytest.mark.parametrize(
    ("roots", "said"),
    [
        ("~/project", "'roots' must be false (no roots) or a list of folders, not \"~/project\""),
        ([1, 2], "'roots' must be false (no roots) or a list of folders, not [1, 2]"),
        (
            {"path": "/srv"},
            '\'roots\' must be false (no roots) or a list of folders, not {"path": "/srv"}',
        ),
        (["/srv", "data"], "roots[1] must be an absolute folder (or start with ~), not 'data'"),
        (["${NOT_SET_HERE}"], "roots[0] uses ${NOT_SET_HERE}, which is not set"),
    ],
    ids=["a string", "numbers", "an object", "relative", "unset variable"],
)
def test_a_malformed_roots_is_one_clear_line(cli, stub, tmp_path, roots, said):
    config = mcp_file(tmp_path / "mcp.json", {"bad": calc(roots=roots)})
    result = cli.call("ask", "--mcp", str(config), "hi")
    assert result.code == 0 and result.stdout == f"{cli_helpers.DEFAULT_ANSWER}\n", result
    assert result.stderr.splitlines() == [
        f"warning: MCP server bad failed: {said}; its tools are unavailable "
        "('toolnexus tools' shows every status)"
    ]
