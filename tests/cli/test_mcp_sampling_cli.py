"""What a model call for an MCP server's sampling request carries, in each style, as the
stub endpoint receives it: the request's `maxTokens` as the reply's limit (capped by
`mcp_sampling_max_tokens`, raised by what the model may think), its `systemPrompt` as the
system prompt, its `temperature` and `stopSequences` where the style takes them, and the
configured model its `modelPreferences` hints name; the server hears which model
answered. `toolnexus ask` runs in process against tests/support/mcp_servers/asking_server.py,
a rule letting the server sample."""

from __future__ import annotations

import pytest

from tests.support import cli_helpers
from tests.support.cli_helpers import CLI, tool_results
from tests.support.mcp_helpers import SERVERS, mcp_file, server_command
from tests.support.stub_provider import (
    Recorded,
    anthropic_stream,
    openai_stream,
    responses_stream,
)

cli, stub = cli_helpers.cli, cli_helpers.stub

pytest.importorskip("mcp")

STREAMS = {"openai": openai_stream, "anthropic": anthropic_stream, "responses": responses_stream}
SAMPLE = {
    "text": "Summarize: abc",
    "max_tokens": 20,
    "system": "Be brief.",
    "temperature": 0.2,
    "stop": ["END"],
}


def sampled(cli: CLI, stub, tmp_path, style: str, args: dict, config: str = "") -> dict:
    """`ask` with the model calling the server's `sample` tool with `args`, in `style`:
    the body of the sampling request the stub received; the tool's result (what the
    server got back) is checked to name the model that answered."""
    cli.write_config(
        f'mcp_sampling_max_tokens = 100\n{config}\n[providers.stub]\nstyle = "{style}"\n'
        '[models.stub-model]\nprovider = "stub"\n'
        '[models.big]\nprovider = "stub"\nmodel = "stub-big-model"\n'
        '[approval]\n"sampling:asking" = "allow"\n'
    )
    stream = STREAMS[style]

    def handler(request: Recorded):
        if len(stub.requests) == 1:
            return stream(tool_calls=[("asking_sample", args)])
        if not request.json.get("tools"):  # the server's sampling request
            return stream("sampled.", model=request.json["model"])
        return stream("done")

    stub.handler = handler
    servers = mcp_file(
        tmp_path / "mcp.json", {"asking": server_command(SERVERS / "asking_server.py")}
    )
    result = cli.call("ask", "--yes", "--mcp", str(servers), "summarize abc")
    assert result.code == 0 and result.stdout == "done\n", result
    body = stub.requests[1].json
    assert "tools" not in body
    answered = stub.requests[2].json
    said = str(answered.get("messages") or answered.get("input"))
    assert f"model={body['model']} stop=endTurn text=sampled." in said
    return body


def test_the_openai_style_gets_the_limit_system_prompt_temperature_and_stops(cli, stub, tmp_path):
    body = sampled(cli, stub, tmp_path, "openai", SAMPLE)
    assert body["max_tokens"] == 20
    assert body["temperature"] == 0.2 and body["stop"] == ["END"]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Summarize: abc"},
    ]
    assert tool_results(stub.requests[2]) == ["model=stub-model stop=endTurn text=sampled."]


def test_the_anthropic_style_gets_them_as_its_own_keys(cli, stub, tmp_path):
    body = sampled(cli, stub, tmp_path, "anthropic", SAMPLE)
    assert body["max_tokens"] == 20 and "thinking" not in body
    assert body["temperature"] == 0.2 and body["stop_sequences"] == ["END"]
    assert body["system"] == "Be brief."
    assert body["messages"][-1]["content"] == [{"type": "text", "text": "Summarize: abc"}]


def test_the_responses_style_gets_those_it_has(cli, stub, tmp_path):
    body = sampled(cli, stub, tmp_path, "responses", SAMPLE)
    assert body["max_output_tokens"] == 20 and body["temperature"] == 0.2
    assert body["instructions"] == "Be brief."
    assert "stop" not in body  # the Responses API has no stop sequences


def test_a_limit_above_the_configured_maximum_is_cut_to_it(cli, stub, tmp_path):
    body = sampled(cli, stub, tmp_path, "openai", {"text": "go on", "max_tokens": 10_000})
    assert body["max_tokens"] == 100


def test_a_thinking_model_gets_its_thinking_budget_on_top_of_the_limit(cli, stub, tmp_path):
    body = sampled(cli, stub, tmp_path, "anthropic", SAMPLE, config='reasoning = "low"')
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 20 + 1024


def test_a_hint_naming_a_configured_model_picks_it_and_the_server_hears_so(cli, stub, tmp_path):
    body = sampled(cli, stub, tmp_path, "openai", {**SAMPLE, "hints": ["nothing-here", "BIG"]})
    assert body["model"] == "stub-big-model"
    assert tool_results(stub.requests[2]) == ["model=stub-big-model stop=endTurn text=sampled."]
    stub.requests.clear()
    body = sampled(cli, stub, tmp_path, "openai", {**SAMPLE, "hints": ["unknown"]})
    assert body["model"] == "stub-model"
