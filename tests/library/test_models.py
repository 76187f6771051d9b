"""toolnexus.models.list_models against the loopback stub: what each server says of its
models (context window, prices), Anthropic's pages and headers, and every way a reply can
fail being one ProviderError."""

from __future__ import annotations

import httpx2
import pytest

from tests.support.stub_provider import Reply, anthropic_models, openai_models
from toolnexus import ProviderError
from toolnexus.models import MAX_LIST_BYTES, ModelInfo, list_models


async def test_metadata_of_openrouter_vllm_and_llamacpp_lists(stub):
    stub.script_listing(
        openai_models(
            ["router/m", "vllm-m", "llama-m", "bare"],
            {
                "router/m": {
                    "context_length": 128000,
                    "pricing": {"prompt": "0.0000025", "completion": "0.00001"},
                },
                "vllm-m": {"max_model_len": 32768},
                "llama-m": {"meta": {"n_ctx": 4096, "n_ctx_train": 32768}},
                "bare": {"pricing": {"prompt": "-1", "completion": "free"}},
            },
        )
    )
    models = await list_models(stub.base_url, "openai", "sk-k")
    assert models == [
        ModelInfo("router/m", 128000, 2.5, 10.0),
        ModelInfo("vllm-m", 32768),
        ModelInfo("llama-m", 4096),  # what the server runs with, not what it was trained for
        ModelInfo("bare"),
    ]
    request = stub.lookups[0]
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == "Bearer sk-k"


async def test_anthropic_pages_are_followed_with_its_headers(stub):
    stub.script_listing(
        anthropic_models(["claude-a", "claude-b"], has_more=True), anthropic_models(["claude-c"])
    )
    models = await list_models(stub.url, "anthropic", "sk-ant")
    assert [m.id for m in models] == ["claude-a", "claude-b", "claude-c"]
    first, second = stub.lookups
    assert first.path == "/v1/models" and second.path == "/v1/models?after_id=claude-b"
    assert first.headers["x-api-key"] == "sk-ant" and "anthropic-version" in first.headers
    assert "authorization" not in first.headers


async def test_malformed_entries_are_skipped(stub):
    stub.script_listing(
        Reply.json(
            {
                "data": [
                    {"id": "ok", "context_length": True},
                    {"id": 7},
                    "x",
                    {"id": ""},
                    {"id": "y" * 300},
                    {"id": "ok2", "context_length": -5, "pricing": "cheap"},
                ]
            }
        )
    )
    assert await list_models(stub.base_url) == [ModelInfo("ok"), ModelInfo("ok2")]


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply.error(401, "bad key"), "answered HTTP 401: bad key (check the API key)"),
        (
            Reply.raw([b"<html>hi</html>"], chunked=False, headers={"Content-Type": "text/html"}),
            "is not JSON",
        ),
        (Reply.json({"items": []}), "is not a model list"),
        (Reply.json([1, 2]), "is not a model list"),
        (Reply.drop_after([b'{"data": [']), "failed"),
    ],
)
async def test_a_reply_that_is_not_a_list_is_one_error(stub, reply, said):
    stub.script_listing(reply)
    with pytest.raises(ProviderError) as caught:
        await list_models(stub.base_url)
    assert said in str(caught.value) and "\n" not in str(caught.value)


async def test_a_huge_list_is_not_read(stub):
    chunk = b" " * (1024 * 1024)
    stub.script_listing(
        Reply.raw(
            [b'{"data": [', *[chunk] * (MAX_LIST_BYTES // len(chunk) + 1)],
            chunked=True,
            headers={"Content-Type": "application/json"},
        )
    )
    with pytest.raises(ProviderError, match="over 16 MB"):
        await list_models(stub.base_url)


async def test_a_silent_server_times_out(stub):
    stub.script_listing(Reply.hang())
    with pytest.raises(ProviderError, match="did not answer within 0.3 s"):
        await list_models(stub.base_url, timeout=0.3)


async def test_nothing_listens_and_bad_urls(stub):
    port = stub.port
    stub.close()
    with pytest.raises(ProviderError, match="could not connect"):
        await list_models(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ProviderError, match="must start with http"):
        await list_models("localhost:8080")
    with pytest.raises(ProviderError, match="line break"):
        await list_models(stub.base_url, api_key="sk\nx")


async def test_the_callers_client_is_used_and_left_open(stub):
    stub.script_listing(openai_models(["m"]))
    async with httpx2.AsyncClient(headers={"X-Mine": "1"}) as client:
        assert [m.id for m in await list_models(stub.base_url, http_client=client)] == ["m"]
        assert not client.is_closed
    assert stub.lookups[0].headers["x-mine"] == "1"
