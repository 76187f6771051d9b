"""What a llama.cpp server says its model reads, in its own words: `GET /props` (beside its
`/v1`) names the `modalities` it takes, `{"vision": false}` for a text-only model, which
answers a request holding an image with an HTTP 500."""

from __future__ import annotations

from typing import Any


def props_url(base_url: str) -> str:
    """Where llama.cpp answers `/props`, beside its `/v1`."""
    return base_url.rstrip("/").removesuffix("/v1") + "/props"


def reads_images(data: Any) -> bool | None:
    """Whether the server's model reads images, from its `/props` answer; None when the
    answer does not say (another kind of server, an older llama.cpp)."""
    modalities = data.get("modalities") if isinstance(data, dict) else None
    vision = modalities.get("vision") if isinstance(modalities, dict) else None
    return vision if isinstance(vision, bool) else None
