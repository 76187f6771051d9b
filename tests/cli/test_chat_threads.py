"""The chat never corrupts or loses a thread: /undo, /retry, failed turns, Ctrl-C, /reset,
/switch and restarts, driven through the REPL's own turn and command methods in this
process, against the loopback stub, on a real SQLite thread file.

After each step the stored thread (what `threads show` reads) and the request the next
turn sends are compared with a small model of what they must hold. A stored thread is
append-only: an undone, retried or failed exchange stays in it, marked, and is not sent.
"""

from __future__ import annotations

import io
import random
import signal
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rich.console import Console

from tests.support.cli_helpers import CLI
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream
from toolnexus.stores import SQLiteStore
from toolnexus_cli.chat.repl import Repl
from toolnexus_cli.config.file import Config
from toolnexus_cli.render import renderers as render
from toolnexus_cli.session.options import RunOptions
from toolnexus_cli.threads.transcript import to_markdown

MODEL = "stub-model"


def answer_to(prompt: str) -> str:
    return f"answer to {prompt}"


class Endpoint:
    """The stub as the chat's model: answers every request "answer to <last question>",
    or fails it (500), or streams a partial answer and stalls (for Ctrl-C)."""

    def __init__(self, stub: StubProvider) -> None:
        self.stub = stub
        self.mode = "answer"
        stub.handler = self.reply

    def reply(self, request: Recorded) -> Reply:
        if self.mode == "fail":
            return Reply.error(500, "the server is down", headers={"Retry-After": "0"})
        if self.mode == "stall":
            return Reply.hang_after(openai_stream("partial").parts[:-3])
        question = [m for m in request.json["messages"] if m["role"] == "user"][-1]
        return openai_stream(answer_to(question["content"]))

    def sent(self) -> list[tuple[str, str]]:
        """(role, content) of every message the last request carried."""
        return [(m["role"], m["content"]) for m in self.stub.requests[-1].json["messages"]]


class Chat:
    """One `toolnexus chat` session in this process; its screen is `self.screen`."""

    def __init__(self, db: Path, thread: str) -> None:
        self.screen = io.StringIO()
        self.repl = Repl(
            Config(db.parent / "config.toml", {"store": str(db)}),
            RunOptions(thread=thread),
            console=Console(file=self.screen, width=100, highlight=False),
        )

    async def __aenter__(self) -> Chat:
        await self.repl.session.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.repl.session.__aexit__(*exc)

    @property
    def thread(self) -> str:
        return self.repl.session.thread

    async def send(self, text: str) -> None:
        await self.repl.turn(text)

    async def command(self, text: str) -> None:
        """A slash command as the prompt loop runs it (/retry sends what it returns)."""
        outcome = await self.repl.commands.run(text)
        if outcome and outcome != "exit":
            await self.repl.turn(outcome)

    def said(self) -> str:
        return self.screen.getvalue()


@pytest.fixture
def ctrl_c_on_first_text(monkeypatch):
    """Ctrl-C as a person presses it: once the first words of the answer are on screen."""
    armed = {"on": False}
    original = render.TerminalRenderer.event

    def event(self, ev):
        original(self, ev)
        if armed["on"] and ev["type"] == "text":
            armed["on"] = False
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(render.TerminalRenderer, "event", event)
    return armed


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "TOOLNEXUS_API_KEY",
        "TOOLNEXUS_STORE",
        "TOOLNEXUS_CONFIG",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLNEXUS_MODEL", MODEL)
    # with a key, saves go through the redacting store (fresh dicts), as for most users
    monkeypatch.setenv("TOOLNEXUS_API_KEY", "sk-chat-thread-test-key")
    with StubProvider() as stub:
        monkeypatch.setenv("TOOLNEXUS_BASE_URL", stub.base_url)
        yield Endpoint(stub), tmp_path / "threads.db"


async def stored(db: Path, thread: str) -> list[dict] | None:
    """The thread as `threads show` reads it: from the file, by a store of its own."""
    store = SQLiteStore(db)
    try:
        return await store.get(thread)
    finally:
        await store.aclose()


def shape(messages: list[dict]) -> list[tuple]:
    return [
        (m["role"], m.get("content"), m.get("dropped"), bool(m.get("interrupted")))
        for m in messages
    ]


