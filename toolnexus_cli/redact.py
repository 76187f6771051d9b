"""Keeping secrets out of everything the CLI prints or saves.

One Redactor does it all. Everywhere (answers, events, transcripts, tool output) it
replaces the secrets the run holds: the key, every key the environment could supply,
provider header values, the base URL's password and the thread store's DSN password. In
the CLI's own lines (errors, `config show`) it also masks the password of any URL
(`scheme://user:PASSWORD@host`, or a lone token before the `@`) and of any keyword-form
DSN (`host=db password=PASSWORD`), known or not. It does not guess at such patterns in
what a model or tool wrote: that would rewrite the code in an answer.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

MASK = "***"
MIN_SECRET = 4  # shorter values are not replaced (they would blank out ordinary words)
# Header values that describe a request rather than authenticate it; every other header
# value is a secret.
PUBLIC_HEADERS = {"accept", "content-type", "user-agent", "anthropic-version", "anthropic-beta",
                  "openai-beta", "http-referer", "referer", "x-title"}
# A config key whose last word is one of these holds a secret ("max_tokens" does not).
SECRET_SETTING = re.compile(r"(^|[_-])(key|token|secret|password|authorization|cookie)$", re.I)

_URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)([^\s/@]+)@", re.I)
_DSN_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'\"]+)", re.I)


class Redactor:
    """Removes secrets from anything the CLI prints or saves."""

    def __init__(self, *secrets_: str | None) -> None:
        found = {s for s in secrets_ if s and len(s) >= MIN_SECRET}
        self.secrets = sorted(found, key=len, reverse=True)  # a longer one may hold a shorter

    @classmethod
    def for_run(cls, key: str | None, target: Any = None, store: Any = None) -> Redactor:
        """The run's key, every key the environment could have supplied, the target's
        header values and base URL password, and the password of the store's DSN."""
        secrets_ = [key, *(os.environ.get(name) for name in key_variables())]
        if target is not None:
            secrets_ += [value for name, value in (target.headers or {}).items()
                         if name.lower() not in PUBLIC_HEADERS]
            secrets_.append(_password(target.base_url))
        dsn = getattr(store, "dsn", None)
        if isinstance(dsn, str):
            secrets_.append(_password(dsn))
            secrets_ += [match.group(2).strip("'") for match in _DSN_PASSWORD.finditer(dsn)]
        return cls(*secrets_)

    def __call__(self, text: str) -> str:
        """`text` without the known secrets (safe on a piece of a stream, too)."""
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

    def line(self, text: str) -> str:
        """One of the CLI's own lines (an error, a setting) without the known secrets or
        any URL or DSN password."""
        text = _URL_USERINFO.sub(_masked_userinfo, self(text))
        return _DSN_PASSWORD.sub(rf"\g<1>{MASK}", text)

    def value(self, data: Any) -> Any:
        """A copy of a JSON-like value (a transcript, an event) without the secrets."""
        if isinstance(data, str):
            return self(data)
        if isinstance(data, list):
            return [self.value(item) for item in data]
        if isinstance(data, dict):
            return {key: self.value(item) for key, item in data.items()}
        return data

    def setting(self, path: str, value: Any) -> Any:
        """A config value as `config show` prints it: masked whole when its key names a
        secret or it is a header, else without passwords."""
        if SECRET_SETTING.search(path.rsplit(".", 1)[-1]) or ".headers." in path.lower():
            return MASK
        return self.line(value) if isinstance(value, str) else value

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)


def key_variables() -> set[str]:
    """Every environment variable a key could come from: each style's and the fallbacks."""
    from toolnexus.client import FALLBACK_KEY_ENV
    from toolnexus.wire import STYLES

    return {"TOOLNEXUS_API_KEY", FALLBACK_KEY_ENV, *(s.key_env for s in STYLES.values())}


def _masked_userinfo(match: re.Match[str]) -> str:
    """`user:***@` for a user and password; `***@` for a lone token (`https://TOKEN@host`)."""
    user, colon, _ = match.group(2).partition(":")
    return f"{match.group(1)}{user + ':' if colon else ''}{MASK}@"


def _password(url: str | None) -> str | None:
    try:
        return urlsplit(url or "").password
    except ValueError:
        return None


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
    (an endpoint that echoes the key back must not get it written into the thread file).
    The redacted transcript is made of new dicts; the store tells an append from a
    rewrite by the version a save passes on, not by which dicts it is given."""

    def __init__(self, store: Any, redact: Redactor) -> None:
        self._store, self._redact = store, redact

    async def get(self, id: str) -> Any:
        return await self._store.get(id)

    async def load(self, id: str) -> Any:
        return await self._store.load(id)

    async def save(self, id: str, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        return await self._store.save(id, self._redact.value(messages), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)
