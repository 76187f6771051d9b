"""What `ask` writes for a program rather than a person: every event as a JSON line, or one
JSON object at the end; and, whatever the output, one line on stderr for a compaction."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

from toolnexus import RunResult
from toolnexus.app_support import visible
from toolnexus.types import CompactionEvent, Event

from ..render.context_view import compaction_note
from ..render.renderers import NO_FACTS, FooterFacts, TerminalRenderer, late_note, result_json
from ..session.session import Output, Session, Turn

if TYPE_CHECKING:
    from ..redaction.redact import Redactor


def print_json(data: Any, redact: Redactor) -> None:
    line = json.dumps(data, ensure_ascii=False, default=str)
    sys.stdout.write(redact(line) + "\n")
    sys.stdout.flush()


def error_json(turn: Turn, thread: str | None) -> dict[str, Any]:
    """--json's one object for a turn that failed: the line stderr got, the error's kind
    ("rate_limited", "overloaded", "auth_failed", "context_overflow", "server_error", ...)
    and the HTTP status it stands for (null when none)."""
    return {
        "status": "failed",
        "error": turn.error,
        "kind": turn.error_kind,
        "http_status": turn.error_status,
        "thread": thread or "",
    }


class NotesOnStderr:
    """An output that says on stderr, in one line each, that older turns were compacted
    and that the model was asked without MCP servers still starting: stdout keeps only
    the answer, or the JSON that carries the event."""

    def __init__(self, output: Output) -> None:
        self.output = output

    def event(self, event: Event) -> None:
        if event["type"] != "compaction" or isinstance(self.output, JsonOutput):
            self.output.event(event)
        if event["type"] == "compaction":
            self._note(compaction_note(event))
        elif event["type"] == "waiting" and (late := late_note(event)) is not None:
            self._note(visible(late))

    def _note(self, line: str) -> None:
        if isinstance(self.output, TerminalRenderer):  # stop live output first
            self.output.end_answer()
        sys.stderr.write(f"toolnexus: {line}\n")
        sys.stderr.flush()

    def end_answer(self) -> None:
        self.output.end_answer()

    def resume(self, tool: str) -> None:
        self.output.resume(tool)

    def finish(self, result: RunResult, thread: str | None, facts: FooterFacts = NO_FACTS) -> None:
        self.output.finish(result, thread, facts)


class JsonOutput:
    """--events: every event as a JSON line; --json: one JSON object at the end (with
    the compactions the run made, the files its calls changed and how the commands they
    ran ended, if any)."""

    def __init__(self, session: Session, *, events: bool) -> None:
        self.session, self.events = session, events
        self.compactions: list[CompactionEvent] = []
        self.changes: list[dict[str, Any]] = []
        self.exits: list[dict[str, Any]] = []

    def event(self, event: Event) -> None:
        if self.events:
            self._print(self._event_json(event))
        elif event["type"] == "compaction":
            self.compactions.append(event)
        elif event["type"] == "tool_result":
            if "changes" in event:
                self.changes.append({"call": event["id"], **event["changes"].as_json()})
            how = (("exit_code", event.get("exit_code")), ("signal", event.get("signal")))
            ended = {key: value for key, value in how if value is not None}
            if ended:
                self.exits.append({"call": event["id"], **ended})

    def end_answer(self) -> None:
        pass

    def resume(self, tool: str) -> None:
        pass

    def finish(self, result: RunResult, thread: str | None, facts: FooterFacts = NO_FACTS) -> None:
        if not self.events:
            body = result_json(self.session.redact.result(result), thread or "", facts.price)
            if self.compactions:
                body["compactions"] = self.compactions
            if self.changes:
                body["changes"] = self.changes
            if self.exits:
                body["exits"] = self.exits
            self._print(body)

    def _print(self, data: Any) -> None:
        print_json(data, self.session.redact)

    def _event_json(self, event: Event) -> dict[str, Any]:
        if event["type"] == "done":
            result = self.session.redact.result(event["result"])
            return {"type": "done", "result": dataclasses.asdict(result)}
        if event["type"] == "tool_result" and "changes" in event:
            return {**event, "changes": event["changes"].as_json()}
        return dict(event)
