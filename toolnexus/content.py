"""Message parts: attachments (images, PDFs, audio, text files) and their canonical form.

The canonical form is OpenAI chat content parts (`image_url`, `file`, `input_audio`, `text`);
each wire style translates them into its own shape, or refuses a kind it cannot carry.
The kind of an attachment comes from its bytes (magic numbers), never from a file name.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import re
import struct
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._bounded_json import object_or_empty
from ._regular_file import open_regular
from .errors import ToolnexusError
from .types import Content, ContentPart, FileData, TextPart

__all__ = [
    "MAX_ATTACHMENT_BYTES",
    "Attachment",
    "Kind",
    "Media",
    "Prompt",
    "byte_size",
    "image_size",
    "media_of",
    "sniff",
    "user_content",
    "with_attachments",
]

MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024

Kind = Literal["image", "document", "audio", "text"]
Prompt = str | Sequence["str | Attachment"]

# (magic bytes at offset 0, mime type); RIFF containers are told apart by bytes 8..12.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)
_RIFF = {b"WEBP": "image/webp", b"WAVE": "audio/wav"}
_KINDS: dict[str, Kind] = {"image": "image", "audio": "audio", "application": "document"}
_SUPPORTED = frozenset({m for _, m in _MAGIC} | set(_RIFF.values()))
# The `format` OpenAI's input_audio names each audio type by.
AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3", "audio/ogg": "ogg", "audio/flac": "flac"}


def sniff(data: bytes) -> str | None:
    """The mime type the bytes say they are, if one we attach; None otherwise."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] in _RIFF:
        return _RIFF[data[8:12]]
    # An MPEG audio frame without an ID3 tag: 11 sync bits, and a layer (bits 1-2) that is
    # not 00 (which would be AAC in ADTS framing).
    if len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0 and data[1] & 0x06:
        return "audio/mpeg"
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, JPEG, GIF or WebP header; None when it cannot tell."""
    try:
        if data.startswith(b"\x89PNG") and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if data.startswith(b"GIF8"):
            return struct.unpack("<HH", data[6:10])
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_size(data)
        if data.startswith(b"\xff\xd8"):
            return _jpeg_size(data)
    except struct.error:
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if len(data) < {b"VP8L": 25, b"VP8X": 30}.get(chunk, 0):  # cut off before the size
        return None
    if chunk == b"VP8 ":  # lossy: 14-bit sizes after the frame tag and start code
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":  # lossless: 14-bit sizes minus one, packed after the signature
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: 24-bit sizes minus one
        return (
            int.from_bytes(data[24:27], "little") + 1,
            int.from_bytes(data[27:30], "little") + 1,
        )
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # start of frame
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            at += 2
            continue
        at += 2 + struct.unpack(">H", data[at + 2 : at + 4])[0]
    return None


@dataclass(frozen=True)
class Attachment:
    """An image, PDF, audio clip or text file to send with a prompt or a tool result.

    Build one with `from_path`, `from_bytes` or `from_url`; `part()` is its canonical
    content part, `describe()` a short label such as "image 512x512 png".
    """

    kind: Kind
    mime: str
    name: str
    data: bytes | None = None  # None for an attachment by URL
    url: str | None = None
    dimensions: tuple[int, int] | None = None  # of an image, when its header says

    @classmethod
    def from_path(
        cls, path: str | os.PathLike[str], *, max_bytes: int = MAX_ATTACHMENT_BYTES
    ) -> Attachment:
        name = os.path.basename(os.fspath(path))
        try:
            with open_regular(path, pipes=True) as f:  # `ask -a <(command)` is a pipe
                if os.fstat(f.fileno()).st_size > max_bytes:
                    raise _too_big(name, max_bytes)
                data = f.read(max_bytes + 1)  # the size may change as we read
        except OSError as exc:
            raise ToolnexusError(
                f"cannot attach {os.fspath(path)!r}: {exc.strerror or exc}"
            ) from None
        return cls.from_bytes(data, name=name, max_bytes=max_bytes)

    @classmethod
    def from_bytes(
        cls, data: bytes, *, name: str = "attachment", max_bytes: int = MAX_ATTACHMENT_BYTES
    ) -> Attachment:
        if len(data) > max_bytes:
            raise _too_big(name, max_bytes)
        mime = sniff(data)
        if mime is not None:
            kind = _KINDS[mime.split("/")[0]]
            size = image_size(data) if kind == "image" else None
            return cls(kind, mime, name, data=data, dimensions=size)
        if b"\0" not in data:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                return cls("text", "text/plain", name, data=data)
        raise ToolnexusError(
            f"cannot attach {name!r}: not an image (png, jpeg, gif, webp), PDF, audio "
            f"(wav, mp3, ogg, flac) or UTF-8 text file"
        )

    @classmethod
    def from_url(cls, url: str, *, mime: str | None = None) -> Attachment:
        """An image or PDF the endpoint fetches itself (http/https), or a data: URL.

        The endpoint has the bytes, not us: the type is `mime`, else the URL path's
        extension says it; a URL that says neither is an error.
        """
        if url.startswith("data:"):
            media_type, data = _data_url(url)
            return cls.from_bytes(data, name=f"attachment.{media_type.split('/')[-1]}")
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ToolnexusError(f"cannot attach {url!r}: only http(s) and data: URLs")
        name = os.path.basename(parsed.path) or parsed.netloc
        mime = mime or mimetypes.guess_type(parsed.path)[0]
        if mime is None:
            raise ToolnexusError(f"cannot tell what {url!r} is: pass mime= (e.g. 'image/png')")
        kind = _KINDS.get(mime.split("/")[0]) if mime in _SUPPORTED else None
        if kind not in ("image", "document"):
            raise ToolnexusError(
                f"cannot attach {url!r} ({mime}) by URL: only images "
                f"(png, jpeg, gif, webp) and PDFs"
            )
        return cls(kind, mime, name, url=url)

    def part(self) -> ContentPart:
        """The canonical (OpenAI chat) content part standing for this attachment."""
        if self.kind == "text":
            return {"type": "text", "text": _fenced(self.name, (self.data or b"").decode())}
        if self.kind == "audio":
            return {
                "type": "input_audio",
                "input_audio": {"data": self.base64(), "format": AUDIO_FORMATS[self.mime]},
            }
        if self.kind == "image":
            return {"type": "image_url", "image_url": {"url": self.url or self.data_url()}}
        file: FileData = {"filename": self.name}
        if self.url:
            file["file_url"] = self.url  # not an OpenAI chat field: only some styles take it
        else:
            file["file_data"] = self.data_url()
        return {"type": "file", "file": file}

    def describe(self) -> str:
        subtype = self.mime.split("/")[-1]
        if self.kind == "image":
            size = f" {self.dimensions[0]}x{self.dimensions[1]}" if self.dimensions else ""
            return f"image{size} {subtype}" + (f" {self.url}" if self.url else "")
        where = self.url or f"{self.name}, {byte_size(len(self.data or b''))}"
        return f"{subtype if self.kind == 'document' else self.kind} {where}"

    def base64(self) -> str:
        return base64.b64encode(self.data or b"").decode("ascii")

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{self.base64()}"


def _too_big(name: str, max_bytes: int) -> ToolnexusError:
    return ToolnexusError(f"cannot attach {name!r}: larger than {byte_size(max_bytes)}")


def byte_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / 1024 / 1024:.1f} MiB".replace(".0 ", " ")


def _fenced(name: str, text: str) -> str:
    """A text file as a fenced block headed by its name; the fence outgrows any inside."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    body = text if not text or text.endswith("\n") else text + "\n"
    return f"{name}\n{fence}\n{body}{fence}"


