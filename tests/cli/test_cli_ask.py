"""`toolnexus ask` through the real entry point, piped, against the loopback stub."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.support.cli_helpers import ENTRY, STUB_MODEL, user_text
from tests.support.stub_provider import Reply, anthropic_stream, openai_stream

ANSWER = "Here is **the answer**, with `code` and\n\n- a list item"


def test_piped_output_is_exactly_the_answer(cli, stub):
    stub.handler = lambda rec: openai_stream(ANSWER, reasoning="Let me think about this.")
    quiet = cli.call("ask", "hi")
    assert quiet.code == 0, quiet
    assert quiet.stdout == ANSWER + "\n"  # raw Markdown, one trailing newline, no ANSI
    assert "\x1b" not in quiet.stdout
    assert quiet.stderr == ""  # reasoning stays hidden without -v
    assert cli.db_path.parent.stat().st_mode & 0o777 == 0o700  # threads stay private

    # an answer that already ends in a newline does not get a second one
    stub.handler = lambda rec: openai_stream("Line one.\nLine two.\n")
    assert cli.call("ask", "hi").stdout == "Line one.\nLine two.\n"


def test_verbose_sends_tool_activity_and_reasoning_to_stderr(cli, stub):
    def handler(rec):
        if len(stub.requests) == 1:  # first model call: think, then call a tool
            return openai_stream(
                reasoning="I should look it up.", tool_calls=[("lookup", {"query": "weather"})]
            )
        return openai_stream("It is sunny.", reasoning="Now I can answer.")

    stub.handler = handler
    verbose = cli.call("ask", "weather?", "-v")
    assert verbose.code == 0, verbose
    assert verbose.stdout == "It is sunny.\n"
    assert "\x1b" not in verbose.stdout + verbose.stderr
    assert "I should look it up." in verbose.stderr
    assert "lookup" in verbose.stderr and "weather" in verbose.stderr  # the call
    assert "unknown tool" in verbose.stderr  # its (error) result
    lines = verbose.stderr.splitlines()
    assert lines[-2] == "Now I can answer."  # reasoning does not run into the footer
    assert lines[-1].startswith(STUB_MODEL) and "tokens" in lines[-1]  # the footer, last
    # the model got the tool result and answered
    assert len(stub.requests) == 2
    assert stub.requests[1].json["messages"][-1]["role"] == "tool"

    stub.requests.clear()
    quiet = cli.call("ask", "weather?", "--json")
    assert quiet.code == 0 and quiet.stderr == "", quiet
    body = quiet.json
    assert body["text"] == "It is sunny."
    assert [c["name"] for c in body["tool_calls"]] == ["lookup"]


def test_stdin_is_combined_with_the_prompt(cli, stub):
    diff = "diff --git a/x b/x\n+added line\n"
    both = cli.call("ask", "review this", input=diff)
    assert both.code == 0, both
    assert user_text(stub.requests[-1]) == ["review this\n\n" + diff]

    alone = cli.call("ask", input=diff)
    assert alone.code == 0, alone
    assert user_text(stub.requests[-1]) == [diff]

    asked = len(stub.requests)
    neither = cli.call("ask")
    assert neither.code == 2
    assert neither.stdout == ""
    lines = neither.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "prompt" in lines[0]
    assert len(stub.requests) == asked  # nothing was sent


def test_threads_continue_across_processes_with_json_and_events(cli, stub):
    answers = iter(["First answer.", "Other answer.", "Second answer.", "Third answer."])
    stub.handler = lambda rec: openai_stream(next(answers))

    first = cli.call("ask", "first question", "--id", "t1", "--json")
    assert first.code == 0, first
    body = first.json  # one object, nothing else on stdout
    assert set(body) >= {"text", "thread", "model", "status", "usage", "tool_calls"}
    assert body["text"] == "First answer."
    assert body["thread"] == "t1" and body["model"] == STUB_MODEL and body["status"] == "done"
    assert body["usage"]["total_tokens"] == 15 and body["tool_calls"] == []

    assert cli.call("ask", "unrelated", "--id", "t0").code == 0

    second = cli.run("ask", "second question", "--id", "t1", "--events")  # a new process
    assert second.code == 0, second
    assert stub.requests[-1].json["messages"] == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "First answer."},
        {"role": "user", "content": "second question"},
    ]
    events = second.json_lines  # every line is one JSON event
    assert events[-1]["type"] == "done"
    assert [e["type"] for e in events].count("done") == 1
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "Second answer."
    assert events[-1]["result"]["text"] == "Second answer."

    # -c takes the most recently used thread: t1, although t0 was created after it
    third = cli.call("ask", "-c", "third question")
    assert third.code == 0 and third.stdout == "Third answer.\n", third
    assert user_text(stub.requests[-1]) == ["first question", "second question", "third question"]
    assert [m["content"] for m in cli.thread("t1")][-2:] == ["third question", "Third answer."]


def test_provider_error_exits_1_with_one_line_and_a_hint(cli, stub):
    stub.handler = lambda rec: Reply.error(404, "The model `stub-model` does not exist")
    result = cli.call("ask", "hi")
    assert result.code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result
    assert lines[0].startswith("error:")
    assert "404" in lines[0] and "does not exist" in lines[0]
    assert "check the model name" in lines[0]  # the hint
    assert len(stub.requests) == 1  # a 404 is not retried


@pytest.mark.parametrize(
    ("reply", "kind", "status"),
    [
        (
            Reply.error(429, "Rate limit reached", headers={"x-should-retry": "false"}),
            "rate_limited",
            429,
        ),
        (Reply.error(401, "Incorrect API key provided"), "auth_failed", 401),
        (Reply.error(404, "The model `stub-model` does not exist"), "provider_error", 404),
    ],
    ids=["429", "401", "404"],
)
def test_json_says_the_kind_of_a_failure_and_stderr_keeps_its_line(cli, stub, reply, kind, status):
    stub.handler = lambda rec: reply
    plain = cli.call("ask", "hi")
    as_json = cli.call("ask", "hi", "--json")
    assert as_json.code == plain.code == 1
    assert as_json.stderr == plain.stderr and len(plain.stderr.splitlines()) == 1
    body = as_json.json
    assert (body["status"], body["kind"], body["http_status"]) == ("failed", kind, status)
    assert body["error"] == plain.stderr.strip()


def test_a_thread_database_that_cannot_be_opened_is_one_clear_line(cli, stub, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = cli.call("ask", "hi", env={"TOOLNEXUS_STORE": str(blocker / "threads.db")})
    assert result.code == 1, result
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: cannot open the thread database {blocker / 'threads.db'}")
    assert not stub.requests


def test_usage_errors_exit_2(cli, stub):
    both = cli.call("ask", "hi", "--json", "--events")
    assert both.code == 2 and both.stderr.startswith("error:"), both
    style = cli.call("ask", "hi", "--style", "klingon")
    assert style.code == 2 and "klingon" in style.stderr, style
    assert not stub.requests


def test_ctrl_c_in_a_pipe_exits_130_with_the_partial_answer(cli, stub):
    words = " ".join(f"w{i}" for i in range(400))
    stub.handler = lambda rec: openai_stream(words, pause=0.05)
    proc = subprocess.Popen(
        [*ENTRY, "ask", "count", "--id", "slow"],
        env=cli.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cli.home,
    )
    try:
        seen = proc.stdout.read(len("w0 w1 w2"))  # blocks until the answer is streaming
        assert seen == "w0 w1 w2"
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    out = seen + rest
    assert out.endswith("\n") and out.strip() and words.startswith(out.rstrip("\n"))
    assert len(out) < len(words)  # it stopped mid-stream
    assert "slow" in err  # says where the partial answer went
    saved = cli.thread("slow")
    assert saved[-1]["interrupted"] is True
    assert saved[-1]["content"] == out.rstrip("\n")


def test_a_piped_ask_loads_no_renderer_or_prompt_library(cli, stub):
    """Start-up speed: a pipe needs neither Rich's Markdown nor prompt_toolkit nor MCP."""
    stub.handler = lambda rec: openai_stream("fast")
    result = cli.run_fresh("ask", "hi", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.code == 0 and result.stdout == "fast\n", result
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "toolnexus_cli" in imported  # the profile is there
    assert imported.isdisjoint({"rich", "prompt_toolkit", "markdown_it", "pygments", "mcp"})


@pytest.mark.parametrize(
    ("finish", "reason", "note"),
    [
        (
            "content_filter",
            "content_filter",
            "note: the provider's content filter stopped the answer "
            "(finish reason 'content_filter')",
        ),
        ("refusal", "refused", "note: the model refused; the exchange stays in the thread"),
        (
            "model_context_window_exceeded",
            "context_window",
            "note: the answer was cut off when the model's context window filled up",
        ),
    ],
)
def test_every_cut_off_says_so_on_stderr_and_in_the_json(cli, stub, finish, reason, note):
    """Each stop reason of an answer that did not end by itself (OpenAI/Azure
    "content_filter", Anthropic "refusal" and "model_context_window_exceeded") is reported
    as max_tokens is."""
    if finish == "content_filter":
        stub.handler = lambda rec: openai_stream("Here is how", finish=finish)
        style = []
    else:
        stub.handler = lambda rec: anthropic_stream("Here is how", stop=finish)
        style = ["--style", "anthropic", "--base-url", stub.url]
    piped = cli.call("ask", "a story", *style)
    assert piped.code == 0, piped
    assert piped.stdout == "Here is how\n"
    assert piped.stderr.splitlines() == [piped.stderr.strip()]
    assert piped.stderr.startswith(note)
    as_json = cli.call("ask", "a story", "--json", *style)
    assert as_json.code == 0 and as_json.stderr == "", as_json
    assert (
        as_json.json["status"],
        as_json.json["finish_reason"],
        as_json.json["incomplete_reason"],
    ) == ("incomplete", finish, reason)


def test_an_answer_cut_off_at_max_tokens_says_so_on_stderr(cli, stub):
    stub.handler = lambda rec: openai_stream("Roses are red, violets", finish="length")
    piped = cli.call("ask", "a poem")
    assert piped.code == 0, piped
    assert piped.stdout == "Roses are red, violets\n"  # the answer stays exact
    lines = piped.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("note: the answer was cut off at max_tokens")
    as_json = cli.call("ask", "a poem", "--json")
    assert as_json.code == 0 and as_json.stderr == "", as_json
    assert as_json.json["status"] == "incomplete"

    stub.handler = lambda rec: openai_stream("Roses are red.")
    whole = cli.call("ask", "a poem")
    assert whole.code == 0 and whole.stderr == "", whole


TOOL_MACHINERY = (
    "toolnexus.tools.approval",
    "toolnexus.tools.builtins",
    "toolnexus.tools.workspace",
    "toolnexus.tools._web",
    "toolnexus.tools._command_line",
    "toolnexus.tools._command_rules",
    "toolnexus.tools._command_vetting",
    "toolnexus.tools.secret_files",
    "toolnexus.tools._command_run",
    "toolnexus.tools._linear_regex",
    "toolnexus.tools._html_text",
    "toolnexus.tools.sandbox",
    "toolnexus.mcp",
    "re2",
)


# What a piped `ask` has no use for: the terminal's rendering and input, and the modules
# of the other commands (the chat, threads, models, setup, config).
TERMINAL_AND_OTHER_COMMANDS = (
    "rich",
    "prompt_toolkit",
    "markdown_it",
    "pygments",
    "toolnexus_cli.chat.repl",
    "toolnexus_cli.chat.commands",
    "toolnexus_cli.render.chat_markdown",
    "toolnexus_cli.render.markdown_stream",
    "toolnexus_cli.render.live_region",
    "toolnexus_cli.chat.terminal",
    "toolnexus_cli.chat.clipboard",
    "toolnexus_cli.tools.file_change",
    "toolnexus_cli.threads.commands",
    "toolnexus_cli.config.models",
    "toolnexus_cli.config.setup",
    "toolnexus_cli.config.commands",
    "toolnexus_cli.chat.context_commands",
    "toolnexus_cli.chat.shell",
    "toolnexus.context.pricing",
)


# What this question (OpenAI style, a SQLite store, every setting from the environment)
# has no use for: the other providers' wire styles, the other stores, the TOML reader of a
# config file it does not have, and the model listing's reader (the stub's model is not
# looked up: no context overflow tells it to).
NOT_THIS_QUESTION = (
    "toolnexus.wire.anthropic",
    "toolnexus.wire._listing",
    "toolnexus.wire.responses",
    "toolnexus.stores.memory",
    "toolnexus.stores.postgres",
    "tomllib",
)


def test_a_piped_ask_without_tools_imports_only_what_it_uses(cli, stub, tmp_path):
    """Start-up is paid by every piped question (the import budget of issue 26): what
    serves tools waits until a tool is offered, nothing of the terminal or of the other
    commands is loaded, and neither are the other styles nor a config file's reader."""
    loaded = tmp_path / "modules"
    code = (
        "import atexit, sys; path = sys.argv.pop(); atexit.register(lambda: open(path, 'w')"
        ".write('\\n'.join(sys.modules))); from toolnexus_cli.app import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "ask", "hi", str(loaded)],
        env=cli.merged_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    modules = set(loaded.read_text().split())
    assert "toolnexus._loop" in modules  # it did answer
    assert sorted(m for m in modules if m.startswith(TOOL_MACHINERY)) == []
    unused = sorted(
        m
        for m in modules
        if m.split(".")[0] in TERMINAL_AND_OTHER_COMMANDS or m in TERMINAL_AND_OTHER_COMMANDS
    )
    assert unused == []
    assert sorted(modules.intersection(NOT_THIS_QUESTION)) == []
