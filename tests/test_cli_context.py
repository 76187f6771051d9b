"""Long threads through `toolnexus ask --id`, against the stub answering like llama.cpp."""

from __future__ import annotations

from tests import cli_helpers
from tests.stub_provider import LlamaCppLike
from tests.test_context import note

cli, stub = cli_helpers.cli, cli_helpers.stub  # fixtures


def test_five_long_asks_on_one_thread_all_succeed_and_the_thread_keeps_every_prompt(cli, stub):
    llama = stub.handler = LlamaCppLike(window=4096)
    for n in range(1, 6):  # each about 1,500 tokens: two fill the 4,096-token window
        result = cli.run("ask", "--id", "T", note(n))
        assert result.code == 0, result
        assert result.stdout == "Noted.\n"
    assert llama.overflows == 0 and llama.summaries >= 2
    thread = cli.thread("T")
    asked = [m["content"] for m in thread if m["role"] == "user" and "compaction" not in m]
    assert asked == [note(n) for n in range(1, 6)]
    assert any("compaction" in m for m in thread)
