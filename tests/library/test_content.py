"""toolnexus.content promises that an attachment's kind comes from its bytes (magic numbers
at offset 0), never from a name or a data URL's claimed type; that an image's size is
read from its header when the header is whole and is left unknown (never made up) when it
is cut off; that what is not an image, PDF, audio or UTF-8 text, or is over the cap, is a
ToolnexusError naming it; that each attachment has one canonical content part which
`media_of` reads back; and that a prompt is text or a list of texts and Attachments.

Each style's wire shape, and the common kinds with their labels, are in
tests/library/test_attachments.py; this file is the hostile, empty, cut-off and huge cases."""

from __future__ import annotations

import base64
import os
import re
import struct

import pytest

from tests.support.stub_provider import pdf_bytes, png_bytes, wav_bytes
from toolnexus.content import (
    Attachment,
    Media,
    image_size,
    media_of,
    sniff,
    unsupported,
    user_content,
    with_attachments,
)
from toolnexus.errors import ToolnexusError

PNG = png_bytes(3, 2)
PDF = pdf_bytes()
NOT_ATTACHABLE = re.escape(
    "not an image (png, jpeg, gif, webp), PDF, audio (wav, mp3, ogg, flac) or UTF-8 text file"
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def segment(marker: int, payload: bytes) -> bytes:
    """A JPEG marker segment: its length counts itself."""
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def start_of_frame(width: int, height: int, marker: int = 0xC0) -> bytes:
    return segment(marker, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")


def riff(form: bytes, chunk: bytes = b"", payload: bytes = b"") -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + len(chunk) + len(payload)) + form + chunk + payload


# ----------------------------------------------------------------------------- sniff


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff",
        b"\x89PNG",
        b"GIF8",
        b" %PDF-1.4",
        b"RIFF",
        b"RIFF\0\0\0\0AVI LIST",
        b"\xff\xf1\x50\x80",  # AAC in ADTS framing: the sync bits, but layer 00
        b"PK\x03\x04",
    ],
)
def test_bytes_that_are_cut_short_or_another_format_are_no_known_type(data):
    assert sniff(data) is None


def test_riff_containers_are_told_apart_by_their_form():
    assert sniff(riff(b"WEBP")) == "image/webp"
    assert sniff(riff(b"WAVE")) == "audio/wav"


# ----------------------------------------------------------------------------- image_size


@pytest.mark.parametrize(
    "data",
    [
        PNG[:8],
        PNG[:20],
        b"\x89PNG\r\n\x1a\n" + b"\0\0\0\x0dIHDX" + b"\0" * 8,
        b"GIF89a\x01",
        b"\xff\xd8",
        b"\xff\xd8" + b"\0" * 20,
        b"\xff\xd8" + segment(0xE0, b"JFIF\0" + b"\0" * 9),  # no frame header at all
        b"\xff\xd8" + start_of_frame(640, 480)[:7],  # the frame header cut off
        riff(b"WEBP", b"VP8 ", b"\0" * 4),
        riff(b"WEBP", b"XXXX", b"\0" * 30),
    ],
)
def test_a_header_that_is_cut_off_or_missing_gives_no_size(data):
    assert image_size(data) is None


WEBP_HEADERS = [  # the chunk, its size field and payload up to the image size, that size
    (b"VP8X", b"\0" * 8 + (1023).to_bytes(3, "little") + (767).to_bytes(3, "little"), (1024, 768)),
    (b"VP8L", b"\0" * 4 + b"\x2f" + (99 | 49 << 14).to_bytes(4, "little"), (100, 50)),
]


@pytest.mark.parametrize(("chunk", "header", "size"), WEBP_HEADERS, ids=["VP8X", "VP8L"])
def test_a_webp_header_cut_off_anywhere_gives_no_size_rather_than_a_made_up_one(
    chunk, header, size
):
    assert image_size(riff(b"WEBP", chunk, header)) == size
    cut = [image_size(riff(b"WEBP", chunk, header[:n])) for n in range(len(header))]
    assert cut == [None] * len(header)


