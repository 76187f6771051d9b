"""What one run talks to: the Target resolved from the config, the environment and the
flags (a bare model name is looked up in the configured providers' model lists)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import NotConfigured, UsageError
from .file import Config, Target
from .settings import ModelEntry, ProviderSettings, Settings

if TYPE_CHECKING:
    from toolnexus.context.pricing import Price

NOTHING_CONFIGURED = (
    "no model endpoint is configured: run 'toolnexus setup' (it finds the model servers on "
    "this machine, or asks for a key), or set OPENAI_API_KEY, ANTHROPIC_API_KEY or "
    "OPENROUTER_API_KEY, or pass --base-url URL for a local server"
)


def resolve_target(
    config: Config,
    *,
    model: str | None = None,
    base_url: str | None = None,
    style: str | None = None,
    system: str | None = None,
    named_provider: str | None = None,
) -> Target:
    """`named_provider` (--provider) is the provider to talk to, whatever the model."""
    env = os.environ
    settings = config.settings
    model = model or env.get("TOOLNEXUS_MODEL") or settings.default_model
    if named_provider is None:  # else the provider's own URL and style beat the variables
        base_url = base_url or env.get("TOOLNEXUS_BASE_URL")
        style = style or env.get("TOOLNEXUS_STYLE")
    providers = config.providers()
    if named_provider is not None and named_provider not in providers:
        raise UsageError(
            f"unknown provider '{named_provider}': use one of "
            f"{', '.join(providers)} or add [providers.{named_provider}] to "
            f"{config.path}"
        )
    found = _model_entry(config, model) if model else None
    entry = found or ModelEntry()
    provider_name: str | None
    if found is not None:
        provider_name = named_provider or found.provider
        if provider_name not in providers:
            raise UsageError(
                f"{config.path}: model '{model}' names provider '{provider_name}', which is not "
                f"defined: add [providers.{provider_name}] or use one of {', '.join(providers)}"
            )
        model_name = found.model or model
        system = system or found.system
    elif named_provider is not None:
        provider_name, model_name = named_provider, model
    elif model and ":" in model and model.split(":", 1)[0] in providers and not base_url:
        provider_name, model_name = model.split(":", 1)
    else:
        provider_name = None if base_url else _provider_of(config, model)
        model_name = model
    provider = providers[provider_name] if provider_name else ProviderSettings()
    url = base_url or provider.base_url
    if not url:
        raise NotConfigured(NOTHING_CONFIGURED)
    resolved_style = style or provider.style or "openai"
    from toolnexus.wire import STYLES

    if resolved_style not in STYLES:
        raise UsageError(f"unknown style '{resolved_style}': use one of {', '.join(STYLES)}")
    prompt_cache = entry.prompt_cache if entry.prompt_cache is not None else provider.prompt_cache
    target = Target(
        base_url=url,
        style=resolved_style,
        provider=provider_name,
        model=model_name or provider.default_model or "",
        api_key_env=provider.api_key_env,
        api_key_cmd=provider.api_key_cmd,
        headers={k: os.path.expandvars(str(v)) for k, v in provider.headers.items()},
        request_params=dict(entry.request_params),
        reasoning=entry.reasoning or settings.reasoning or "off",
        price=_price(entry.price),
        prompt_cache=True if prompt_cache is None else prompt_cache,
        system=system or env.get("TOOLNEXUS_SYSTEM") or settings.system,
        max_turns=settings.max_turns,
        max_tool_calls_per_reply=settings.max_tool_calls_per_reply,
        max_tool_calls_per_run=settings.max_tool_calls_per_run,
        timeout=settings.timeout,
        idle_timeout=(
            provider.idle_timeout if provider.idle_timeout is not None else settings.idle_timeout
        ),
        retries=settings.retries,
        api_key_cmd_timeout=provider.api_key_cmd_timeout,
        context_window=entry.context_window or provider.context_window or settings.context_window,
        dialect=provider.dialect,
        tool_search=_tool_search(entry, settings),
    )
    if not target.model:  # named nowhere: the endpoint's own, if it serves only one
        from .models import served_model

        target.model = served_model(target, config.path)
    return target


def _tool_search(entry: ModelEntry, settings: Settings) -> float | None:
    """The share of the window MCP tool schemas may take before they are named only
    (None: tool search off, by the model's entry or else the file's `tool_search`)."""
    on = entry.tool_search if entry.tool_search is not None else settings.tool_search
    return settings.tool_search_percent / 100 if on else None


def _price(table: Mapping[str, float] | None) -> Price | None:
    if table is None:
        return None
    from toolnexus.context.pricing import Price

    return Price(**table)  # the keys and values were checked when the file was read


def _model_entry(config: Config, name: str) -> ModelEntry | None:
    models = config.settings.models
    if name in models:
        return models[name]
    return next((entry for entry in models.values() if name in entry.aliases), None)


def _provider_of(config: Config, model: str | None) -> str | None:
    """The provider of a bare model name: the configured one that serves it (models.py
    looks it up); without a name, the first built-in one whose key is in the environment."""
    if model:
        from .models import provider_serving

        return provider_serving(config, model)
    return _provider_from_env(config.providers())


def _provider_from_env(providers: Mapping[str, ProviderSettings]) -> str | None:
    """With nothing chosen, the first built-in provider whose key is in the environment."""
    for name in ("openai", "anthropic", "openrouter"):
        if os.environ.get(providers[name].api_key_env or ""):
            return name
    return None
