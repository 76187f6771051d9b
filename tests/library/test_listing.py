"""The one reader of model listings: each server's shape of `GET .../models` gives the same
window to `toolnexus models` (list_models) and to the context meter (Windows), over HTTP
against the loopback stub."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.support.stub_provider import Reply
from toolnexus.context._windows import Window, WindowCache, Windows
from toolnexus.models import list_models
from toolnexus.wire._listing import find_listed, read_listing

SHAPES: dict[str, tuple[dict[str, Any], int]] = {
    # the server's own window beats the model's trained or advertised one
    "llama.cpp": (
        {
            "data": [
                {
                    "id": "m",
                    "owned_by": "stub",
                    "context_length": 32768,
                    "meta": {"n_ctx": 4096, "n_ctx_train": 32768},
                }
            ]
        },
        4096,
    ),
    "llama.cpp, trained size only": ({"data": [{"id": "m", "meta": {"n_ctx_train": 8192}}]}, 8192),
    "LM Studio": ({"data": [{"id": "m", "max_context_length": 8192}]}, 8192),
    "LM Studio, loaded": (
        {"data": [{"id": "m", "max_context_length": 131072, "loaded_context_length": 16384}]},
        16384,
    ),
    "vLLM": ({"data": [{"id": "m", "max_model_len": 32768, "context_length": 131072}]}, 32768),
    "OpenRouter": (
        {
            "data": [
                {"id": "m", "context_length": 200000, "top_provider": {"context_length": 100000}}
            ]
        },
        200000,
    ),
    "OpenRouter, provider only": (
        {"data": [{"id": "m", "top_provider": {"context_length": 100000}}]},
        100000,
    ),
    "Anthropic": ({"data": [{"id": "m", "type": "model", "max_input_tokens": 200000}]}, 200000),
    "Ollama tags": ({"models": [{"name": "m", "model": "m", "size": 1}]}, 0),
    "Gemini native": ({"models": [{"name": "models/m", "inputTokenLimit": 1048576}]}, 1048576),
}


async def get_json(url: str) -> Any:
    async with httpx2.AsyncClient() as client:
        return (await client.get(url)).json()


@pytest.mark.parametrize("shape", SHAPES)
async def test_the_same_entry_gives_the_same_window_to_models_and_the_context_meter(stub, shape):
    listing, size = SHAPES[shape]
    stub.models = Reply.json(listing)
    listed = await list_models(stub.base_url)
    assert [model.id for model in listed] == ["m"]
    window = await Windows(
        stub.base_url, "m", explicit=None, cache=WindowCache(None, 3600)
    ).resolve(get_json)
    expected = size or None
    assert listed[0].context_window == expected
    assert window == (Window(expected, "endpoint") if expected else Window(None, "unknown"))


def test_a_model_is_found_by_id_or_alias_else_a_one_model_listing_gives_its_only_entry():
    listed = read_listing({"data": [{"id": "a"}, {"id": "b", "aliases": ["x", 7]}]})
    assert listed is not None
    assert find_listed(listed, "x") is listed[1] and listed[1].aliases == ("x",)
    assert find_listed(listed, "nope") is None
    only = read_listing({"data": [{"id": "a"}]})
    assert only is not None and find_listed(only, "nope") is only[0]


@pytest.mark.parametrize("data", [None, [], {"data": "x"}, {"items": []}, {"models": 3}])
def test_what_is_not_a_listing_reads_as_none(data):
    assert read_listing(data) is None
