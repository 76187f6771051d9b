"""`toolnexus chat`: the REPL, its prompt line, its modes and its slash commands."""
