"""Keeping secrets out of everything the CLI prints or saves.

One Redactor does it all. Everywhere (answers, events, transcripts, tool output) it
replaces the secrets the run holds: the key, every key the environment could supply,
provider header values, the password and the keys in the query of the base URL, and the
thread store's DSN password; each also in its base64, hex and percent-encoded forms. In
the CLI's own lines (errors, `config show`) it also masks the password of any URL
(`scheme://user:PASSWORD@host`, or a lone token before the `@`), the query parameters of
any URL that name a secret (`?api-key=`, `&token=`) and the password of any keyword-form
DSN (`host=db password=PASSWORD`), known or not. It does not guess at such patterns in
what a model or tool wrote: that would rewrite the code in an answer.

A secret is found as it reads (secret_reading.py): partly percent-encoded, or split by
zero-width characters, it is masked all the same. A streamed answer is redacted as a stream
(redact_stream.py), its reasoning and text each alone and together, so a secret split across
deltas (or begun in the reasoning and ended in the text, or split by reasoning in between)
is caught too; an assistant message's reasoning and text are redacted as that stream. What a
running tool call prints (`tool_output` events) is a stream of its own, one per call.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from toolnexus.events import reasoning_event, text_event, tool_output_event

from .redact_stream import MASK, Piece, StreamRedactor, joined
from .secret_reading import MIN_SECRET, Secrets

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolnexus import Event, Message, RunResult

MIN_ENCODED = 8  # the encoded forms of shorter ones could turn up in ordinary text
# Header values that describe a request rather than authenticate it; every other header
# value is a secret.
PUBLIC_HEADERS = {
    "accept",
    "content-type",
    "user-agent",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
    "http-referer",
    "referer",
    "x-title",
}
# A config key whose last word is one of these holds a secret ("max_tokens" does not);
# a key command may hold the key itself (`echo sk-...`).
SECRET_SETTING = r"(^|[_-])(key|key_cmd|token|secret|password|authorization|cookie)$"
# A URL query parameter whose name ends so carries a secret (`api-key`, `access_token`, `sig`).
SECRET_PARAMETER = r"(^|[_.-]|api)(key|token|secret|password|sig|signature|auth)$"

# Compiled where first used (re keeps what it compiled): a plain question uses few of them.
_URL_USERINFO = r"(\b[a-z][a-z0-9+.-]*://)([^\s/@]+)@"
_URL_QUERY = r"(\b[a-z][a-z0-9+.-]*://[^\s?#'\"<>]*\?)([^\s#'\"<>]*)"
_QUERY_PARAMETER = r"([^=&;]+)=([^&;]*)"
_DSN_PASSWORD = r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'\"]+)"
_URLSAFE = str.maketrans("+/", "-_")


class Redactor:
    """Removes secrets from anything the CLI prints or saves."""

    def __init__(self, *secrets_: str | None) -> None:
        self._secrets = Secrets(
            form for s in secrets_ if s and len(s) >= MIN_SECRET for form in _forms(s)
        )
        self.secrets = self._secrets.forms  # as each reads, longest first

    @classmethod
    def for_run(cls, key: str | None, target: Any = None, store: Any = None) -> Redactor:
        """The run's key, every key the environment could have supplied, the target's
        header values, the password and query keys of its base URL, and the password of
        the store's DSN."""
        secrets_ = [key, *(os.environ.get(name) for name in key_variables())]
        if target is not None:
            secrets_ += [
                value
                for name, value in (target.headers or {}).items()
                if name.lower() not in PUBLIC_HEADERS
            ]
            secrets_ += _url_secrets(target.base_url)
        dsn = getattr(store, "dsn", None)
        if isinstance(dsn, str):
            secrets_ += _url_secrets(dsn)
            secrets_ += [
                match.group(2).strip("'") for match in re.finditer(_DSN_PASSWORD, dsn, re.I)
            ]
        return cls(*secrets_)

    def __call__(self, text: str) -> str:
        """`text` without the known secrets."""
        if not self.secrets:
            return text
        return "".join(part for _, part in self.pieces([("", text)]))

    def pieces(self, pieces: list[Piece]) -> list[Piece]:
        """`pieces` without the known secrets, redacted as the stream they make: a secret
        that spans pieces is masked in the piece where it begins (the rest of it goes).
        Neighbours of one kind are joined."""
        stream = self.stream()
        out = [piece for kind, text in pieces for piece in stream.feed(kind, text)]
        return joined([*out, *stream.flush()])

    def line(self, text: str) -> str:
        """One of the CLI's own lines (an error, a setting) without the known secrets or
        any URL password or secret query parameter, or DSN password."""
        text = re.sub(_URL_USERINFO, _masked_userinfo, self(text), flags=re.I)
        text = re.sub(_URL_QUERY, _masked_query, text, flags=re.I)
        return re.sub(_DSN_PASSWORD, rf"\g<1>{MASK}", text, flags=re.I)

    def value(self, data: Any) -> Any:
        """A copy of a JSON-like value (a transcript, an event) without the secrets. An
        assistant message's reasoning and text are redacted as the stream they came in."""
        if isinstance(data, str):
            return self(data)
        if isinstance(data, list):
            return [self.value(item) for item in data]
        if isinstance(data, dict):
            if _reasoned(data):
                data = self._message(data)
            return {key: self.value(item) for key, item in data.items()}
        return data

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        """An assistant message whose reasoning and text are redacted as one stream."""
        said = dict(
            self.pieces([("reasoning", message["reasoning"]), ("content", message["content"])])
        )
        return {
            **message,
            "reasoning": said.get("reasoning", ""),
            "content": said.get("content", ""),
        }

    def result(self, result: RunResult) -> RunResult:
        """A copy of a run's result without the secrets; its text is the last message's,
        redacted with that message's reasoning."""
        messages = self.value(result.messages)
        last: Mapping[str, Any] = result.messages[-1] if result.messages else {}
        text = (
            messages[-1]["content"]
            if _reasoned(last) and last["content"] == result.text
            else self(result.text)
        )
        return dataclasses.replace(
            result, messages=messages, text=text, tool_calls=self.value(result.tool_calls)
        )

    def setting(self, path: str, value: Any) -> Any:
        """A config value as `config show` prints it: masked whole when its key names a
        secret (or a key command) or it is a header, else as one of the CLI's lines."""
        if re.search(SECRET_SETTING, path.rsplit(".", 1)[-1], re.I) or ".headers." in path.lower():
            return MASK
        return self.line(value) if isinstance(value, str) else value

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self._secrets)


