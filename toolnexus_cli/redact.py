"""Keeping secrets out of everything the CLI prints or saves."""

from __future__ import annotations

import os
from typing import Any


class Redactor:
    """Removes secrets from anything the CLI prints."""

    def __init__(self, *secrets_: str | None) -> None:
        self.secrets = [s for s in secrets_ if s and len(s) >= 4]

    @classmethod
    def for_run(cls, key: str | None) -> Redactor:
        """The run's key and every key the environment could have supplied."""
        from toolnexus.client import FALLBACK_KEY_ENV
        from toolnexus.wire import STYLES

        names = {"TOOLNEXUS_API_KEY", FALLBACK_KEY_ENV, *(s.key_env for s in STYLES.values())}
        return cls(key, *(os.environ.get(name) for name in names))

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def value(self, data: Any) -> Any:
        """A copy of a JSON-like value (a transcript, an event) without the secrets."""
        if isinstance(data, str):
            return self(data)
        if isinstance(data, list):
            return [self.value(item) for item in data]
        if isinstance(data, dict):
            return {key: self.value(item) for key, item in data.items()}
        return data

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)


class StreamRedactor:
    """Redacts text that arrives in pieces: a piece ending in what could be the start of a
    secret is held back until the next piece shows whether it is one."""

    def __init__(self, redact: Redactor) -> None:
        self.redact, self.held = redact, ""

    def feed(self, piece: str) -> str:
        if not self.redact.secrets:
            return piece
        text = self.redact(self.held + piece)
        keep = max(_start_of(secret, text) for secret in self.redact.secrets)
        self.held = text[len(text) - keep:] if keep else ""
        return text[:len(text) - keep]

    def flush(self) -> str:
        rest, self.held = self.held, ""
        return rest


def _start_of(secret: str, text: str) -> int:
    """The length of the longest end of `text` that begins `secret` (0: none). Runs once
    per streamed delta, so it only looks where the secret's first character occurs."""
    index = text.find(secret[0], max(0, len(text) - len(secret) + 1))
    while index != -1:
        if secret.startswith(text[index:]):
            return len(text) - index
        index = text.find(secret[0], index + 1)
    return 0


class EventRedactor:
    """Loop events without the secrets; text and reasoning are redacted across deltas."""

    def __init__(self, redact: Redactor) -> None:
        self.redact = redact
        self.streams = {"text": redact.stream(), "reasoning": redact.stream()}

    def __call__(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        if not self.redact.secrets:
            return [event]
        kind = event["type"]
        if kind in self.streams:
            out = self.flush(but=kind)
            delta = self.streams[kind].feed(event["delta"])
            return [*out, {**event, "delta": delta}] if delta else out
        # a done event's result is redacted where it is printed
        return [*self.flush(), event if kind == "done" else self.redact.value(event)]

    def flush(self, but: str | None = None) -> list[dict[str, Any]]:
        """Whatever was held back, as events (before an event of another kind, or at the end)."""
        return [{"type": kind, "delta": rest} for kind, stream in self.streams.items()
                if kind != but and (rest := stream.flush())]


class RedactingStore:
    """The store as the client sees it: transcripts are saved without the run's secrets
    (an endpoint that echoes the key back must not get it written into the thread file)."""

    def __init__(self, store: Any, redact: Redactor) -> None:
        self._store, self._redact = store, redact

    async def get(self, id: str) -> Any:
        return await self._store.get(id)

    async def save(self, id: str, messages: list[dict[str, Any]], **kwargs: Any) -> None:
        await self._store.save(id, self._redact.value(messages), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)
