"""`toolnexus models`: what each configured provider serves, cached on disk for an hour.

The cache (models.json in the user cache directory, 0600) also feeds `/model` completion in
the chat through `model_names`, which never touches the network.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolnexus.app_support import visible
from toolnexus.models import ModelInfo

from ..errors import UsageError
from ..render.words import counted
from .file import APP, Config, Target
from .settings import ProviderSettings

CACHE_TTL_S = 3600.0
CACHE_VERSION = 1
FETCH_TIMEOUT_S = 5.0


@dataclass
class ProviderModels:
    """One provider's row group: its models, or why there are none."""

    provider: str
    base_url: str
    style: str
    models: list[ModelInfo] = field(default_factory=list)
    error: str | None = None
    cached: bool = False


# ------------------------------------------------------------------ which providers


def configured_providers(config: Config) -> dict[str, ProviderSettings]:
    """The providers worth asking: those the config file defines or its models use, and
    the built-in ones whose key is at hand (environment or keys file)."""
    from .keys import load_keys

    settings = config.settings
    in_file = set(settings.providers)
    used = {entry.provider for entry in settings.models.values()}
    default = settings.default_model or ""
    if ":" in default:
        used.add(default.split(":", 1)[0])
    stored = load_keys()
    chosen = {}
    for name, provider in config.providers().items():
        env = provider.api_key_env
        has_key = name in stored or bool(env and os.environ.get(env))
        if provider.base_url and (name in in_file or name in used or has_key):
            chosen[name] = provider
    return chosen


def aliases_by_model(config: Config) -> dict[tuple[str, str], list[str]]:
    """(provider, model id) -> the names the config gives it: the entry's name and aliases."""
    names: dict[tuple[str, str], list[str]] = {}
    for entry_name, entry in config.settings.models.items():
        key = (str(entry.provider), entry.model or entry_name)
        names.setdefault(key, []).extend(entry.named(entry_name))
    return names


# ------------------------------------------------------------------ the disk cache


def cache_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP)) / "models.json"


def read_cache() -> dict[str, Any]:
    """The cached lists by provider name; an unreadable or foreign file counts as empty."""
    try:
        data = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    providers = data.get("providers")
    return providers if isinstance(providers, dict) else {}


def write_cache(entries: dict[str, Any]) -> None:
    path = cache_path()
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"version": CACHE_VERSION, "providers": entries}, handle)
    os.replace(tmp, path)


def remember(cache: dict[str, Any], result: ProviderModels) -> None:
    cache[result.provider] = {
        "base_url": result.base_url,
        "style": result.style,
        "fetched_at": time.time(),
        "models": [asdict(m) for m in result.models],
    }


def keep_listing(result: ProviderModels) -> None:
    """Add one provider's list, just fetched, to the cache."""
    cache = read_cache()
    remember(cache, result)
    write_cache(cache)


def cached_models(
    cache: dict[str, Any], name: str, provider: ProviderSettings, max_age: float | None
) -> list[ModelInfo] | None:
    """The cached list for this provider at this URL, if younger than `max_age` seconds
    (None: any age)."""
    entry = cache.get(name)
    if not isinstance(entry, dict) or entry.get("base_url") != provider.base_url:
        return None
    fetched = entry.get("fetched_at")
    if not isinstance(fetched, (int, float)) or not isinstance(entry.get("models"), list):
        return None
    if max_age is not None and not 0 <= time.time() - fetched < max_age:
        return None
    try:
        return [ModelInfo(**m) for m in entry["models"] if isinstance(m.get("id"), str)]
    except (TypeError, AttributeError):
        return None


# ------------------------------------------------------------------ fetching


