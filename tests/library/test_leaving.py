"""Asking to leave the sandbox (toolnexus.tools._leaving): the question carries the command
apart from its output, and a run asks it at most MAX_QUESTIONS times; past them the model is
told to stop asking, and nobody is asked."""

from __future__ import annotations

from tests.support.scripted import calling, scripted_client
from tests.support.tool_functions.leaving import stopped
from toolnexus import create_toolkit, define_tool, make_answer
from toolnexus.testing import ScriptedModel, ScriptedReply
from toolnexus.tools._leaving import MAX_QUESTIONS, QUESTION

DENIED = "touch: cannot touch '/etc/x': Permission denied"


def stopped_calls(*commands: str) -> ScriptedReply:
    return calling(*[("stopped", {"command": c, "output": DENIED}) for c in commands])


async def run(
    scripted: ScriptedModel, prompt: str, asked: list[dict], answer: bool = False
) -> list[str]:
    """One run (a person's turn); what the model read back from its calls."""
    toolkit = (await create_toolkit()).register(define_tool(stopped))

    def wait_for(request):
        asked.append(request)
        return make_answer(request, answer)

    async with scripted_client(scripted, wait_for=wait_for) as client:
        result = await client.run(prompt, toolkit)
    return [m["content"] for m in result.messages if m["role"] == "tool"]


async def test_the_question_carries_the_command_and_its_output_apart(scripted):
    scripted.add(stopped_calls("touch /etc/x"), "ok")
    asked: list[dict] = []
    [said] = await run(scripted, "go", asked)
    [request] = asked
    assert request["data"] == {"command": "touch /etc/x", "output": DENIED, "question": QUESTION}
    assert request["needs_person"] is True
    assert said.startswith(f"exit code 1\n{DENIED}\n\ndeclined: ")


async def test_past_three_questions_in_a_turn_nobody_is_asked_and_the_model_is_told(scripted):
    scripted.add(
        stopped_calls("touch /etc/a"),
        stopped_calls("touch /etc/b", "touch /etc/c"),  # run side by side
        stopped_calls("touch /etc/d"),
        stopped_calls("touch /etc/e"),
        "I will stay inside.",
        stopped_calls("touch /etc/f"),
        "ran it",
    )
    asked: list[dict] = []
    results = await run(scripted, "touch them all", asked)

    assert MAX_QUESTIONS == 3
    assert [r["data"]["command"] for r in asked] == ["touch /etc/a", "touch /etc/b", "touch /etc/c"]
    assert all("declined: this command failed in the sandbox" in r for r in results[:3])
    for said in results[3:]:
        assert said.startswith(f"exit code 1\n{DENIED}\n\n[not asked: ")
        assert "do not ask to leave the sandbox again this turn" in said
    assert len(results) == 5

    # the next turn asks again
    assert await run(scripted, "one more", asked, answer=True) == [
        "ran outside the sandbox: touch /etc/f"
    ]
    assert asked[-1]["data"]["command"] == "touch /etc/f"
