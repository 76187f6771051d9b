"""`toolnexus setup`, and the first run of `chat` with nothing configured: find or ask for
an endpoint, pick a model, write the config (and the key), all or nothing.

Every question comes first; the files are written only once all are answered, so Ctrl-C
(or Ctrl-D) at any step leaves without writing anything.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from toolnexus.app_support import visible

from ..errors import UsageError
from ..render.words import counted
from .file import BUILTIN_PROVIDERS, Config, config_path, load_config

if TYPE_CHECKING:
    from toolnexus import ProviderError
    from toolnexus.models import ModelInfo

# Local servers and the port each listens on by default.
LOCAL_SERVERS = {
    11434: ("Ollama", "ollama"),
    8080: ("llama.cpp", "llamacpp"),
    1234: ("LM Studio", "lmstudio"),
    8000: ("vLLM", "vllm"),
}
PROBE_PORTS_ENV = "TOOLNEXUS_PROBE_PORTS"  # e.g. "8080,18081": the ports to look at instead
PROBE_TIMEOUT_S = 1.5
HOSTED = (("OpenAI", "openai"), ("Anthropic", "anthropic"), ("OpenRouter", "openrouter"))
STYLE_CHOICES = ("openai", "anthropic", "responses")
MODELS_SHOWN = 30  # a longer list is cut; its other names can be typed
PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")
TOOLS_ABOUT = (
    "Tools: in the chat the model can read and search files, run commands and write files "
    "in the folder you start it in (never in your home folder itself).\n"
    "  Reading runs at once; writes and commands follow the chat's mode (ask: each one asks "
    "you first; Shift-Tab changes the mode); commands run in the sandbox."
)
TOOLS_QUESTION = "Let the model use tools in every chat?"


@dataclass
class Endpoint:
    label: str
    name: str
    base_url: str
    style: str = "openai"
    key_env: str | None = None
    default_model: str | None = None
    models: list[ModelInfo] = field(default_factory=list)


@dataclass
class Choice:
    """What the answers add up to: one provider, its model, maybe a key, and the endpoint
    as it answered (its models are cached for the chat's /model completion)."""

    name: str
    settings: dict[str, str]
    model: str
    endpoint: Endpoint
    key: str | None = None
    table: bool = True  # False: the provider is already in the file (or built in)
    tools: bool | None = None  # the answer to TOOLS_QUESTION (None: not asked)


# ------------------------------------------------------------------ entry points


def first_run_setup(config_flag: str | None, missing: UsageError) -> Config:
    """`chat` found no endpoint: with a person at a terminal, set one up and return the new
    config; else the error stands. Ctrl-C leaves (exit 130) with nothing written."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise missing
    print(
        "No model endpoint is configured yet: let's set one up "
        "(Ctrl-C leaves without writing anything)."
    )
    if not run_setup(config_flag):
        raise SystemExit(130)
    print()
    return load_config(config_flag)


def setup_command(config_flag: str | None) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            "setup asks questions: run it in a terminal, or write the config "
            "with 'toolnexus config init'"
        )
    if not run_setup(config_flag):
        return 130
    from ..session.options import go_on_command

    print(f"start chatting with: {go_on_command('chat', None, config_flag)}")
    return 0


def run_setup(config_flag: str | None) -> bool:
    """Ask, then write. False when the person left (nothing is written then)."""
    try:
        plan = _ask(config_flag)
    except (KeyboardInterrupt, EOFError):
        print("\nsetup cancelled: nothing was written")
        return False
    if plan is None:
        print("kept the config as it is")
    else:
        _write(*plan)
    return True


# ------------------------------------------------------------------ the questions


def _ask(config_flag: str | None) -> tuple[Path, Choice, str | None] | None:
    """Where to write, what, and the text it adds to (None: a new file); None to leave."""
    path = config_path(config_flag)
    existing = load_config(config_flag) if path.exists() else None
    if existing is not None:
        print(f"A config already exists at {path}.")
        action = choose(["add a provider to it", "replace it", "leave it as it is"])
        if action == 2:
            return None
        if action == 1:
            existing = None
    choice = _choose_endpoint(existing)
    old_text = None
    if existing is not None:
        old_text = existing.path.read_text(encoding="utf-8")
        _fit_into(existing, choice)
        default = f"{choice.name}:{choice.model}"
        if default == existing.settings.default_model or not yes_no(
            f"Make {default} the default model?"
        ):
            choice.model = ""
    if existing is None or existing.settings.tools.chat is None:
        print(TOOLS_ABOUT)
        choice.tools = yes_no(TOOLS_QUESTION)
    return path, choice, old_text


def _choose_endpoint(existing: Config | None) -> Choice:
    print("Looking for model servers on this machine...")
    found = _not_configured(asyncio.run(probe_local()), existing)
    options = [*found, *(_hosted(label, name) for label, name in HOSTED)]
    labels = [_describe(e) for e in options] + ["another endpoint (a base URL and a style)"]
    picked = choose(labels, "Which endpoint?")
    if picked == len(options):
        return _custom_endpoint()
    endpoint = options[picked]
    if endpoint in found:
        return Choice(
            endpoint.name,
            {"base_url": endpoint.base_url, "style": endpoint.style},
            _pick_model(endpoint),
            endpoint,
        )
    key = _ask_key(endpoint)
    return Choice(endpoint.name, {}, _pick_model(endpoint), endpoint, key, table=False)


def _not_configured(found: list[Endpoint], existing: Config | None) -> list[Endpoint]:
    """The servers found that the config has no provider for yet; each of the others is
    named, so it is not offered again as if it were new."""
    if existing is None:
        return found
    default_provider = (existing.settings.default_model or "").partition(":")[0]
    configured = {
        _server(settings.base_url): name
        for name, settings in existing.providers().items()
        if name in existing.file.get("providers", {}) and settings.base_url
    }
    new = []
    for endpoint in found:
        name = configured.get(_server(endpoint.base_url))
        if name is None:
            new.append(endpoint)
        else:
            role = ", the default" if name == default_provider else ""
            print(f"  {endpoint.label} at {endpoint.base_url} is configured already ({name}{role})")
    return new


def _server(url: str) -> tuple[str, int | None, str]:
    """What tells two base URLs of one server apart: localhost and 127.0.0.1 are one."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        host = "loopback" if host == "localhost" or ipaddress.ip_address(host).is_loopback else host
    except ValueError:
        pass
    return host, parts.port, parts.path.rstrip("/")


def _hosted(label: str, name: str) -> Endpoint:
    builtin = BUILTIN_PROVIDERS[name]
    return Endpoint(
        label,
        name,
        builtin["base_url"],
        builtin["style"],
        builtin["api_key_env"],
        builtin["default_model"],
    )


def _describe(endpoint: Endpoint) -> str:
    if endpoint.key_env:
        return f"{endpoint.label} (hosted, needs an API key)"
    return f"{endpoint.label} at {endpoint.base_url} ({_models(endpoint)})"


def _models(endpoint: Endpoint) -> str:
    count = len(endpoint.models)
    return counted(count, "model")


def _custom_endpoint() -> Choice:
    from toolnexus.transport import check_endpoint

    while True:
        url = ask("Base URL (e.g. https://api.example.com/v1): ").strip()
        try:
            check_endpoint(url)
            break
        except ValueError as exc:
            print(f"  {exc}")
    style = STYLE_CHOICES[choose(list(STYLE_CHOICES), "Which style does it speak?")]
    default_name = _suggested_name(url)
    while not PROVIDER_NAME.fullmatch(
        name := ask(f"A name for it [{default_name}]: ").strip() or default_name
    ):
        print("  letters, digits, - and _ only")
    endpoint = Endpoint(name, name, url, style, key_env="")
    key = _ask_key(endpoint, optional=True)
    return Choice(name, {"base_url": url, "style": style}, _pick_model(endpoint), endpoint, key)


def _suggested_name(url: str) -> str:
    """A provider name from the URL's host: "example" for api.example.com; for this machine
    the name a server found on its port gets ("llamacpp", "local-18081"); another machine's
    address itself, with dashes."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        on_this_machine, name = host == "localhost", host.removeprefix("api.").split(".")[0]
    else:
        on_this_machine, name = address.is_loopback, str(address)
    if on_this_machine:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        name = LOCAL_SERVERS.get(port, ("", f"local-{port}"))[1]
    return re.sub(r"[^A-Za-z0-9_-]", "-", name)[:40] or "custom"


def _ask_key(endpoint: Endpoint, optional: bool = False) -> str | None:
    """The key, typed without echo, checked by listing the models with it (the list is
    kept for the model question). A refused key is asked again."""
    in_env = bool(endpoint.key_env and os.environ.get(endpoint.key_env))
    if in_env:
        hint = f"Enter to use ${endpoint.key_env}"
    elif optional:
        hint = "Enter for none"
    else:
        hint = "not shown"
    while True:
        key = ask(f"API key for {endpoint.label} ({hint}): ", password=True).strip() or None
        if key is None and not (in_env or optional):
            print("  a key is needed here (Ctrl-C to leave)")
            continue
        sent = key or (os.environ.get(endpoint.key_env) if endpoint.key_env else None)
        error = _fetch_models(endpoint, sent)
        if error is None:
            print(f"  {endpoint.base_url} answered: {_models(endpoint)}")
            return key
        if error.status not in (401, 403):
            print(f"  could not list the models ({visible(str(error))}); going on")
            return key
        print(f"  the endpoint refused that key: {visible(str(error))}")


def _fetch_models(endpoint: Endpoint, key: str | None) -> ProviderError | None:
    from toolnexus import ProviderError
    from toolnexus.models import list_models

    try:
        endpoint.models = asyncio.run(list_models(endpoint.base_url, endpoint.style, key))
    except ProviderError as exc:
        return exc
    return None


def _pick_model(endpoint: Endpoint) -> str:
    ids = [m.id for m in endpoint.models]
    if endpoint.default_model and (not ids or endpoint.default_model in ids):
        typed = ask(f"Model [{endpoint.default_model}]: ", completions=ids).strip()
        return typed or endpoint.default_model
    if not ids:
        while not (typed := ask("Model name: ").strip()):
            pass
        return typed
    if len(ids) == 1:
        print(f"  model: {visible(ids[0])}")
        return ids[0]
    shown = ids[:MODELS_SHOWN]
    more = len(ids) - len(shown)
    picked = choose(
        [visible(i) for i in shown],
        "Which model?" + (f" ({more} more: type a name instead)" if more else ""),
        typed=set(ids),
    )
    return picked if isinstance(picked, str) else shown[picked]


def _fit_into(config: Config, choice: Choice) -> None:
    """Adding to an existing file: reuse a provider it has for the same URL, else take a
    name it does not use yet."""
    providers = config.settings.providers
    for name, settings in providers.items():
        if choice.table and settings.base_url == choice.settings.get("base_url"):
            choice.name, choice.table = name, False
            return
    base, n = choice.name, 2
    while choice.table and choice.name in providers:
        choice.name, n = f"{base}-{n}", n + 1


# ------------------------------------------------------------------ local servers


def probe_ports() -> dict[int, tuple[str, str]]:
    raw = os.environ.get(PROBE_PORTS_ENV)
    if raw is None:
        return LOCAL_SERVERS
    ports = {}
    for word in raw.replace(",", " ").split():
        if word.isdigit() and 0 < int(word) < 65536:
            port = int(word)
            ports[port] = LOCAL_SERVERS.get(port, (f"a server on port {port}", f"local-{port}"))
    return ports


async def probe_local() -> list[Endpoint]:
    """The local servers that answer `GET /v1/models`, asked all at once."""
    from toolnexus import ToolnexusError
    from toolnexus.models import list_models

    async def probe(port: int, label: str, name: str) -> Endpoint | None:
        url = f"http://127.0.0.1:{port}/v1"
        try:
            models = await list_models(url, timeout=PROBE_TIMEOUT_S)
        except ToolnexusError:
            return None
        if not models:
            print(f"  {label} at {url} serves no model yet")
            return None
        return Endpoint(label, name, url, models=models)

    found = await asyncio.gather(*(probe(port, *known) for port, known in probe_ports().items()))
    servers = [e for e in found if e is not None]
    print(f"  found {counted(len(servers), 'local server')}")
    return servers


# ------------------------------------------------------------------ writing


def _write(path: Path, choice: Choice, old_text: str | None) -> None:
    from .commands import example_with, provider_table, write_config
    from .keys import load_keys, write_keys

    table = provider_table(choice.name, choice.settings) if choice.table else ""
    default = f"{choice.name}:{choice.model}" if choice.model else None
    if old_text is None:
        text = example_with(default or "", table)
    else:
        text = _with_default(old_text, default) + ("\n" + table if table else "")
    if choice.tools is not None:
        text = _with_chat_tools(text, choice.tools)
    try:
        tomllib.loads(text)  # what is written must load
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(
            f"could not add to {path} ({exc}): nothing was written; add "
            f"[providers.{choice.name}] by hand"
        ) from None
    keys = load_keys() if choice.key else {}
    write_config(path, text)
    print(_what_was_written(path, choice, new_file=old_text is None))
    _cache_models(choice)
    if choice.key:
        keys[choice.name] = choice.key
        print(f"stored the key for {choice.name} in {write_keys(keys)}")


def _what_was_written(path: Path, choice: Choice, *, new_file: bool) -> str:
    """One line: the provider (added, or already known), the default model, the file."""
    provider = f"provider {choice.name} ({choice.endpoint.base_url})"
    added = f"added {provider}" if choice.table else f"using {provider}"
    if choice.model:
        default = f"with model {choice.model} as the default"
    else:
        default = "(the default model stays as it was)"
    return f"{added} {default}; {'new ' if new_file else ''}config written to {path}"


def _cache_models(choice: Choice) -> None:
    """Keep the models the endpoint listed, as `toolnexus models` would: the chat
    completes their names after /model from the first run on."""
    from .models import ProviderModels, keep_listing

    endpoint = choice.endpoint
    if endpoint.models:
        keep_listing(
            ProviderModels(choice.name, endpoint.base_url, endpoint.style, endpoint.models)
        )


def _with_default(text: str, default: str | None) -> str:
    """`text` with its top-level default_model set to `default` (None: unchanged)."""
    from .commands import toml_string

    if default is None:
        return text
    line = f"default_model = {toml_string(default)}"
    first_table = re.search(r"^\s*\[", text, re.M)
    end = first_table.start() if first_table else len(text)
    setting = re.compile(r"^default_model\s*=.*$", re.M)
    if setting.search(text[:end]):
        return setting.sub(lambda _: line, text[:end], count=1) + text[end:]
    return f"{line}\n{text}"


def _with_chat_tools(text: str, on: bool) -> str:
    """`text` with `chat` of its [tools] table set to `on` (the table added if missing)."""
    line = f"chat = {'true' if on else 'false'}"
    header = re.search(r"^\[tools\][ \t]*(#.*)?$", text, re.M)
    if header is None:
        return f"{text.rstrip()}\n\n[tools]\n{line}\n"
    nxt = re.search(r"^\s*\[", text[header.end() :], re.M)
    end = header.end() + (nxt.start() if nxt else len(text) - header.end())
    table = text[header.end() : end]
    setting = re.compile(r"^chat\s*=.*$", re.M)
    if setting.search(table):
        table = setting.sub(lambda _: line, table, count=1)
    else:
        table = f"\n{line}{table}"
    return text[: header.end()] + table + text[end:]


# ------------------------------------------------------------------ asking


def ask(message: str, *, password: bool = False, completions: list[str] | None = None) -> str:
    """One answer from the terminal (prompt_toolkit: line editing, no echo for a key)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter

    from ..render.terminal_answers import keyboard

    completer = WordCompleter(completions, WORD=True) if completions else None
    session: PromptSession[str] = PromptSession(input=keyboard())
    return session.prompt(message, is_password=password, completer=completer)


def choose(options: list[str], title: str | None = None, typed: set[str] | None = None) -> Any:
    """A numbered list; Enter takes the first. The index picked, or (when `typed` is given)
    a name from it typed instead."""
    if title:
        print(title)
    for number, option in enumerate(options, 1):
        print(f"  {number}. {option}")
    while True:
        answer = ask("Choose [1]: ").strip()
        if not answer:
            return 0
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return int(answer) - 1
        if typed and answer in typed:
            return answer
        print(f"  type a number from 1 to {len(options)}")


def yes_no(question: str) -> bool:
    """One key answers: y or Enter yes, n (or Escape) no; Ctrl-C leaves the setup."""
    from ..tools.approve import INTERRUPT, YES_NO
    from ..tools.approve import choose as choose_key

    answer = asyncio.run(choose_key(f"{question} [Y/n] ", YES_NO, enter="yes"))
    if answer == INTERRUPT:
        raise KeyboardInterrupt
    return answer == "yes"
