"""`toolnexus ask` beyond text, piped, against the loopback stub: attachments (-a), tool
results that carry images, structured output (--schema), request options (-o) and
reasoning (--reasoning, the config's `reasoning`, "reasoned for N tokens")."""

from __future__ import annotations

import base64
import json

import pytest

from tests.support.cli_helpers import STUB_MODEL
from tests.support.stub_provider import (
    LlamaCppLike,
    openai_stream,
    pdf_bytes,
    png_bytes,
    wav_bytes,
)

PNG = png_bytes(4, 3)
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def user_parts(stub) -> list:
    return [m["content"] for m in stub.requests[-1].json["messages"] if m["role"] == "user"]


def one_error_line(result, *words: str) -> None:
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result
    assert "Traceback" not in result.stderr
    assert all(word in lines[0] for word in words), result


# ------------------------------------------------------------------------ attachments


def test_ask_attaches_files_and_urls_as_parts(cli, stub):
    (cli.home / "cat.png").write_bytes(PNG)
    (cli.home / "notes.txt").write_text("buy milk\n")
    done = cli.call(
        "ask",
        "what is this?",
        "-a",
        "cat.png",
        "-a",
        "notes.txt",
        "-a",
        "https://example.com/dog.jpg",
    )
    assert done.code == 0, done
    assert user_parts(stub) == [
        [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
            {"type": "text", "text": "notes.txt\n```\nbuy milk\n```"},
            {"type": "image_url", "image_url": {"url": "https://example.com/dog.jpg"}},
        ]
    ]

    alone = cli.call("ask", "-a", "cat.png")  # an attachment needs no words
    assert alone.code == 0, alone
    assert user_parts(stub) == [[{"type": "image_url", "image_url": {"url": PNG_URL}}]]


def props_asked(stub) -> int:
    return sum(1 for r in stub.lookups if r.path.split("?")[0] == "/props")


def test_an_image_for_a_text_only_llama_cpp_model_is_not_sent(cli, stub):
    """Repro: `toolnexus ask -a cat.png "what is it?"` against llama.cpp serving a model
    without vision came back as "HTTP 500: image input is not supported". The server says
    so in its /props beforehand: one line now, and nothing is sent. A server whose model
    reads images, or one that does not say, gets the image as before."""
    (cli.home / "cat.png").write_bytes(PNG)
    stub.handler = LlamaCppLike(answer="A grey cat.")
    refused = cli.call("ask", "-a", "cat.png", "what is it?")
    assert refused.code == 2, refused
    assert refused.stderr == (
        "error: this model does not take images (its server says so): nothing was sent\n"
    )
    assert stub.requests == [] and props_asked(stub) == 1

    text_only = cli.call("ask", "no picture this time")  # no image: /props is not asked
    assert text_only.code == 0 and text_only.stdout == "A grey cat.\n", text_only
    assert props_asked(stub) == 1

    stub.handler = LlamaCppLike(answer="A grey cat.", vision=True)
    seen = cli.call("ask", "-a", "cat.png", "what is it?")
    assert seen.code == 0 and seen.stdout == "A grey cat.\n", seen
    assert user_parts(stub)[-1][1] == {"type": "image_url", "image_url": {"url": PNG_URL}}

    stub.handler = lambda rec: openai_stream("Cannot tell.")  # /props: no JSON, not known
    unknown = cli.call("ask", "-a", "cat.png", "what is it?")
    assert unknown.code == 0 and unknown.stdout == "Cannot tell.\n", unknown
    assert user_parts(stub)[-1][1] == {"type": "image_url", "image_url": {"url": PNG_URL}}


