"""Fixtures of the CLI tests (tests/support/cli_helpers.py): `cli`, a user whose environment
points `toolnexus` at the stub; `bare_cli`, a user with nothing configured; and a `stub` that
answers "Hello from the stub." to every model call unless the test sets its own handler."""

from tests.support.cli_helpers import bare_cli, cli, stub

__all__ = ["bare_cli", "cli", "stub"]  # fixtures, found by pytest