def test_a_jpeg_size_is_found_past_fill_bytes_tables_and_restart_markers():
    tables = segment(0xC4, b"\0" * 20)  # a Huffman table: 0xC4 is not a frame header
    data = (
        b"\xff\xd8"
        + segment(0xE1, b"Exif\0\0" + b"\0" * 40)
        + b"\xff\xff"
        + tables
        + b"\xff\xd0"
        + start_of_frame(1920, 1080, marker=0xC2)
        + b"\xff\xd9"
    )
    assert image_size(data) == (1920, 1080)


def test_a_jpeg_with_a_broken_segment_length_stops_without_a_size():
    assert image_size(b"\xff\xd8\xff\xe0\x00\x00" + b"\x00" * 20) is None


# ----------------------------------------------------------------------------- from_bytes


def test_bytes_that_start_like_a_png_are_an_image_of_unknown_size():
    attachment = Attachment.from_bytes(PNG[:10] + b"not really a png", name="x.png")
    assert (attachment.kind, attachment.mime, attachment.dimensions) == ("image", "image/png", None)
    assert attachment.describe() == "image png"


def test_a_pdf_named_like_a_picture_is_a_document():
    attachment = Attachment.from_bytes(PDF, name="holiday.jpg")
    assert (attachment.kind, attachment.mime) == ("document", "application/pdf")
    assert attachment.part() == {
        "type": "file",
        "file": {"filename": "holiday.jpg", "file_data": "data:application/pdf;base64," + b64(PDF)},
    }


def test_an_empty_file_is_an_empty_text_block():
    attachment = Attachment.from_bytes(b"", name="empty.txt")
    assert (attachment.kind, attachment.describe()) == ("text", "text empty.txt, 0 B")
    assert attachment.part() == {"type": "text", "text": "empty.txt\n```\n```"}


@pytest.mark.parametrize(
    "data", ["café".encode("latin-1"), b"text\0with a NUL", b"\xfe\xff\x00h\x00i", b"\x80\x81\x82"]
)
def test_text_that_is_not_utf8_or_holds_a_nul_is_refused_by_name(data):
    with pytest.raises(ToolnexusError, match=f"cannot attach 'notes.txt': {NOT_ATTACHABLE}"):
        Attachment.from_bytes(data, name="notes.txt")


def test_the_size_cap_is_inclusive():
    assert Attachment.from_bytes(b"x" * 10, max_bytes=10).kind == "text"
    with pytest.raises(ToolnexusError, match="cannot attach 'a': larger than 10 B"):
        Attachment.from_bytes(b"x" * 11, name="a", max_bytes=10)
    with pytest.raises(ToolnexusError, match="larger than 0 B"):
        Attachment.from_bytes(b"x", max_bytes=0)


def test_a_text_block_fence_outgrows_any_run_of_backticks_inside():
    attachment = Attachment.from_bytes(b"`````\nfive, then none at the end", name="t.md")
    assert attachment.part()["text"] == "t.md\n``````\n`````\nfive, then none at the end\n``````"


@pytest.mark.parametrize(
    ("size", "label"),
    [
        (1023, "1023 B"),
        (1024, "1 KB"),
        (1536, "2 KB"),
        (1024 * 1024, "1 MiB"),
        (3 * 1024 * 1024 // 2, "1.5 MiB"),
    ],
)
def test_sizes_read_as_a_person_would_write_them(size, label):
    assert Attachment.from_bytes(b"x" * size, name="n").describe() == f"text n, {label}"


# ----------------------------------------------------------------------------- from_path


def test_a_folder_is_not_attached(tmp_path):
    with pytest.raises(ToolnexusError, match=f"cannot attach '{tmp_path}': Is a directory"):
        Attachment.from_path(tmp_path)


def test_a_device_is_refused_by_name_without_reading_it():
    with pytest.raises(
        ToolnexusError,
        match="cannot attach '/dev/zero': Not a regular file "
        r"\(a device or socket\)",
    ):
        Attachment.from_path("/dev/zero")


def test_a_pipe_is_read_as_the_shells_process_substitution_gives_one(tmp_path):
    reading, writing = os.pipe()
    os.write(writing, PNG)
    os.close(writing)
    try:
        attachment = Attachment.from_path(f"/dev/fd/{reading}")  # what `-a <(cmd)` passes
    finally:
        os.close(reading)
    assert attachment.mime == "image/png"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nobody writes to it: read as empty at once, never waited on
    assert Attachment.from_path(fifo).data == b""


def test_the_name_is_the_files_own_name_not_its_path(tmp_path):
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "chart.png").write_bytes(PNG)
    attachment = Attachment.from_path(os.fspath(tmp_path / "deep" / "chart.png"))
    assert (attachment.name, attachment.dimensions) == ("chart.png", (3, 2))