@pytest.mark.parametrize(
    ("make", "args", "words"),
    [
        (None, ["-a", "missing.png"], ["missing.png", "No such file"]),
        ("junk.bin", ["-a", "junk.bin"], ["junk.bin", "not an image"]),
        ("huge.png", ["-a", "huge.png"], ["huge.png", "larger than 20 MiB"]),
        ("clip.wav", ["--style", "anthropic", "-a", "clip.wav"], ["anthropic", "audio"]),
        ("doc.pdf", ["-a", "ftp://example.com/doc.pdf"], ["only http(s) and data: URLs"]),
    ],
)
def test_an_attachment_that_cannot_go_is_one_line_before_any_request(cli, stub, make, args, words):
    if make == "junk.bin":
        (cli.home / make).write_bytes(b"\x00\x01\x02\xfe" * 10)
    elif make == "huge.png":
        with (cli.home / make).open("wb") as handle:  # sparse: 21 MiB that take no disk
            handle.write(PNG)
            handle.truncate(21 * 1024 * 1024)
    elif make == "clip.wav":
        (cli.home / make).write_bytes(wav_bytes())
    elif make == "doc.pdf":
        (cli.home / make).write_bytes(pdf_bytes())
    done = cli.call("ask", "look", *args)
    assert done.code == 2 and done.stdout == "", done
    one_error_line(done, *words)
    assert stub.requests == []


FUNCTIONS = f'''
from toolnexus import ToolResult
from toolnexus.content import Attachment

def snapshot(name: str) -> ToolResult:
    """Take a picture."""
    return ToolResult("took " + name, attachments=[Attachment.from_bytes({PNG!r})])
'''


def calls_snapshot_then_answers(stub) -> None:
    def handler(rec):
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("snapshot", {"name": "desk"})])
        return openai_stream("A desk.")

    stub.handler = handler


def test_a_tool_returned_image_shows_in_the_verbose_side_channel(cli, stub, tmp_path):
    tools = tmp_path / "camera.py"
    tools.write_text(FUNCTIONS)
    calls_snapshot_then_answers(stub)
    done = cli.call("ask", "--functions", str(tools), "shoot", "-v")
    assert done.code == 0, done
    assert done.stdout == "A desk.\n"
    lines = done.stderr.splitlines()
    assert lines[lines.index("[result] took desk") + 1] == "[image 4x3 png]"
    follow_up = stub.requests[1].json["messages"]  # and the model got the image
    assert {"type": "image_url", "image_url": {"url": PNG_URL}} in follow_up[-1]["content"]


# ------------------------------------------------------------------ structured output

PERSON = {"name": "Ada", "age": 36, "tags": ["math"]}


def sent_schema(stub) -> dict:
    return stub.requests[-1].json["response_format"]["json_schema"]["schema"]


def test_schema_short_form_prints_exactly_the_document(cli, stub):
    stub.handler = lambda rec: openai_stream(json.dumps(PERSON, indent=4))
    done = cli.call("ask", "who?", "--schema", "name, age int, tags list")
    assert done.code == 0 and done.stderr == "", done
    assert done.stdout == json.dumps(PERSON, ensure_ascii=False) + "\n"  # one compact line
    assert sent_schema(stub) == {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "age", "tags"],
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }


def test_schema_from_inline_json_and_from_a_file(cli, stub):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    stub.handler = lambda rec: openai_stream('{"name": "Ada"}')
    inline = cli.call("ask", "who?", "--schema", json.dumps(schema))
    assert inline.code == 0 and inline.stdout == '{"name": "Ada"}\n', inline
    assert sent_schema(stub)["properties"] == {"name": {"type": "string"}}

    (cli.home / "person.json").write_text(json.dumps(schema))
    filed = cli.call("ask", "who?", "--schema", "person.json")
    assert filed.code == 0 and filed.stdout == '{"name": "Ada"}\n', filed
    assert stub.requests[-1].json["response_format"]["json_schema"]["strict"] is True

    (cli.home / "broken.json").write_text("{not json")
    broken = cli.call("ask", "who?", "--schema", "broken.json")
    assert broken.code == 2, broken
    one_error_line(broken, "broken.json", "not valid JSON")


