"""What an MCP server asks of `toolnexus ask`, where nobody is at a terminal: an
elicitation is declined and a sampling request refused, each with one line on stderr,
unless a rule ("sampling:NAME" = "allow") lets that server use the model, which then
answers it. `toolnexus` runs in process (the server is a real one) against the loopback
stub."""

from __future__ import annotations

import pytest

from tests.support import cli_helpers
from tests.support.cli_helpers import model_calls, tool_results
from tests.support.mcp_helpers import SERVERS, mcp_file, server_command
from tests.support.stub_provider import Recorded, openai_stream

cli, stub = cli_helpers.cli, cli_helpers.stub

pytest.importorskip("mcp")


def offers(tmp_path) -> str:
    return str(
        mcp_file(
            tmp_path / "mcp.json",
            {"offers": server_command(SERVERS / "offers_server.py")},
        )
    )


def test_an_elicitation_is_declined_with_one_line(cli, stub, tmp_path):
    model_calls(stub, [("offers_who", {})], "no one answered")
    result = cli.call("ask", "--yes", "--mcp", offers(tmp_path), "who am I?")
    assert result.code == 0 and result.stdout == "no one answered\n", result
    assert result.stderr.splitlines() == [
        "toolnexus: declined the MCP server offers's request for input (Who are you?): "
        "nobody can answer here"
    ]
    assert tool_results(stub.requests[1]) == ["no answer: decline"]


def test_sampling_is_refused_without_a_rule(cli, stub, tmp_path):
    model_calls(stub, [("offers_summarize", {"text": "abc"})], "refused")
    result = cli.call("ask", "--yes", "--mcp", offers(tmp_path), "summarize abc")
    assert result.code == 0, result
    assert result.stderr.splitlines() == [
        "toolnexus: refused the MCP server offers's sampling request: nobody can approve it "
        'here (a rule "sampling:offers" = "allow" in [approval] allows it)'
    ]
    [refusal] = tool_results(stub.requests[1])
    assert "sampling needs the user's approval, and nobody can be asked" in refusal
    assert len(stub.requests) == 2  # the model was not asked for the server


def test_a_rule_lets_a_server_sample_and_the_model_answers_it(cli, stub, tmp_path):
    cli.write_config('[approval]\n"sampling:off*" = "allow"\n')

    def handler(request: Recorded):
        said = request.json["messages"][-1]
        if said["role"] == "user" and "Summarize: abc" in str(said["content"]):
            return openai_stream("a short summary")
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("offers_summarize", {"text": "abc"})])
        return openai_stream("done")

    stub.handler = handler
    result = cli.call("ask", "--yes", "--mcp", offers(tmp_path), "summarize abc")
    assert result.code == 0 and result.stdout == "done\n", result
    assert result.stderr == ""
    sampled = stub.requests[1].json
    assert "tools" not in sampled  # the server's request runs with no tools
    assert sampled["messages"] == [
        {"role": "system", "content": "Be brief."},  # the server's system prompt
        {"role": "user", "content": "Summarize: abc"},
    ]
    assert sampled["max_tokens"] == 50  # the server's limit
    assert tool_results(stub.requests[2]) == ["summary from stub-model: a short summary"]


def test_mcp_list_shows_instructions_templates_prompt_commands_and_task_only_tools(cli, tmp_path):
    result = cli.call("mcp", "list", "--mcp", offers(tmp_path))
    assert result.code == 0, result
    lines = result.stdout.splitlines()
    assert "  resource templates (1): note://items/{item}" in lines
    assert "  prompts (1): /offers:review" in lines
    assert "  not offered (they run only as tasks) (1): background_job" in lines
    instructions = lines.index("  instructions:")
    assert lines[instructions + 1] == "    Always call add_more before answering."
