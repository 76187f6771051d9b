class UsageError(Exception):
    """Bad input from the user (flags, config, missing prompt): exit code 2."""
