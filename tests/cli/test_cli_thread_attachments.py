"""`toolnexus threads` with attachments and forks, on threads made by real `ask` runs: an
image a tool returned is stored once, named in `show`, referenced or inlined by `export`,
never printed as base64 to a terminal; `threads fork` and the fork shown in `threads list`."""

from __future__ import annotations

import base64
import hashlib
import io
import random

import pexpect

from tests.support import pty_screen
from tests.support.stub_provider import openai_stream, png_bytes
from toolnexus import MemoryStore
from toolnexus.stores import ForkPoint
from toolnexus_cli.threads.commands import fork_thread

IMAGE = png_bytes(512, 512) + random.Random(3).randbytes(46 * 1024)  # 512x512, 48 KB
IMAGE_B64 = base64.b64encode(IMAGE).decode()
REF = "toolnexus-attachment:sha256:" + hashlib.sha256(IMAGE).hexdigest()
LABEL = "[image 512x512 png, 48 KB]"

FUNCTIONS = '''
from toolnexus import Attachment


def snap() -> Attachment:
    """Take a picture."""
    return Attachment.from_path({path!r})
'''


def pictured(cli, stub, tmp_path, thread: str = "t-pic", turns: int = 2):
    """`turns` asks in `thread`, each calling a tool that returns the same image."""
    (tmp_path / "cat.png").write_bytes(IMAGE)
    tools = tmp_path / "camera.py"
    tools.write_text(FUNCTIONS.format(path=str(tmp_path / "cat.png")), encoding="utf-8")

    def handler(rec):
        last = rec.json["messages"][-1]
        if last["role"] == "user" and str(last["content"]).startswith("take"):
            return openai_stream(tool_calls=[("snap", {})])
        return openai_stream("A grey square.")

    stub.handler = handler
    for k in range(turns):
        r = cli.call("ask", "--functions", str(tools), "--id", thread, f"take picture {k}")
        assert r.code == 0, r


def test_a_tool_image_is_stored_once_and_named_never_dumped(cli, stub, tmp_path):
    pictured(cli, stub, tmp_path)
    assert cli.db_rows("SELECT count(*), sum(size) FROM attachments") == [(1, len(IMAGE))]
    assert IMAGE_B64[:64].encode() not in cli.db_bytes()  # bytes once, not base64 per message

    shown = cli.call("threads", "show", "t-pic")
    assert shown.code == 0, shown
    assert shown.stdout.count(LABEL) == 2 and IMAGE_B64[:40] not in shown.stdout
    raw = cli.call("threads", "show", "t-pic", "--json")
    assert raw.code == 0 and REF in raw.stdout and IMAGE_B64[:40] not in raw.stdout, raw

    md = cli.call("threads", "export", "t-pic")
    assert md.code == 0 and md.stdout.count(LABEL) == 2, md
    assert IMAGE_B64[:40] not in md.stdout
    referenced = cli.call("threads", "export", "t-pic", "--format", "json")
    assert referenced.code == 0, referenced
    assert referenced.stdout.count(REF) == 2 and IMAGE_B64[:40] not in referenced.stdout
    tool_parts = [m["content"] for m in referenced.json if m["role"] == "tool"]
    assert tool_parts[0][1] == {"type": "image_url", "image_url": {"url": REF}}

    inline = cli.call("threads", "export", "t-pic", "--format", "json", "--include-attachments")
    assert inline.code == 0, inline
    urls = [m["content"][1]["image_url"]["url"] for m in inline.json if m["role"] == "tool"]
    assert urls == ["data:image/png;base64," + IMAGE_B64] * 2  # exactly as it was sent

    wrong = cli.call("threads", "export", "t-pic", "--include-attachments")
    assert wrong.code == 2 and "--format json" in wrong.stderr, wrong


def test_no_base64_reaches_a_terminal(cli, stub, tmp_path):
    pictured(cli, stub, tmp_path, turns=1)
    for args, code in (
        (["show", "t-pic"], 0),
        (["show", "t-pic", "--json"], 0),
        (["export", "t-pic", "--format", "json", "--include-attachments"], 2),
    ):
        child = pty_screen.spawn(cli, "threads", *args, rows=40, cols=120, timeout=15)
        child.logfile_read = io.StringIO()
        child.expect(pexpect.EOF)
        child.close()
        screen = child.logfile_read.getvalue()
        assert child.exitstatus == code, screen
        assert IMAGE_B64[:40] not in screen.replace("\r\n", "")
        if code == 2:
            assert "redirect it to a file" in screen
        elif "--json" in args:
            assert REF in screen.replace("\r\n", "")
        else:
            assert LABEL in screen


