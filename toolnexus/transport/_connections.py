"""The connection pools model calls use: the system trust store, proxies from the
environment (loopback always direct), HTTP/2 when `h2` is installed; with no proxy, httpx2's
client layers are skipped and requests go straight to httpcore2 on asyncio (_direct.py on
_network.py).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from ..errors import ProviderError
from ._failures import describe

if TYPE_CHECKING:
    import ssl

    import httpx2

    from ._direct import DirectTransport

USER_AGENT = "toolnexus"
# Loopback endpoints (a local model server) are never reached through a proxy.


# Loopback endpoints (a local model server) are never reached through a proxy.


_DIRECT = {"all://127.0.0.1": None, "all://localhost": None, "all://[::1]": None}


class Pool(NamedTuple):
    client: httpx2.AsyncClient
    direct: DirectTransport | None  # its transport, when no proxy is set
    defaults: dict[str, str]  # the client's default headers, which `direct` adds


NO_HEADERS: dict[str, str] = {}


def new_http_client(*, secure: bool = True) -> httpx2.AsyncClient:
    return new_pool(secure=secure).client


def new_pool(*, secure: bool) -> Pool:
    """A pooled client: system trust store, proxies from the environment (HTTP(S)_PROXY,
    ALL_PROXY, NO_PROXY; loopback always direct), HTTP/2 when `h2` is installed. With no
    proxy in the environment, connections use asyncio directly (_direct.py), and a
    client for plain http URLs (not `secure`) leaves the trust store unread (tens of ms);
    httpx2 resolves proxies only for a client without a transport of its own, so with
    one set it keeps all of its defaults."""
    import importlib.util
    from urllib.request import getproxies

    import httpx2

    from ._direct import DirectTransport

    http2 = importlib.util.find_spec("h2") is not None
    proxies = getproxies()
    if not any(proxies.get(scheme) for scheme in ("http", "https", "all")):
        direct = DirectTransport(tls_context() if secure else None, http2=http2)
        client = httpx2.AsyncClient(transport=direct, follow_redirects=False)
        return Pool(client, direct, dict(client.headers))
    try:
        return Pool(
            httpx2.AsyncClient(
                trust_env=True,
                follow_redirects=False,
                mounts=_DIRECT,
                verify=tls_context(),
                http2=http2,
            ),
            None,
            NO_HEADERS,
        )
    except ImportError:  # httpx2 names the missing package; a SOCKS proxy needs socksio
        raise ProviderError(
            "a SOCKS proxy is set in the environment (ALL_PROXY / HTTPS_PROXY), but SOCKS "
            "support is not installed: pip install 'toolnexus[socks]'"
        ) from None
    except (ValueError, httpx2.InvalidURL):  # never echo the proxy URL: it may hold a password
        raise ProviderError(
            "the proxy set in the environment (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY) is not "
            "usable: give an http://, https:// or socks5:// URL"
        ) from None


@contextlib.contextmanager
def socks_errors_mapped() -> Iterator[None]:
    """A SOCKS proxy that answers garbage makes socksio raise its own errors, which
    httpcore2 lets through as they are: here they become the httpx2.ProxyError they mean."""
    try:
        yield
    except Exception as exc:
        if type(exc).__module__.partition(".")[0] != "socksio":
            raise
        import httpx2

        raise httpx2.ProxyError(
            f"the SOCKS proxy's answer is not SOCKS5 ({describe(exc)})"
        ) from None


_TLS_CONTEXTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def tls_context() -> ssl.SSLContext:
    """httpx2's default TLS context (the system trust store, or SSL_CERT_FILE /
    SSL_CERT_DIR), built once per process and setting: loading a CA bundle takes tens of
    milliseconds, which every new client would otherwise pay inside its first run."""
    import httpx2

    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _TLS_CONTEXTS.get(key)
    if context is None:
        context = _TLS_CONTEXTS[key] = httpx2.create_ssl_context()
    return context
