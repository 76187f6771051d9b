"""Project instructions: AGENTS.md (or CLAUDE.md, GEMINI.md) from the repository's top down to
the working folder, after the personal one in the config folder, with their `@path` imports,
join the system prompt the model gets. Against the loopback stub, on the fixture repository
(tests/support/instructions_fixture.py) used as it is."""

from __future__ import annotations

from tests.support.instructions_fixture import RULES_IN_ORDER, instructions_repo, positions


def system_prompt(stub) -> str:
    first = stub.requests[0].json["messages"][0]
    assert first["role"] == "system", first
    return first["content"]


def test_the_model_gets_every_instruction_file_in_order_nearest_last(cli, stub):
    """Repro: in repo/app/web of the fixture repository, with a personal AGENTS.md in the
    config folder, `toolnexus ask hi`: the system prompt holds the personal file, then the
    root's AGENTS.md with its imports, app/AGENTS.md, and app/web's CLAUDE.md, in that
    order; the root's CLAUDE.md (an AGENTS.md is there), the import loop back to style.md
    and the file outside the repository are not read, each refused import said in a line."""
    instructions_repo(cli)
    cli.config_dir.mkdir(parents=True, exist_ok=True)
    (cli.config_dir / "AGENTS.md").write_text("PERSONAL-RULE: answer briefly.\n", "utf-8")

    result = cli.call("ask", "hi")

    assert result.code == 0, result
    system = system_prompt(stub)
    found = positions(system, ["PERSONAL-RULE", *RULES_IN_ORDER])
    assert -1 not in found and found == sorted(found), system
    assert system.count("STYLE-RULE") == 1 and system.count("MORE-RULE") == 1
    assert "SHADOWED-CLAUDE" not in system and "OUTSIDE-SECRET" not in system
    assert "# Project instructions" in system
    refused = [line for line in result.stderr.splitlines() if "not imported" in line]
    assert len(refused) == 2, result.stderr
    assert any("@style.md not imported: it was read already" in line for line in refused)
    assert any("@../../outside.md not imported: it is outside" in line for line in refused)


def test_the_config_names_the_files_and_their_order(cli, stub):
    """Repro: `[instructions] files = ["CLAUDE.md"]` in the config: only CLAUDE.md files
    are read (the root's and app/web's), no AGENTS.md."""
    instructions_repo(cli)
    cli.write_config('[instructions]\nfiles = ["CLAUDE.md"]\n')

    result = cli.call("ask", "hi")

    assert result.code == 0, result
    system = system_prompt(stub)
    assert positions(system, ["SHADOWED-CLAUDE", "WEB-RULE"]) == sorted(
        positions(system, ["SHADOWED-CLAUDE", "WEB-RULE"])
    )
    assert "SHADOWED-CLAUDE" in system and "WEB-RULE" in system
    assert "ROOT-RULE" not in system and "APP-RULE" not in system


def test_without_instruction_files_the_system_prompt_is_unchanged(cli, stub):
    cli.in_project()
    result = cli.call("ask", "--system", "Be terse.", "hi")
    assert result.code == 0, result
    assert system_prompt(stub) == "Be terse."


def test_imports_stop_at_their_depth_and_size(tmp_path):
    from toolnexus_cli.session.instructions import MAX_DEPTH, read_instructions

    (tmp_path / ".git").mkdir()
    chain = [tmp_path / f"n{i}.md" for i in range(MAX_DEPTH + 2)]
    (tmp_path / "AGENTS.md").write_text("TOP @n0.md\n", "utf-8")
    for i, path in enumerate(chain):
        path.write_text(f"LEVEL-{i} @n{i + 1}.md\n", "utf-8")

    found = read_instructions(tmp_path, tmp_path / "no-config", ["AGENTS.md"])

    text = found.section() or ""
    assert f"LEVEL-{MAX_DEPTH - 1}" in text and f"LEVEL-{MAX_DEPTH}" not in text
    assert any(f"imports go at most {MAX_DEPTH} deep" in p for p in found.problems)

    (tmp_path / "AGENTS.md").write_text("BIG @big.md\n", "utf-8")
    (tmp_path / "big.md").write_text("x" * 70_000, "utf-8")
    found = read_instructions(tmp_path, tmp_path / "no-config", ["AGENTS.md"])
    assert "xxxx" not in (found.section() or "")
    assert any("limited to 64 KiB" in p for p in found.problems)


def test_nothing_outside_the_repository_or_secret_looking_is_read(tmp_path):
    """An AGENTS.md that is a link to a file outside the repository, or an import of a file
    that looks like it holds secrets (`.env`), is not read: it would go to the model."""
    from toolnexus_cli.session.instructions import read_instructions

    repo, outside = tmp_path / "repo", tmp_path / "elsewhere.md"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    outside.write_text("OUTSIDE-SECRET\n", "utf-8")
    (repo / "AGENTS.md").write_text("TOP see @.env\n", "utf-8")
    (repo / ".env").write_text("API_KEY=sk-live-123\n", "utf-8")
    (repo / "sub" / "AGENTS.md").symlink_to(outside)

    found = read_instructions(repo / "sub", tmp_path / "no-config", ["AGENTS.md"])

    text = found.section() or ""
    assert "TOP" in text
    assert "sk-live-123" not in text and "OUTSIDE-SECRET" not in text
    assert any("@.env not imported: it looks like it holds secrets" in p for p in found.problems)
    assert any("sub/AGENTS.md: not read: it is outside" in p for p in found.problems)
