import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolnexus import create_client, create_toolkit


class StubServer:
    def __init__(self, handler):
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer._send(self, handler(body))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @staticmethod
    def _send(req, payload):
        body = json.dumps(payload).encode("utf-8")
        req.send_response(200)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)

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

    # A stub that "remembers" by echoing back whatever prior user turn is in the
    # transcript it's handed — this is what a real model does with real history.
    def stateful_reply(body):
        prior_users = [m["content"] for m in body["messages"] if m.get("role") == "user"]
        if len(prior_users) >= 2:
            return {"choices": [{"message": {"role": "assistant", "content": "Muthu, favorite number 7"}}], "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}}
        return {"choices": [{"message": {"role": "assistant", "content": "noted"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    try:
        with StubServer(stateful_reply) as srv:
            client = create_client(base_url=srv.base_url, style="openai", model="test-model", api_key="test-key")
            convo = client.conversation(tk)

            a = await convo.send("My name is Muthu and my favorite number is 7. Reply 'noted'.")
            b = await convo.send("What is my name and favorite number?")

        assert a.text == "noted"
        assert "Muthu" in b.text and "7" in b.text

        print("ok:", a.text, "->", b.text)
    finally:
        await tk.close()


asyncio.run(main())