async def fetch_provider(
    name: str, provider: ProviderSettings, api_key: str | None
) -> ProviderModels:
    from toolnexus import ToolnexusError
    from toolnexus.models import list_models

    result = _row(name, provider)
    try:
        result.models = await list_models(
            result.base_url,
            result.style,
            api_key,
            headers=_headers(provider),
            timeout=FETCH_TIMEOUT_S,
        )
    except (ToolnexusError, ValueError) as exc:
        result.error = str(exc)
    return result


def _row(name: str, provider: ProviderSettings, **known: Any) -> ProviderModels:
    """A configured provider's row group (its base_url is set: it was configured)."""
    return ProviderModels(name, provider.base_url or "", provider.style or "openai", **known)


def _headers(provider: ProviderSettings) -> dict[str, str]:
    return {k: os.path.expandvars(str(v)) for k, v in provider.headers.items()}


def _provider_key(name: str, provider: ProviderSettings) -> str | None:
    from .keys import provider_key

    target = Target(
        base_url=provider.base_url or "",
        style=provider.style or "openai",
        model="",
        provider=name,
        api_key_env=provider.api_key_env,
        api_key_cmd=provider.api_key_cmd,
        api_key_cmd_timeout=provider.api_key_cmd_timeout,
    )
    choice = provider_key(target)
    return choice.value if choice else None


def gather_models(
    config: Config, only: str | None = None, refresh: bool = False
) -> list[ProviderModels]:
    """Each provider's models, from the cache when it is fresh, else from the endpoint (all
    at once); what answered is cached."""
    providers = configured_providers(config)
    if only is not None:
        every = config.providers()
        if only not in every:
            raise UsageError(f"no provider named {only!r}: use one of {', '.join(every)}")
        providers = {only: every[only]}
    if not providers:
        raise UsageError(
            "no provider is configured: run 'toolnexus setup', or set "
            "OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENROUTER_API_KEY"
        )
    return _listings(providers, refresh)


def _listings(providers: dict[str, ProviderSettings], refresh: bool) -> list[ProviderModels]:
    """These providers' models, from the cache when it is fresh, else from the endpoint
    (all at once); what answered is cached."""
    cache = read_cache()
    results: dict[str, ProviderModels] = {}
    to_fetch = []
    for name, provider in providers.items():
        fresh = None if refresh else cached_models(cache, name, provider, CACHE_TTL_S)
        if fresh is not None:
            results[name] = _row(name, provider, models=fresh, cached=True)
            continue
        try:
            to_fetch.append(fetch_provider(name, provider, _provider_key(name, provider)))
        except UsageError as exc:  # its api_key_cmd failed: that provider's row says so
            results[name] = _row(name, provider, error=str(exc))

    async def fetch_all() -> list[ProviderModels]:
        return list(await asyncio.gather(*to_fetch))

    fetched = asyncio.run(fetch_all()) if to_fetch else []
    for result in fetched:
        results[result.provider] = result
        if result.error is None:
            remember(cache, result)
    if any(r.error is None for r in fetched):
        write_cache(cache)
    return [results[name] for name in providers]


# ------------------------------------------------------------------ output


def list_models_command(config: Config, *, only: str | None, as_json: bool, refresh: bool) -> int:
    results = gather_models(config, only, refresh)
    aliases = aliases_by_model(config)
    if as_json:
        print(json.dumps([_json_row(r, aliases) for r in results], indent=2))
    else:
        print(render_table(results, aliases))
    return 0 if any(r.error is None for r in results) else 1


def _json_row(result: ProviderModels, aliases: dict[tuple[str, str], list[str]]) -> dict[str, Any]:
    return {
        "provider": result.provider,
        "base_url": result.base_url,
        "style": result.style,
        "reachable": result.error is None,
        "error": result.error,
        "cached": result.cached,
        "models": [
            {**asdict(m), "aliases": aliases.get((result.provider, m.id), [])}
            for m in result.models
        ],
    }


HEADER = ("PROVIDER", "MODEL", "ALIASES", "CONTEXT", "$/M IN", "$/M OUT")


