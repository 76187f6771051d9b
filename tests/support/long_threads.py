"""What the long-thread tests (context windows, compaction) build and look at: prompts of a
known size, histories made of (asked, said) pairs, and the requests the stub got, with the
summary requests compaction sends told apart."""

from __future__ import annotations

import random

from tests.support.stub_provider import Recorded, StubProvider

WORDS = "alpha beta gamma delta river stone cloud paper window garden lamp orbit".split()


def note(n: int, tokens: int = 1500) -> str:
    """A prompt of about `tokens` tokens (characters/4) that says which it is."""
    rnd = random.Random(n)
    text = f"Note {n}:"
    while len(text) < tokens * 4:
        text += " " + rnd.choice(WORDS)
    return text


def turns(*pairs: tuple[str, str]) -> list[dict]:
    out = []
    for asked, said in pairs:
        out += [{"role": "user", "content": asked}, {"role": "assistant", "content": said}]
    return out


def posts(stub: StubProvider) -> list[Recorded]:
    return [r for r in stub.requests if r.method == "POST"]


def is_summary_request(rec: Recorded) -> bool:
    return "<conversation>" in str(rec.json["messages"][-1]["content"])