# ---------------------------------------------------------------- the reported cases


async def test_undo_drops_what_thread_counts_and_keeps_it_marked(env):
    endpoint, db = env
    async with Chat(db, "t-undo") as chat:
        await chat.send("first")
        await chat.send("second")
        await chat.command("/undo")
        await chat.command("/thread")
        assert chat.said().endswith(
            "dropped the last exchange (kept in the thread, marked undone)\n"
            "thread t-undo · first · 2 messages (and 2 undone or failed, not sent) · "
            "30 tokens this session\n"
        )
        await chat.command("/undo")  # the first exchange too: nothing is left to send
        await chat.command("/thread")
        assert chat.said().endswith(
            "dropped the last exchange (kept in the thread, marked undone)\n"
            "thread t-undo · (empty) · 0 messages (and 4 undone or failed, not sent) · "
            "30 tokens this session\n"
        )
        await chat.command("/undo")
        assert chat.said().endswith("nothing to undo\n")
        await chat.send("third")
    assert endpoint.sent() == [("user", "third")]
    kept = await stored(db, "t-undo")
    assert shape(kept) == [
        ("user", "first", "undone", False),
        ("assistant", answer_to("first"), "undone", False),
        ("user", "second", "undone", False),
        ("assistant", answer_to("second"), "undone", False),
        ("user", "third", None, False),
        ("assistant", answer_to("third"), None, False),
    ]
    shown = to_markdown(kept)  # `threads show` still shows what was undone, marked
    assert "second\n\n*(undone, not sent)*" in shown


async def test_retry_on_the_first_answer_leaves_one_question_and_the_new_answer(env):
    endpoint, db = env
    async with Chat(db, "t-retry") as chat:
        await chat.send("only")
        await chat.command("/retry")
        assert endpoint.sent() == [("user", "only")]
        await chat.command("/thread")
        assert "· 2 messages (and 2 undone or failed, not sent)" in chat.said()
        await chat.send("next")
    assert endpoint.sent() == [("user", "only"), ("assistant", answer_to("only")), ("user", "next")]
    assert shape(await stored(db, "t-retry"))[:4] == [
        ("user", "only", "retried", False),
        ("assistant", answer_to("only"), "retried", False),
        ("user", "only", None, False),
        ("assistant", answer_to("only"), None, False),
    ]


async def test_a_failed_first_message_is_kept_and_retried_in_a_new_session(env, monkeypatch):
    endpoint, db = env
    down = StubProvider().start()
    down.close()  # a port nothing listens on any more: the server is down
    monkeypatch.setenv("TOOLNEXUS_BASE_URL", down.base_url)
    async with Chat(db, "t-down") as chat:
        await chat.send("are you there?")
        assert "error:" in chat.said()
    assert shape(await stored(db, "t-down")) == [("user", "are you there?", "failed", False)]
    shown = CLI(db.parent / "cli", {"TOOLNEXUS_STORE": str(db)}).run("threads", "show", "t-down")
    assert shown.code == 0 and shown.stdout == (
        "## 1 · User\n\nare you there?\n\n*(failed, not sent)*\n"
    ), shown

    monkeypatch.setenv("TOOLNEXUS_BASE_URL", endpoint.stub.base_url)
    async with Chat(db, "t-down") as chat:  # the next day, the server is back
        await chat.command("/retry")
    assert endpoint.sent() == [("user", "are you there?")]
    assert shape(await stored(db, "t-down")) == [
        ("user", "are you there?", "failed", False),
        ("user", "are you there?", None, False),
        ("assistant", answer_to("are you there?"), None, False),
    ]


async def test_a_failed_prompt_is_never_sent_again_by_itself(env):
    endpoint, db = env
    async with Chat(db, "t-fail") as chat:
        await chat.send("hello")
        endpoint.mode = "fail"
        await chat.send("this one fails")
        endpoint.mode = "answer"
        await chat.send("and this works")
    assert endpoint.sent() == [
        ("user", "hello"),
        ("assistant", answer_to("hello")),
        ("user", "and this works"),
    ]
    assert ("user", "this one fails", "failed", False) in shape(await stored(db, "t-fail"))


# ---------------------------------------------------------------- the randomized walk


