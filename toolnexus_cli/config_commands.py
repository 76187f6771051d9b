"""`toolnexus config show | init`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .config import Config
from .errors import UsageError
from .redact import Redactor

EXAMPLE = Path(__file__).with_name("config.example.toml")


def show(config: Config) -> str:
    lines = [f"# {config.path}" + ("" if config.path.exists() else " (not created yet)")]
    lines += [f"{path} = {json.dumps(value)}" for path, value in _flatten(config.data, "")]
    return "\n".join(lines)


def _flatten(data: dict[str, Any], prefix: str) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    redact = Redactor()
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, path + ".")
        else:
            rows.append((path, redact.setting(path, value)))
    return rows


def init(path: Path, *, force: bool = False) -> Path:
    if path.exists() and not force:
        raise UsageError(f"{path} already exists: edit it, or pass --force to overwrite")
    return write_config(path, EXAMPLE.read_text(encoding="utf-8"))


def write_config(path: Path, text: str) -> Path:
    """Write the whole file at once: an interruption leaves the old one or the new one. It
    is 0600 whatever the umask: it may hold keys, and one others may write is refused."""
    from .transcript import write_private

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    write_private(tmp, text)
    tmp.replace(path)
    return path


_FIRST_PROVIDER = re.compile(r"^\[providers\.", re.M)
_DEFAULT_MODEL = re.compile(r"^default_model = .*$", re.M)


def example_with(default_model: str, tables: str) -> str:
    """The documented example made someone's own: `default_model` set and `tables` (their
    provider) in the providers section; the example's own providers and models stay, as
    comments, to show how more are added."""
    text = EXAMPLE.read_text(encoding="utf-8")
    cut = _FIRST_PROVIDER.search(text)
    if cut is None:
        raise RuntimeError(f"{EXAMPLE} has lost its [providers.*] tables")
    head = _DEFAULT_MODEL.sub(lambda _: f"default_model = {toml_string(default_model)}",
                              text[:cut.start()], count=1)
    examples = "".join(line if not line.strip() or line.startswith("#") else "# " + line
                       for line in text[cut.start():].splitlines(keepends=True))
    return f"{head}{tables.rstrip()}\n\n# More examples (not in use):\n{examples}"


def toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value)


def provider_table(name: str, settings: dict[str, str]) -> str:
    key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else toml_string(name)
    lines = [f"[providers.{key}]"] + [f"{k} = {toml_string(v)}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"
