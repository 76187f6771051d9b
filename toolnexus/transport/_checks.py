"""What is refused before any connection: a base URL no request could go to, a header a
control character would split or corrupt (its value never shown: it may be a key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


def check_endpoint(url: str) -> None:
    """Refuse, before any connection, a URL no request could go to."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"the base URL {url!r} must start with http:// or https:// and name "
            "a host, e.g. 'https://api.openai.com/v1'"
        )
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when asked
    except ValueError:
        raise ValueError(f"the base URL {url!r} has an invalid port (1-65535)") from None


def check_headers(headers: Mapping[str, str]) -> None:
    """Refuse, before any connection, a header a line break or other control character
    would split or corrupt on the wire. The value is never shown: it may be a key."""
    for name, value in headers.items():
        if not name or not name.isascii() or any(c in _NOT_IN_NAMES for c in name):
            raise ValueError(f"the header name {name[:60]!r} is not a valid HTTP header name")
        problem = header_value_problem(value)
        if problem:
            raise ValueError(f"the value of the header {name!r} contains {problem}")


_NOT_IN_NAMES = frozenset('()<>@,;:\\"/[]?={} \t') | {chr(c) for c in range(32)} | {"\x7f"}


def header_value_problem(value: str) -> str | None:
    """What makes `value` unfit for a header ("a line break", "a control character
    (0x07)", "a non-ASCII character"), or None when it is fine."""
    if value.isascii() and value.isprintable():
        return None
    for char in value:
        code = ord(char)
        if char in "\r\n":
            return "a line break"
        if code < 32 or code == 127:
            return f"a control character (0x{code:02x})"
    return "a non-ASCII character"
