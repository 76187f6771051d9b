"""A scriptable fake LLM endpoint on loopback: real HTTP/1.1 framing over raw sockets.

    with StubProvider() as stub:
        stub.script(Reply.error(429, "slow", headers={"Retry-After": "1"}), openai_stream("Hi"))
        ... point a client at stub.base_url ...
        stub.requests[0].json

Stdlib only, so benchmarks and CLI subprocess tests can import it too.
"""

from __future__ import annotations

import http
import io
import json as jsonlib
import re
import select
import socket
import struct
import threading
import time
import wave
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

__all__ = [
    "Headers",
    "LlamaCppLike",
    "Recorded",
    "Reply",
    "StubProvider",
    "llama_models",
    "llama_props",
    "llama_slots",
    "llama_tool_arguments_error",
    "openai_text",
    "openai_tool_call",
    "openai_stream",
    "anthropic_text",
    "anthropic_tool_use",
    "anthropic_stream",
    "anthropic_blocks_stream",
    "anthropic_message",
    "responses_reply",
    "responses_stream",
    "openai_models",
    "anthropic_models",
    "png_bytes",
    "pdf_bytes",
    "wav_bytes",
]

POLL = 0.01  # seconds between disconnect checks while pausing or hanging


class Headers(dict):
    """Request headers with lowercase keys; lookups are case-insensitive."""

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


@dataclass
class Recorded:
    method: str
    path: str
    headers: Headers
    body: bytes
    json: Any
    connection: int = 0  # index of the TCP connection that carried the request (1, 2, ...)
    disconnected: threading.Event = field(default_factory=threading.Event)
    disconnected_at: float | None = None

    def mark_disconnected(self) -> None:
        if self.disconnected_at is None:
            self.disconnected_at = time.monotonic()
        self.disconnected.set()