def test_schema_multi_asks_for_a_list_of_objects(cli, stub):
    answer = {"items": [{"name": "Ada"}, {"name": "Alan"}]}
    stub.handler = lambda rec: openai_stream(json.dumps(answer))
    done = cli.call("ask", "who?", "--schema-multi", "name")
    assert done.code == 0, done
    assert json.loads(done.stdout) == answer and done.stdout.count("\n") == 1
    assert sent_schema(stub)["properties"]["items"]["items"]["properties"] == {
        "name": {"type": "string"}
    }


def test_a_reply_that_breaks_the_schema_is_one_line_and_exit_1(cli, stub):
    stub.handler = lambda rec: openai_stream('{"name": "Ada", "age": "old", "tags": []}')
    done = cli.call("ask", "who?", "--schema", "name, age int, tags list")
    assert done.code == 1 and done.stdout == "", done
    one_error_line(done, "does not match the schema", "$.age", "integer")


# -------------------------------------------------------- request options and reasoning


def test_options_are_typed_as_json_and_win_over_request_params(cli, stub):
    cli.write_config(f'''
[providers.stub]
base_url = "{stub.base_url}"
[models.fast]
provider = "stub"
model = "{STUB_MODEL}"
request_params = {{ temperature = 1.0, top_p = 0.5 }}
''')
    done = cli.call(
        "ask",
        "-m",
        "fast",
        "hi",
        "-o",
        "temperature",
        "0.2",
        "-o",
        "max_tokens",
        "500",
        "-o",
        "user",
        "ada",
        "-o",
        "stop",
        '["\\n"]',
    )
    assert done.code == 0, done
    body = stub.requests[-1].json
    assert body["temperature"] == 0.2 and body["max_tokens"] == 500
    assert body["top_p"] == 0.5  # the config's still goes
    assert body["user"] == "ada" and body["stop"] == ["\n"]

    reserved = cli.call("ask", "hi", "-o", "messages", "[]")
    assert reserved.code == 2, reserved
    one_error_line(reserved, "messages")


def test_reasoning_from_the_flag_the_model_and_the_config(cli, stub):
    cli.write_config(f'''
reasoning = "low"
[providers.stub]
base_url = "{stub.base_url}"
[models.deep]
provider = "stub"
model = "{STUB_MODEL}"
reasoning = "high"
''')
    assert cli.call("ask", "hi").code == 0
    assert stub.requests[-1].json["reasoning_effort"] == "low"  # top level
    assert cli.call("ask", "-m", "deep", "hi").code == 0
    assert stub.requests[-1].json["reasoning_effort"] == "high"  # the model's own
    assert cli.call("ask", "-m", "deep", "hi", "--reasoning", "medium").code == 0
    assert stub.requests[-1].json["reasoning_effort"] == "medium"  # the flag
    assert cli.call("ask", "hi", "--reasoning", "off").code == 0
    assert "reasoning_effort" not in stub.requests[-1].json

    bad = cli.call("ask", "hi", "--reasoning", "max")
    assert bad.code == 2 and "Traceback" not in bad.stderr and "max" in bad.stderr

    cli.write_config('reasoning = "hgh"\n')
    wrong = cli.call("ask", "hi")
    assert wrong.code == 2, wrong
    one_error_line(wrong, "config.toml:1", "'reasoning'", "did you mean 'high'?")


def test_reasoning_tokens_note_stays_out_of_a_pipe(cli, stub):
    stub.handler = lambda rec: openai_stream("Done.", reasoning_tokens=42)
    quiet = cli.call("ask", "hi")
    assert quiet.code == 0 and quiet.stdout == "Done.\n" and quiet.stderr == "", quiet
    verbose = cli.call("ask", "hi", "-v")
    assert verbose.stdout == "Done.\n"
    assert "reasoned for 42 tokens" in verbose.stderr.splitlines()
