"""fetch_url, the built-in tool, against the loopback stub: redirects, charsets, gzip and
error statuses (the stub is loopback, so a host rule allows it; test_security_tools.py has
what asks first)."""

from __future__ import annotations

import gzip
import itertools

import pytest

from tests.support.stub_provider import Reply, StubProvider
from toolnexus import create_toolkit
from toolnexus.tools.workspace import Workspace


async def fetch(stub: StubProvider, url: str) -> str:
    """The text fetch_url gives the model; a failure raises ValueError with its output."""
    toolkit = await create_toolkit(
        builtins=["fetch_url"], workspace=Workspace(hosts={f"127.0.0.1:{stub.port}": "allow"})
    )
    result = await toolkit.execute("fetch_url", {"url": url})
    if result.is_error:
        raise ValueError(result.output)
    return result.output


PAGE = (
    b"<html><head><title>The title</title><style>p { color: red }</style>"
    b"<script type='text/javascript'>var hidden = '<p>no</p>';</script></head>"
    b"<body><h1>Hello &amp; welcome</h1>\n\n\n\n<p>Some <b>bold</b> text.</p>"
    b"<SCRIPT>alert(1)</SCRIPT></body></html>"
)


def redirects(stub: StubProvider, hops: int) -> None:
    """/r/0 -> /r/1 -> ... -> /r/<hops>, which is the page; each hop a different kind."""
    statuses = itertools.cycle([302, 301, 303, 307, 308])

    def handler(request):
        n = int(request.path.rsplit("/", 1)[1])
        if n < hops:
            location = f"/r/{n + 1}" if n % 2 else f"{stub.url}/r/{n + 1}"  # relative, absolute
            return Reply.raw(
                [b"moved"],
                status=next(statuses),
                chunked=False,
                headers={"Location": location, "Content-Type": "text/plain"},
            )
        return Reply.raw([PAGE], chunked=False, headers={"Content-Type": "text/html"})

    stub.handler = handler


async def test_fetch_url_follows_a_redirect_to_an_html_page(stub):
    redirects(stub, 1)
    text = await fetch(stub, stub.url + "/r/0")
    assert text.startswith(f"HTTP 200 {stub.url}/r/1\n\n")
    assert "Hello & welcome" in text and "Some bold text." in text and "The title" in text
    for gone in ("<", "hidden", "color", "alert"):
        assert gone not in text
    assert "\n\n\n" not in text
    assert [r.path for r in stub.requests] == ["/r/0", "/r/1"]


async def test_fetch_url_follows_five_redirects(stub):
    redirects(stub, 5)
    text = await fetch(stub, stub.url + "/r/0")
    assert text.startswith(f"HTTP 200 {stub.url}/r/5\n\n") and "Hello & welcome" in text


async def test_fetch_url_gives_up_after_five_redirects(stub):
    redirects(stub, 6)
    with pytest.raises(ValueError, match="more than 5 redirects"):
        await fetch(stub, stub.url + "/r/0")
    assert len(stub.requests) == 6  # the first request and five redirects, then no more


@pytest.mark.parametrize(
    "content_type, encoded, expected",
    [
        ("text/plain; charset=iso-8859-1", "café, naïve".encode("latin-1"), "café, naïve"),
        ("text/plain; charset=windows-1251", "привет".encode("cp1251"), "привет"),
        ("text/plain", "café ✓".encode(), "café ✓"),
        ("text/plain; charset=no-such-charset", "café".encode(), "café"),  # falls back to UTF-8
    ],
)
async def test_fetch_url_honours_the_charset(stub, content_type, encoded, expected):
    stub.script(Reply.raw([encoded], chunked=False, headers={"Content-Type": content_type}))
    text = await fetch(stub, stub.url + "/doc")
    assert text == f"HTTP 200 {stub.url}/doc\n\n{expected}"


async def test_fetch_url_honours_a_quoted_charset(stub):
    stub.script(
        Reply.raw(
            ["café".encode("latin-1")],
            chunked=False,
            headers={"Content-Type": 'text/plain; charset="iso-8859-1"'},
        )
    )
    assert (await fetch(stub, stub.url + "/doc")).endswith("\n\ncafé")


async def test_fetch_url_decodes_gzip(stub):
    stub.script(
        Reply.raw(
            [gzip.compress(PAGE)],
            chunked=False,
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"},
        )
    )
    assert "Hello & welcome" in await fetch(stub, stub.url + "/gz")


async def test_fetch_url_reports_an_error_status_with_its_body(stub):
    stub.script(
        Reply.raw(
            [b"nothing here"], status=404, chunked=False, headers={"Content-Type": "text/plain"}
        )
    )
    text = await fetch(stub, stub.url + "/missing")
    assert text == f"HTTP 404 {stub.url}/missing\n\nnothing here"