# ----------------------------------------------------------------------------- replies

ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class Reply:
    """One scripted response. Build it with the constructors below.

    `end` says how the response finishes: "complete", "hang" (stall after the parts),
    "drop" (close the socket without the last chunk), "hang_request" (never answer),
    "close" (close the connection before any response byte).
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    parts: list[bytes] = field(default_factory=list)
    chunked: bool = False
    delay: float = 0.0
    pause: float = 0.0
    end: str = "complete"

    @classmethod
    def json(
        cls, body: Any, status: int = 200, headers: dict | None = None, delay: float = 0.0
    ) -> Reply:
        data = jsonlib.dumps(body, ensure_ascii=False).encode()
        return cls(
            status, _merge({"Content-Type": "application/json"}, headers), [data], delay=delay
        )

    @classmethod
    def sse(
        cls,
        events: list,
        status: int = 200,
        headers: dict | None = None,
        delay: float = 0.0,
        pause: float = 0.0,
        chunks: int | None = None,
        line_end: str = "\n",
        done: bool = False,
        keep_open: bool = False,
    ) -> Reply:
        """SSE body, one HTTP chunk per event, or re-split into `chunks`-byte HTTP chunks.

        `pause` is slept between HTTP chunks (so between events by default). `keep_open`:
        after the last event the response neither ends nor closes (as a proxy that keeps
        the connection may do): the connection stays open until the client closes it."""
        parts = [_sse_event(ev, line_end) for ev in [*events, *(["[DONE]"] if done else [])]]
        if chunks:
            data = b"".join(parts)
            parts = [data[i : i + chunks] for i in range(0, len(data), chunks)]
        end = "hang" if keep_open else "complete"
        return cls(status, _merge(_SSE_HEADERS, headers), parts, True, delay, pause, end)

    @classmethod
    def raw(
        cls,
        body_parts: list[bytes],
        status: int = 200,
        headers: dict | None = None,
        pause: float = 0.0,
        delay: float = 0.0,
        chunked: bool = True,
    ) -> Reply:
        """Arbitrary bytes; Content-Type defaults to SSE when chunked, else JSON."""
        ctype = "text/event-stream" if chunked else "application/json"
        return cls(
            status,
            _merge({"Content-Type": ctype}, headers),
            list(body_parts),
            chunked,
            delay,
            pause,
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        style: str = "openai",
        headers: dict | None = None,
        code: str | None = None,
        delay: float = 0.0,
    ) -> Reply:
        if style == "anthropic":
            kind = ANTHROPIC_ERROR_TYPES.get(
                status, "api_error" if status >= 500 else "invalid_request_error"
            )
            body: dict = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            kind = "server_error" if status >= 500 else "invalid_request_error"
            if status == 429:
                kind, code = "requests", code or "rate_limit_exceeded"
            if status == 401:
                code = code or "invalid_api_key"
            body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        return cls.json(body, status, headers, delay)

    @classmethod
    def hang(cls) -> Reply:
        return cls(end="hang_request")

    @classmethod
    def hang_after(
        cls, parts: list[bytes | str], status: int = 200, headers: dict | None = None
    ) -> Reply:
        return cls(status, _merge(_SSE_HEADERS, headers), _encode(parts), True, end="hang")

    @classmethod
    def drop_after(
        cls, parts: list[bytes | str], status: int = 200, headers: dict | None = None
    ) -> Reply:
        return cls(status, _merge(_SSE_HEADERS, headers), _encode(parts), True, end="drop")

    @classmethod
    def close_without_response(cls) -> Reply:
        return cls(end="close")


_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def _merge(base: dict[str, str], extra: dict | None) -> dict[str, str]:
    """Merge header dicts; `extra` wins regardless of case."""
    out = dict(base)
    for key, value in (extra or {}).items():
        for old in [k for k in out if k.lower() == key.lower()]:
            del out[old]
        out[key] = str(value)
    return out


def _encode(parts: list[bytes | str]) -> list[bytes]:
    return [p.encode() if isinstance(p, str) else p for p in parts]


def _sse_event(event: Any, nl: str) -> bytes:
    lines = []
    if isinstance(event, tuple):
        name, event = event
        lines.append(f"event: {name}")
    text = event if isinstance(event, str) else jsonlib.dumps(event, ensure_ascii=False)
    lines += [f"data: {line}" for line in text.split("\n")]
    return (nl.join(lines) + nl + nl).encode()


# ----------------------------------------------------------------------------- server


class StubProvider:
    """Loopback HTTP/1.1 server answering each request with the next scripted Reply.

    A GET of the model listing (or llama.cpp's /props or /slots) is kept in `lookups`, not
    `requests`, and never takes a scripted model reply: it gets `models` when set (/props
    and /slots a 404 then), else the next reply of `script_listing`, else the handler's,
    else a 404."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None
    ) -> None:
        self.host, self.port = host, port
        self.tls = tls  # a server context: https, each connection's handshake in its thread
        self.default: Reply = Reply.error(500, "stub: no scripted reply")
        self.handler: Callable[[Recorded], Reply] | None = None
        self.models: Reply | None = None  # when set, the answer to every GET .../models
        self._listings: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.lookups: list[Recorded] = []  # GETs of the model listing, /props and /slots
        self._queue: deque[Reply] = deque()
        self._cond = threading.Condition()
        self._closing = threading.Event()
        self._conns: dict[int, socket.socket] = {}
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def script(self, *replies: Reply) -> None:
        with self._cond:
            self._queue.extend(replies)

    def script_listing(self, *replies: Reply) -> None:
        """Answers for the next GETs of the model listing, one each."""
        with self._cond:
            self._listings.extend(replies)

    def wait_for_requests(self, n: int, timeout: float = 5) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.requests) >= n, timeout)

    def start(self) -> StubProvider:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(128)
        self._listener, self.port = sock, sock.getsockname()[1]
        self._spawn(self._accept_loop)
        return self

    def close(self) -> None:
        """Stop accepting, cut every open connection, join the threads."""
        self._closing.set()
        if self._listener is not None:
            _shutdown(self._listener)  # wakes the accept loop
        with self._cond:
            conns = list(self._conns.values())
        for conn in conns:
            _shutdown(conn)
        for thread in list(self._threads):
            thread.join(timeout=2)
        if self._listener is not None:
            self._listener.close()

    def __enter__(self) -> StubProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals

    def _spawn(self, target: Callable, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        count = 0
        while not self._closing.is_set():
            if not select.select([self._listener], [], [], 0.05)[0]:
                continue
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            count += 1
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
            with self._cond:
                self._conns[count] = conn
            self._spawn(self._serve, conn, count)

    def _serve(self, conn: socket.socket, conn_id: int) -> None:
        reader = _Reader(conn)
        try:
            while not self._closing.is_set():
                request = reader.read_request(conn_id)
                if request is None:
                    break
                if _is_listing(request):
                    # Kept apart, so scripts and `requests` stay the model calls a test
                    # wrote them for, whatever a client looks up on its own meanwhile.
                    self.lookups.append(request)
                    reply = self._look_up(request)
                else:
                    with self._cond:
                        self.requests.append(request)
                        self._cond.notify_all()
                    reply = self._pick(request)
                if not _respond(conn, reply, request, self._closing):
                    break
        except (OSError, ValueError):
            pass
        finally:
            with self._cond:
                self._conns.pop(conn_id, None)
            conn.close()

    def _look_up(self, request: Recorded) -> Reply:
        if self.models is not None:
            return self.models if _last_segment(request) == "models" else _NO_LISTING
        with self._cond:
            if self._listings:
                return self._listings.popleft()
        return self._pick(request) if self.handler is not None else _NO_LISTING

    def _pick(self, request: Recorded) -> Reply:
        if self.handler is not None:
            try:
                return self.handler(request)
            except Exception as exc:  # surfaces in the client as a 500 with the reason
                return Reply.error(500, f"stub handler raised: {exc!r}")
        with self._cond:
            return self._queue.popleft() if self._queue else self.default


_NO_LISTING = Reply.json(
    {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}, status=404
)


def _is_listing(request: Recorded) -> bool:
    """A GET of the model listing (`/v1/models`) or llama.cpp's `/props` and `/slots`."""
    return request.method == "GET" and _last_segment(request) in ("models", "props", "slots")


def _last_segment(request: Recorded) -> str:
    return request.path.split("?")[0].rstrip("/").rsplit("/", 1)[-1]


def _shutdown(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Reader:
    """Buffered request reader on a raw socket."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.buf = conn, b""

    def _fill(self) -> bool:
        data = self.conn.recv(65536)
        self.buf += data
        return bool(data)

    def _line(self, sep: bytes = b"\r\n") -> bytes | None:
        while sep not in self.buf:
            if not self._fill():
                return None
        line, self.buf = self.buf.split(sep, 1)
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise ValueError("client closed mid-body")
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_request(self, conn_id: int) -> Recorded | None:
        head = self._line(b"\r\n\r\n")
        if head is None:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = Headers()
        for line in lines[1:]:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked_body()
        else:
            body = self._exact(int(headers.get("content-length") or 0))
        try:
            parsed = jsonlib.loads(body) if body else None
        except ValueError:
            parsed = None
        return Recorded(method, path, headers, body, parsed, conn_id)

    def _chunked_body(self) -> bytes:
        body = b""
        while size := int((self._line() or b"0").split(b";")[0], 16):
            body += self._exact(size)
            self._exact(2)
        while self._line():  # trailers, up to the empty line
            pass
        return body


def _idle(
    conn: socket.socket, seconds: float | None, request: Recorded, closing: threading.Event
) -> bool:
    """Wait `seconds` (None: forever), watching for the client closing. True if still there."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while deadline is None or time.monotonic() < deadline:
        if closing.is_set():
            return False
        left = POLL if deadline is None else max(0.0, min(POLL, deadline - time.monotonic()))
        if select.select([conn], [], [], left)[0]:
            try:
                gone = conn.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                gone = True
            if closing.is_set():
                return False
            if gone:
                request.mark_disconnected()
                return False
            time.sleep(POLL)  # the client sent more bytes (pipelining): not a close
    return True


def _respond(
    conn: socket.socket, reply: Reply, request: Recorded, closing: threading.Event
) -> bool:
    """Write `reply`. Returns True when the connection may serve another request."""
    if reply.end == "close":
        return False
    if reply.end == "hang_request":
        _idle(conn, None, request, closing)
        return False
    if not _idle(conn, reply.delay, request, closing):
        return False
    keep = "close" not in request.headers.get("connection", "").lower()
    keep = keep and "close" not in _merge({}, reply.headers).get("Connection", "").lower()
    try:
        conn.sendall(_head(reply, keep))
        for i, part in enumerate(reply.parts):
            if i and reply.pause and not _idle(conn, reply.pause, request, closing):
                return False
            if reply.chunked and part:
                conn.sendall(b"%x\r\n%s\r\n" % (len(part), part))
            elif not reply.chunked:
                conn.sendall(part)
        if reply.end == "hang":
            _idle(conn, None, request, closing)
            return False
        if reply.end == "drop":
            return False
        if reply.chunked:
            conn.sendall(b"0\r\n\r\n")
    except OSError:
        request.mark_disconnected()
        return False
    return keep


def _head(reply: Reply, keep: bool) -> bytes:
    headers = dict(reply.headers)
    lower = {k.lower() for k in headers}
    if reply.chunked and "transfer-encoding" not in lower:
        headers["Transfer-Encoding"] = "chunked"
    elif not reply.chunked and "content-length" not in lower:
        headers["Content-Length"] = str(sum(len(p) for p in reply.parts))
    if not keep and "connection" not in lower:
        headers["Connection"] = "close"
    try:
        phrase = http.HTTPStatus(reply.status).phrase
    except ValueError:
        phrase = "Overloaded" if reply.status == 529 else "Unknown"
    lines = [f"HTTP/1.1 {reply.status} {phrase}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# ----------------------------------------------------------------------------- payloads


def _words(text: str | list[str], split: bool = True) -> list[str]:
    """'Hello big world' -> ['Hello', ' big', ' world'] (about one word per piece); a list
    is the pieces exactly."""
    if isinstance(text, list):
        return text
    if not split:
        return [text] if text else []
    return [p for p in re.split(r"(?<=\S)(?=\s)", text) if p]


def _thirds(text: str) -> list[str]:
    step = max(1, -(-len(text) // 3))
    return [text[i : i + step] for i in range(0, len(text), step)]


def _args_str(args: dict | str) -> str:
    return args if isinstance(args, str) else jsonlib.dumps(args)


# `cache` is (prompt tokens read from the cache, written to it) in every style's builders.
NO_CACHE = (0, 0)


def _openai_usage(
    usage: tuple[int, int], reasoning_tokens: int = 0, cache: tuple[int, int] = NO_CACHE
) -> dict:
    """Chat-completions usage; cache writes as OpenRouter reports them."""
    counts: dict = {
        "prompt_tokens": usage[0],
        "completion_tokens": usage[1],
        "total_tokens": usage[0] + usage[1],
    }
    if reasoning_tokens:
        counts["completion_tokens_details"] = {
            "reasoning_tokens": reasoning_tokens,
            "audio_tokens": 0,
        }
    if cache != NO_CACHE:
        counts["prompt_tokens_details"] = {"cached_tokens": cache[0], "audio_tokens": 0}
        if cache[1]:
            counts["prompt_tokens_details"]["cache_write_tokens"] = cache[1]
    return counts


def _openai_body(
    message: dict,
    finish: str,
    usage: tuple[int, int],
    model: str,
    reasoning_tokens: int = 0,
    cache: tuple[int, int] = NO_CACHE,
) -> dict:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_stub",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _openai_usage(usage, reasoning_tokens, cache),
    }


def openai_text(
    text: str,
    usage: tuple[int, int] = (10, 5),
    model: str = "stub-model",
    reasoning_tokens: int = 0,
    cache: tuple[int, int] = NO_CACHE,
) -> dict:
    message = {"role": "assistant", "content": text, "refusal": None}
    return _openai_body(message, "stop", usage, model, reasoning_tokens, cache)


def openai_tool_call(
    calls: list[tuple[str, dict | str]], usage: tuple[int, int] = (10, 5), model: str = "stub-model"
) -> dict:
    tool_calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": _args_str(args)},
        }
        for i, (name, args) in enumerate(calls, 1)
    ]
    message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": tool_calls}
    return _openai_body(message, "tool_calls", usage, model)


def openai_stream(
    text: str | list[str] | None = None,
    tool_calls: list[tuple[str, dict | str]] | None = None,
    usage: tuple[int, int] = (10, 5),
    reasoning: str | list[str] | None = None,
    split: bool = True,
    model: str = "stub-model",
    reasoning_tokens: int = 0,
    finish: str | None = None,
    cache: tuple[int, int] = NO_CACHE,
    deltas: list[tuple[str, str]] | None = None,
    **sse: Any,
) -> Reply:
    """A chat.completion.chunk stream (`text` and `reasoning` as lists: those deltas
    exactly; `deltas`: ("text" or "reasoning", piece) in that order, after them);
    `finish` overrides the finish_reason ("length"); extra keywords (pause, chunks, ...)
    go to Reply.sse."""
    base = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_stub",
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice], "usage": None}

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"reasoning_content": p}) for p in _words(reasoning or "", split)]
    events += [chunk({"content": p}) for p in _words(text or "", split)]
    events += [
        chunk({"content" if kind == "text" else "reasoning_content": p}) for kind, p in deltas or []
    ]
    for i, (name, args) in enumerate(tool_calls or []):
        first = {
            "index": i,
            "id": f"call_{i + 1}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [first]}))
        events += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
            for piece in _thirds(_args_str(args))
        ]
    events.append(chunk({}, finish or ("tool_calls" if tool_calls else "stop")))
    events.append({**base, "choices": [], "usage": _openai_usage(usage, reasoning_tokens, cache)})
    return Reply.sse(events, done=True, **sse)