# ----------------------------------------------------------------------------- from_url


def test_a_data_url_that_lies_about_its_type_is_what_its_bytes_are():
    attachment = Attachment.from_url("data:image/png;base64," + b64(PDF))
    assert (attachment.kind, attachment.mime, attachment.url) == (
        "document",
        "application/pdf",
        None,
    )


def test_a_data_url_may_carry_parameters_before_base64():
    attachment = Attachment.from_url("data:image/png;name=a.png;charset=x;base64," + b64(PNG))
    assert attachment.dimensions == (3, 2)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("data:text/plain,hello", "a malformed data URL: 'data:text/plain,hello'"),
        ("data:;base64,aGk=", "a malformed data URL"),
        ("data:image/png;base64,!!!!", "a data URL whose data is not base64"),
        ("data:image/png;base64,aGk", "a data URL whose data is not base64"),
    ],
    ids=["not-base64-form", "no-type", "bad-characters", "bad-padding"],
)
def test_a_broken_data_url_says_what_is_wrong(url, message):
    with pytest.raises(ToolnexusError, match=message):
        Attachment.from_url(url)


def test_a_huge_broken_data_url_is_quoted_short():
    with pytest.raises(ToolnexusError) as caught:
        Attachment.from_url("data:image/png;base64," + "!" * 1_000_000)
    assert len(str(caught.value)) < 150


def test_a_data_url_of_other_bytes_is_refused_like_a_file():
    with pytest.raises(ToolnexusError, match=f"cannot attach 'attachment.zip': {NOT_ATTACHABLE}"):
        Attachment.from_url("data:application/zip;base64," + b64(b"PK\x03\x04\xff\xfe"))


def test_the_type_of_a_url_comes_from_its_path_not_its_query():
    attachment = Attachment.from_url("https://x.test/img/cat.PNG?w=2&fmt=.pdf#top")
    assert (attachment.kind, attachment.mime, attachment.name) == ("image", "image/png", "cat.PNG")


def test_mime_overrides_what_the_extension_says():
    attachment = Attachment.from_url("https://x.test/report.png", mime="application/pdf")
    assert attachment.kind == "document"
    assert attachment.describe() == "pdf https://x.test/report.png"
    assert attachment.part() == {
        "type": "file",
        "file": {"filename": "report.png", "file_url": "https://x.test/report.png"},
    }


def test_a_url_without_a_path_is_named_by_its_host():
    assert Attachment.from_url("https://x.test", mime="image/png").name == "x.test"


@pytest.mark.parametrize(
    ("url", "mime"),
    [
        ("https://x.test/a.svg", None),
        ("https://x.test/a.txt", None),
        ("https://x.test/voice.mp3", None),
        ("https://x.test/a", "audio/wav"),
        ("https://x.test/a", "image/tiff"),
    ],
)
def test_by_url_only_images_and_pdfs_the_endpoint_can_fetch(url, mime):
    with pytest.raises(ToolnexusError, match="by URL: only images .* and PDFs"):
        Attachment.from_url(url, mime=mime)


@pytest.mark.parametrize(
    "url", ["http:///a.png", "ftp://x.test/a.png", "x.test/a.png", "javascript:alert(1)", ""]
)
def test_other_schemes_and_hostless_urls_are_refused(url):
    with pytest.raises(ToolnexusError, match="only http\\(s\\) and data: URLs"):
        Attachment.from_url(url)


# ----------------------------------------------------------------------------- prompts


