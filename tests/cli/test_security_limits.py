"""Security promises: nothing hostile can hang toolnexus or flood it. One test per promise,
in this order:

1. grep and glob match in linear time (RE2), whatever pattern the model picks; a pattern
   RE2 cannot take is one error to the model that names RE2 syntax; a search stops when
   the run is cancelled.
2. fetch_url turns HTML into text in one linear pass: scripts and styles are dropped, and
   an unclosed tag drops the rest.
3. SIGTERM and SIGINT end `ask` (143, 130, no traceback) while a tool chews on the inputs
   that used to freeze it: a backtracking grep pattern, a page of unclosed `<script`.
4. At most 32 tool calls run per reply and 256 per run (settings of the library and keys of
   the config file); the rest are refused with one line to the model, and the thread stays
   valid and small in every wire style. A reply of 100,000 calls is read in linear time.
5. JSON nested too deep (stream events, replies, tool arguments, --schema files and
   answers) is one clear error, never a RecursionError.
6. A SOCKS proxy that answers garbage is one line.

The CLI cases run the real `toolnexus` command against the loopback stub endpoint, which
scripts what a hostile model or server would send.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import TextIO

import pytest

from tests.cli.test_security_processes import start
from tests.support import cli_helpers
from tests.support.cli_helpers import CLI, tool_results
from tests.support.net_servers import LoopbackServer
from tests.support.resilience_helpers import collect, echo_toolkit, make_client
from tests.support.stub_provider import (
    Recorded,
    Reply,
    StubProvider,
    anthropic_stream,
    openai_stream,
    responses_stream,
)
from tests.support.waiting import WAIT_S, wait_until
from toolnexus import ToolContext
from toolnexus._bounded_json import MAX_DEPTH, TooDeep, loads_bounded
from toolnexus.tools.builtins import Builtins
from toolnexus.tools.workspace import Workspace

DEEP = "[" * 100_000 + "]" * 100_000  # Python's own parser meets it with a RecursionError
TOO_DEEP = f"JSON nested deeper than {MAX_DEPTH} levels"


def model_calls(stub: StubProvider) -> list[Recorded]:
    """The requests that called the model (not a lookup of its context window)."""
    return [request for request in stub.requests if request.method == "POST"]


def script_model(stub: StubProvider, *replies: Reply, page: bytes = b"") -> None:
    """The next model calls get `replies` in turn, and every call after them the last one;
    a GET of /page gets the HTML `page`, and no model window is listed."""
    before = len(model_calls(stub))

    def handler(request: Recorded) -> Reply:
        if request.path == "/page":
            return Reply.raw([page], chunked=False, headers={"Content-Type": "text/html"})
        if request.method == "GET":
            return Reply.json({"error": {"message": "no listing"}}, status=404)
        return replies[min(len(model_calls(stub)) - before, len(replies)) - 1]

    stub.handler = handler


LOOPBACK_ALLOWED = '[approval.hosts]\n"127.0.0.1:*" = "allow"\n'  # fetch_url reaches the stub


def tool_said(cli: CLI, stub: StubProvider, call: tuple[str, dict], page: bytes = b"") -> str:
    """What the tool told the model when it made `call` (`ask --builtins --yes`, in a project
    folder)."""
    cli.in_project()
    cli.write_config(LOOPBACK_ALLOWED)
    script_model(stub, openai_stream(tool_calls=[call]), openai_stream("done"), page=page)
    result = cli.call("ask", "--builtins", "--yes", "go")
    assert result.code == 0 and result.stderr == "", result
    [said] = tool_results(model_calls(stub)[-1])
    return said


def one_error_line(result: cli_helpers.Result, code: int = 1) -> str:
    assert result.code == code, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result
    return lines[0]


# ============================================================ 1. grep and glob in RE2


def test_grep_refuses_a_pattern_re2_cannot_take_with_one_error_naming_its_syntax(cli, stub):
    (cli.in_project() / "notes.txt").write_text("aa\n")
    said = tool_said(cli, stub, ("grep", {"pattern": r"(a)\1"}))
    assert said == (
        r"error: ValueError: the pattern '(a)\\1' is not in RE2 syntax (invalid "
        r"escape sequence: \1); RE2 has no backreferences or lookaround, see "
        "https://github.com/google/re2/wiki/Syntax"
    )


def test_grep_matches_line_by_line_as_before(tmp_path):
    (tmp_path / "notes.txt").write_bytes(b"ab\r\ncd\r\n\nab\n")
    tools = Builtins(Workspace(tmp_path))
    found = [
        tools.grep(pattern, context=ToolContext())
        for pattern in (r"b\s*c", "^c", "b$", "^$", "(?i)CD$")
    ]
    where = tmp_path / "notes.txt"
    assert found == [
        "no matches",
        f"{where}:2: cd",
        f"{where}:1: ab\n{where}:4: ab",
        f"{where}:3: ",
        f"{where}:2: cd",
    ]


def test_grep_and_glob_stop_once_the_run_is_cancelled(tmp_path):
    """They run in a worker thread, which a cancelled run cannot stop and the process
    waits for on its way out: they watch the call's `cancelled` between files."""
    (tmp_path / "notes.txt").write_text("hit\n")
    tools = Builtins(Workspace(tmp_path))
    assert tools.grep("hit", context=ToolContext()) == f"{tmp_path / 'notes.txt'}:1: hit"
    cancelled = ToolContext()
    cancelled.cancelled.set()
    assert tools.grep("hit", context=cancelled) == "no matches"
    assert tools.glob("*.txt", context=cancelled) == "no matches"


