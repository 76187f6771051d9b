"""Everything an MCP server offers besides tools, against a real server written with the
SDK (tests/support/mcp_servers/offers_server.py) and the agent loop on the scripted model:
instructions, elicitation, sampling, tools/list_changed, resources (links, templates,
read_resource), prompts and completion, task-only tools and tool annotations."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytest_asyncio

from tests.support.mcp_helpers import SERVERS, START, server_command, tool_messages
from tests.support.scripted import calling, scripted_client
from toolnexus import ToolContext, ToolnexusError, create_toolkit
from toolnexus.mcp.elicitation import field_value, form_fields
from toolnexus.mcp.prompts import complete, get_prompt
from toolnexus.mcp.sampling import describe_sampling, sampling_call
from toolnexus.tools.approval import ApprovalPolicy
from toolnexus.wire import wire_style

pytest.importorskip("mcp")

shared_loop = pytest.mark.asyncio(loop_scope="module")
LIMIT_S = 0.5  # a tool time limit the person's answer outlasts
OFFERS = str(SERVERS / "offers_server.py")


def offers_config(root: Path | None = None) -> dict:
    return {"mcpServers": {"offers": server_command(OFFERS)}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kit():
    """A toolkit with the offers server, once it runs, and its pool (whose `requests`
    a test sets, then clears)."""
    toolkit = await create_toolkit(mcp_config=offers_config(), mcp_timeout=START)
    await toolkit.started()
    [pool] = toolkit.sources
    yield toolkit, pool
    await toolkit.close()


@pytest.fixture
def requests(kit):
    _, pool = kit
    yield pool.requests
    pool.requests.elicit = pool.requests.sample = None


async def call(toolkit, name: str, args: dict | None = None):
    return await toolkit.execute(name, args or {}, ToolContext())


# ----------------------------------------------------------------------------- instructions


@shared_loop
async def test_the_servers_instructions_join_the_system_prompt(kit, scripted):
    toolkit, _ = kit
    scripted.add("ok")
    async with scripted_client(scripted, system_prompt="Be terse.") as client:
        await client.run("hi", toolkit)
    system = scripted.requests[0].body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Be terse.\n\nInstructions from the MCP server offers")
    assert "Always call add_more before answering." in system["content"]


# ----------------------------------------------------------------------------- tools


@shared_loop
async def test_a_task_only_tool_is_not_offered_and_titles_and_hints_are_kept(kit):
    toolkit, pool = kit
    assert toolkit.get("offers_background_job") is None
    assert pool.servers[0].task_only == ["background_job"]
    assert toolkit.get("offers_who").title == "Ask who you are"
    assert toolkit.get("offers_wipe").annotations == {"destructiveHint": True}


@shared_loop
async def test_destructive_tools_always_ask_and_read_only_ones_follow_their_rule(kit):
    toolkit, _ = kit
    wipe, peek, link = (toolkit.get(f"offers_{n}") for n in ("wipe", "peek", "link"))
    allow_all = ApprovalPolicy({"offers_*": "allow"})
    assert allow_all.rule_for(wipe) == "ask"  # a rule cannot wave a destructive tool through
    assert allow_all.rule_for(link) == "allow"
    assert ApprovalPolicy({"offers_wipe": "deny"}).rule_for(wipe) == "deny"
    trusting = ApprovalPolicy({"mcp:read-only": "allow"})
    assert trusting.rule_for(peek) == "allow"
    assert trusting.rule_for(link) == "ask" and trusting.rule_for(wipe) == "ask"
    assert ApprovalPolicy().rule_for(peek) == "ask"  # a hint alone allows nothing


@shared_loop
async def test_tools_list_changed_refreshes_the_tools_before_the_next_model_call(kit, scripted):
    toolkit, _ = kit
    assert toolkit.get("offers_add_more") is None
    scripted.add(calling(("offers_grow", {})), "grown")
    async with scripted_client(scripted) as client:
        await client.run("grow", toolkit)
    first, second = ([t["function"]["name"] for t in r.body["tools"]] for r in scripted.requests)
    assert "offers_add_more" not in first and "offers_add_more" in second
    assert (await call(toolkit, "offers_add_more", {"a": 2, "b": 5})).output == "7"


# ----------------------------------------------------------------------------- elicitation


@shared_loop
async def test_a_form_elicitation_reaches_the_host_and_its_answer_the_tool(kit, requests):
    toolkit, _ = kit
    asked = []

    async def elicit(server, request):
        asked.append((server, request))
        return {"action": "accept", "content": {"name": "Ann", "age": 41}}

    requests.elicit = elicit
    result = await call(toolkit, "offers_who")
    assert result.output == "hello Ann, 41, member=False"
    [(server, request)] = asked
    assert server == "offers" and request["message"] == "Who are you?"
    fields = form_fields(request["requestedSchema"])
    assert [(f.name, f.kind, f.required) for f in fields] == [
        ("name", "string", True),
        ("age", "integer", True),
        ("member", "boolean", False),
    ]
    assert field_value(fields[1], " 41 ") == 41 and field_value(fields[2], "y") is True
    with pytest.raises(ValueError, match="Age: a whole number is needed"):
        field_value(fields[1], "forty")


@shared_loop
async def test_a_slow_answer_to_a_form_does_not_count_against_the_tools_time_limit(kit, requests):
    toolkit, _ = kit

    async def elicit(server, request):
        await asyncio.sleep(3 * LIMIT_S)  # the person takes longer than the tool may
        return {"action": "accept", "content": {"name": "Ann", "age": 41}}

    requests.elicit = elicit
    toolkit.timeout, usual = LIMIT_S, toolkit.timeout
    try:
        assert (await call(toolkit, "offers_who")).output == "hello Ann, 41, member=False"
    finally:
        toolkit.timeout = usual


@shared_loop
async def test_without_a_host_an_elicitation_is_declined(kit, requests):
    toolkit, _ = kit
    assert (await call(toolkit, "offers_who")).output == "no answer: decline"


@shared_loop
async def test_a_url_elicitation_gives_the_host_the_url(kit, requests):
    toolkit, _ = kit
    seen = []

    async def elicit(server, request):
        seen.append(request)
        return {"action": "cancel", "content": {"ignored": True}}

    requests.elicit = elicit
    assert (await call(toolkit, "offers_visit")).output == "visit: cancel"
    assert seen[0]["mode"] == "url" and seen[0]["url"] == "https://example.com/login"


# ----------------------------------------------------------------------------- sampling


@shared_loop
async def test_sampling_is_answered_by_the_host(kit, requests):
    toolkit, _ = kit
    asked = []

    async def sample(server, params):
        asked.append(params)
        made = sampling_call(params, wire_style("openai"), user_params={}, most_tokens=4096)
        assert made.prompt == "Summarize: a long text" and made.history == []
        assert made.system == "Be brief." and made.params == {"max_tokens": 50}
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "short"},
            "model": "the-model",
            "stopReason": "endTurn",
        }

    requests.sample = sample
    result = await call(toolkit, "offers_summarize", {"text": "a long text"})
    assert result.output == "summary from the-model: short"
    made = sampling_call(asked[0], wire_style("openai"), user_params={}, most_tokens=4096)
    assert describe_sampling("offers", asked[0], made).splitlines() == [
        "the MCP server offers asks the model for a message (at most 50 tokens)",
        "system: Be brief.",
        "user: Summarize: a long text",
    ]
    # cut to the configured maximum, and raised for a model that thinks first: said so
    made = sampling_call(
        asked[0], wire_style("anthropic"), user_params={}, most_tokens=30, reasoning="low"
    )
    assert made.params == {"max_tokens": 30}
    assert describe_sampling("offers", asked[0], made).splitlines()[:3] == [
        "the MCP server offers asks the model for a message (at most 30 tokens)",
        "it asked for up to 50 tokens: cut to the configured maximum",
        "the model thinks first: the request allows 1054 tokens (1024 to think)",
    ]


@shared_loop
async def test_without_a_host_sampling_is_refused(kit, requests):
    toolkit, _ = kit
    result = await call(toolkit, "offers_summarize", {"text": "x"})
    assert result.is_error and "sampling is not available here" in result.output


# ----------------------------------------------------------------------------- resources


@shared_loop
async def test_the_model_reads_a_linked_resource_with_read_resource(kit, scripted):
    toolkit, _ = kit
    scripted.add(
        calling(("offers_link", {})),
        calling(("read_resource", {"uri": "note://readme"})),
        "read",
    )
    async with scripted_client(scripted) as client:
        await client.run("follow the link", toolkit)
    [linked] = tool_messages(scripted.requests[1].body)
    assert linked["content"] == (
        "[resource link: note://readme (readme); read_resource reads "
        "it]\n[resource: data://blob.bin (application/octet-stream)]"
    )
    [read] = tool_messages(scripted.requests[2].body)[-1:]
    assert read["content"] == "[resource: note://readme]\nthe offers server reads fine"


@shared_loop
async def test_templates_are_listed_and_read_resource_says_what_fails(kit):
    toolkit, pool = kit
    assert [t["uriTemplate"] for t in pool.servers[0].offer.templates] == ["note://items/{item}"]
    read = await call(toolkit, "read_resource", {"uri": "note://items/pear"})
    assert read.output == "[resource: note://items/pear]\nitem pear here"
    missing = await call(toolkit, "read_resource", {"uri": "note://nothing"})
    assert missing.is_error and missing.output.startswith("error: offers cannot read note://")
    wrong = await call(toolkit, "read_resource", {"uri": "note://readme", "server": "other"})
    assert wrong.output == "error: no running MCP server is named 'other' (running: offers)"


# ----------------------------------------------------------------------------- prompts


@shared_loop
async def test_a_prompt_is_got_with_its_arguments_and_they_complete(kit):
    _, pool = kit
    server = pool.servers[0]
    text, attachments = await get_prompt(server, "review", {"code": "x = 1"})
    assert text == "Review this (short):\nx = 1" and attachments == []
    with pytest.raises(ToolnexusError, match=r"review needs code=\.\.\."):
        await get_prompt(server, "review", {})
    assert await complete(server, {"type": "ref/prompt", "name": "review"}, "style", "s") == [
        "short",
        "strict",
    ]
    assert await complete(
        server, {"type": "ref/resource", "uri": "note://items/{item}"}, "item", "a"
    ) == ["apple", "avocado", "banana"]