# compiled when a data URL is first read (re keeps it)
_DATA_URL = r"data:(?P<mime>[\w.+-]+/[\w.+-]+)(?:;[\w=.+-]+)*;base64,(?P<data>.*)"


def _data_url(url: str) -> tuple[str, bytes]:
    match = re.fullmatch(_DATA_URL, url, re.S)
    if match is None:
        raise ToolnexusError(f"a malformed data URL: {url[:60]!r}")
    try:
        return match["mime"], base64.b64decode(match["data"], validate=True)
    except (binascii.Error, ValueError):
        raise ToolnexusError(f"a data URL whose data is not base64: {url[:60]!r}") from None


# ----------------------------------------------------------------------------- prompts


def user_content(prompt: Prompt) -> Content:
    """A prompt (a string, or a list of strings and Attachments) as canonical content."""
    if isinstance(prompt, str):
        return prompt
    parts: list[ContentPart] = []
    for piece in prompt:
        if isinstance(piece, str):
            parts.append({"type": "text", "text": piece})
        elif isinstance(piece, Attachment):
            parts.append(piece.part())
        else:
            raise ToolnexusError(
                f"a prompt part must be a str or an Attachment, not {type(piece).__name__}"
            )
    return parts


def with_attachments(text: str, attachments: Sequence[Attachment]) -> Content:
    """A tool result's canonical content: the text, then its attachments' parts."""
    if not attachments:
        return text
    first: TextPart = {"type": "text", "text": text}
    return [first, *(a.part() for a in attachments)]


