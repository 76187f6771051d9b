"""Project instructions in the chat, in a real pseudo-terminal against the stub answering like
llama.cpp: /context lists each instruction file with its tokens, and a file edited between
two turns is read again before the next one, the chat saying so in a dim line. The fixture
repository (tests/support/instructions_fixture.py) is used as it is."""

from __future__ import annotations

import re

from tests.support.instructions_fixture import instructions_repo
from tests.support.stub_provider import LlamaCppLike, openai_stream


def system_of(request) -> str:
    first = request.json["messages"][0]
    return first["content"] if first["role"] == "system" else ""


def squeezed(text: str) -> str:
    """Without whitespace: a long path wraps wherever the terminal's width says."""
    return "".join(text.split())


def test_context_lists_each_instruction_file_with_its_tokens(stub, cli, open_chat):
    """Repro: `toolnexus chat` in repo/app/web of the fixture repository, then `/context`:
    after the window and fill, "project instructions (in the system prompt):" and one line
    per file, root to working folder, each "~N tokens" (the root's "with 2 imports")."""
    stub.handler = LlamaCppLike(window=4096)
    repo = instructions_repo(cli)
    chat = open_chat()
    chat.say("/context")
    screen = squeezed(chat.term.text())
    assert squeezed("project instructions (in the system prompt):") in screen
    files = [repo / "AGENTS.md", repo / "app" / "AGENTS.md", repo / "app" / "web" / "CLAUDE.md"]
    where = [screen.find(squeezed(f"{path}: ~")) for path in files]
    assert -1 not in where and where == sorted(where), chat.term.text()
    assert re.search(r"AGENTS\.md:~\d+tokens,with2imports", screen), chat.term.text()


def test_a_file_edited_between_turns_is_read_again_and_the_chat_says_so(stub, cli, open_chat):
    """Repro: `toolnexus chat` in repo/app/web, ask something, then change app/AGENTS.md in
    an editor and ask again: before the second answer a dim line says
    "(…/app/AGENTS.md changed: read again)", and the model gets the new text; a third
    question with nothing changed says nothing."""
    stub.handler = LlamaCppLike(window=4096)
    repo = instructions_repo(cli)
    chat = open_chat()
    chat.say("first")
    assert "APP-RULE" in system_of(stub.requests[-1])

    app = repo / "app" / "AGENTS.md"
    app.write_text("APP-RULE-2: run `make test` instead.\n", encoding="utf-8")
    chat.say("second")

    changed = squeezed(f"({app} changed: read again)")
    assert squeezed(chat.term.text()).count(changed) == 1, chat.term.text()
    system = system_of(stub.requests[-1])
    assert "APP-RULE-2" in system and "make check" not in system
    assert "ROOT-RULE" in system and "WEB-RULE" in system

    chat.say("third")
    assert squeezed(chat.term.text()).count(changed) == 1


PROPOSAL = (
    "# Agents\n\nROOT-RULE: indent with four spaces.\nTEST-RULE: run pytest before committing.\n"
)


def surveys_then_proposes(stub) -> None:
    """A model that lists the top folder first, then answers with PROPOSAL (fenced)."""

    def handler(request):
        messages = request.json["messages"]
        if messages[-1]["role"] == "tool":
            return openai_stream(f"```markdown\n{PROPOSAL}```")
        return openai_stream(tool_calls=[("list_dir", {"path": "."})])

    stub.handler = handler


def test_init_shows_the_proposed_agents_md_as_a_diff_and_writes_it_only_on_y(stub, cli, open_chat):
    """Repro: `toolnexus chat` in repo/app/web of the fixture repository, `/init`: the model
    lists the repository (the call shows), and its AGENTS.md shows as a diff against the top
    folder's AGENTS.md; n leaves the file as it was, and a second /init answered y writes
    it."""
    surveys_then_proposes(stub)
    repo = instructions_repo(cli)
    agents = repo / "AGENTS.md"
    before = agents.read_text(encoding="utf-8")
    chat = open_chat()

    chat.send_line("/init")
    question = "write AGENTS.md?"
    chat.wait_text(question)
    screen = chat.term.text()
    assert "list_dir ." in screen
    assert "+TEST-RULE: run pytest before committing." in screen
    assert "-Style is described in @docs/style.md" in screen
    tools = [t["function"]["name"] for t in stub.requests[0].json["tools"]]
    assert sorted(tools) == ["glob", "grep", "list_dir", "read_file"]
    chat.child.send("n")
    chat.wait_prompt()
    assert agents.read_text(encoding="utf-8") == before
    assert "not written" in chat.term.text()

    chat.send_line("/init")
    chat.wait_text(question, count=2)
    chat.child.send("y")
    chat.wait_prompt()
    assert agents.read_text(encoding="utf-8") == PROPOSAL
