"""The toolnexus command: chat, ask, threads, config, keys."""
