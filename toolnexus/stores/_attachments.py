"""Attachment bytes in stored threads: found in a message's content parts, kept once per
SHA-256 of their bytes, put back exactly on the way out. Pure Python, no database here.

A canonical message carries an attachment as base64 in one of three places of a content
part (see `toolnexus.content`): `image_url.url` and `file.file_data` (data URLs) and
`input_audio.data` (bare base64). On save, a payload larger than INLINE_UPTO bytes whose
base64 is canonical (re-encoding its bytes gives the same text, so the round trip is
exact) is replaced in the stored body by REF_SCHEME + its hex digest; the message's `refs`
(where each one was, its digest and the text before the base64) are kept beside the body.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..content import AUDIO_FORMATS, MAX_ATTACHMENT_BYTES
from ..content import byte_size as size_text
from ..types import Message
from .base import AttachmentInfo, StoreError

Path = tuple[str | int, ...]
Ref = list[Any]  # [path as a list, sha256 hex, prefix]: JSON-ready

REF_SCHEME = "toolnexus-attachment:sha256:"
INLINE_UPTO = 1024  # bytes: smaller payloads stay in the message body
_FIELDS = {
    "image_url": ("image_url", "url"),
    "file": ("file", "file_data"),
    "input_audio": ("input_audio", "data"),
}
_DATA_URL_HEAD = re.compile(r"data:([\w.+-]+/[\w.+-]+)(?:;[\w=.+-]+)*;base64,")
_HEAD_MAX = 256  # characters: a data URL's head is shorter than this


class Payload(NamedTuple):
    """One attachment payload in a message: where its text is, the part before the base64
    ("data:image/png;base64," or "" for bare base64), the base64 and its media type."""

    path: Path
    prefix: str
    data: str
    media_type: str


@dataclass(frozen=True, slots=True)
class Blob:
    """An attachment's bytes with what is known of them."""

    info: AttachmentInfo
    data: bytes


class Split(NamedTuple):
    """A message as stored: `body` holds references in place of its large payloads (the
    message itself when there are none), `refs` says where they were, `texts` is the
    original text of each, `blobs` their bytes."""

    body: Message
    refs: list[Ref]
    texts: list[str]
    blobs: list[Blob]


def payloads(message: Message) -> Iterator[Payload]:
    """Every base64 attachment payload in the message's content parts."""
    content = message.get("content")
    if type(content) is not list:
        return
    for index, part in enumerate(content):
        if not isinstance(part, dict):
            continue
        field = _FIELDS.get(part.get("type"))
        inner = part.get(field[0]) if field else None
        if field is None or not isinstance(inner, dict):
            continue
        text = inner.get(field[1])
        if not isinstance(text, str):
            continue
        path: Path = ("content", index, *field)
        if field[0] == "input_audio":
            fmt = inner.get("format")
            media = next((m for m, f in AUDIO_FORMATS.items() if f == fmt), "audio/" + str(fmt))
            yield Payload(path, "", text, media)
            continue
        head = _DATA_URL_HEAD.match(text[:_HEAD_MAX])
        if head is not None:
            yield Payload(path, head[0], text[head.end() :], head[1])


def decoded(payload: Payload) -> bytes | None:
    """The payload's bytes if its base64 is canonical (so encoding them again gives back
    exactly its text); None otherwise."""
    try:
        data = base64.b64decode(payload.data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if base64.b64encode(data).decode("ascii") == payload.data else None


def check_size(size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise StoreError(
            f"an attachment of {size_text(size)} is larger than the "
            f"{size_text(max_bytes)} a thread store keeps per attachment; nothing "
            "was saved"
        )


def split(
    message: Message, *, max_bytes: int = MAX_ATTACHMENT_BYTES, inline_upto: int = INLINE_UPTO
) -> Split:
    """The message as stored (see the module doc); StoreError if a payload is larger than
    `max_bytes`. A message without attachments costs one look at its content."""
    if type(message.get("content")) is not list:
        return Split(message, [], [], [])
    refs: list[Ref] = []
    texts: list[str] = []
    blobs: list[Blob] = []
    body = message
    for payload in payloads(message):
        most = len(payload.data) * 3 // 4  # what its bytes can be at most, padding aside
        check_size(most - 2, max_bytes)
        if most <= inline_upto:
            continue
        data = decoded(payload)
        if data is None:
            continue  # not canonical base64: kept inline, exactly as it came
        check_size(len(data), max_bytes)
        digest = hashlib.sha256(data).hexdigest()
        body = _copied_along(body, payload.path)
        _put(body, payload.path, REF_SCHEME + digest)
        refs.append([list(payload.path), digest, payload.prefix])
        texts.append(_get(message, payload.path))
        blobs.append(Blob(AttachmentInfo(digest, payload.media_type, len(data)), data))
    return Split(body, refs, texts, blobs)


def split_all(id: str, start: int, messages: list[Message], max_bytes: int) -> list[Split]:
    """`split` for messages saved at `start` of thread `id`; a StoreError names where."""
    out = []
    for offset, message in enumerate(messages):
        try:
            out.append(split(message, max_bytes=max_bytes))
        except StoreError as exc:
            raise StoreError(f"thread {id!r}, message {start + offset}: {exc}") from None
    return out


def join(body: Message, refs: list[Ref], text_of: Callable[[int, Ref], str]) -> Message:
    """Put the payloads back into a decoded stored body (in place; it is returned):
    `text_of(i, ref)` is the original text of the i-th reference."""
    for index, ref in enumerate(refs):
        _put(body, tuple(ref[0]), text_of(index, ref))
    return body


def restored_text(ref: Ref, data: bytes) -> str:
    prefix: str = ref[2]
    return prefix + base64.b64encode(data).decode("ascii")


def digests(refs: list[Ref]) -> list[str]:
    return [ref[1] for ref in refs]


def referenced(message: Message) -> Message:
    """The message with every payload, whatever its size, replaced by its reference
    (REF_SCHEME + the SHA-256 of its bytes): what an export shows instead of base64.
    Data that is not base64 at all is replaced by a note saying so."""
    shown = message
    for payload in payloads(message):
        try:
            data = base64.b64decode(payload.data)
        except (binascii.Error, ValueError):
            ref = f"[{len(payload.data)} characters of data that is not base64, left out]"
        else:
            ref = REF_SCHEME + hashlib.sha256(data).hexdigest()
        shown = _copied_along(shown, payload.path)
        _put(shown, payload.path, ref)
    return shown


def _copied_along(message: Message, path: Path) -> Message:
    """A copy of `message` with new dicts and lists along `path` (the rest shared)."""
    top: Any = dict(message)
    node: Any = top
    for key in path[:-1]:
        child = node[key]
        node[key] = child = list(child) if isinstance(child, list) else dict(child)
        node = child
    copied: Message = top
    return copied


def _get(message: Message, path: Path) -> Any:
    node: Any = message
    for key in path:
        node = node[key]
    return node


def _put(message: Message, path: Path, value: Any) -> None:
    node: Any = message
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
