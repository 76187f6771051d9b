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


def make_client(target: Target, store: Any, *, max_turns: int = 10) -> tuple[Client, str | None]:
    """The client for `target`, and the key it uses (for redaction only)."""
    key = key_for(target)
    client = create_client(
        base_url=target.base_url, style=target.style, model=target.model, api_key=key,
        headers=target.headers or None, system_prompt=target.system,
        request_params=target.request_params or None, store=store,
        max_turns=max_turns,
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
