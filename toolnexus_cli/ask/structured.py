"""`ask --schema`: reading the schema from a file, inline JSON or the short form, and
printing the answer as exactly one JSON document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from toolnexus import RunResult, ToolnexusError
from toolnexus.app_support import TooDeep, loads_bounded

from ..errors import UsageError
from ..render.renderers import NO_FACTS, FooterFacts, PlainRenderer

if TYPE_CHECKING:
    from toolnexus import Event

SCHEMA_FILE_LIMIT = 1024 * 1024


def read_schema(text: str, *, many: bool = False) -> dict[str, Any]:
    """The JSON schema `text` stands for: inline JSON ('{...}'), a JSON file, or the short
    form ('name, age int, tags list'); with `many`, a list of such objects."""
    from toolnexus.schema import OutputSchema, multi, parse_short_schema

    source = text.strip()
    try:
        if source.startswith("{"):
            schema = _json(source, "the --schema JSON")
        elif Path(source).expanduser().is_file():
            schema = _json(_read_file(Path(source).expanduser()), source)
        else:
            schema = parse_short_schema(source)
        schema = multi(schema) if many else schema
        OutputSchema.of(schema)  # one an endpoint can be asked for
    except ToolnexusError as exc:
        raise UsageError(f"--schema: {exc}") from None
    return schema


def _read_file(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(SCHEMA_FILE_LIMIT + 1)
    except OSError as exc:
        raise UsageError(f"--schema: cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > SCHEMA_FILE_LIMIT:
        raise UsageError(f"--schema: {path} is over 1 MiB; a schema is far smaller")
    return data.decode("utf-8", "replace")


def _json(text: str, where: str) -> Any:
    try:
        return loads_bounded(text)
    except ValueError as exc:
        why = exc if isinstance(exc, TooDeep) else f"not valid JSON: {exc}"
        raise UsageError(f"--schema: {where} is {why}") from None


class SchemaOutput(PlainRenderer):
    """stdout is the answer's JSON document and nothing else (pretty on a terminal, one
    line in a pipe); with -v, tools, reasoning and the footer go to stderr as ever."""

    def __init__(
        self, out: TextIO, err: TextIO, *, pretty: bool, verbose: bool, redact: Any
    ) -> None:
        super().__init__(out, err, verbose=verbose)
        self.pretty, self.redact = pretty, redact

    def event(self, event: Event) -> None:
        if event["type"] == "text":  # the document comes whole, from result.data
            self.meter.see(event)
        else:
            super().event(event)

    def finish(self, result: RunResult, thread: str | None, facts: FooterFacts = NO_FACTS) -> None:
        document = json.dumps(result.data, ensure_ascii=False, indent=2 if self.pretty else None)
        self.out.write(self.redact(document) + "\n")
        self.out.flush()
        super().finish(result, thread, facts)
