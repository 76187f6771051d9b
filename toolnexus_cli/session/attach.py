"""Attachments from the command line (`ask -a`) and the chat (`/attach`, a pasted image
path): read into the library's Attachment, and checked against the style before anything
is sent."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from toolnexus import ToolnexusError

from ..errors import UsageError

if TYPE_CHECKING:
    from toolnexus import Client, UserMessage
    from toolnexus.content import Attachment

    from ..config.file import Target

URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|data:")  # any scheme: the library says which go
LONGEST_PATH = 4096


def load_attachment(spec: str) -> Attachment:
    """An http(s) or data: URL, else a file path; a UsageError of one line when it cannot
    be attached (missing, a type we do not attach, over the size cap)."""
    from toolnexus.content import Attachment

    try:
        if URL.match(spec):
            return Attachment.from_url(spec)
        path = Path(unquote(spec)).expanduser()
        refuse_secret(path)
        return Attachment.from_path(path)
    except ToolnexusError as exc:
        raise UsageError(str(exc)) from None


def refuse_secret(path: Path) -> None:
    """A UsageError naming the real file when `path` is, or leads to, a secret (by a link or
    a hard link): an attachment goes to the endpoint."""
    from toolnexus.tools.secret_files import KnownSecrets

    from ..config.file import config_dir, data_dir, state_dir
    from ..config.keys import keys_path

    secret = KnownSecrets([keys_path(), config_dir(), data_dir(), state_dir()]).leads_to(path)
    if secret is not None:
        shown = "" if secret == path else f" leads to {secret}, which"
        raise UsageError(f"{path}{shown} holds secrets: it is not attached")


def check_carried(target: Target, attachments: Sequence[Attachment]) -> None:
    """A UsageError, before any request, for an attachment the target's style cannot carry:
    the style's own translation is what decides."""
    if not attachments:
        return
    from toolnexus.wire import wire_style

    try:
        wire = wire_style(target.style).for_base_url(target.base_url, target.dialect)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    message: UserMessage = {"role": "user", "content": [a.part() for a in attachments]}
    try:
        wire.build_body(model=target.model, messages=[message], system=None, tools=[], stream=False)
    except ToolnexusError as exc:
        raise UsageError(str(exc)) from None


NOT_READ = "this model does not take images (its server says so)"


async def unread_images(client: Client, attachments: Sequence[Attachment]) -> bool:
    """Whether `attachments` hold an image the model will not read, by its server's own
    account (llama.cpp answers one with an HTTP 500): said before any request, in one
    line (NOT_READ). A server that does not say gets the image as before."""
    return any(a.kind == "image" for a in attachments) and await client.takes_images() is False


def unquote(text: str) -> str:
    """A path as a terminal pastes a dropped file: maybe quoted, spaces maybe escaped."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text.replace("\\ ", " ")


def pasted_image(line: str) -> Path | None:
    """The image file a line names when the line is nothing but its path; else None."""
    from toolnexus.content import sniff

    text = unquote(line)
    if not text or "\n" in text or len(text) > LONGEST_PATH:
        return None
    path = Path(text).expanduser()
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            mime = sniff(handle.read(16))
    except (OSError, ValueError):  # unreadable, or a name the system cannot take
        return None
    return path if mime is not None and mime.startswith("image/") else None
