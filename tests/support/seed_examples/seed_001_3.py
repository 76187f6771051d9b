import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolnexus import create_client, create_toolkit


class SseStubServer:
    def __init__(self, handler):
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for c in outer._handler(body):
                    self.wfile.write(f"data: {c}\n\n".encode("utf-8"))
                    self.wfile.flush()
                    time.sleep(0.005)

        self._handler = handler
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
        seen_messages = []

        def handler(body):
            seen_messages.append([m.get("content") for m in body["messages"]])
            return [json.dumps({"choices": [{"delta": {"content": "noted"}}]}), "[DONE]"]

        with SseStubServer(handler) as srv:
            client = create_client(base_url=srv.base_url, style="openai", model="test-model", api_key="test-key")

            async for ev in client.stream("my name is Muthu", tk, id="thread-1"):
                pass
            async for ev in client.stream("what's my name?", tk, id="thread-1"):
                pass

            # The store now holds the full two-turn transcript, addressable by id.
            saved = await client.conversation_store.get("thread-1")

        assert "my name is Muthu" in seen_messages[1]  # second call included the first turn
        assert saved is not None
        user_contents = [m.get("content") for m in saved if m.get("role") == "user"]
        assert "my name is Muthu" in user_contents and "what's my name?" in user_contents

        print("ok: transcript for 'thread-1' has", len(saved), "messages")
    finally:
        await tk.close()


asyncio.run(main())
