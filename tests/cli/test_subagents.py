"""Where `toolnexus ask --builtins` finds agents for the task tool, and the model one of
them names: the repository's `.toolnexus/agents/`, the config folder's `agents/`, a broken
definition skipped with one line; `model: NAME` resolved as `/model NAME` is."""

from __future__ import annotations

from tests.support.cli_helpers import tool_results, write_files
from tests.support.stub_provider import Recorded, Reply, openai_stream

SCOUT_PROMPT = "You look around and say what is there."
SCOUT = f"""---
name: scout
description: Lists what a folder holds.
tools: list_dir
model: small
---
{SCOUT_PROMPT}
"""
HELPER = """---
name: helper
description: Helps.
---
You help.
"""


def test_agents_from_the_repository_and_the_config_folder_on_their_model(cli, stub):
    """Repro: a repository with `.toolnexus/agents/scout.md` (model: small, tools:
    list_dir), `agents/helper.md` in the config folder, and a file with no description;
    `toolnexus ask --builtins "what is here?"` with the model calling task on scout."""
    root = cli.in_project()
    (root / ".git").mkdir()
    write_files(
        root,
        {
            ".toolnexus/agents/scout.md": SCOUT,
            ".toolnexus/agents/broken.md": "---\nname: broken\n---\nNo description.\n",
            "notes.txt": "hello\n",
        },
    )
    write_files(cli.config_dir, {"agents/helper.md": HELPER})
    cli.write_config(
        f'[providers.local]\nbase_url = "{stub.base_url}"\n\n'
        '[models.small]\nprovider = "local"\nmodel = "tiny-model"\n'
    )
    subagent: list[Recorded] = []

    def handler(request: Recorded) -> Reply:
        messages = request.json["messages"]
        if messages[0]["content"] == SCOUT_PROMPT:
            subagent.append(request)
            return openai_stream("The folder holds notes.txt.")
        if messages[-1]["role"] == "tool":
            return openai_stream("It holds notes.")
        return openai_stream(tool_calls=[("task", {"agent": "scout", "prompt": "list ."})])

    stub.handler = handler
    result = cli.call("ask", "--builtins", "what is here?")

    assert result.code == 0 and result.stdout == "It holds notes.\n", result
    task = next(t for t in stub.requests[0].json["tools"] if t["function"]["name"] == "task")
    assert task["function"]["parameters"]["properties"]["agent"]["enum"] == ["helper", "scout"]
    assert subagent[0].json["model"] == "tiny-model"
    assert [t["function"]["name"] for t in subagent[0].json["tools"]] == ["list_dir"]
    assert tool_results(stub.requests[-1]) == ["The folder holds notes.txt."]
    skipped = [line for line in result.stderr.splitlines() if "broken.md" in line]
    assert len(skipped) == 1 and "skipped, an agent needs a description" in skipped[0]
