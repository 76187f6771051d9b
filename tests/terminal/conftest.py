"""Fixtures of the terminal tests: `cli` and `bare_cli` (tests/support/cli_helpers.py) and
`open_chat`, `toolnexus chat` in a pseudo-terminal (tests/support/chat_session.py). `stub`
is the plain one of tests/conftest.py (scripted replies, no default answer); a module that
wants the one that answers by default takes `cli_helpers.stub`."""

from tests.support.chat_session import open_chat
from tests.support.cli_helpers import bare_cli, cli

__all__ = ["bare_cli", "cli", "open_chat"]  # fixtures, found by pytest