def render_table(results: list[ProviderModels], aliases: dict[tuple[str, str], list[str]]) -> str:
    """Aligned columns; a provider without models is one line saying why."""
    rows: list[tuple[str, ...] | list[str]] = []  # a list: a provider and a note about it
    for result in results:
        if result.error is not None:
            rows.append([result.provider, f"unreachable: {result.error}"])
        elif not result.models:
            rows.append([result.provider, "(lists no models)"])
        for m in result.models:
            rows.append(
                (
                    result.provider,
                    m.id,
                    ", ".join(aliases.get((result.provider, m.id), [])),
                    f"{m.context_window:,}" if m.context_window else "",
                    _price(m.input_price),
                    _price(m.output_price),
                )
            )
    cells = [HEADER, *(r for r in rows if isinstance(r, tuple))]
    widths = [max(len(visible(row[i])) for row in cells) for i in range(len(HEADER))]
    widths[0] = max([widths[0], *(len(visible(r[0])) for r in rows if isinstance(r, list))])

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(visible(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    out = [line(HEADER)]
    out += [
        line(r) if isinstance(r, tuple) else visible(r[0].ljust(widths[0]) + "  " + r[1])
        for r in rows
    ]
    return "\n".join(out)


def _price(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}" if value >= 0.01 or value == 0 else f"{value:g}"


# ------------------------------------------------------------------ models by name


def provider_serving(config: Config, model: str) -> str | None:
    """The configured provider that serves the bare model name `model`: with one provider,
    that one; with several, the one whose cached list (of any age) has it, else whose
    model list (asked now, cached) has it. None when no provider is configured. A
    UsageError naming the candidates when several serve it, or none does."""
    providers = configured_providers(config)
    if len(providers) <= 1:
        return next(iter(providers), None)
    cache = read_cache()
    listed = {
        name: cached_models(cache, name, provider, None) for name, provider in providers.items()
    }
    # A provider the cache never listed (added to the config since, or moved to another
    # URL) is asked now: the name may be its too, and then it is not unambiguous.
    never = {name: providers[name] for name, models in listed.items() if models is None}
    for row in _listings(never, refresh=False):
        listed[row.provider] = row.models
    serving = [name for name, models in listed.items() if _lists(models, model)]
    if not serving:
        results = gather_models(config)
        serving = [r.provider for r in results if _lists(r.models, model)]
        if not serving:
            raise UsageError(_unknown_model(model, results))
    if len(serving) > 1:
        raise UsageError(
            f"{model!r} is served by {', '.join(serving)}: name one, e.g. "
            f"-m {serving[0]}:{model} (/model {serving[0]}:{model} in the chat)"
        )
    return serving[0]


def _lists(models: list[ModelInfo] | None, model: str) -> bool:
    return any(m.id == model for m in models or ())


def _unknown_model(model: str, results: list[ProviderModels]) -> str:
    near = near_names(model, [m.id for r in results for m in r.models])
    silent = [r.provider for r in results if r.error is not None]
    return (
        f"no configured provider lists a model named {model!r}"
        + (f"; did you mean {' or '.join(map(repr, near))}?" if near else "")
        + (f" ({', '.join(silent)} could not be asked)" if silent else "")
        + "; 'toolnexus models' lists what each serves, and -m PROVIDER:MODEL asks "
        "one for a name it does not list"
    )


NEAR_NAMES_SHOWN = 3


def near_names(name: str, known: list[str]) -> list[str]:
    """The names `name` may have meant, case aside: those it begins, then those holding
    it (shortest first in each), then close spellings; `gemma` -> `gemma-3-270m`."""
    wanted = name.casefold()
    names = [k for k in dict.fromkeys(known) if k.casefold() != wanted]
    if not wanted or not names:
        return []
    by_fold = {k.casefold(): k for k in reversed(names)}  # the first spelling of each
    prefix = sorted((k for k in names if k.casefold().startswith(wanted)), key=len)
    inside = sorted((k for k in names if wanted in k.casefold()), key=len)
    close = difflib.get_close_matches(wanted, list(by_fold), n=NEAR_NAMES_SHOWN, cutoff=0.6)
    near = [*prefix, *inside, *(by_fold[k] for k in close)]
    return list(dict.fromkeys(near))[:NEAR_NAMES_SHOWN]


def unknown_model_note(config: Config, target: Target, given: str) -> str | None:
    """A note when `given` (a model named with --model or /model) is neither a name the
    config gives nor a model the providers list, with the names it may have meant. The
    target's provider is asked for its list unless the cache holds a fresh one; None
    when the name is known, or nothing is known to compare it with."""
    names = _config_names(config)
    if given in names:
        return None
    listed = _cached_listings(config)
    if target.provider is not None:
        try:
            [row] = gather_models(config, only=target.provider)
        except UsageError:  # an unreadable keys file: the chat says so elsewhere
            row = None
        if row is not None and row.error is None:
            listed[target.provider] = [m.id for m in row.models]
    if target.model in listed.get(target.provider or "", ()):
        return None
    known = list(dict.fromkeys([*names, *(model for ids in listed.values() for model in ids)]))
    if not known or given in known:
        return None
    near = near_names(target.model, known)
    if near:
        hint = f"did you mean {' or '.join(map(repr, near))}?"
    else:
        hint = "known: " + ", ".join(known[:20]) + (", …" if len(known) > 20 else "")
    return visible(
        f"note: {given!r} is not a model the config or the model lists know; {hint} "
        "(the endpoint is asked for it as given)"
    )


def served_model(target: Target, config_path: Path) -> str:
    """The model of a run that names none: the only one its endpoint serves."""
    from toolnexus import ToolnexusError
    from toolnexus.models import list_models

    from .keys import choose_key

    pass_one = f"pass -m MODEL, set TOOLNEXUS_MODEL, or set default_model in {config_path}"
    try:
        models = asyncio.run(
            list_models(
                target.base_url,
                target.style,
                choose_key(target).value,
                headers=target.headers,
                timeout=FETCH_TIMEOUT_S,
            )
        )
    except ToolnexusError as exc:
        raise UsageError(
            f"no model given, and {target.base_url} could not say which it "
            f"serves ({exc}): {pass_one}"
        ) from None
    ids = [visible(m.id) for m in models]
    if len(ids) == 1:
        return models[0].id
    shown = ", ".join(ids[:10]) + (", …" if len(ids) > 10 else "")
    which = f"serves {counted(len(ids), 'model')} ({shown})" if ids else "lists no model"
    raise UsageError(f"no model given, and {target.base_url} {which}: {pass_one}")


# ------------------------------------------------------------------ chat completion


def model_names(config: Config) -> list[str]:
    """What `/model` accepts, for completion: the config's model names and aliases, then
    `provider:model` for every model in the cache (any age), then each of those models'
    bare names. Never waits on the network."""
    listed = _cached_listings(config)
    names = _config_names(config)
    names += [f"{name}:{model}" for name, models in listed.items() for model in models]
    names += [model for models in listed.values() for model in models]
    return list(dict.fromkeys(names))


def _config_names(config: Config) -> list[str]:
    """The config's model names and their aliases."""
    names: list[str] = []
    for entry_name, entry in config.settings.models.items():
        names += entry.named(entry_name)
    return names


def _cached_listings(config: Config) -> dict[str, list[str]]:
    """The model ids the cache holds (any age) for each configured provider it listed."""
    try:
        providers = configured_providers(config)
    except UsageError:  # an unreadable keys file: the chat says so elsewhere
        return {}
    cache = read_cache()
    listed = {}
    for name, provider in providers.items():
        models = cached_models(cache, name, provider, None)
        if models is not None:
            listed[name] = [m.id for m in models]
    return listed
