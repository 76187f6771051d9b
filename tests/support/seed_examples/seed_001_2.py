import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolnexus import create_client, create_toolkit, define_tool


class ScriptedSseServer:
    """Streams a different scripted SSE response depending on request count."""

    def __init__(self, scripts):
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                self.rfile.read(length)
                idx = outer._n
                outer._n += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for c in outer._scripts[idx]:
                    self.wfile.write(f"data: {c}\n\n".encode("utf-8"))
                    self.wfile.flush()
                    time.sleep(0.005)

        self._scripts = scripts
        self._n = 0
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
    tk.register(define_tool(lambda a, b: str(a + b), name="add", description="Add two numbers.", input_schema={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }))
    try:
        turn1 = [
            json.dumps({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "add", "arguments": ""}}]}}]}),
            json.dumps({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 21, "b": 21}'}}]}}]}),
            "[DONE]",
        ]
        turn2 = [
            json.dumps({"choices": [{"delta": {"content": "42"}}]}),
            "[DONE]",
        ]
        with ScriptedSseServer([turn1, turn2]) as srv:
            client = create_client(base_url=srv.base_url, style="openai", model="test-model", api_key="test-key")

            tool_calls, tool_results, done = [], [], None
            async for ev in client.stream("add 21 and 21", tk):
                if ev["type"] == "tool_call":
                    tool_calls.append(ev)
                elif ev["type"] == "tool_result":
                    tool_results.append(ev)
                elif ev["type"] == "done":
                    done = ev["result"]

        assert tool_calls and tool_calls[0]["name"] == "add"
        assert tool_calls[0]["args"] == {"a": 21, "b": 21}
        assert tool_results and tool_results[0]["output"] == "42"
        assert done is not None and done.text == "42"

        print("ok:", tool_calls[0]["name"], "->", tool_results[0]["output"])
    finally:
        await tk.close()


asyncio.run(main())
