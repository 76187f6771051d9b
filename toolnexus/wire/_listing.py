"""The one reader of model listings: what an endpoint's `GET .../models` says of each model.

Servers describe their models in different words, and both `toolnexus models` and the
context window read them here, so one entry always means one thing:

- the list: `{"data": [...]}` (OpenAI, OpenRouter, Anthropic, vLLM, LM Studio, llama.cpp)
  or `{"models": [...]}` (Ollama's `/api/tags`, Gemini's native list);
- the name: `id`, else `name` (Ollama; Gemini's `models/` prefix dropped), and llama.cpp's
  `aliases`;
- the window: what the running server was started with beats what the model could take —
  llama.cpp `meta.n_ctx`, LM Studio `loaded_context_length`, vLLM `max_model_len`, then
  OpenRouter `context_length`, `context_window`, LM Studio `max_context_length`, Anthropic
  `max_input_tokens`, Gemini `inputTokenLimit`, OpenRouter `top_provider.context_length`,
  and last llama.cpp's trained `meta.n_ctx_train`;
- the price: OpenRouter's `pricing`, dollars per token.

Anything else, or anything malformed, is left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_ID_CHARS = 256
_MAX_WINDOW = 1 << 40
# (where, key) in the order they win; "" is the entry itself
_WINDOW_KEYS = (
    ("meta", "n_ctx"),
    ("", "loaded_context_length"),
    ("", "max_model_len"),
    ("", "context_length"),
    ("", "context_window"),
    ("", "max_context_length"),
    ("", "max_input_tokens"),
    ("", "inputTokenLimit"),
    ("top_provider", "context_length"),
    ("meta", "n_ctx_train"),
)


@dataclass(frozen=True)
class ModelInfo:
    """One model as an endpoint lists it. Prices are US dollars per million tokens;
    None means the endpoint did not say."""

    id: str
    context_window: int | None = None
    input_price: float | None = None
    output_price: float | None = None


@dataclass(frozen=True)
class ListedModel:
    """A listing entry: what it says of the model, and what names and owner it gives."""

    info: ModelInfo
    aliases: tuple[str, ...] = ()
    owned_by: str | None = None

    def is_named(self, model: str) -> bool:
        return model == self.info.id or model in self.aliases


def read_listing(data: Any) -> list[ListedModel] | None:
    """Each well-formed entry of a model listing, in its order; None if `data` is not a
    listing at all. Entries without a usable name are skipped."""
    if not isinstance(data, dict):
        return None
    entries = data.get("data")
    if not isinstance(entries, list):
        entries = data.get("models")
    if not isinstance(entries, list):
        return None
    listed = []
    for entry in entries:
        model = _listed(entry) if isinstance(entry, dict) else None
        if model is not None:
            listed.append(model)
    return listed


def find_listed(listed: list[ListedModel], model: str) -> ListedModel | None:
    """The entry naming `model` (by id or alias; the first if several do), else the only
    entry of a one-model listing."""
    named = next((entry for entry in listed if entry.is_named(model)), None)
    return named or (listed[0] if len(listed) == 1 else None)


def _listed(entry: dict[str, Any]) -> ListedModel | None:
    model_id = _name(entry)
    if model_id is None:
        return None
    pricing = _dict(entry, "pricing")
    aliases = entry.get("aliases")
    owner = entry.get("owned_by")
    return ListedModel(
        ModelInfo(
            model_id,
            _window(entry),
            _per_million(pricing.get("prompt")),
            _per_million(pricing.get("completion")),
        ),
        tuple(a for a in aliases if isinstance(a, str)) if isinstance(aliases, list) else (),
        owner if isinstance(owner, str) else None,
    )


def _name(entry: dict[str, Any]) -> str | None:
    name = entry.get("id")
    if name is None:
        name = entry.get("name")
        if isinstance(name, str) and name.startswith("models/"):
            name = name.removeprefix("models/")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_ID_CHARS:
        return None
    return name


def _window(entry: dict[str, Any]) -> int | None:
    for where, key in _WINDOW_KEYS:
        value = (_dict(entry, where) if where else entry).get(key)
        if type(value) is int and 0 < value < _MAX_WINDOW:
            return value
    return None


def _dict(entry: dict[str, Any], key: str) -> dict[str, Any]:
    value = entry.get(key)
    return value if isinstance(value, dict) else {}


def _per_million(per_token: Any) -> float | None:
    """OpenRouter prices a token in dollars, as a string ("0.000003"); -1 means "varies"."""
    if isinstance(per_token, bool) or not isinstance(per_token, (str, int, float)):
        return None
    try:
        value = float(per_token)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return round(value * 1_000_000, 6)
