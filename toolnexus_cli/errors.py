"""The errors the CLI turns into one line and an exit code."""


class UsageError(Exception):
    """Bad input from the user (flags, config, missing prompt): exit code 2."""


class NotConfigured(UsageError):
    """No endpoint at all: on a terminal, `chat` offers the first-run setup instead."""
