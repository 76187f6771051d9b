"""toolnexus.tools._web: `fetch_page` GETs a page for a model. Every hop is judged before it is
made: only http(s), the host resolved once and its addresses judged by the workspace (however
the address is spelled), the connection made to the judged address with the name kept in
the Host header; redirects are judged one hop at a time. The body comes back as text: a
binary type or body is refused, at most 1 MiB of it (decompressed) is read and a cut is
said, HTML loses its tags, scripts and styles. Against the loopback stub provider."""

from __future__ import annotations

import gzip
import socket

import pytest

from tests.support.stub_provider import Reply, StubProvider
from toolnexus.tools import _web as web
from toolnexus.tools._web import MAX_FETCH_BYTES, fetch_page
from toolnexus.tools.tool import ToolContext
from toolnexus.tools.workspace import ApprovalNeeded, Refused, Workspace

MIB = 1024 * 1024
TRUNCATED = "\n\n[truncated: fetch_url reads at most 1024 KiB of a body]"


def allowing(stub: StubProvider, tmp_path) -> Workspace:
    return Workspace(tmp_path, hosts={f"127.0.0.1:{stub.port}": "allow"})


def text(
    body: bytes | str, content_type: str | None = "text/plain", status: int = 200, **headers: str
) -> Reply:
    if content_type is not None:
        headers["Content-Type"] = content_type
    return Reply(status, headers, [body.encode() if isinstance(body, str) else body])


async def question(url: str, workspace: Workspace, call: str = "call_1") -> dict:
    """The approval request fetching `url` stops at."""
    with pytest.raises(ApprovalNeeded) as caught:
        await fetch_page(url, workspace, ToolContext(call_id=call))
    return caught.value.result.metadata["pending"]


async def fetched_after_yes(url: str, workspace: Workspace) -> str:
    request = await question(url, workspace)
    return await fetch_page(
        url, workspace, ToolContext(call_id="call_1", answer={"id": request["id"], "ok": True})
    )


# ----------------------------------------------------------------------------- judged hops


@pytest.mark.parametrize("spelled", ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1"])
async def test_loopback_spelled_as_a_number_asks_and_names_the_address(stub, tmp_path, spelled):
    request = await question(f"http://{spelled}:{stub.port}/x", Workspace(tmp_path))
    assert request["prompt"] == (
        f"fetch http://{spelled}:{stub.port}? {spelled} (127.0.0.1) "
        "is not a public address (loopback, private network or "
        "link-local)"
    )
    assert stub.requests == []  # asked before any connection


@pytest.mark.parametrize("spelled", ["2130706433", "0x7f000001", "127.1"])
async def test_after_a_yes_the_address_judged_is_reached_under_its_name(stub, tmp_path, spelled):
    stub.script(text("loopback page"))
    url = f"http://{spelled}:{stub.port}/x"
    assert await fetched_after_yes(url, Workspace(tmp_path)) == f"HTTP 200 {url}\n\nloopback page"
    assert stub.requests[0].headers["host"] == f"{spelled}:{stub.port}"


async def test_an_ipv4_mapped_ipv6_address_asks_and_then_reaches_it(stub, tmp_path):
    stub.script(text("mapped page"))
    url = f"http://[::ffff:127.0.0.1]:{stub.port}/m"
    request = await question(url, Workspace(tmp_path))
    prompt = request["prompt"]
    assert prompt.startswith(f"fetch http://::ffff:127.0.0.1:{stub.port}? ::ffff:127.0.0.1 ")
    assert prompt.endswith(" is not a public address (loopback, private network or link-local)")
    assert stub.requests == []
    page = await fetched_after_yes(url, Workspace(tmp_path))
    assert page == f"HTTP 200 {url}\n\nmapped page"
    assert stub.requests[0].headers["host"] == f"[::ffff:127.0.0.1]:{stub.port}"


async def test_a_name_is_resolved_once_and_the_connection_goes_to_that_address(
    stub, tmp_path, monkeypatch
):
    """A second DNS answer (rebinding) is never asked for: the judged address is used."""
    answers = iter(["127.0.0.1", "10.9.9.9"])
    looked_up: list[str] = []
    real = socket.getaddrinfo

    def resolver(host, port, *args, **kwargs):
        if host != "intranet.test":
            return real(host, port, *args, **kwargs)
        looked_up.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    stub.script(text("intranet page"))
    workspace = Workspace(tmp_path, hosts={f"intranet.test:{stub.port}": "allow"})
    page = await fetch_page(f"http://intranet.test:{stub.port}/", workspace, None)
    assert page.endswith("intranet page") and looked_up == ["intranet.test"]
    assert stub.requests[0].headers["host"] == f"intranet.test:{stub.port}"


async def test_a_name_that_does_not_resolve_says_so(tmp_path, monkeypatch):
    def resolver(host, port, *args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with pytest.raises(ValueError, match="^cannot resolve nowhere.test: Name or service not"):
        await fetch_page("http://nowhere.test/", Workspace(tmp_path), None)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://127.0.0.1/x",
        "gopher://x/",
        "javascript:alert(1)",
        "data:text/plain,hi",
        "//127.0.0.1/x",
        "127.0.0.1/x",
        "",
        "httpx://127.0.0.1/",
    ],
)
async def test_only_http_and_https_are_fetched(tmp_path, url):
    with pytest.raises(Refused, match=r"^only http:// and https:// addresses can be fetched$"):
        await fetch_page(url, Workspace(tmp_path), None)


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http:///path", "http:///path names no host"),
        ("https://user:pw@/x", "https://user:pw@/x names no host"),
        ("http://127.0.0.1:99999/", "http://127.0.0.1:99999/ has a bad port"),
        ("http://127.0.0.1:port/", "http://127.0.0.1:port/ has a bad port"),
        ("http://[::1/", "Invalid IPv6 URL"),
    ],
)
async def test_a_malformed_url_fails_before_any_connection(tmp_path, url, error):
    with pytest.raises(ValueError) as caught:
        await fetch_page(url, Workspace(tmp_path), None)
    assert str(caught.value) == error