def test_a_prompt_may_be_any_sequence_of_texts_and_attachments():
    assert user_content(("look", Attachment.from_bytes(b"hi", name="a.txt"))) == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": "a.txt\n```\nhi\n```"},
    ]
    assert user_content("just text") == "just text"


@pytest.mark.parametrize(
    ("part", "kind"), [(None, "NoneType"), (3, "int"), ({"type": "text"}, "dict")]
)
def test_any_other_prompt_part_is_refused_naming_its_type(part, kind):
    with pytest.raises(ToolnexusError, match=f"must be a str or an Attachment, not {kind}$"):
        user_content(["text", part])


def test_a_tool_result_without_attachments_stays_plain_text():
    assert with_attachments("42", []) == "42"
    assert with_attachments("chart", [Attachment.from_bytes(PNG)]) == [
        {"type": "text", "text": "chart"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64(PNG)}},
    ]


# ----------------------------------------------------------------------------- media_of


@pytest.mark.parametrize(
    ("attachment", "media"),
    [
        (
            Attachment.from_bytes(PNG, name="p.png"),
            Media("image", "image/png", b64(PNG), None, "image"),
        ),
        (
            Attachment.from_bytes(PDF, name="r.pdf"),
            Media("document", "application/pdf", b64(PDF), None, "r.pdf"),
        ),
        (
            Attachment.from_bytes(wav_bytes(8), name="v.wav"),
            Media("audio", "audio/wav", b64(wav_bytes(8)), None, "audio.wav"),
        ),
        (
            Attachment.from_url("https://x.test/c.jpg"),
            Media("image", "image/jpeg", None, "https://x.test/c.jpg", "image"),
        ),
        (
            Attachment.from_url("https://x.test/p.pdf"),
            Media("document", "application/pdf", None, "https://x.test/p.pdf", "p.pdf"),
        ),
    ],
)
def test_media_of_reads_back_each_canonical_part(attachment, media):
    assert media_of(attachment.part()) == media


@pytest.mark.parametrize(
    "part", ["text", None, ["image_url"], {"type": "text", "text": "x"}, {"type": "video"}, {}]
)
def test_text_and_anything_else_carry_no_media(part):
    assert media_of(part) is None


def test_an_image_url_may_be_a_bare_string_and_an_unknown_one_is_some_image():
    assert media_of({"type": "image_url", "image_url": "https://x.test/a.webp"}).mime == (
        "image/webp"
    )
    assert media_of({"type": "image_url", "image_url": {"url": "https://x.test/a"}}).mime == (
        "image/*"
    )


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"type": "image_url", "image_url": {}}, "an image_url part without a URL"),
        ({"type": "image_url", "image_url": {"url": 5}}, "an image_url part without a URL"),
        ({"type": "image_url", "image_url": {"url": "data:oops"}}, "a malformed data URL"),
        ({"type": "file", "file": {"filename": "a.pdf"}}, "neither file_data nor file_url"),
        ({"type": "file", "file": "a.pdf"}, "neither file_data nor file_url"),
        ({"type": "file", "file": {"file_data": "data:nope"}}, "a malformed data URL"),
    ],
)
def test_a_broken_media_part_is_an_error_saying_what_is_missing(part, message):
    with pytest.raises(ToolnexusError, match=message):
        media_of(part)


def test_an_audio_part_names_its_type_by_its_format():
    assert media_of({"type": "input_audio", "input_audio": {"data": "AA", "format": "mp3"}}) == (
        Media("audio", "audio/mpeg", "AA", None, "audio.mp3")
    )
    assert media_of({"type": "input_audio", "input_audio": {"data": "AA", "format": "aac"}}) == (
        Media("audio", "audio/aac", "AA", None, "audio.aac")
    )


def test_unsupported_says_the_style_the_kind_and_how_it_came():
    inline = media_of(Attachment.from_bytes(wav_bytes(8)).part())
    by_url = media_of(Attachment.from_url("https://x.test/p.pdf").part())
    assert str(unsupported("anthropic", inline)) == (
        "the anthropic style cannot carry audio (audio/wav)"
    )
    assert str(unsupported("openai", by_url)) == (
        "the openai style cannot carry documents by URL (application/pdf)"
    )