def key_variables() -> set[str]:
    """Every environment variable a key could come from: each style's and the fallbacks."""
    from toolnexus.app_support import FALLBACK_KEY_ENV
    from toolnexus.wire import KEY_ENVS

    return {"TOOLNEXUS_API_KEY", FALLBACK_KEY_ENV, *KEY_ENVS.values()}


def _masked_userinfo(match: re.Match[str]) -> str:
    """`user:***@` for a user and password; `***@` for a lone token (`https://TOKEN@host`)."""
    user, colon, _ = match.group(2).partition(":")
    return f"{match.group(1)}{user + ':' if colon else ''}{MASK}@"


def _masked_query(match: re.Match[str]) -> str:
    return match.group(1) + re.sub(_QUERY_PARAMETER, _masked_parameter, match.group(2))


def _masked_parameter(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}={MASK}" if re.search(SECRET_PARAMETER, unquote(name), re.I) else match.group(0)


def _url_secrets(url: str | None) -> list[str | None]:
    """The password of `url` and the values of its query parameters that name a secret."""
    try:
        parts = urlsplit(url or "")
        password = parts.password
    except ValueError:
        return []
    return [
        password,
        *(
            value
            for name, value in parse_qsl(parts.query)
            if re.search(SECRET_PARAMETER, name, re.I)
        ),
    ]


def _forms(secret: str) -> set[str]:
    """`secret` and, unless it is short, how it reads base64, hex or percent-encoded."""
    if len(secret) < MIN_ENCODED:
        return {secret}
    raw = secret.encode()
    percent = {quote(secret, safe=""), quote(secret)}
    return {
        secret,
        raw.hex(),
        raw.hex().upper(),
        *_base64_cores(raw),
        *percent,
        *(re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), form) for form in percent),
    }


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 characters that come from `raw` alone, wherever it stands in what was
    encoded (3 alignments: it may follow other bytes, as in `user:KEY`), in both alphabets."""
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw).decode("ascii")
        core = encoded[-(-offset * 8 // 6) : (offset + len(raw)) * 8 // 6]
        cores |= {core, core.translate(_URLSAFE)}
    return cores


def _reasoned(message: Any) -> bool:
    """Whether `message` is an assistant message with reasoning and text (one stream)."""
    return (
        isinstance(message, dict)
        and isinstance(message.get("reasoning"), str)
        and isinstance(message.get("content"), str)
    )


STREAMED = ("text", "reasoning")  # the events whose deltas make one stream


class EventRedactor:
    """Loop events without the secrets; the deltas of text and reasoning are redacted as
    one stream, what each tool call prints as another."""

    def __init__(self, redact: Redactor) -> None:
        self.redact = redact
        self.stream = redact.stream()
        self.printing: dict[str, tuple[str, StreamRedactor]] = {}  # call id: (tool, stream)

    def __call__(self, event: Event) -> list[Event]:
        if event["type"] == "text" or event["type"] == "reasoning":
            return _deltas(self.stream.feed(event["type"], event["delta"]))
        held = _deltas(self.stream.flush())
        if event["type"] == "tool_output":
            name, stream = self.printing.setdefault(
                event["id"], (self.redact(event["name"]), self.redact.stream())
            )
            return [*held, *_printed(event["id"], name, stream.feed("output", event["text"]))]
        if event["type"] == "tool_result":
            held += self._printed_held(event["id"])
        # a done event's result is redacted where it is printed
        return [*held, event if event["type"] == "done" else self.redact.value(event)]

    def flush(self) -> list[Event]:
        """Whatever was held back, as events (before an event of another kind, or at the end)."""
        held = _deltas(self.stream.flush())
        for call in list(self.printing):
            held += self._printed_held(call)
        return held

    def _printed_held(self, call: str) -> list[Event]:
        """What was held back of what `call` printed (it ended)."""
        if call not in self.printing:
            return []
        name, stream = self.printing.pop(call)
        return _printed(call, name, stream.flush())


def _deltas(pieces: list[Piece]) -> list[Event]:
    return [text_event(text) if kind == "text" else reasoning_event(text) for kind, text in pieces]


def _printed(call: str, name: str, pieces: list[Piece]) -> list[Event]:
    return [tool_output_event(call, name, text) for _, text in pieces]


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

    async def save(self, id: str, messages: list[Message], **kwargs: Any) -> Any:
        return await self._store.save(id, self._redact.value(messages), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)
