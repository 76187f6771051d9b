"""Keeping secrets out of everything the CLI prints or saves."""
