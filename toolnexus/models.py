"""The models an endpoint serves: `GET .../models`, every page of it, read by the one
listing reader (`wire/_listing.py`) into ModelInfo.

httpx2 is imported when a list is fetched, never at import time.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ._bounded_json import loads_bounded
from .errors import ProviderError
from .transport import check_endpoint, check_headers
from .transport._connections import new_http_client, socks_errors_mapped
from .wire import WireStyle, wire_style
from .wire._listing import ModelInfo, read_listing

__all__ = ["ModelInfo", "list_models", "parse_models"]

if TYPE_CHECKING:
    import httpx2

MAX_LIST_BYTES = 16 * 1024 * 1024  # OpenRouter's list of every model is about 1 MB
MAX_PAGES = 20  # a server that always says "has_more" is not followed for ever
DEFAULT_TIMEOUT_S = 5.0


async def list_models(
    base_url: str,
    style: str = "openai",
    api_key: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    http_client: httpx2.AsyncClient | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> list[ModelInfo]:
    """The models the endpoint at `base_url` lists, in its order. `timeout` bounds the
    whole call. Raises ProviderError (one line) when the endpoint cannot be reached,
    refuses, or answers with something that is not a model list."""
    wire = wire_style(style)
    url = wire.models_endpoint(base_url)
    sent = {**(headers or {}), **wire.auth_headers(api_key)}
    try:
        check_endpoint(base_url)
        check_headers(sent)
    except ValueError as exc:
        raise ProviderError(str(exc)) from None
    client = http_client or new_http_client()
    try:
        async with asyncio.timeout(timeout):
            return await _all_pages(client, url, sent, wire, timeout)
    except TimeoutError:
        raise ProviderError(f"{url} did not answer within {timeout:g} s") from None
    finally:
        if http_client is None:
            await client.aclose()


async def _all_pages(
    client: httpx2.AsyncClient, url: str, headers: dict[str, str], wire: WireStyle, timeout: float
) -> list[ModelInfo]:
    """Every page: a reply with `has_more` and `last_id` (Anthropic) continues after it."""
    models: list[ModelInfo] = []
    params: dict[str, str] = {}
    for _ in range(MAX_PAGES):
        data = await _get_json(client, url, headers, params, wire, timeout)
        models += parse_models(data, url)
        last = data.get("last_id") if isinstance(data, dict) else None
        if not (
            isinstance(data, dict)
            and data.get("has_more") is True
            and isinstance(last, str)
            and last
        ):
            break
        params = {"after_id": last}
    return models


async def _get_json(
    client: httpx2.AsyncClient,
    url: str,
    headers: dict[str, str],
    params: dict[str, str],
    wire: WireStyle,
    timeout: float,
) -> Any:
    import httpx2

    try:
        with socks_errors_mapped():
            async with client.stream(
                "GET", url, headers=headers, params=params, timeout=httpx2.Timeout(timeout)
            ) as response:
                body = await _read_limited(response, url)
                status = response.status_code
    except httpx2.TimeoutException:
        raise ProviderError(f"{url} did not answer within {timeout:g} s") from None
    except httpx2.ConnectError as exc:
        raise ProviderError(f"could not connect to {url}: {str(exc) or 'refused'}") from None
    except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
        why = str(exc) or type(exc).__name__
        raise ProviderError(f"the request to {url} failed: {why}") from None
    try:
        data = loads_bounded(body)
    except ValueError:
        data = None
    if status >= 300:
        said = wire.error_message(data) if data is not None else None
        hint = " (check the API key)" if status in (401, 403) else ""
        message = f": {str(said)[:300]}" if said else ""
        raise ProviderError(
            f"{url} answered HTTP {status}{message}{hint}", status=status, provider_message=said
        )
    if data is None:
        raise ProviderError(f"the reply from {url} is not JSON: is that a model endpoint?")
    return data


async def _read_limited(response: httpx2.Response, url: str) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_LIST_BYTES:
            raise ProviderError(
                f"the model list from {url} is over {MAX_LIST_BYTES // (1024 * 1024)} MB: not read"
            )
        parts.append(chunk)
    return b"".join(parts)


def parse_models(data: Any, source: str = "the endpoint") -> list[ModelInfo]:
    """The ModelInfo of each well-formed entry of a model listing. Entries without a
    usable id are skipped; a reply that is not a listing raises ProviderError."""
    listed = read_listing(data)
    if listed is None:
        raise ProviderError(f"the reply from {source} is not a model list")
    return [entry.info for entry in listed]
