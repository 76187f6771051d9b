"""Optional: the npm reference servers (`@modelcontextprotocol/server-everything` and
`-filesystem`), when node and npm are here and the packages can be installed (into
pytest's cache, so once); skipped otherwise, so nothing here needs the network in CI.
Every tool server-everything lists is offered (its sampling, elicitation and roots tools
among them, as those are advertised) except one that runs only as a task, and each runs
once; the filesystem server takes the workspace as its root."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import pytest_asyncio

from tests.support.waiting import eventually
from toolnexus import ToolContext, create_toolkit
from toolnexus.mcp.elicitation import form_fields

pytest.importorskip("mcp")

PACKAGES = ["@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem"]
INSTALL_S = 300
START_S = 120.0
# arguments for the tools that need some; every other tool runs with none
ARGUMENTS = {
    "echo": {"message": "hi"},
    "get-annotated-message": {"messageType": "error"},
    "get-structured-content": {"location": "New York"},
    "get-sum": {"a": 1, "b": 2},
    "trigger-long-running-operation": {"duration": 0.2, "steps": 2},
    "trigger-url-elicitation": {"url": "https://example.com/consent"},
    "trigger-sampling-request": {"prompt": "say hi", "maxTokens": 10},
    "gzip-file-as-resource": {"data": "data:text/plain;base64,aGVsbG8="},  # no network
}
NEEDS_THE_CLIENT = {
    "get-roots-list",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    "trigger-sampling-request",
}  # listed only when roots etc. are advertised


@pytest.fixture(scope="module")
def npm_bin(request) -> Path:
    """The folder of the installed servers' commands; the tests skip without them."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node and npm are not installed")
    prefix = Path(request.config.cache.mkdir("npm-mcp-servers"))
    bin_dir = prefix / "node_modules" / ".bin"
    if not (bin_dir / "mcp-server-everything").exists():
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *PACKAGES],
                capture_output=True,
                text=True,
                timeout=INSTALL_S,
            )
        except subprocess.TimeoutExpired:
            pytest.skip("installing the npm reference servers took too long")
        if done.returncode != 0:
            pytest.skip(f"the npm reference servers cannot be installed: {done.stderr[-300:]}")
    return bin_dir


@pytest_asyncio.fixture(loop_scope="module")
async def everything(npm_bin):
    toolkit = await create_toolkit(
        mcp_config={
            "mcpServers": {
                "everything": {"command": str(npm_bin / "mcp-server-everything"), "args": ["stdio"]}
            }
        },
        mcp_timeout=START_S,
    )
    await toolkit.started()
    yield toolkit
    await toolkit.close()


@pytest.mark.timeout(INSTALL_S + 2 * START_S)
@pytest.mark.asyncio(loop_scope="module")
async def test_every_tool_of_server_everything_is_offered_and_runs(everything):
    [pool] = everything.sources
    [server] = pool.servers
    assert server.status.ok
    listed = {entry["name"] for entry in server.offer.tools}
    offered = {
        tool.name.removeprefix("everything_")
        for tool in everything.tools()
        if tool.source == "mcp:everything"
    }
    assert offered == listed - set(server.task_only)
    assert NEEDS_THE_CLIENT <= offered
    assert server.offer.instructions  # it says how to use it

    async def elicit(name, request):
        content = {
            f.name: ([f.choices[0]] if f.multiple else f.choices[0])
            if f.choices
            else {"string": "x", "number": 1, "integer": 1, "boolean": True}[f.kind]
            for f in form_fields(request.get("requestedSchema"))
            if f.required
        }
        return {"action": "accept", "content": content}

    async def sample(name, params):
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "sampled hi"},
            "model": "the-model",
        }

    pool.requests.elicit, pool.requests.sample = elicit, sample
    failed = {}
    for name in sorted(offered):
        result = await everything.execute(
            f"everything_{name}", ARGUMENTS.get(name, {}), ToolContext()
        )
        if result.is_error:
            failed[name] = result.output
    assert failed == {}
    roots = await everything.execute("everything_get-roots-list", {}, ToolContext())
    assert Path.cwd().as_uri() in roots.output
    sampled = await everything.execute(
        "everything_trigger-sampling-request", ARGUMENTS["trigger-sampling-request"], ToolContext()
    )
    assert "sampled hi" in sampled.output
    links = await everything.execute("everything_get-resource-links", {"count": 1}, ToolContext())
    uri = links.output.split("[resource link: ")[1].split(" ")[0]
    read = await everything.execute("read_resource", {"uri": uri}, ToolContext())
    assert not read.is_error and read.output.startswith(f"[resource: {uri}")


@pytest.mark.timeout(INSTALL_S + 2 * START_S)
@pytest.mark.asyncio
async def test_server_filesystem_takes_the_workspace_as_its_root(npm_bin, tmp_path):
    (tmp_path / "notes.txt").write_text("from the workspace", encoding="utf-8")
    toolkit = await create_toolkit(
        mcp_config={"mcpServers": {"files": {"command": str(npm_bin / "mcp-server-filesystem")}}},
        mcp_roots=[tmp_path],
        mcp_timeout=START_S,
    )
    try:
        await toolkit.started()
        [server] = toolkit.sources[0].servers
        # it asks for the roots once it runs, in the background; its stderr says when
        await eventually(
            lambda: any("from MCP roots" in line for line in server.stderr.lines(20)),
            "the server to take the roots",
            timeout=START_S,
        )
        allowed = await toolkit.execute("files_list_allowed_directories", {}, ToolContext())
        assert str(tmp_path.resolve()) in allowed.output, allowed.output
        read = await toolkit.execute(
            "files_read_text_file", {"path": str(tmp_path / "notes.txt")}, ToolContext()
        )
        assert read.output == "from the workspace", read.output
    finally:
        await toolkit.close()
