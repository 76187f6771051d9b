"""The chat's first prompt does not wait for the MCP SDK: the SDK is imported on the chat's
event loop once the prompt shows. Checked in the process itself, not by timing: the test
holds the SDK's import (tests/support/import_gate/sitecustomize.py) until it has seen the
prompt, so a chat that imported the SDK first would never show it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import chat_session, cli_helpers
from tests.support.chat_session import Chat
from tests.support.mcp_helpers import calc, mcp_file
from tests.support.waiting import wait_until

cli, stub = cli_helpers.cli, cli_helpers.stub
open_chat = chat_session.open_chat

pytest.importorskip("mcp")

IMPORT_GATE = Path(__file__).parents[1] / "support" / "import_gate"


def status(chat: Chat) -> str:
    return next((line for line in reversed(chat.term.display()) if line), "")


def test_the_prompt_shows_before_the_mcp_sdk_is_imported(open_chat, cli, tmp_path):
    """Repro: an mcp.json with one server; `toolnexus chat --mcp mcp.json`. The prompt is
    there at once; the servers start (and the SDK loads) just after, and the status line
    then says they are ready."""
    importing, gate = tmp_path / "importing", tmp_path / "gate"
    cli.env.update(
        PYTHONPATH=str(IMPORT_GATE), TEST_MCP_IMPORTING=str(importing), TEST_MCP_GATE=str(gate)
    )
    config = mcp_file(tmp_path / "mcp.json", {"calc": calc()})
    chat = open_chat("--mcp", str(config), fresh=True)  # a real process: its own imports
    wait_until(importing.exists, "the SDK's import, once the prompt shows")
    gate.touch()
    chat.wait(lambda: status(chat) == "1 of 1 MCP servers ready", "the server")