@pytest.mark.parametrize(
    ("glob", "said"),
    [
        ("**/" * 40 + "x.txt", "no matches"),
        (
            "[" * 200_000,
            "error: ValueError: the glob '" + "[" * 80 + "'... is 200000 characters "
            "long: at most 8192 are taken",
        ),
    ],
    ids=["many **/", "huge"],
)
def test_a_hostile_glob_is_answered(cli, stub, glob, said):
    deep = cli.in_project().joinpath(*["d"] * 30)  # what `**/` x 40 backtracked over, exponentially
    deep.mkdir(parents=True)
    (deep / "y.txt").write_text("")
    assert tool_said(cli, stub, ("glob", {"pattern": glob})) == said


# ============================================================ 2. HTML to text


def test_fetch_url_drops_scripts_styles_and_whatever_an_unclosed_tag_leaves(cli, stub):
    page = (
        b"<p>Kept &amp; shown</p><script>var x = '<p>no</p>';</script><STYLE>p {}</STYLE>"
        b"\n\n\n<p>a < b, after</p><!-- not > this --><a href='x' never closed, nor this"
    )
    said = tool_said(cli, stub, ("fetch_url", {"url": stub.url + "/page"}), page)
    assert said == f"HTTP 200 {stub.url}/page\n\nKept & shown\n\na < b, after"


# ============================================================ 3. signals while a tool works


def cpu_seconds(pid: int) -> float:
    """The CPU time process `pid` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Lines:
    """The lines of a stream, read by a thread as they come."""

    def __init__(self, stream: TextIO) -> None:
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self.lines.extend, args=(stream,), daemon=True)
        self.reader.start()

    def text(self) -> str:
        self.reader.join(WAIT_S)
        return "".join(self.lines)


PAGE_OF_OPEN_SCRIPTS = b"<script " * (1 << 17)  # 1 MiB


def hostile_call(cli: CLI, tool: str) -> tuple[str, dict]:
    """A call that kept Python's backtracking regex busy for hours."""
    if tool == "grep":
        (cli.cwd / "hostile.txt").write_text("a" * 40 + "!")
        return "grep", {"pattern": "(a+)+$"}
    return "fetch_url", {"url": cli.env["TOOLNEXUS_BASE_URL"].removesuffix("/v1") + "/page"}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