def _anthropic_message(content: list, stop: str | None, usage: dict, model: str) -> dict:
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def _anthropic_usage(usage: tuple[int, int], cache: tuple[int, int]) -> dict:
    """`usage[0]` is input_tokens: what came after the last cache breakpoint."""
    counts = {"input_tokens": usage[0], "output_tokens": usage[1]}
    if cache != NO_CACHE:
        counts.update(cache_read_input_tokens=cache[0], cache_creation_input_tokens=cache[1])
    return counts


def _tool_input(args: dict | str) -> dict:
    return jsonlib.loads(args) if isinstance(args, str) else args


def anthropic_text(
    text: str,
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-stub",
    cache: tuple[int, int] = NO_CACHE,
) -> dict:
    return _anthropic_message(
        [{"type": "text", "text": text}], "end_turn", _anthropic_usage(usage, cache), model
    )


def anthropic_tool_use(
    calls: list[tuple[str, dict | str]],
    text: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-stub",
    cache: tuple[int, int] = NO_CACHE,
) -> dict:
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": _tool_input(args)}
        for i, (name, args) in enumerate(calls, 1)
    ]
    return _anthropic_message(content, "tool_use", _anthropic_usage(usage, cache), model)


def anthropic_stream(
    text: str | None = None,
    tool_calls: list[tuple[str, dict | str]] | None = None,
    thinking: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-stub",
    signature: str = "c3R1Yi1zaWduYXR1cmU=",
    stop: str | None = None,
    cache: tuple[int, int] = NO_CACHE,
    **sse: Any,
) -> Reply:
    """The Messages streaming sequence; `stop` overrides the stop_reason ("max_tokens");
    extra keywords (pause, chunks, ...) go to Reply.sse."""
    blocks: list[dict] = []
    if thinking is not None:
        blocks.append({"type": "thinking", "thinking": thinking, "signature": signature})
    if text:
        blocks.append({"type": "text", "text": text})
    blocks += [
        {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": _tool_input(args)}
        for i, (name, args) in enumerate(tool_calls or [], 1)
    ]
    return anthropic_blocks_stream(
        blocks, stop or ("tool_use" if tool_calls else "end_turn"), usage, model, cache, **sse
    )


def anthropic_blocks_stream(
    blocks: list[dict],
    stop: str = "end_turn",
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-stub",
    cache: tuple[int, int] = NO_CACHE,
    **sse: Any,
) -> Reply:
    """The Messages stream of a reply made of `blocks`, each kind as the API streams it
    (docs, "Streaming Messages", the web search example): text in text_delta pieces (its
    citations as citations_delta), thinking in thinking_delta pieces then its
    signature_delta, a client or server tool's call (`*tool_use`) as input_json_delta, and
    any other block (a server tool's result) whole in its content_block_start."""
    start_usage = _anthropic_usage((usage[0], 1), cache)
    events: list = [
        (
            "message_start",
            {"type": "message_start", "message": _anthropic_message([], None, start_usage, model)},
        ),
        ("ping", {"type": "ping"}),
    ]
    for index, whole in enumerate(blocks):
        start, deltas = _streamed_block(whole)
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage[1]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return Reply.sse(events, **sse)


def _streamed_block(block: dict) -> tuple[dict, list[dict]]:
    """A whole content block as its content_block_start block and its deltas."""
    kind = block["type"]
    if kind == "text":
        return (
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": p} for p in _words(block["text"])]
            + [{"type": "citations_delta", "citation": c} for c in block.get("citations") or []],
        )
    if kind == "thinking":
        return (
            {"type": "thinking", "thinking": "", "signature": ""},
            [{"type": "thinking_delta", "thinking": p} for p in _words(block["thinking"])]
            + [{"type": "signature_delta", "signature": block["signature"]}],
        )
    if kind.endswith("tool_use"):
        raw = jsonlib.dumps(block["input"])
        return (
            {**block, "input": {}},
            [{"type": "input_json_delta", "partial_json": p} for p in _thirds(raw)],
        )
    return block, []


def anthropic_message(
    blocks: list[dict],
    stop: str = "end_turn",
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-stub",
) -> dict:
    """A whole (non-streamed) Messages reply made of `blocks`."""
    return _anthropic_message(blocks, stop, _anthropic_usage(usage, NO_CACHE), model)


# Responses API (POST /v1/responses)


def _responses_usage(
    usage: tuple[int, int], reasoning_tokens: int = 0, cache: tuple[int, int] = NO_CACHE
) -> dict:
    return {
        "input_tokens": usage[0],
        "input_tokens_details": {"cached_tokens": cache[0]},
        "output_tokens": usage[1],
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": usage[0] + usage[1],
    }


def _responses_object(
    output: list, status: str, usage: dict | None, model: str, incomplete: str | None = None
) -> dict:
    return {
        "id": "resp_stub",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def _responses_items(
    text: str | None,
    tool_calls: list[tuple[str, dict | str]] | None,
    reasoning: str | None,
    encrypted: str | None,
    refusal: str | None,
) -> list[dict]:
    """The finished output items of a reply, in the API's order."""
    items: list[dict] = []
    if reasoning is not None or encrypted is not None:
        summary = [{"type": "summary_text", "text": reasoning}] if reasoning else []
        item = {"id": "rs_stub1", "type": "reasoning", "summary": summary}
        if encrypted is not None:
            item["encrypted_content"] = encrypted
        items.append(item)
    parts = []
    if text:
        parts.append({"type": "output_text", "annotations": [], "logprobs": [], "text": text})
    if refusal:
        parts.append({"type": "refusal", "refusal": refusal})
    if parts:
        items.append(
            {
                "id": "msg_stub1",
                "type": "message",
                "status": "completed",
                "content": parts,
                "role": "assistant",
            }
        )
    items += [
        {
            "id": f"fc_stub{i}",
            "type": "function_call",
            "status": "completed",
            "arguments": _args_str(args),
            "call_id": f"call_{i}",
            "name": name,
        }
        for i, (name, args) in enumerate(tool_calls or [], 1)
    ]
    return items


def responses_reply(
    text: str | None = None,
    tool_calls: list[tuple[str, dict | str]] | None = None,
    reasoning: str | None = None,
    encrypted: str | None = None,
    refusal: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "stub-model",
    incomplete: str | None = None,
    cache: tuple[int, int] = NO_CACHE,
) -> dict:
    """A whole (non-streamed) Responses API reply body."""
    items = _responses_items(text, tool_calls, reasoning, encrypted, refusal)
    status = "incomplete" if incomplete else "completed"
    return _responses_object(items, status, _responses_usage(usage, cache=cache), model, incomplete)


def responses_stream(
    text: str | None = None,
    tool_calls: list[tuple[str, dict | str]] | None = None,
    reasoning: str | None = None,
    encrypted: str | None = None,
    refusal: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "stub-model",
    end: str | None = "completed",
    cache: tuple[int, int] = NO_CACHE,
    why: str = "max_output_tokens",
    **sse: Any,
) -> Reply:
    """The Responses streaming sequence (named events, each with its sequence_number).

    `end` is "completed", "incomplete" (for the reason `why`) or None (the stream just
    stops); extra keywords (pause, chunks, ...) go to Reply.sse."""
    events: list = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **fields}))

    emit("response.created", response=_responses_object([], "in_progress", None, model))
    emit("response.in_progress", response=_responses_object([], "in_progress", None, model))
    items = _responses_items(text, tool_calls, reasoning, encrypted, refusal)
    for index, item in enumerate(items):
        ids = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            emit(
                "response.output_item.added",
                output_index=index,
                item={"id": item["id"], "type": "reasoning", "summary": []},
            )
            for j, part in enumerate(item["summary"]):
                emit(
                    "response.reasoning_summary_part.added",
                    **ids,
                    summary_index=j,
                    part={"type": "summary_text", "text": ""},
                )
                for piece in _words(part["text"]):
                    emit(
                        "response.reasoning_summary_text.delta", **ids, summary_index=j, delta=piece
                    )
                emit(
                    "response.reasoning_summary_text.done",
                    **ids,
                    summary_index=j,
                    text=part["text"],
                )
                emit("response.reasoning_summary_part.done", **ids, summary_index=j, part=part)
        elif item["type"] == "message":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            for j, part in enumerate(item["content"]):
                key, kind = (
                    ("text", "output_text")
                    if part["type"] == "output_text"
                    else ("refusal", "refusal")
                )
                emit("response.content_part.added", **ids, content_index=j, part={**part, key: ""})
                for piece in _words(part[key]):
                    extra = {"logprobs": []} if kind == "output_text" else {}
                    emit(f"response.{kind}.delta", **ids, content_index=j, delta=piece, **extra)
                emit(f"response.{kind}.done", **ids, content_index=j, **{key: part[key]})
                emit("response.content_part.done", **ids, content_index=j, part=part)
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in _thirds(item["arguments"]):
                emit("response.function_call_arguments.delta", **ids, delta=piece)
            emit("response.function_call_arguments.done", **ids, arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    reasoning_tokens = len(_words(reasoning or ""))
    final_usage = _responses_usage(usage, reasoning_tokens, cache)
    if end == "completed":
        emit(
            "response.completed", response=_responses_object(items, "completed", final_usage, model)
        )
    elif end == "incomplete":
        emit(
            "response.incomplete",
            response=_responses_object(items, "incomplete", final_usage, model, why),
        )
    return Reply.sse(events, **sse)


# ----------------------------------------------------------------------------- llama.cpp


class LlamaCppLike:
    """A handler that answers like llama.cpp's server with a small context window.

    It counts a request's prompt tokens as its body's bytes / 4; over `window` it answers
    llama.cpp's exact 400 (`exceed_context_size_error` with n_prompt_tokens and n_ctx).
    A summary request (a user message holding "<conversation>") gets a short summary (with
    `echo`, as a verbose model does: its whole input, whatever max_tokens asked), any other
    request `answer`; both stream when asked to, with usage. With `listing`, GET /v1/models
    answers like llama.cpp (the server's whole context in `meta.n_ctx`, `slots` times the
    window) and GET /props and /slots do too (a slot's window in `n_ctx`); else 404.
    Without `vision` (a text-only model, as /props says) a request holding an image gets
    llama.cpp's HTTP 500.

        stub.handler = LlamaCppLike(window=4096)
    """

    def __init__(
        self,
        window: int = 4096,
        answer: str = "Noted.",
        listing: bool = True,
        summary: str = "Summary: the user sent long notes; the assistant noted each one.",
        model: str = "stub-model",
        slots: int = 1,
        echo: bool = False,
        vision: bool = False,
    ) -> None:
        self.window, self.answer, self.listing, self.summary = window, answer, listing, summary
        self.model, self.slots, self.echo, self.vision = model, slots, echo, vision
        self.overflows = 0
        self.summaries = 0

    def __call__(self, rec: Recorded) -> Reply:
        if rec.method == "GET":
            path = rec.path.split("?")[0]
            if self.listing and path.endswith("/models"):
                return Reply.json(llama_models(self.model, self.window * self.slots))
            if self.listing and path == "/props":
                return Reply.json(llama_props(self.model, self.window, self.slots, self.vision))
            if self.listing and path == "/slots":
                return Reply.json(llama_slots([False] * self.slots, self.window))
            return Reply.json(
                {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}},
                status=404,
            )
        refused = llama_tool_arguments_error(rec.json or {})
        if refused is not None:
            return refused
        if not self.vision and b'"image_url"' in rec.body:
            return Reply.error(
                500,
                "image input is not supported - hint: if this is unexpected, you may need "
                "to provide the mmproj",
            )
        used = len(rec.body) // 4
        if used > self.window:
            self.overflows += 1
            return Reply.json(
                {
                    "error": {
                        "code": 400,
                        "message": "the request exceeds the available context size, "
                        "try increasing it",
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": used,
                        "n_ctx": self.window,
                    }
                },
                status=400,
            )
        body = rec.json or {}
        last = next(
            (m for m in reversed(body.get("messages") or []) if m.get("role") == "user"), {}
        )
        asked_summary = "<conversation>" in str(last.get("content"))
        self.summaries += asked_summary
        text = (
            self.answer
            if not asked_summary
            else str(last["content"])
            if self.echo
            else self.summary
        )
        usage = (used, max(1, len(text) // 4))
        if body.get("stream"):
            return openai_stream(text, usage=usage)
        return Reply.json(openai_text(text, usage=usage))


def llama_tool_arguments_error(body: dict) -> Reply | None:
    """llama.cpp's HTTP 500 for a request holding an assistant tool call whose `arguments`
    string is not JSON (it parses every one in the history), else None."""
    for message in body.get("messages") or []:
        for call in message.get("tool_calls") or []:
            arguments = (call.get("function") or {}).get("arguments")
            try:
                jsonlib.loads(arguments)
            except ValueError as exc:
                where = (
                    f"[json.exception.parse_error.101] parse error at line {exc.lineno}, "
                    f"column {exc.colno + 1}: syntax error while parsing value"
                )
                return Reply.json(
                    {
                        "error": {
                            "code": 500,
                            "type": "server_error",
                            "message": f"Failed to parse tool call arguments as JSON: {where}",
                        }
                    },
                    status=500,
                    headers={"Content-Type": "application/json; charset=utf-8"},
                )
    return None


def llama_models(model: str = "stub-model", n_ctx: int = 4096) -> dict:
    """llama.cpp's `GET /v1/models`: its Ollama-style `models` beside the OpenAI `data`;
    `meta.n_ctx` is the whole server's context (all slots), `n_ctx_train` the model's."""
    return {
        "models": [
            {
                "name": model,
                "model": model,
                "modified_at": "",
                "size": "",
                "digest": "",
                "type": "model",
                "description": "",
                "tags": [""],
                "capabilities": ["completion"],
                "parameters": "",
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": "",
                    "families": [""],
                    "parameter_size": "",
                    "quantization_level": "",
                },
            }
        ],
        "object": "list",
        "data": [
            {
                "id": model,
                "aliases": [model],
                "tags": [],
                "object": "model",
                "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]},
                "created": 1796145656,
                "owned_by": "llamacpp",
                "meta": {
                    "vocab_type": 2,
                    "n_vocab": 151936,
                    "n_ctx": n_ctx,
                    "n_ctx_train": 32768,
                    "n_embd": 896,
                    "n_params": 630167424,
                    "size": 485452288,
                    "ftype": "Q4_K - Medium",
                },
            }
        ],
    }


def llama_props(
    model: str = "stub-model", n_ctx: int = 4096, slots: int = 1, vision: bool = False
) -> dict:
    """llama.cpp's `GET /props` (the chat template left out): a slot's window in
    `default_generation_settings.n_ctx`, whether the model reads images in
    `modalities.vision`."""
    return {
        "default_generation_settings": {"params": _LLAMA_PARAMS, "n_ctx": n_ctx},
        "total_slots": slots,
        "model_alias": model,
        "model_ftype": "Q4_K - Medium",
        "model_path": f"/models/{model}.gguf",
        "modalities": {"vision": vision, "video": False, "audio": False},
        "media_marker": "<__media_stub__>",
        "endpoint_slots": True,
        "endpoint_props": False,
        "endpoint_metrics": False,
        "ui": False,
        "ui_settings": {},
        "chat_template": "",
        "chat_template_caps": {"supports_tool_calls": True, "supports_tools": True},
        "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>",
        "build_info": "b0-unknown",
        "is_sleeping": False,
        "cors_proxy_enabled": False,
    }


def llama_slots(processing: list[bool], n_ctx: int = 4096) -> list[dict]:
    """llama.cpp's `GET /slots`: one entry a slot, `is_processing` while it works."""
    return [
        {
            "id": i,
            "n_ctx": n_ctx,
            "speculative": False,
            "is_processing": busy,
            "id_task": 7 if busy else 0,
            "n_prompt_tokens": 1039 if busy else 0,
            "n_prompt_tokens_processed": 512 if busy else 0,
            "n_prompt_tokens_cache": 0,
            "params": _LLAMA_PARAMS,
            "next_token": [
                {"has_next_token": busy, "has_new_line": False, "n_remain": -1, "n_decoded": 0}
            ],
        }
        for i, busy in enumerate(processing)
    ]


_LLAMA_PARAMS = {
    "seed": 4294967295,
    "temperature": 0.800000011920929,
    "top_k": 40,
    "top_p": 0.949999988079071,
    "min_p": 0.05000000074505806,
    "max_tokens": -1,
    "n_predict": -1,
    "n_keep": 0,
    "stream": True,
    "chat_format": "peg-native",
    "reasoning_format": "deepseek",
    "samplers": ["penalties", "top_k", "top_p", "min_p", "temperature"],
}

# ----------------------------------------------------------------------------- media


# ----------------------------------------------------------------------------- model lists


def openai_models(ids: list[str], extra: dict[str, dict] | None = None) -> Reply:
    """`GET /v1/models` as OpenAI-style servers answer; `extra` maps an id to more keys
    (OpenRouter's context_length and pricing, llama.cpp's meta...)."""
    return Reply.json(
        {
            "object": "list",
            "data": [
                {
                    "id": i,
                    "object": "model",
                    "created": 1700000000,
                    "owned_by": "stub",
                    **(extra or {}).get(i, {}),
                }
                for i in ids
            ],
        }
    )


def anthropic_models(ids: list[str], has_more: bool = False) -> Reply:
    """Anthropic's `GET /v1/models` page."""
    data = [
        {"type": "model", "id": i, "display_name": i, "created_at": "2025-01-01T00:00:00Z"}
        for i in ids
    ]
    return Reply.json(
        {
            "data": data,
            "has_more": has_more,
            "first_id": ids[0] if ids else None,
            "last_id": ids[-1] if ids else None,
        }
    )


def png_bytes(width: int = 2, height: int = 2) -> bytes:
    """A real (decodable) grey PNG of the given size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\0" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def pdf_bytes(text: str = "hello") -> bytes:
    """A one-page PDF (enough for a reader to open; the body is not offset-exact)."""
    return (
        b"%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n"
        b"2 0 obj <</Type /Pages /Kids [3 0 R] /Count 1>> endobj\n"
        b"3 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 200 100]>> endobj\n"
        + f"% {text}\n".encode()
        + b"trailer <</Root 1 0 R>>\n%%EOF\n"
    )


def wav_bytes(frames: int = 800) -> bytes:
    """A silent mono 8 kHz WAV, a tenth of a second by default."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * frames)
    return out.getvalue()
