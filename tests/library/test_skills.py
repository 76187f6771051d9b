"""toolnexus.tools.skills promises skills read from folders holding a SKILL.md: front matter is
simple `key: value` lines between `---` fences on the first lines, and anything else
(no fences, an unclosed one, fences further down) is no front matter at all; a SKILL.md
without a name and a description is skipped with a warning, never an error; the `skill`
tool gives a skill's instructions as the file says them when asked, and the list of its
other files, capped; the system prompt lists each skill by name and description.

Discovery in nested folders, a BOM with CRLF, duplicates and the tool through a run are
in tests/library/test_tool_sources.py; this file is broken front matter and the tool's corners."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolnexus.tools.skills as skills_module
from toolnexus.tools.skills import (
    Skill,
    discover_skills,
    parse_skill_file,
    skill_tool,
    skills_prompt,
)
from toolnexus.tools.tool import ToolContext


def skill_at(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(text, encoding="utf-8")
    return path


async def ask_for(skills: list[Skill], name: str):
    return await skill_tool(skills).call({"name": name}, ToolContext())


# ----------------------------------------------------------------------------- front matter


@pytest.mark.parametrize(
    "text",
    [
        "",
        "---",
        "---\n",
        "# Title\n\nno front matter",
        "---\nname: open\ndescription: never closed\n",  # an unclosed fence
        "# Title\n---\nname: late\n---\n",  # fences that do not start the file
        "\n---\nname: late\n---\n",
    ],
)
def test_text_without_front_matter_at_its_start_is_all_body(text):
    assert parse_skill_file(text) == ({}, text)


def test_fences_may_carry_spaces_and_the_body_is_stripped():
    assert parse_skill_file("  ---  \nname: a\n---   \n\n\n  Steps.  \n\n") == (
        {"name": "a"},
        "Steps.",
    )


def test_only_simple_top_level_lines_are_read():
    meta, body = parse_skill_file(
        "---\n"
        "name: deploy\n"
        "metadata:\n"
        "  name: nested, ignored\n"
        "\tdescription: tabbed, ignored\n"
        "just words without a colon\n"
        ": a value without a key\n"
        "description: Ship it: build, tag\n"
        "---\n"
        "Body."
    )
    assert meta == {"name": "deploy", "metadata": "", "description": "Ship it: build, tag"}
    assert body == "Body."


def test_quotes_around_a_value_go_and_a_later_key_wins():
    meta, _ = parse_skill_file('---\nname: \'first\'\nname: "second"\ndescription: "d"\n---\n')
    assert meta == {"name": "second", "description": "d"}


def test_a_body_holding_a_fence_keeps_it():
    assert parse_skill_file("---\nname: a\n---\nabove\n---\nbelow") == (
        {"name": "a"},
        "above\n---\nbelow",
    )


# ----------------------------------------------------------------------------- discovery


def test_a_missing_folder_has_no_skills(tmp_path):
    assert discover_skills(tmp_path / "absent") == []


def test_the_folder_may_start_with_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    skill_at(tmp_path / "skills" / "a", "---\nname: a\ndescription: d\n---\n")
    assert [s.name for s in discover_skills("~/skills")] == ["a"]


@pytest.mark.parametrize(
    "front",
    [
        "name:\ndescription: d",
        "name: a\ndescription:",
        "name: ''\ndescription: d",
        "title: a\nsummary: d",
    ],
)
def test_an_empty_or_misnamed_field_skips_the_skill_with_a_warning(tmp_path, front):
    path = skill_at(tmp_path / "s", f"---\n{front}\n---\nBody.\n")
    with pytest.warns(
        UserWarning, match="skipped, its front matter needs name and description"
    ) as warned:
        assert discover_skills(tmp_path) == []
    assert str(warned[0].message).startswith(f"{path}: ")


def test_a_skill_file_that_cannot_be_read_is_skipped_with_a_warning_not_an_error(tmp_path):
    skill_at(tmp_path / "good", "---\nname: good\ndescription: d\n---\n")
    latin = tmp_path / "latin" / "SKILL.md"
    latin.parent.mkdir()
    latin.write_bytes("---\nname: café\ndescription: d\n---\n".encode("latin-1"))
    folder = tmp_path / "odd" / "SKILL.md"
    folder.mkdir(parents=True)  # a folder by that name
    with pytest.warns(UserWarning) as warned:
        skills = discover_skills(tmp_path)
    assert [s.name for s in skills] == ["good"]
    assert sorted(str(w.message).split(": skipped")[0] for w in warned) == sorted(
        [str(latin), str(folder)]
    )
    assert all("cannot read it" in str(w.message) for w in warned)


# ----------------------------------------------------------------------------- the skill tool


async def test_the_tool_gives_the_instructions_and_files_in_its_layout(tmp_path):
    folder = tmp_path / "pdf"
    skill_at(folder, "---\nname: pdf\ndescription: d\n---\n# Fill\n\nRun it.\n")
    (folder / "b.py").write_text("")
    (folder / "sub").mkdir()
    (folder / "sub" / "a.md").write_text("")
    result = await ask_for(discover_skills(tmp_path), "pdf")
    assert not result.is_error
    assert result.output == (
        f"# Skill: pdf\n\n# Fill\n\nRun it.\n\n## Files in {folder}\n- b.py\n- sub/a.md"
    )


async def test_a_skill_without_other_files_says_none(tmp_path):
    skill_at(tmp_path / "solo", "---\nname: solo\ndescription: d\n---\nAlone.")
    result = await ask_for(discover_skills(tmp_path), "solo")
    assert result.output.endswith(f"## Files in {tmp_path / 'solo'}\n(none)")


async def test_the_instructions_are_read_when_asked_for_so_an_edit_shows(tmp_path):
    path = skill_at(tmp_path / "s", "---\nname: s\ndescription: d\n---\nOld steps.")
    skills = discover_skills(tmp_path)
    path.write_text("---\nname: s\ndescription: d\n---\nNew steps.", encoding="utf-8")
    assert "New steps." in (await ask_for(skills, "s")).output


async def test_the_file_list_is_capped_and_says_how_many_more(tmp_path, monkeypatch):
    monkeypatch.setattr(skills_module, "MAX_LISTED_FILES", 2)
    folder = tmp_path / "big"
    skill_at(folder, "---\nname: big\ndescription: d\n---\nMany files.")
    for n in range(5):
        (folder / f"f{n}.txt").write_text("")
    output = (await ask_for(discover_skills(tmp_path), "big")).output
    assert output.endswith("\n- f0.txt\n- f1.txt\n... 3 more files")


async def test_an_unknown_name_is_an_error_listing_the_skills(tmp_path):
    for name in ("beta", "alpha"):
        skill_at(tmp_path / name, f"---\nname: {name}\ndescription: d\n---\n")
    skills = discover_skills(tmp_path)
    result = await ask_for(skills, "gamma")
    assert result.is_error
    assert result.output == "error: no skill named 'gamma' (skills: alpha, beta)"
    assert skill_tool(skills).input_schema["properties"]["name"]["enum"] == ["alpha", "beta"]


def test_the_prompt_lists_each_skill_on_its_line(tmp_path):
    skills = [
        Skill("a", "does a", tmp_path / "a" / "SKILL.md"),
        Skill("b", "does b: well", tmp_path / "b" / "SKILL.md"),
    ]
    lines = skills_prompt(skills).splitlines()
    assert "`skill` tool" in lines[0]
    assert lines[1:] == ["- a: does a", "- b: does b: well"]


def test_skills_of_several_folders_the_first_folder_wins(tmp_path):
    """Two folders (a repository's .claude/skills and .agents/skills, say) with a skill of
    the same name: the first folder's is kept, with a warning naming both files."""
    for folder, what in (("first", "the first one"), ("second", "the second one")):
        skill = tmp_path / folder / "deploy" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(f"---\nname: deploy\ndescription: {what}\n---\nSteps.\n")

    with pytest.warns(UserWarning, match="already defined"):
        skills = discover_skills(tmp_path / "first", tmp_path / "second")

    assert [(s.name, s.description) for s in skills] == [("deploy", "the first one")]
