import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolnexus import create_client, create_toolkit


class SseStubServer:
    """A local OpenAI-shaped streaming chat-completions endpoint."""

    def __init__(self, chunks):
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):  # silence
                pass

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                self.rfile.read(length)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for c in outer._chunks:
                    self.wfile.write(f"data: {c}\n\n".encode("utf-8"))
                    self.wfile.flush()
                    time.sleep(0.005)

        self._chunks = chunks
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


async def main():
    tk = await create_toolkit()
    try:
        chunks = [
            json.dumps({"choices": [{"delta": {"content": "Hel"}}]}),
            json.dumps({"choices": [{"delta": {"content": "lo"}}]}),
            json.dumps({"choices": [{"delta": {}}], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}),
            "[DONE]",
        ]
        with SseStubServer(chunks) as srv:
            client = create_client(base_url=srv.base_url, style="openai", model="test-model", api_key="test-key")

            deltas = []
            done = None
            async for ev in client.stream("say hello", tk):
                if ev["type"] == "text":
                    deltas.append(ev["delta"])
                elif ev["type"] == "done":
                    done = ev["result"]

        assert "".join(deltas) == "Hello"
        assert done is not None
        assert done.text == "Hello"
        assert done.usage["total_tokens"] == 3

        print("ok:", "".join(deltas))
    finally:
        await tk.close()


asyncio.run(main())