# ----------------------------------------------------------------------------- reading parts


@dataclass(frozen=True, slots=True)
class Media:
    """A canonical media part, read: what the wire styles translate."""

    kind: Kind
    mime: str
    base64: str | None  # the data, when it is inline
    url: str | None  # where it is, when it is not
    filename: str


def media_of(part: Any) -> Media | None:
    """The media a canonical content part carries; None for text and anything else."""
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        if not isinstance(url, str):
            raise ToolnexusError("an image_url part without a URL")
        return _located("image", url, "image")
    if kind == "file":
        file = object_or_empty(part.get("file"))
        name = str(file.get("filename") or "document")
        if isinstance(file.get("file_data"), str):
            return _located("document", file["file_data"], name)
        if isinstance(file.get("file_url"), str):
            return Media("document", "application/pdf", None, file["file_url"], name)
        raise ToolnexusError("a file part with neither file_data nor file_url")
    if kind == "input_audio":
        audio = object_or_empty(part.get("input_audio"))
        fmt = str(audio.get("format") or "")
        mime = next((m for m, f in AUDIO_FORMATS.items() if f == fmt), f"audio/{fmt}")
        return Media("audio", mime, str(audio.get("data") or ""), None, f"audio.{fmt}")
    return None


def _located(kind: Kind, url: str, name: str) -> Media:
    if url.startswith("data:"):
        match = re.fullmatch(_DATA_URL, url, re.S)
        if match is None:
            raise ToolnexusError(f"a malformed data URL: {url[:60]!r}")
        return Media(kind, match["mime"], match["data"], None, name)
    return Media(kind, mimetypes.guess_type(url)[0] or f"{kind}/*", None, url, name)


def unsupported(style: str, media: Media) -> ToolnexusError:
    what = {"document": "documents", "image": "images", "audio": "audio"}[media.kind]
    how = " by URL" if media.url else ""
    return ToolnexusError(f"the {style} style cannot carry {what}{how} ({media.mime})")


def stand_in(style: str, media: Media, *, strict: bool) -> str:
    """The text that goes in place of media a style cannot carry: its note, such as
    "[audio: audio/wav, 3.2 s]" (a tool's result, an earlier turn of the thread). With
    `strict` (the prompt being asked) it is an error instead, before anything is sent."""
    if strict:
        raise unsupported(style, media)
    facts = [media.mime]
    seconds = _wav_seconds(media) if media.mime == "audio/wav" else None
    if seconds is not None:
        facts.append(f"{seconds:.1f} s")
    if media.kind == "document":
        facts.append(media.url or media.filename)
    return f"[{media.kind}: {', '.join(facts)}]"


_WAV_HEAD = 4096  # base64 characters: enough for the chunks before a WAV's data


def _wav_seconds(media: Media) -> float | None:
    """A WAV's length from its header: the data chunk's size over the fmt chunk's byte rate
    (None when the header does not say)."""
    try:
        head = base64.b64decode((media.base64 or "")[:_WAV_HEAD])
    except (binascii.Error, ValueError):
        return None
    if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    at, byte_rate = 12, 0
    while at + 8 <= len(head):
        chunk, size = head[at : at + 4], int.from_bytes(head[at + 4 : at + 8], "little")
        if chunk == b"fmt " and at + 20 <= len(head):
            byte_rate = int.from_bytes(head[at + 16 : at + 20], "little")
        elif chunk == b"data":
            return size / byte_rate if byte_rate else None
        at += 8 + size + (size & 1)  # chunks are padded to an even size
    return None