@pytest.mark.parametrize("tool", ["grep", "fetch_url"])
def test_a_signal_ends_ask_while_a_tool_works_on_hostile_input(cli, stub, tool, signum):
    cli.in_project()
    # after the tool, the model never answers: the run is still there to be signalled
    script_model(
        stub,
        openai_stream(tool_calls=[hostile_call(cli, tool)]),
        Reply.hang(),
        page=PAGE_OF_OPEN_SCRIPTS,
    )
    cli.write_config(LOOPBACK_ALLOWED)
    process = start(cli, "ask", "-v", "--builtins", "--yes", "go")
    try:
        stderr = Lines(process.stderr)
        wait_until(
            lambda: any(line.startswith(f"[tool] {tool}(") for line in stderr.lines),
            "the tool call",
        )
        busy_from = cpu_seconds(process.pid)
        wait_until(
            lambda: len(model_calls(stub)) == 2 or cpu_seconds(process.pid) > busy_from + 1,
            "the tool to be done, or busy for a CPU second",
        )
        process.send_signal(signum)
        code = process.wait(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 128 + signum
    assert "Traceback" not in stderr.text()


# ============================================================ 4. tool calls per reply and run

REPLY_IN = {"openai": openai_stream, "anthropic": anthropic_stream, "responses": responses_stream}


def calls_and_results(style: str, body: dict) -> tuple[list[str], list[str]]:
    """The ids of the tool calls a request's assistant turns hold, and of those its tool
    results answer, in the style's own shape."""
    if style == "openai":
        messages = body["messages"]
        return (
            [call["id"] for m in messages for call in m.get("tool_calls", [])],
            [m["tool_call_id"] for m in messages if m["role"] == "tool"],
        )
    if style == "anthropic":
        blocks = [
            b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
        ]
        return (
            [b["id"] for b in blocks if b["type"] == "tool_use"],
            [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"],
        )
    items = body["input"]
    return (
        [i["call_id"] for i in items if i["type"] == "function_call"],
        [i["call_id"] for i in items if i["type"] == "function_call_output"],
    )


@pytest.mark.parametrize("style", list(REPLY_IN))
async def test_of_a_reply_of_thousands_of_tool_calls_32_run_and_the_thread_stays_small(stub, style):
    many = [("echo", {"text": str(n)}) for n in range(3000)]
    script_model(stub, REPLY_IN[style](tool_calls=many), REPLY_IN[style]("done"))
    toolkit = await echo_toolkit()
    async with make_client(stub, style, context=None) as client:
        events, error = await collect(client, "go", toolkit)
    assert error is None and events[-1]["result"].text == "done"
    assert len(toolkit.seen) == 32
    follow_up = model_calls(stub)[1]
    calls, results = calls_and_results(style, follow_up.json)
    assert calls == results and len(calls) == 33  # the 33rd tells the model about the rest
    assert len(follow_up.body) < 64 * 1024
    told = [e for e in events if e["type"] == "tool_result"][-1]
    assert told["is_error"] and told["output"] == (
        "error: not run: the reply made 3000 tool calls and at most 32 run per reply; this "
        "call and the 2967 after it did not run"
    )


def calls_without_indexes(style: str, count: int) -> Reply:
    """A reply of `count` tool calls that name no index (fragments and items are matched
    by id), which a search through the calls read so far made quadratic."""
    if style == "openai":
        event = (
            'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "call_%d", '
            '"function": {"name": "echo", "arguments": "{\\"text\\": \\"%d\\"}"}}]}}]}\n\n'
        )
        end = (
            'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}'
            "\n\ndata: [DONE]\n\n"
        )
    else:
        event = (
            'data: {"type": "response.output_item.done", "item": {"id": "fc_%d", "type": '
            '"function_call", "call_id": "call_%d", "name": "echo", "arguments": '
            '"{\\"text\\": \\"n\\"}"}}\n\n'
        )
        end = (
            'data: {"type": "response.completed", "response": {"status": "completed", '
            '"output": []}}\n\n'
        )
    body = "".join(event % (n, n) for n in range(count)) + end
    return Reply.raw([body.encode()])


@pytest.mark.parametrize("style", ["openai", "responses"])
async def test_a_reply_of_100_000_tool_calls_without_indexes_is_read_in_linear_time(stub, style):
    script_model(stub, calls_without_indexes(style, 100_000), REPLY_IN[style]("done"))
    toolkit = await echo_toolkit()
    async with make_client(stub, style, context=None) as client:
        result = await client.run("go", toolkit)
    assert result.text == "done" and len(toolkit.seen) == 32


async def test_a_run_runs_at_most_256_tool_calls(stub):
    batches = [
        openai_stream(tool_calls=[("echo", {"text": f"{batch}.{n}"}) for n in range(32)])
        for batch in range(9)
    ]  # 288 calls
    script_model(stub, *batches, openai_stream("done"))
    toolkit = await echo_toolkit()
    async with make_client(stub, context=None, max_turns=20) as client:
        result = await client.run("go", toolkit)
    assert result.text == "done" and len(toolkit.seen) == 256
    refused = [m for m in result.messages if m["role"] == "tool" and m.get("is_error")]
    assert [m["content"] for m in refused] == [
        "error: not run: this run made its 256 tool calls, the most one run may make; answer "
        "with what you have"
    ] * 32


def test_the_config_sets_both_limits(cli, stub):
    cli.in_project()
    cli.write_config("max_tool_calls_per_reply = 2\nmax_tool_calls_per_run = 3\n")
    listing = ("list_dir", {"path": "."})
    script_model(
        stub,
        openai_stream(tool_calls=[listing] * 5),
        openai_stream(tool_calls=[listing, ("read_file", {"path": "x"})]),
        openai_stream("done"),
    )
    result = cli.call("ask", "--builtins", "go")
    assert result.code == 0 and result.stdout == "done\n", result
    first, second = (tool_results(request)[-2:] for request in model_calls(stub)[1:])
    assert first[1] == (
        "error: not run: the reply made 5 tool calls and at most 2 run per "
        "reply; this call and the 2 after it did not run"
    )
    assert second[1] == (
        "error: not run: this run made its 3 tool calls, the most one run "
        "may make; answer with what you have"
    )


@pytest.mark.parametrize(
    "setting, rule",
    [
        ("max_tool_calls_per_reply = 0", "from 1 to 10000 (tool calls run of one reply)"),
        ("max_tool_calls_per_run = -5", "from 1 to 100000 (tool calls run in one question)"),
        ("max_turns = true", "from 1 to 1000 (model calls per question)"),
    ],
)
def test_a_limit_below_one_is_one_config_error(cli, stub, setting, rule):
    cli.write_config(f"{setting}\n")
    line = one_error_line(cli.call("ask", "hi"), 2)
    key = setting.split()[0]
    assert line == f"error: {cli.config_file}:1: '{key}' must be a whole number {rule}"
    assert stub.requests == []


def test_the_library_refuses_a_limit_below_one(stub):
    with pytest.raises(
        ValueError, match="max_tool_calls_per_run must be a whole number of at least 1, not 0"
    ):
        make_client(stub, max_tool_calls_per_run=0)


# ============================================================ 5. JSON nested too deep


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply.sse([DEEP]), f"the endpoint sent a stream event of {TOO_DEEP}"),
        (Reply.raw([DEEP.encode()], chunked=False), f"the endpoint's reply is {TOO_DEEP}"),
    ],
    ids=["stream event", "whole reply"],
)
def test_a_deeply_nested_reply_is_one_error_line(cli, stub, reply, said):
    stub.handler = lambda rec: reply
    assert one_error_line(cli.call("ask", "hi")) == f"error: {said}"