async def test_the_scheme_may_be_written_in_any_case(stub, tmp_path):
    stub.script(text("upper"))
    page = await fetch_page(f"HTTP://127.0.0.1:{stub.port}/u", allowing(stub, tmp_path), None)
    assert page.endswith("\n\nupper")


# ----------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("location", ["file:///etc/passwd", "ftp://127.0.0.1/"])
async def test_a_redirect_to_another_scheme_is_refused(stub, tmp_path, location):
    stub.script(Reply(302, {"Location": location}, [b""]))
    with pytest.raises(Refused, match="only http:// and https://"):
        await fetch_page(stub.url + "/go", allowing(stub, tmp_path), None)
    assert len(stub.requests) == 1


async def test_a_redirect_to_another_port_is_judged_again(stub, tmp_path):
    with StubProvider() as other:
        stub.script(Reply(301, {"Location": f"//127.0.0.1:{other.port}/next"}, [b""]))
        request = await question(stub.url + "/go", allowing(stub, tmp_path))
        assert request["prompt"].startswith(f"fetch http://127.0.0.1:{other.port}?")
        assert other.requests == []


async def test_a_relative_redirect_stays_on_the_host_it_came_from(stub, tmp_path):
    stub.script(Reply(307, {"Location": "../b/./c?q=1"}, [b""]), text("arrived"))
    page = await fetch_page(stub.url + "/a/x/y", allowing(stub, tmp_path), None)
    assert page == f"HTTP 200 {stub.url}/a/b/c?q=1\n\narrived"
    assert [r.path for r in stub.requests] == ["/a/x/y", "/a/b/c?q=1"]


async def test_a_redirect_status_without_a_location_is_the_page(stub, tmp_path):
    stub.script(text("moved, but nowhere said", status=302))
    page = await fetch_page(stub.url + "/r", allowing(stub, tmp_path), None)
    assert page == f"HTTP 302 {stub.url}/r\n\nmoved, but nowhere said"


# ----------------------------------------------------------------------------- bodies


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/vnd.api+json",
        "application/atom+xml",
        "application/xhtml+xml",
        "text/csv",
        "TEXT/Plain; Charset=UTF-8",
        "text/x-python",
    ],
)
async def test_text_types_are_read(stub, tmp_path, content_type):
    stub.script(text("{}", content_type))
    assert (await fetch_page(stub.url, allowing(stub, tmp_path), None)).endswith("\n\n{}")


@pytest.mark.parametrize(
    "content_type",
    [
        "application/octet-stream",
        "image/svg",
        "application/pdf",
        "application/zip",
        "video/mp4",
        "application/json-seq-but-not-json",
        "font/woff2",
    ],
)
async def test_other_types_are_refused_without_their_body(stub, tmp_path, content_type):
    stub.script(text("SECRET-BODY", content_type))
    with pytest.raises(Refused) as caught:
        await fetch_page(stub.url + "/f", allowing(stub, tmp_path), None)
    assert str(caught.value) == (
        f"{stub.url}/f is {content_type}, not text: fetch_url reads only text and web pages"
    )