def test_fork_a_thread_and_go_on_from_the_fork(cli, stub, tmp_path):
    pictured(cli, stub, tmp_path)  # 8 messages: two turns of user, call, tool, answer
    forked = cli.call("threads", "fork", "t-pic", "4")  # spelled as the chat's /fork 4
    assert forked.code == 0, forked
    new = forked.stdout.strip()
    assert new.startswith("t-") and new != "t-pic" and "\n" not in new
    assert cli.db_rows("SELECT count(*) FROM attachments") == [(1,)]  # shared, not copied

    old_spelling = cli.call("threads", "fork", "t-pic", "--at", "4", "--id", "t-old")
    assert old_spelling.code == 0 and old_spelling.stdout == "t-old\n", old_spelling
    whole = cli.call("threads", "fork", "t-pic", "--id", "t-mine")
    assert whole.code == 0 and whole.stdout == "t-mine\n", whole
    listed = {t["id"]: t for t in cli.call("threads", "list", "--json").json}
    assert listed[new]["forked_from"] == {"id": "t-pic", "at": 4}
    assert listed[new]["message_count"] == 4 and listed["t-mine"]["message_count"] == 8
    assert listed["t-pic"]["forked_from"] is None
    table = cli.call("threads", "list").stdout.splitlines()
    row = next(line for line in table if line.startswith(new))
    assert row.endswith("take picture 0 (fork of t-pic@4)"), table
    assert not next(line for line in table if line.startswith("t-pic ")).endswith(")")

    stub.handler = lambda rec: openai_stream("Going on from the first picture.")
    r = cli.call("ask", "--id", new, "and then?")
    assert r.code == 0, r
    sent = stub.requests[-1].json["messages"]
    # the tool's image goes along (OpenAI: in a user message after the tool result)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user", "assistant", "user"]
    assert IMAGE_B64 in stub.requests[-1].body.decode()
    assert sent[0]["content"] == "take picture 0" and sent[-1]["content"] == "and then?"
    assert len(cli.thread("t-pic")) == 8  # the original is untouched


# messages 1-4 of `pictured`: the prompt, the call, its result, the answer
CUT_AT_2 = "message 2 calls a tool whose results end at message 3: fork at 1 or 3, not 2"


def test_fork_says_in_one_line_what_it_cannot_do(cli, stub, tmp_path):
    """Repro of the cut tool exchange: `toolnexus threads fork ID --at 2` on a thread whose
    message 2 calls a tool made a fork ending in a call without its result, which every
    endpoint then refused; the chat's /fork 2 refused it. Both refuse now, in one line
    naming the places a fork can be made."""
    pictured(cli, stub, tmp_path, turns=1)
    assert cli.call("threads", "fork", "t-pic", "2", "--at", "3").code == 2
    for args, says in (
        (["nope"], "no thread 'nope'"),
        (["t-pic", "9"], "a fork keeps 1 to 4 of them, not 9"),
        (["t-pic", "--at", "0"], "not 0"),
        (["t-pic", "2"], CUT_AT_2),
        (["t-pic", "--at", "2"], CUT_AT_2),
        (["t-pic", "--id", "t-pic"], "already a thread 't-pic'"),
    ):
        r = cli.call("threads", "fork", *args)
        assert r.code == 1 and r.stdout == "", r
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and says in lines[0], r


async def test_fork_thread_for_the_chat():
    store = MemoryStore()
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "more"},
        {"role": "assistant", "content": "sure"},
    ]
    await store.save("t-chat", history)
    new = await fork_thread(store, "t-chat", 2)
    assert new.startswith("t-") and new != "t-chat"
    assert await store.get(new) == history[:2]
    assert (await store.info(new)).forked_from == ForkPoint("t-chat", 2)
    assert await store.get(await fork_thread(store, "t-chat")) == history
    assert await fork_thread(store, "t-chat", new_id="t-named") == "t-named"