def test_a_deeply_nested_structured_answer_is_one_error_line(cli, stub):
    stub.handler = lambda rec: openai_stream('{"a": ' + DEEP + "}")
    result = cli.call("ask", "--schema", "a list", "hi")
    assert one_error_line(result) == f"error: the reply is {TOO_DEEP}"


def test_a_deeply_nested_schema_file_is_one_usage_line(cli, stub, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "object", "properties": ' + DEEP + "}")
    result = cli.call("ask", "--schema", str(schema), "hi")
    assert one_error_line(result, 2) == f"error: --schema: {schema} is {TOO_DEEP}"
    assert stub.requests == []


def test_the_depth_limit_counts_arrays_and_objects_not_brackets_in_strings():
    def nested(depth: int) -> str:
        return '{"a": ' * depth + "1" + "}" * depth

    assert loads_bounded(nested(MAX_DEPTH).encode())
    with pytest.raises(TooDeep):
        loads_bounded(nested(MAX_DEPTH + 1))
    assert loads_bounded(json.dumps(["[{" * 1000])) == ["[{" * 1000]


def test_deeply_nested_tool_arguments_are_refused_to_the_model(cli, stub):
    cli.in_project()
    arguments = '{"path": ' + DEEP + "}"
    script_model(
        stub, openai_stream(tool_calls=[("read_file", arguments)]), openai_stream("understood")
    )
    result = cli.call("ask", "--builtins", "read it")
    assert result.code == 0 and "Traceback" not in result.stderr, result
    assert result.stdout == "understood\n"
    [told] = tool_results(model_calls(stub)[1])
    assert told.startswith(f"error: the arguments for 'read_file' are {TOO_DEEP}: ")


def anthropic_tool_input(partial_json: str) -> Reply:
    """An anthropic stream whose one tool_use block's input is `partial_json`."""
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-stub",
                    "usage": {"input_tokens": 5, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {},
                },
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": partial_json},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return Reply.sse(events)


def test_deeply_nested_anthropic_tool_input_is_refused_to_the_model(cli, stub):
    cli.in_project()
    script_model(
        stub, anthropic_tool_input('{"path": ' + DEEP + "}"), anthropic_stream("understood")
    )
    result = cli.call("ask", "--builtins", "read it", env={"TOOLNEXUS_STYLE": "anthropic"})
    assert result.code == 0 and "Traceback" not in result.stderr, result
    [message] = [
        m
        for m in model_calls(stub)[1].json["messages"]
        if m["role"] == "user" and m["content"][0]["type"] == "tool_result"
    ]
    told = message["content"][0]
    assert told["is_error"] and told["content"].startswith(
        f"error: the arguments for 'read_file' are {TOO_DEEP}: "
    )


# ============================================================ 6. a SOCKS proxy's garbage


async def answers_in_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(1024)  # the SOCKS5 greeting
    writer.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    await writer.drain()


async def test_a_socks_proxy_that_answers_garbage_is_one_line(cli):
    async with LoopbackServer(answers_in_http) as proxy:
        env = {name: None for name in cli.env if name.lower().endswith("_proxy")}
        env |= {
            "ALL_PROXY": f"socks5://127.0.0.1:{proxy.port}",
            "TOOLNEXUS_BASE_URL": "http://model.invalid/v1",
        }
        result = await asyncio.to_thread(cli.run, "ask", "hi", env=env)
    line = one_error_line(result)
    assert "SOCKS proxy's answer is not SOCKS5" in line
