"""API keys: a 0600 file of named keys, password-manager commands, the environment.

Keys are only ever handed to the client; nothing here prints one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .file import Target, config_dir


def keys_path() -> Path:
    return config_dir() / "keys.json"


def mcp_tokens_path() -> Path:
    """Where `toolnexus mcp login` keeps the OAuth tokens of remote MCP servers (0600)."""
    return config_dir() / "mcp_tokens.json"


def load_keys() -> dict[str, str]:
    path = keys_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise UsageError(
            f"{path} is not valid JSON: fix it or delete it and run 'toolnexus keys set NAME' again"
        ) from None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def write_keys(keys: dict[str, str]) -> Path:
    path = keys_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(keys, handle, indent=2)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


@dataclass(frozen=True, slots=True)
class KeyChoice:
    """The key a run uses, and where it came from, so a refusal can say what to fix."""

    value: str | None
    source: str  # e.g. "TOOLNEXUS_API_KEY", "the stored key for openai"
    provider: str | None = None
    origin: str = ""  # where the value came from, as a user reads it: "$OPENAI_API_KEY"

    def advice(self) -> str:
        name = self.provider or "NAME"
        if self.value is None:
            return f"no key was sent: set {self.source} or run 'toolnexus keys set {name}'"
        return (
            f"the key came from {self.source}: check it there, or store another with "
            f"'toolnexus keys set {name}'"
        )


def choose_key(target: Target) -> KeyChoice:
    """TOOLNEXUS_API_KEY, else the provider's api_key_cmd, its api_key_env variable, or a
    stored key under its name; else the library's own fallback variables. A key that could
    not travel in a header (a line break, a control character) is refused here, before
    any connection, naming where it came from."""
    from toolnexus.transport import header_value_problem

    choice = _find_key(target)
    problem = header_value_problem(choice.value) if choice.value else None
    if problem:
        raise UsageError(f"the key from {choice.origin} contains {problem}: fix it there")
    return choice


def check_provider_headers(target: Target) -> None:
    """Refuse a config `headers` value that could not travel in a header."""
    from toolnexus.transport import header_value_problem

    for name, value in target.headers.items():
        problem = header_value_problem(value)
        if problem:
            where = f"providers.{target.provider}.headers.{name}"
            raise UsageError(
                f"the config key {where} contains {problem}: fix it in the config file"
            )


def _find_key(target: Target) -> KeyChoice:
    provider = target.provider
    if os.environ.get("TOOLNEXUS_API_KEY"):
        return _from_env("TOOLNEXUS_API_KEY", provider)
    own = provider_key(target)
    if own is not None:
        return own
    from toolnexus.wire import wire_style

    style_env = wire_style(target.style).key_env
    for name in (style_env, "OPENROUTER_API_KEY"):
        if os.environ.get(name):
            return _from_env(name, provider)
    return KeyChoice(None, target.api_key_env or style_env, provider)


def provider_key(target: Target) -> KeyChoice | None:
    """The provider's own key: its api_key_cmd, its api_key_env variable or the key stored
    under its name; None without one. No catch-all variable: listing the models of every
    provider must not send one provider's key to another."""
    provider = target.provider
    if target.api_key_cmd:
        value = _run_key_command(
            target.api_key_cmd, provider or "this provider", target.api_key_cmd_timeout
        )
        return KeyChoice(
            value,
            f"api_key_cmd of provider {provider}",
            provider,
            f"the api_key_cmd of provider {provider}",
        )
    if target.api_key_env and os.environ.get(target.api_key_env):
        return _from_env(target.api_key_env, provider)
    stored = load_keys().get(provider) if provider else None
    if stored:
        return KeyChoice(
            stored,
            f"the stored key for {provider}",
            provider,
            f"the keys file ({keys_path()}, entry {provider!r})",
        )
    return None


def _from_env(name: str, provider: str | None) -> KeyChoice:
    return KeyChoice(os.environ[name], name, provider, f"${name}")


def _run_key_command(command: str, provider: str, timeout: float) -> str:
    """The key a command prints (see toolnexus.app_support.run_secret_command)."""
    from toolnexus import ToolnexusError
    from toolnexus.app_support import run_secret_command

    try:
        return run_secret_command(command, f"api_key_cmd for {provider}", timeout)
    except ToolnexusError as exc:
        raise UsageError(str(exc)) from None