async def test_an_untyped_body_is_read_unless_it_starts_binary(stub, tmp_path):
    ws = allowing(stub, tmp_path)
    stub.script(
        text("plain words", None),
        text(b"\x7fELF\x02\x01\x00\x00", None),
        text(b"x" * 8192 + b"\x00late", None),
    )
    assert (await fetch_page(stub.url + "/a", ws, None)).endswith("\n\nplain words")
    with pytest.raises(Refused, match=f"^{stub.url}/b looks binary"):
        await fetch_page(stub.url + "/b", ws, None)
    assert (await fetch_page(stub.url + "/c", ws, None)).endswith("\x00late")


async def test_a_body_of_exactly_the_limit_is_whole_and_one_byte_more_is_cut(stub, tmp_path):
    ws = allowing(stub, tmp_path)
    stub.script(text(b"a" * MAX_FETCH_BYTES), text(b"a" * MAX_FETCH_BYTES + b"b"))
    whole = await fetch_page(stub.url + "/w", ws, None)
    assert whole.endswith("a" * 10) and "truncated" not in whole
    cut = await fetch_page(stub.url + "/c", ws, None)
    assert cut == f"HTTP 200 {stub.url}/c\n\n" + "a" * MAX_FETCH_BYTES + TRUNCATED


async def test_a_body_that_never_ends_is_read_up_to_the_limit(stub, tmp_path):
    stub.script(Reply.hang_after([b"a" * MIB, b"b" * 10], headers={"Content-Type": "text/plain"}))
    page = await fetch_page(stub.url + "/endless", allowing(stub, tmp_path), None)
    assert page == f"HTTP 200 {stub.url}/endless\n\n" + "a" * MIB + TRUNCATED


async def test_a_compressed_body_is_capped_at_its_decompressed_size(stub, tmp_path):
    bomb = gzip.compress(b"z" * (64 * MIB), compresslevel=9)
    assert len(bomb) < MIB // 4
    stub.script(text(bomb, **{"Content-Encoding": "gzip"}))
    page = await fetch_page(stub.url + "/bomb", allowing(stub, tmp_path), None)
    assert page.endswith(TRUNCATED) and page.count("z") == MAX_FETCH_BYTES


async def test_a_character_cut_by_the_limit_or_broken_becomes_a_replacement(stub, tmp_path):
    ws = allowing(stub, tmp_path)
    cut_in_half = b"a" * (MAX_FETCH_BYTES - 1) + "é".encode()  # its second byte is cut off
    stub.script(text(cut_in_half), text(b"ok \xff\xfe broken"))
    assert (await fetch_page(stub.url, ws, None)).endswith("a\ufffd" + TRUNCATED)
    assert (await fetch_page(stub.url, ws, None)).endswith("ok \ufffd\ufffd broken")


HOSTILE_PAGE = """<html><HEAD><Style type="text/css">
body { display: none }
</STYLE><script src=x></script><ScRiPt type="module">
fetch("/steal?" + document.cookie)
</sCrIpT></HEAD><body onload="evil()"><!-- a comment -->
<p title='a > b'>Shown &amp; kept</p>



<pre>&lt;script&gt;this is text&lt;/script&gt;</pre></body></html>"""


async def test_html_loses_tags_scripts_and_styles_and_keeps_what_is_shown(stub, tmp_path):
    stub.script(text(HOSTILE_PAGE, "text/html; charset=utf-8"))
    page = await fetch_page(stub.url + "/h", allowing(stub, tmp_path), None)
    body = page.split("\n\n", 1)[1]
    for gone in ("display", "steal", "cookie", "evil", "comment", "<p", "<html"):
        assert gone not in body, gone
    assert "Shown & kept" in body and "\n\n\n" not in body
    assert body.endswith("<script>this is text</script>")  # escaped on the page: its text


async def test_an_error_status_is_the_page_too(stub, tmp_path):
    stub.script(text("<h1>Forbidden</h1>", "text/html", status=403))
    page = await fetch_page(stub.url + "/no", allowing(stub, tmp_path), None)
    assert page == f"HTTP 403 {stub.url}/no\n\nForbidden"


def test_the_cap_named_in_the_note_is_the_cap_applied():
    assert web.MAX_FETCH_BYTES == MIB and f"{MIB // 1024} KiB" in TRUNCATED
