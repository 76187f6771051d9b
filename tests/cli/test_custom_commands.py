"""`toolnexus ask /name ARGS` runs a custom slash command from the shell, against the stub
endpoint: the repository's Claude Code, Gemini CLI and toolnexus command files (used unchanged,
tests/support/command_repo.py) make the message the model gets. A leading `/` names a command
only when one of that name exists, and `//` sends a literal slash."""

from __future__ import annotations

import pytest

from tests.support.cli_helpers import STUB_MODEL, user_text
from tests.support.command_repo import REVIEW_LINE, command_repo
from toolnexus.tools.sandbox import support


@pytest.fixture
def repo(cli):
    return command_repo(cli.in_project())


def tool_names(request) -> list[str]:
    return [tool["function"]["name"] for tool in request.json.get("tools", [])]


def test_a_toolnexus_command_puts_its_arguments_in_place(cli, stub, repo):
    """Repro: a `.toolnexus/commands/y.md` saying "Say hello to $1 and $2."; run
    `toolnexus ask /y alice bob`: the model is asked to say hello to alice and bob."""
    result = cli.run("ask", "/y", "alice bob")

    assert result.code == 0, result
    assert user_text(stub.requests[0]) == ["Say hello to alice and bob."]


def test_a_gemini_command_puts_its_args_in_and_attaches_its_file(cli, stub, repo):
    """Repro: Gemini CLI's `.gemini/commands/x.toml` (prompt with {{args}} and @{NOTES.md});
    `toolnexus ask /x recursion`: the prompt with the argument, NOTES.md attached."""
    result = cli.run("ask", "/x recursion")

    assert result.code == 0, result
    [content] = user_text(stub.requests[0])
    assert content[0] == {
        "type": "text",
        "text": "Explain recursion briefly, in the spirit of NOTES.md.",
    }
    assert content[1]["type"] == "text"
    assert content[1]["text"].startswith("NOTES.md\n```\nPlain words.\n```")


def test_piped_text_follows_the_command(cli, stub, repo):
    """Repro: `echo 'extra context' | toolnexus ask /y alice bob`."""
    result = cli.run("ask", "/y alice bob", input="extra context\n")

    assert result.code == 0, result
    assert user_text(stub.requests[0]) == ["Say hello to alice and bob.\n\nextra context\n"]


def test_a_double_slash_sends_a_literal_slash(cli, stub, repo):
    """Repro: `toolnexus ask //y is a path`: the model gets "/y is a path", not /y."""
    result = cli.run("ask", "//y is a path")

    assert result.code == 0, result
    assert user_text(stub.requests[0]) == ["/y is a path"]


def test_an_unknown_slash_word_is_sent_as_text(cli, stub, repo):
    """Repro: `toolnexus ask "/thing to do"` with no /thing command: sent as written."""
    result = cli.run("ask", "/thing to do")

    assert result.code == 0, result
    assert user_text(stub.requests[0]) == ["/thing to do"]


def test_a_secret_looking_file_is_not_included(cli, stub, repo):
    """Repro: a command saying "Check the settings in @.env please." beside a .env file;
    `toolnexus ask /leak`: one line says why, and nothing is sent."""
    result = cli.run("ask", "/leak")

    assert result.code == 2, result
    assert stub.requests == []
    assert result.stderr.strip().splitlines() == [
        "error: /leak not sent: .env looks like it holds secrets: not included"
    ]
    assert "do-not-send" not in result.stdout + result.stderr


def test_inline_shell_without_the_bash_tool_is_refused_in_one_line(cli, stub, repo):
    """Repro: `toolnexus ask /review-pr 123` (no --builtins): its `!`git status --short`` is
    not run, one line says so, nothing is sent."""
    result = cli.run("ask", "/review-pr 123")

    assert result.code == 2, result
    assert stub.requests == []
    assert result.stderr.strip().splitlines() == [
        "error: /review-pr not sent: its inline command `git status --short` was not run: "
        "the bash tool is off here"
    ]


def test_inline_shell_is_refused_when_nobody_can_approve_it(cli, stub, repo):
    """Repro: `toolnexus ask --builtins /review-pr 123` in a pipe: the command would need a
    yes, nobody can give one, so it does not run and nothing is sent."""
    result = cli.run("ask", "--builtins", "/review-pr 123")

    assert result.code == 2, result
    assert stub.requests == []
    assert "denied bash: it needs approval and nobody can be asked here" in result.stderr
    assert "/review-pr not sent: its inline command `git status --short` was not run" in (
        result.stderr
    )


