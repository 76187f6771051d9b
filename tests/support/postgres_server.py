"""The PostgreSQL server the store tests run against, if there is one: set
TOOLNEXUS_TEST_PG_DSN (`.ci/run` starts a throwaway one). Without it, what `needs_postgres`
marks is skipped, saying how to run it."""

from __future__ import annotations

import os

import pytest

PG_DSN = os.environ.get("TOOLNEXUS_TEST_PG_DSN")
PG_HOW = (
    "PostgreSQL store tests: set TOOLNEXUS_TEST_PG_DSN=postgresql://USER:PASSWORD@"
    "127.0.0.1:5432/DB to run them (.ci/run starts a throwaway server; "
    "`.ci/postgres start DIR` prints a DSN)"
)
needs_postgres = pytest.mark.skipif(not PG_DSN, reason=PG_HOW)
