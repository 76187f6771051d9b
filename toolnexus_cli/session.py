"""What `ask` and `chat` share: the store, the client, thread ids."""

from __future__ import annotations

import os
import secrets
from typing import Any

from toolnexus import Client, RunTimeout, create_client

from .config import Config, Target, data_dir
from .errors import UsageError
from .keys import KeyChoice, check_provider_headers, choose_key
from .redact import RedactingStore, Redactor


def open_store(config: Config) -> Any:
    """The thread store the config names (TOOLNEXUS_STORE, then `store`): by default an
    SQLite file in the user data directory."""
    from toolnexus.stores import open_store as open_named_store

    spec = os.environ.get("TOOLNEXUS_STORE") or config.data.get("store") or "sqlite"
    return open_named_store(data_dir() / "threads.db" if spec == "sqlite" else spec)


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


def make_client(target: Target, store: Any, *, hooks: Any = None, wait_for: Any = None
                ) -> tuple[Client, KeyChoice, Redactor]:
    """The client for `target`, the key it uses (for error hints) and the redactor of
    every secret the run holds."""
    choice = choose_key(target)
    check_provider_headers(target)
    key = choice.value
    redact = Redactor.for_run(key, target, store)
    try:
        client = create_client(
            base_url=target.base_url, style=target.style, model=target.model, api_key=key,
            headers=target.headers or None, system_prompt=target.system,
            request_params=target.request_params or None,
            store=RedactingStore(store, redact) if store is not None and redact.secrets
            else store,
            hooks=hooks, wait_for=wait_for, max_turns=target.max_turns,
            timeout_ms=target.timeout * 1000,
        )
    except ValueError as exc:  # a base URL or header no request could carry
        raise UsageError(str(exc)) from None
    return client, choice, redact


def explain_error(exc: BaseException, choice: KeyChoice) -> str:
    """One line for a failed run; a refused key says where that key came from."""
    seconds = getattr(exc, "seconds", None)
    if isinstance(exc, RunTimeout) and seconds is not None:
        return (f"timed out after {seconds:g} s (the 'timeout' setting of the config file "
                "allows longer)")
    status = getattr(exc, "status", None)
    if status in (401, 403):
        said = getattr(exc, "provider_message", None) or "the key was refused"
        return f"HTTP {status} from the endpoint: {said} ({choice.advice()})"
    return " ".join(str(exc).split())