@pytest.mark.skipif(support().abi == 0, reason=f"no Landlock: {support().why_not}")
def test_a_claude_command_runs_with_its_model_and_tools(cli, stub, repo):
    """Repro: Claude Code's `.claude/commands/review-pr.md` (model, allowed-tools Read, Grep,
    Bash(git status:*), $ARGUMENTS, @GUIDE.md, !`git status --short`); `toolnexus ask
    --builtins --yes /review-pr 123`: the status is put in, GUIDE.md attached, the turn goes to
    reviewer-model with only read_file, grep and bash offered."""
    result = cli.run("ask", "--builtins", "--yes", "/review-pr", "123")

    assert result.code == 0, result
    request = stub.requests[0]
    [content] = user_text(request)
    prompt = content[0]["text"]
    assert prompt.startswith(REVIEW_LINE + "\n\nStatus: ")
    assert "?? untracked.txt" in prompt  # git status ran in the workspace
    assert content[1]["text"].startswith("GUIDE.md\n```\nSmall commits, tests first.")
    assert request.json["model"] == "reviewer-model"
    assert sorted(tool_names(request)) == ["bash", "grep", "read_file"]
    assert "/review-pr: allowed-tools names no tool here: TodoWrite" in result.stderr


def test_without_allowed_tools_the_turn_keeps_every_tool_and_the_model(cli, stub, repo):
    """Repro: `toolnexus ask --builtins /y a b`: y.md names no tools and no model."""
    result = cli.run("ask", "--builtins", "/y a b")

    assert result.code == 0, result
    request = stub.requests[0]
    assert request.json["model"] == STUB_MODEL
    assert {"bash", "read_file", "write_file", "edit_file"} <= set(tool_names(request))


def test_a_command_named_like_a_chat_command_still_runs_from_the_shell(cli, stub, repo):
    """Repro: `.claude/commands/review.md` (the chat's own /review wins there); `toolnexus
    ask /review`: ask has no /review of its own, so the file's prompt is sent."""
    result = cli.run("ask", "/review")

    assert result.code == 0, result
    assert user_text(stub.requests[0]) == ["Shadowed in the chat by its /review."]


def test_a_claude_prompt_without_a_place_for_arguments_gets_them_after_it(cli, stub, repo):
    """Repro: `toolnexus ask /review now please` (review.md has no $ARGUMENTS)."""
    result = cli.run("ask", "/review now please")

    assert result.code == 0, result
    assert user_text(stub.requests[0]) == [
        "Shadowed in the chat by its /review.\n\nARGUMENTS: now please"
    ]


def test_a_file_outside_the_workspace_is_not_included(cli, stub, repo):
    """Repro: a Gemini command with `@{../outside.txt}`; `toolnexus ask /outside`: one line
    says it is outside the workspace, nothing is sent."""
    (repo.parent / "outside.txt").write_text("private\n")
    result = cli.run("ask", "/outside")

    assert result.code == 2, result
    assert stub.requests == []
    assert result.stderr.startswith("error: /outside not sent: ../outside.txt is outside")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(support().abi == 0, reason=f"no Landlock: {support().why_not}")
def test_a_gemini_inline_command_gets_its_arguments_shell_quoted(cli, stub, repo):
    """Repro: `.gemini/commands/git/said.toml` (`!{echo {{args}}}`); `toolnexus ask
    --builtins --yes /git:said "It's fine; echo injected"`: echo prints the words as one
    argument, nothing after the `;` runs."""
    result = cli.run("ask", "--builtins", "--yes", "/git:said", "It's fine; echo injected")

    assert result.code == 0, result
    assert user_text(stub.requests[0]) == ["You said: It's fine; echo injected"]


def test_the_repository_skill_folders_are_offered_with_the_built_in_tools(cli, stub, repo):
    """Repro: `.claude/skills/deploy/SKILL.md` and `.agents/skills/lint/SKILL.md` in the
    repository; `toolnexus ask --builtins hi`: the model is offered the skill tool and
    the system prompt lists both skills."""
    result = cli.run("ask", "--builtins", "hi")

    assert result.code == 0, result
    request = stub.requests[0]
    assert "skill" in tool_names(request)
    system = request.json["messages"][0]
    assert system["role"] == "system"
    assert "- deploy: Ship a release" in system["content"]
    assert "- lint: Lint the code" in system["content"]


def test_the_config_folders_commands_run_and_the_repositorys_win(cli, stub, repo):
    """Repro: `hi.md` and `y.md` in the config folder's `commands/`; `toolnexus ask /hi`
    runs the person's own, `toolnexus ask /y a b` the repository's y.md."""
    own = cli.config_dir / "commands"
    own.mkdir(parents=True)
    (own / "hi.md").write_text("Greet me.\n")
    (own / "y.md").write_text("The person's y.\n")

    assert cli.run("ask", "/hi").code == 0
    assert cli.run("ask", "/y a b").code == 0
    assert [user_text(request) for request in stub.requests] == [
        ["Greet me."],
        ["Say hello to a and b."],
    ]


def test_a_command_file_that_cannot_be_used_is_named_when_its_name_is_asked(cli, stub, repo):
    """Repro: `.gemini/commands/deploy.toml` cut off mid-array; `toolnexus ask /deploy prod`
    sent "/deploy prod" as text with no word on why the command was not there. Now one
    line says which file was not used and why; the text still goes as written."""
    broken = repo / ".gemini" / "commands" / "deploy.toml"
    broken.write_text('prompt = ["unclosed', encoding="utf-8")
    result = cli.run("ask", "/deploy prod")

    assert result.code == 0, result
    assert user_text(stub.requests[0]) == ["/deploy prod"]
    assert ".gemini/commands/deploy.toml: not used, not TOML" in result.stderr, result
