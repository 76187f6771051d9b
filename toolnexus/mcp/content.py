"""What an MCP tool returns, as a tool result: text for the model, plus attachments."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from ..content import Attachment
from ..errors import ToolnexusError

__all__ = [
    "convert_content",
]

# What the model reads in place of content annotated for the person alone.
SHOWN_TO_PERSON = "[content for the person only was shown to them, not to you]"


def convert_content(result: Mapping[str, Any]) -> tuple[str, list[Attachment]]:
    """A tools/call result (wire shape) as the model gets it, text and attachments: text
    parts joined, other parts summarized; images, audio and binary image/audio/PDF
    resources also attached. Content annotated for the person alone (`audience: ["user"]`)
    is left out, one line saying so in its place."""
    blocks = list(result.get("content") or [])
    kept = [block for block in blocks if _audience(block) != {"user"}]
    text, attachments = _converted(kept, result)
    if len(kept) < len(blocks):
        text = f"{text}\n{SHOWN_TO_PERSON}" if text else SHOWN_TO_PERSON
    return text, attachments


def person_text(result: Mapping[str, Any]) -> str | None:
    """What the person is shown of a tools/call result when its audience annotations make
    it differ from the model's text (content for the model alone left out); else None."""
    blocks = list(result.get("content") or [])
    if not any(_audience(block) for block in blocks):
        return None
    shown = [block for block in blocks if _audience(block) != {"assistant"}]
    return _converted(shown, result)[0]


def _audience(block: Any) -> set[str]:
    """Whom a content block is for, as annotated (empty: not said, so everyone)."""
    annotations = block.get("annotations") if isinstance(block, Mapping) else None
    audience = annotations.get("audience") if isinstance(annotations, Mapping) else None
    return {str(a) for a in audience} if isinstance(audience, list) else set()


def _converted(blocks: list[Any], result: Mapping[str, Any]) -> tuple[str, list[Attachment]]:
    parts: list[str] = []
    attachments: list[Attachment] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            label = f"[{kind}: {block.get('mimeType') or 'unknown type'}]"
            parts.append(_attach(label, block.get("data"), kind, attachments))
        elif kind == "resource_link":
            label = f" ({block['name']})" if block.get("name") else ""
            parts.append(f"[resource link: {block.get('uri', '')}{label}; read_resource reads it]")
        elif kind == "resource":
            resource = block.get("resource") or {}
            uri = resource.get("uri", "")
            if isinstance(resource.get("text"), str):
                parts.append(f"[resource: {uri}]\n{resource['text']}")
            else:
                mime = str(resource.get("mimeType") or "binary")
                label = f"[resource: {uri} ({mime})]"
                if mime.startswith(("image/", "audio/", "application/pdf")):
                    label = _attach(label, resource.get("blob"), uri.rsplit("/")[-1], attachments)
                elif (text := _utf8(resource.get("blob"))) is not None:
                    label = f"{label}\n{text}"
                parts.append(label)
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return "\n".join(parts), attachments


def _utf8(data: Any) -> str | None:
    """A blob's bytes as text, when they are text (JSON, CSV, a log) and not media."""
    try:
        text = base64.b64decode(str(data), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return text if all(c.isprintable() or c in "\n\r\t" for c in text) else None


def _attach(label: str, data: Any, name: str, attachments: list[Attachment]) -> str:
    """Attach base64 `data` (the bytes say what it is); the label says so when it cannot."""
    try:
        raw = base64.b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        return f"{label[:-1]}, not attached: the data is not base64]"
    try:
        attachment = Attachment.from_bytes(raw, name=name or "attachment")
    except ToolnexusError as exc:
        return f"{label[:-1]}, not attached: {exc}]"
    if attachment.kind == "text":
        return f"{label[:-1]}, not attached: the data is not an image, audio or PDF]"
    attachments.append(attachment)
    return label
