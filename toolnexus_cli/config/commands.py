"""`toolnexus config show | init`."""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolnexus.app_support import visible

from ..errors import UsageError
from ..redaction.redact import Redactor
from .file import Config

EXAMPLE = Path(__file__).with_name("config.example.toml")


def show(config: Config) -> str:
    """The config as TOML, a dotted key a setting, secrets masked as the string "***"."""
    where = visible(str(config.path)).replace("\n", "^J")  # a comment is one line
    lines = [f"# {where}" + ("" if config.path.exists() else " (not created yet)")]
    lines += [
        f"{'.'.join(map(toml_key, path))} = {toml_value(value)}"
        for path, value in _flatten(config.file, ())
    ]
    return "\n".join(lines)


def _flatten(data: Mapping[str, Any], prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """Each setting by its path of keys, masked as `Redactor.setting` masks it; an empty
    table stays, as `{}`."""
    rows: list[tuple[tuple[str, ...], Any]] = []
    redact = Redactor()
    for key, value in data.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            rows += _flatten(value, path)
        else:
            rows.append((path, redact.setting(".".join(path), value)))
    return rows


def toml_value(value: Any) -> str:
    """A value read from TOML, written back as TOML (on one line)."""
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a TOML value: {type(value).__name__}")


def init(path: Path, *, force: bool = False) -> Path:
    if path.exists() and not force:
        raise UsageError(f"{path} already exists: edit it, or pass --force to overwrite")
    return write_config(path, EXAMPLE.read_text(encoding="utf-8"))


def write_config(path: Path, text: str) -> Path:
    """Write the whole file at once: an interruption leaves the old one or the new one. It
    is 0600 whatever the umask: it may hold keys, and one others may write is refused."""
    from ..threads.transcript import write_private

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
    head = _DEFAULT_MODEL.sub(
        lambda _: f"default_model = {toml_string(default_model)}", text[: cut.start()], count=1
    )
    examples = "".join(
        line if not line.strip() or line.startswith("#") else "# " + line
        for line in text[cut.start() :].splitlines(keepends=True)
    )
    return f"{head}{tables.rstrip()}\n\n# More examples (not in use):\n{examples}"


_NOT_PRINTED = re.compile("[\x7f-\x9f]")  # DEL (TOML wants it escaped) and the C1 controls


def toml_string(value: str) -> str:
    """A TOML basic string that acts on no terminal: JSON's escapes are TOML's (every other
    control character is one), and DEL and the C1 controls are escaped too."""
    return _NOT_PRINTED.sub(
        lambda found: f"\\u{ord(found[0]):04x}", json.dumps(value, ensure_ascii=False)
    )


def toml_key(key: str) -> str:
    """A key, bare when TOML allows it, else quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_string(key)


def provider_table(name: str, settings: dict[str, str]) -> str:
    lines = [f"[providers.{toml_key(name)}]"] + [
        f"{toml_key(k)} = {toml_string(v)}" for k, v in settings.items()
    ]
    return "\n".join(lines) + "\n"
