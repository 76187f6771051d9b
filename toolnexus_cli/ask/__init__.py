"""`toolnexus ask`: one turn, in a terminal or a pipe, and what it writes for programs."""
