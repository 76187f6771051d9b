"""The toolnexus command: chat, ask, threads, config, keys."""

__version__ = "0.1.0"
