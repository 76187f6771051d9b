"""One Session: what `ask` and `chat` share (options, client, toolkit, store, one turn)."""
