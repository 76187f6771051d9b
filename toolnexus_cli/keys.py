"""API keys: a 0600 file of named keys, password-manager commands, the environment.

Keys are only ever handed to the client; nothing here prints one.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .config import Target, config_dir
from .errors import UsageError


def keys_path() -> Path:
    return config_dir() / "keys.json"


def load_keys() -> dict[str, str]:
    path = keys_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise UsageError(f"{path} is not valid JSON: fix it or delete it and run "
                         "'toolnexus keys set NAME' again") from None
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


@dataclass
class KeyChoice:
    """The key a run uses, and where it came from, so a refusal can say what to fix."""

    value: str | None
    source: str  # e.g. "TOOLNEXUS_API_KEY", "the stored key for openai"
    provider: str | None = None

    def advice(self) -> str:
        name = self.provider or "NAME"
        if self.value is None:
            return (f"no key was sent: set {self.source} or run 'toolnexus keys set {name}'")
        return (f"the key came from {self.source}: check it there, or store another with "
                f"'toolnexus keys set {name}'")


def choose_key(target: Target) -> KeyChoice:
    """TOOLNEXUS_API_KEY, else the provider's api_key_cmd, its api_key_env variable, or a
    stored key under its name; else the library's own fallback variables."""
    provider = target.provider
    if os.environ.get("TOOLNEXUS_API_KEY"):
        return KeyChoice(os.environ["TOOLNEXUS_API_KEY"], "TOOLNEXUS_API_KEY", provider)
    if target.api_key_cmd:
        value = _run_key_command(target.api_key_cmd, provider or "this provider")
        return KeyChoice(value, f"api_key_cmd of provider {provider}", provider)
    if target.api_key_env and os.environ.get(target.api_key_env):
        return KeyChoice(os.environ[target.api_key_env], target.api_key_env, provider)
    stored = load_keys().get(provider) if provider else None
    if stored:
        return KeyChoice(stored, f"the stored key for {provider}", provider)
    from toolnexus.wire import wire_style

    style_env = wire_style(target.style).key_env
    for name in (style_env, "OPENROUTER_API_KEY"):
        if os.environ.get(name):
            return KeyChoice(os.environ[name], name, provider)
    return KeyChoice(None, target.api_key_env or style_env, provider)


def _run_key_command(command: str, provider: str) -> str:
    try:
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise UsageError(f"api_key_cmd for {provider} took over 30 s: check the command") from None
    key = done.stdout.strip()
    if done.returncode != 0 or not key:
        raise UsageError(
            f"api_key_cmd for {provider} failed (exit {done.returncode}) and gave no key: "
            "run it by hand to see why")
    return key
