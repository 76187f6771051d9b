"""What `fetch_url` does: GET a page over httpx2 and turn it into text for a model.

Every hop is judged before it is made: the host is resolved here, the Workspace decides
about the addresses (a private one asks first), and the connection goes to the address
that was judged, with the name kept for the Host header and TLS, so a DNS answer that
changes between the check and the connection (rebinding) cannot reach another address.
Redirects are followed here, one judged hop at a time.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from typing import Any
from urllib.parse import urljoin, urlsplit

from .tool import ToolContext
from .workspace import Refused, Workspace

MAX_FETCH_BYTES = 1024 * 1024  # of (decompressed) body
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
_TEXT_TYPES = re.compile(
    r"^(text/|application/(json|xml|xhtml\+xml|javascript|ecmascript|"
    r"x-www-form-urlencoded|ld\+json|rss\+xml|atom\+xml)$|"
    r"application/[\w.+-]+\+(json|xml)$)"
)


async def fetch_page(url: str, workspace: Workspace, context: ToolContext | None) -> str:
    import httpx2

    timeout = httpx2.Timeout(30.0, connect=15.0)
    async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            address, host_header, sni = await _judged_hop(url, workspace, context)
            target = httpx2.URL(url).copy_with(host=address)
            extensions: dict[str, Any] = {"sni_hostname": sni} if sni else {}
            async with client.stream(
                "GET", target, extensions=extensions, headers={"host": host_header, "accept": "*/*"}
            ) as reply:
                location = reply.headers.get("location")
                if reply.status_code in REDIRECTS and location:
                    url = urljoin(url, location)
                    continue
                return await _page_text(url, reply)
    raise ValueError(f"more than {MAX_REDIRECTS} redirects")


async def _judged_hop(
    url: str,
    workspace: Workspace,
    context: ToolContext | None,
) -> tuple[str, str, str | None]:
    """The address to connect to for `url`, once the workspace allows it; the Host header;
    the TLS server name (https only)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise Refused("only http:// and https:// addresses can be fetched")
    host = parts.hostname
    if not host:
        raise ValueError(f"{url} names no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"{url} has a bad port") from None
    addresses = await _resolve(host, port)
    origin = f"{parts.scheme}://{host}:{port}"
    workspace.permit_address(origin, host, port, addresses, context)
    netloc = parts.netloc.rpartition("@")[2]  # the Host header never carries a password
    return addresses[0], netloc, host if parts.scheme == "https" else None


async def _resolve(host: str, port: int) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ValueError(f"cannot resolve {host}: {exc.strerror}") from None
    found = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not found:
        raise ValueError(f"cannot resolve {host}")
    return found


async def _page_text(url: str, reply: Any) -> str:
    content_type = reply.headers.get("content-type", "")
    mime = content_type.split(";", 1)[0].strip().lower()
    if mime and not _TEXT_TYPES.match(mime):
        raise Refused(f"{url} is {mime}, not text: fetch_url reads only text and web pages")
    data = bytearray()
    async for chunk in reply.aiter_bytes():
        data += chunk
        if len(data) > MAX_FETCH_BYTES:
            break
    truncated = len(data) > MAX_FETCH_BYTES
    del data[MAX_FETCH_BYTES:]
    if not mime and b"\0" in data[:8192]:
        raise Refused(f"{url} looks binary: fetch_url reads only text and web pages")
    charset = re.search(r'charset="?([\w-]+)', content_type)
    try:
        text = data.decode(charset.group(1) if charset else "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        text = data.decode("utf-8", "replace")
    if "html" in mime:
        from ._html_text import html_to_text  # html.entities is large: not at start-up

        text = html_to_text(text)
    note = (
        f"\n\n[truncated: fetch_url reads at most {MAX_FETCH_BYTES // 1024} KiB of a body]"
        if truncated
        else ""
    )
    return f"HTTP {reply.status_code} {url}\n\n{text.strip()}{note}"
