"""What `ask` and `chat` share: the store, the client, thread ids, secret redaction."""

from __future__ import annotations

import os
import secrets
from typing import Any

from toolnexus import Client, create_client

from .config import Config, Target, data_dir
from .errors import UsageError
from .keys import key_for


def open_store(config: Config) -> Any:
    spec = os.environ.get("TOOLNEXUS_STORE") or config.data.get("store") or "sqlite"
    if spec.startswith(("postgres://", "postgresql://")):
        try:
            from toolnexus.stores.postgres import PostgresStore
        except ImportError:
            raise UsageError("store is PostgreSQL but psycopg is missing: "
                             "pip install 'toolnexus[postgres]'") from None
        return PostgresStore(spec)
    from toolnexus.stores.sqlite import SQLiteStore

    path = data_dir() / "threads.db" if spec == "sqlite" else spec.removeprefix("sqlite:///")
    return SQLiteStore(path)


async def record_turn(store: Any, thread: str, result: Any) -> None:
    """Note the model and tokens of a finished turn on its thread."""
    await store.record_usage(thread, model=result.model, usage=result.usage)


def new_thread_id() -> str:
    return "t-" + secrets.token_hex(4)


async def pick_thread(store: Any, thread: str | None, continue_last: bool) -> str:
    if thread and continue_last:
        raise UsageError("use either --id or --continue, not both")
    if continue_last:
        latest = await store.latest_id()
        if latest is None:
            raise UsageError("no thread to continue yet: ask something first")
        return latest
    return thread or new_thread_id()


def make_client(target: Target, store: Any, *, hooks: Any = None,
                max_turns: int = 10) -> tuple[Client, str | None]:
    """The client for `target`, and the key it uses (for redaction only)."""
    key = key_for(target)
    redact = Redactor.for_run(key)
    client = create_client(
        base_url=target.base_url, style=target.style, model=target.model, api_key=key,
        headers=target.headers or None, system_prompt=target.system,
        request_params=target.request_params or None,
        store=RedactingStore(store, redact) if store is not None and redact.secrets else store,
        hooks=hooks, max_turns=max_turns,
    )
    return client, key


class Redactor:
    """Removes secrets from anything the CLI prints."""

    def __init__(self, *secrets_: str | None) -> None:
        self.secrets = [s for s in secrets_ if s and len(s) >= 4]

    @classmethod
    def for_run(cls, key: str | None) -> Redactor:
        """The run's key and every key the environment could have supplied."""
        names = ("TOOLNEXUS_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")
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
        keep = max((n for secret in self.redact.secrets for n in range(1, len(secret))
                    if text.endswith(secret[:n])), default=0)
        self.held = text[len(text) - keep:] if keep else ""
        return text[:len(text) - keep]

    def flush(self) -> str:
        rest, self.held = self.held, ""
        return rest


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