@dataclass
class Msg:
    role: str
    content: str
    mark: str | None = None
    interrupted: bool = False

    def key(self) -> tuple:
        return (self.role, self.content, self.mark, self.interrupted)


@dataclass
class Model:
    """What each thread must hold: every message ever said, with its mark."""

    threads: dict[str, list[Msg]] = field(default_factory=dict)
    current: str = ""

    @property
    def thread(self) -> list[Msg]:
        return self.threads.setdefault(self.current, [])

    def sent(self) -> list[tuple[str, str]]:
        return [(m.role, m.content) for m in self.thread if m.mark is None]

    def turn(self, prompt: str, outcome: str) -> None:
        if outcome == "answer":
            self.thread.extend([Msg("user", prompt), Msg("assistant", answer_to(prompt))])
        elif outcome == "fail":
            self.thread.append(Msg("user", prompt, "failed"))
        else:  # Ctrl-C once "partial" was shown: the partial answer is kept, and sent
            self.thread.extend([Msg("user", prompt), Msg("assistant", "partial", interrupted=True)])

    def last_prompt(self, failed_too: bool) -> int | None:
        for i in range(len(self.thread) - 1, -1, -1):
            m = self.thread[i]
            if m.role == "user" and (m.mark is None or (failed_too and m.mark == "failed")):
                return i
        return None

    def mark_from(self, start: int, mark: str) -> None:
        for m in self.thread[start:]:
            if m.mark is None:
                m.mark = mark


async def check(model: Model, db: Path, step: str) -> None:
    messages = await stored(db, model.current)
    got = [
        (m["role"], m["content"], m.get("dropped"), bool(m.get("interrupted")))
        for m in messages or []
    ]
    assert got == [m.key() for m in model.thread], step


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
async def test_random_sessions_keep_every_thread_as_the_model_says(env, seed, ctrl_c_on_first_text):
    endpoint, db = env
    rng = random.Random(seed)
    model = Model(current=f"t-walk-{seed}")
    chat = await Chat(db, model.current).__aenter__()
    asked = 0
    try:
        for step in range(28):
            action = rng.choices(
                ["send", "undo", "retry", "reset", "switch", "restart"], weights=[8, 2, 3, 1, 1, 2]
            )[0]
            outcome = rng.choices(["answer", "fail", "stall"], weights=[6, 2, 2])[0]
            what = f"seed {seed} step {step}: {action}/{outcome}"
            before = model.sent()
            requests = len(endpoint.stub.requests)
            endpoint.mode = outcome
            ctrl_c_on_first_text["on"] = outcome == "stall"
            if action == "send":
                asked += 1
                prompt = f"q{asked}"
                await chat.send(prompt)
                model.turn(prompt, outcome)
                assert endpoint.sent() == before + [("user", prompt)], what
            elif action == "undo":
                await chat.command("/undo")
                start = model.last_prompt(failed_too=False)
                if start is not None:
                    model.mark_from(start, "undone")
            elif action == "retry":
                start = model.last_prompt(failed_too=True)
                await chat.command("/retry")
                if start is None:
                    assert len(endpoint.stub.requests) == requests, what
                else:
                    prompt = model.thread[start].content
                    if model.thread[start].mark is None:
                        model.mark_from(start, "retried")
                    expected = model.sent() + [("user", prompt)]
                    model.turn(prompt, outcome)
                    assert endpoint.sent() == expected, what
            elif action == "reset":
                await chat.command("/reset")
                model.current = chat.thread
            elif action == "switch":
                known = [t for t, msgs in model.threads.items() if msgs]
                if known:
                    target = rng.choice(known)
                    await chat.command(f"/switch {target}")
                    model.current = target
            else:  # quit and start `toolnexus chat --id THREAD` again
                await chat.__aexit__(None, None, None)
                chat = await Chat(db, model.current).__aenter__()
            ctrl_c_on_first_text["on"] = False
            assert chat.thread == model.current, what
            await check(model, db, what)
            await chat.command("/thread")
            sent_now = len(model.sent())
            assert f"· {sent_now} messages" in chat.said().rstrip().splitlines()[-1], what
        for id in list(model.threads):  # every thread, at the end
            model.current = id
            await check(model, db, f"seed {seed}: thread {id} at the end")
    finally:
        await chat.__aexit__(None, None, None)
    assert "Traceback" not in chat.said()
