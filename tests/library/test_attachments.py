"""Attachments: their kind from the bytes, the size cap, and the exact shape each style sends
for images, PDFs, audio and text files, in prompts and in tool results (loopback stub); what
a style cannot carry is refused before any request (scripted model)."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest

from tests.support.resilience_helpers import single_try_client
from tests.support.scripted import scripted_client
from tests.support.stub_provider import (
    Reply,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_call,
    pdf_bytes,
    png_bytes,
    responses_reply,
    wav_bytes,
)
from toolnexus import Attachment, ToolnexusError, ToolResult, create_toolkit, define_tool
from toolnexus.content import user_content as user_content_of

PNG = png_bytes(3, 2)
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
PDF = pdf_bytes()
PDF_B64 = base64.b64encode(PDF).decode()
WAV = wav_bytes()
WAV_B64 = base64.b64encode(WAV).decode()

TEXT_REPLY = {
    "openai": openai_text("ok"),
    "anthropic": anthropic_text("ok"),
    "responses": responses_reply("ok"),
}


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def webp(chunk: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + chunk + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def user_content(body: dict, style: str) -> Any:
    if style == "responses":
        return body["input"][0]["content"]
    return body["messages"][0]["content"]


async def sent_for(stub, style: str, prompt: list) -> dict:
    stub.script(Reply.json(TEXT_REPLY[style]))
    async with single_try_client(stub, style, prompt_cache=False) as client:
        result = await client.run(prompt, None)
    assert result.text == "ok"
    return stub.requests[0].json


# ----------------------------------------------------------------------------- the kind


@pytest.mark.parametrize(
    ("data", "mime", "label"),
    [
        (png_bytes(512, 512), "image/png", "image 512x512 png"),
        (jpeg(640, 480), "image/jpeg", "image 640x480 jpeg"),
        (gif(32, 16), "image/gif", "image 32x16 gif"),
        (
            webp(b"VP8 ", b"\x00" * 3 + b"\x9d\x01\x2a" + struct.pack("<HH", 300, 200)),
            "image/webp",
            "image 300x200 webp",
        ),
        (
            webp(b"VP8L", b"\x2f" + ((99) | (49 << 14)).to_bytes(4, "little")),
            "image/webp",
            "image 100x50 webp",
        ),
        (
            webp(b"VP8X", b"\x00" * 4 + (1023).to_bytes(3, "little") + (767).to_bytes(3, "little")),
            "image/webp",
            "image 1024x768 webp",
        ),
        (PDF, "application/pdf", "pdf a.bin, 218 B"),
        (WAV, "audio/wav", "audio a.bin, 2 KB"),
        (b"ID3\x03\x00" + b"\x00" * 20, "audio/mpeg", "audio a.bin, 25 B"),
        (b"\xff\xfb\x90\x00" + b"\x00" * 20, "audio/mpeg", "audio a.bin, 24 B"),
        (b"OggS\x00\x02" + b"\x00" * 20, "audio/ogg", "audio a.bin, 26 B"),
        (b"fLaC\x00\x00\x00\x22" + b"\x00" * 20, "audio/flac", "audio a.bin, 28 B"),
    ],
)
def test_the_kind_comes_from_the_bytes_not_the_name(tmp_path, data, mime, label):
    path = tmp_path / "a.bin"
    path.write_bytes(data)
    attachment = Attachment.from_path(path)
    assert (attachment.mime, attachment.describe()) == (mime, label)


def test_a_png_named_txt_is_an_image(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(PNG)
    assert Attachment.from_path(path).part() == {"type": "image_url", "image_url": {"url": PNG_URL}}


def test_a_text_file_becomes_a_fenced_block_headed_by_its_name(tmp_path):
    path = tmp_path / "plan.md"
    path.write_text("# Plan\n```py\nx = 1\n```\nünï")
    assert Attachment.from_path(path).part() == {
        "type": "text",
        "text": "plan.md\n````\n# Plan\n```py\nx = 1\n```\nünï\n````",
    }


def test_other_bytes_are_a_clear_error(tmp_path):
    path = tmp_path / "x.zip"
    path.write_bytes(b"PK\x03\x04\x00\xff\xfe binary")
    with pytest.raises(ToolnexusError, match=r"cannot attach 'x.zip': not an image .*text file"):
        Attachment.from_path(path)
    with pytest.raises(ToolnexusError, match="cannot attach '.*nope.png': No such file"):
        Attachment.from_path(tmp_path / "nope.png")


def test_the_size_cap(tmp_path):
    path = tmp_path / "big.png"
    with path.open("wb") as f:  # a sparse file just over the default 20 MiB
        f.write(PNG)
        f.truncate(20 * 1024 * 1024 + 1)
    with pytest.raises(ToolnexusError, match="cannot attach 'big.png': larger than 20 MiB"):
        Attachment.from_path(path)
    with pytest.raises(ToolnexusError, match="larger than 50 B"):
        Attachment.from_bytes(PNG, name="p.png", max_bytes=50)


def test_urls():
    assert Attachment.from_url("https://x.test/cat.jpg").part() == {
        "type": "image_url",
        "image_url": {"url": "https://x.test/cat.jpg"},
    }
    assert Attachment.from_url(PNG_URL).dimensions == (3, 2)
    with pytest.raises(ToolnexusError, match="cannot tell what .https:..x.test.img. is: pass"):
        Attachment.from_url("https://x.test/img")
    assert Attachment.from_url("https://x.test/img", mime="image/png").kind == "image"
    with pytest.raises(ToolnexusError, match="only images .* and PDFs"):
        Attachment.from_url("https://x.test/a.wav")
    with pytest.raises(ToolnexusError, match="only http"):
        Attachment.from_url("file:///etc/passwd")


def test_a_prompt_part_must_be_text_or_an_attachment():
    from toolnexus.content import user_content

    with pytest.raises(
        ToolnexusError, match="a prompt part must be a str or an Attachment, not bytes"
    ):
        user_content(["hi", b"raw"])


# ----------------------------------------------------------------------------- each style


async def test_openai_parts(stub):
    body = await sent_for(
        stub,
        "openai",
        [
            "describe",
            Attachment.from_bytes(PNG, name="cat.png"),
            Attachment.from_bytes(PDF, name="r.pdf"),
            Attachment.from_bytes(WAV, name="v.wav"),
            Attachment.from_url("https://x.test/cat.png"),
        ],
    )
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "describe"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
                {
                    "type": "file",
                    "file": {
                        "filename": "r.pdf",
                        "file_data": "data:application/pdf;base64," + PDF_B64,
                    },
                },
                {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
                {"type": "image_url", "image_url": {"url": "https://x.test/cat.png"}},
            ],
        }
    ]


async def test_anthropic_blocks(stub):
    body = await sent_for(
        stub,
        "anthropic",
        [
            "describe",
            Attachment.from_bytes(PNG, name="cat.png"),
            Attachment.from_bytes(PDF, name="r.pdf"),
            Attachment.from_url("https://x.test/cat.png"),
            Attachment.from_url("https://x.test/paper.pdf"),
        ],
    )
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "describe"},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": base64.b64encode(PNG).decode(),
                    },
                },
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64},
                    "title": "r.pdf",
                },
                {"type": "image", "source": {"type": "url", "url": "https://x.test/cat.png"}},
                {
                    "type": "document",
                    "source": {"type": "url", "url": "https://x.test/paper.pdf"},
                    "title": "paper.pdf",
                },
            ],
        }
    ]


async def test_responses_parts(stub):
    body = await sent_for(
        stub,
        "responses",
        [
            "describe",
            Attachment.from_bytes(PNG, name="cat.png"),
            Attachment.from_bytes(PDF, name="r.pdf"),
            Attachment.from_url("https://x.test/paper.pdf"),
        ],
    )
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "describe"},
                {"type": "input_image", "image_url": PNG_URL, "detail": "auto"},
                {
                    "type": "input_file",
                    "filename": "r.pdf",
                    "file_data": "data:application/pdf;base64," + PDF_B64,
                },
                {"type": "input_file", "file_url": "https://x.test/paper.pdf"},
            ],
        }
    ]


@pytest.mark.parametrize("style", ["openai", "anthropic", "responses"])
async def test_a_text_file_is_text_in_every_style(stub, tmp_path, style):
    path = tmp_path / "a.txt"
    path.write_text("alpha\n")
    body = await sent_for(stub, style, ["summarize", Attachment.from_path(path)])
    kind = "input_text" if style == "responses" else "text"
    assert user_content(body, style) == [
        {"type": kind, "text": "summarize"},
        {"type": kind, "text": "a.txt\n```\nalpha\n```"},
    ]


@pytest.mark.parametrize(
    ("style", "attachment", "message"),
    [
        (
            "anthropic",
            Attachment.from_bytes(WAV),
            r"the anthropic style cannot carry audio "
            r"\(audio/wav\)",
        ),
        (
            "responses",
            Attachment.from_bytes(WAV),
            r"the responses style cannot carry audio "
            r"\(audio/wav\)",
        ),
        (
            "openai",
            Attachment.from_bytes(b"OggS" + b"\0" * 20),
            r"the openai style cannot carry "
            r"audio \(audio/ogg\)",
        ),
        (
            "openai",
            Attachment.from_url("https://x.test/a.pdf"),
            r"the openai style cannot carry documents by URL \(application/pdf\)",
        ),
    ],
)
async def test_a_kind_the_style_cannot_carry_fails_before_any_request(
    scripted, style, attachment, message
):
    async with scripted_client(scripted, style) as client:
        with pytest.raises(ToolnexusError, match=message):
            await client.run(["listen", attachment], None)
    assert scripted.requests == []


# ----------------------------------------------------------------------------- entry points


async def test_ask_stream_and_conversation_take_parts(stub):
    stub.script(*(Reply.json(openai_text("ok")) for _ in range(3)))
    parts = ["what is this?", Attachment.from_bytes(PNG)]
    expected = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]
    async with single_try_client(stub) as client:
        await client.ask(parts, None, id="t1")
        assert [e["type"] async for e in client.stream(parts, None)][-1] == "done"
        conversation = client.conversation(await create_toolkit())
        await conversation.send(parts)
    assert [r.json["messages"][-1]["content"] for r in stub.requests] == [expected] * 3
    assert (await client.conversation_store.get("t1"))[0]["content"] == expected


# ----------------------------------------------------------------------------- tool results


async def chart_toolkit():
    def chart() -> ToolResult:
        """Draw the chart."""
        return ToolResult(
            "chart ready",
            attachments=[Attachment.from_bytes(png_bytes(512, 512), name="chart.png")],
        )

    def snapshot() -> Attachment:
        """A snapshot."""
        return Attachment.from_bytes(PNG, name="snap.png")

    toolkit = await create_toolkit()
    toolkit.register(define_tool(chart), define_tool(snapshot))
    return toolkit


BIG_URL = "data:image/png;base64," + base64.b64encode(png_bytes(512, 512)).decode()


async def test_tool_attachments_follow_the_results_as_a_user_message_on_openai(stub):
    stub.script(
        Reply.json(openai_tool_call([("chart", {}), ("snapshot", {})])),
        Reply.json(openai_text("a chart")),
    )
    async with single_try_client(stub) as client:
        events = [e async for e in client.stream("chart it", await chart_toolkit())]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(e["output"], e["attachments"]) for e in results] == [
        ("chart ready", ["image 512x512 png"]),
        ("[image 3x2 png]", ["image 3x2 png"]),
    ]
    assert stub.requests[1].json["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": stub.requests[1].json["messages"][1]["tool_calls"],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "chart ready"},
        {"role": "tool", "tool_call_id": "call_2", "content": "[image 3x2 png]"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "(attachments returned by tool call call_1)"},
                {"type": "image_url", "image_url": {"url": BIG_URL}},
                {"type": "text", "text": "(attachments returned by tool call call_2)"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
            ],
        },
    ]


async def test_tool_attachments_are_tool_result_blocks_on_anthropic(stub):
    stub.script(
        Reply.json(anthropic_tool_use([("chart", {})])), Reply.json(anthropic_text("a chart"))
    )
    async with single_try_client(stub, "anthropic", prompt_cache=False) as client:
        result = await client.run("chart it", await chart_toolkit())
    assert result.text == "a chart"
    assert stub.requests[1].json["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {"type": "text", "text": "chart ready"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": BIG_URL.split(",", 1)[1],
                        },
                    },
                ],
            },
        ],
    }


async def test_tool_attachments_follow_the_outputs_as_a_user_message_on_responses(stub):
    stub.script(
        Reply.json(responses_reply(tool_calls=[("chart", {})])),
        Reply.json(responses_reply("a chart")),
    )
    async with single_try_client(stub, "responses") as client:
        await client.run("chart it", await chart_toolkit())
    assert stub.requests[1].json["input"][2:] == [
        {"type": "function_call_output", "call_id": "call_1", "output": "chart ready"},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "(attachments returned by tool call call_1)"},
                {"type": "input_image", "image_url": BIG_URL, "detail": "auto"},
            ],
        },
    ]


async def test_a_long_output_is_cut_but_keeps_its_attachments():
    def shot() -> ToolResult:
        """A shot."""
        return ToolResult("x" * 50, attachments=[Attachment.from_bytes(PNG)])

    toolkit = await create_toolkit(max_output=10)
    toolkit.register(define_tool(shot))
    result = await toolkit.execute("shot", {})
    assert result.output.startswith("xxxxxxxxxx\n[output truncated")
    assert [a.describe() for a in result.attachments] == ["image 3x2 png"]


# ------------------------------------------------------------------ media a style cannot carry

LONG_WAV = wav_bytes(frames=25600)  # 3.2 s of 8 kHz mono
NOTE = "[audio: audio/wav, 3.2 s]"


async def recorder_toolkit():
    def record() -> ToolResult:
        """Record a clip."""
        return ToolResult(
            "recorded", attachments=[Attachment.from_bytes(LONG_WAV, name="clip.wav")]
        )

    return (await create_toolkit()).register(define_tool(record))


async def test_audio_a_tool_returns_goes_as_its_note_where_it_cannot_go_and_the_thread_lives(stub):
    """A tool may return audio (MCP tool results hold `audio` content: base64 data and a
    mimeType); neither the Messages API nor the Responses API takes audio input, so there
    it goes as its note, never as a failed run, and the thread goes on in every style."""
    stub.script(
        Reply.json(anthropic_tool_use([("record", {})])),
        Reply.json(anthropic_text("heard")),
        Reply.json(responses_reply("still here")),
        Reply.json(openai_text("and here")),
    )
    kit = await recorder_toolkit()
    async with single_try_client(stub, "anthropic", prompt_cache=False) as claude:
        first = await claude.run("record", kit)
    assert first.text == "heard"
    assert stub.requests[1].json["messages"][2]["content"][0]["content"] == [
        {"type": "text", "text": "recorded"},
        {"type": "text", "text": NOTE},
    ]
    async with single_try_client(stub, "responses") as responses:
        second = await responses.run("again?", kit, history=first.messages)
    assert stub.requests[2].json["input"][3]["content"][1] == {"type": "input_text", "text": NOTE}
    async with single_try_client(stub, "openai") as chat:  # which carries wav
        await chat.run("and?", kit, history=second.messages)
    carried = stub.requests[3].json["messages"][3]["content"][1]
    assert carried["type"] == "input_audio" and carried["input_audio"]["format"] == "wav"


async def test_media_of_an_earlier_prompt_goes_as_its_note_the_newest_prompts_must_go_whole(stub):
    ogg = Attachment.from_bytes(b"OggS" + b"\0" * 20, name="voice.ogg")
    stub.script(Reply.json(responses_reply("ok")))
    history = [
        {"role": "user", "content": user_content_of(["listen", ogg])},
        {"role": "assistant", "content": "heard"},
    ]
    async with single_try_client(stub, "responses") as client:
        await client.run("what did it say?", None, history=history)
        with pytest.raises(ToolnexusError, match="cannot carry audio"):
            await client.run(["and this?", ogg], None, history=history)
    assert stub.requests[0].json["input"][0]["content"] == [
        {"type": "input_text", "text": "listen"},
        {"type": "input_text", "text": "[audio: audio/ogg]"},
    ]
    assert len(stub.requests) == 1
