"""Skills: folders with a SKILL.md (front matter `name`, `description`, then instructions).

The system prompt lists each skill's name and description; the `skill` tool hands the
model one skill's full instructions and the list of its files when it asks.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from .tool import Tool, ToolResult, define_tool

__all__ = [
    "Skill",
    "discover_skills",
    "parse_skill_file",
    "skill_tool",
    "skills_prompt",
]

MAX_LISTED_FILES = 200


@dataclass
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md file

    def instructions(self) -> str:
        return parse_skill_file(self.path.read_text(encoding="utf-8-sig"))[1]

    def files(self) -> list[str]:
        root = self.path.parent
        return sorted(
            str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p != self.path
        )


def parse_skill_file(text: str) -> tuple[dict[str, str], str]:
    """Front matter (simple `key: value` lines between `---` fences) and the body."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    meta: dict[str, str] = {}
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return meta, "\n".join(lines[index + 1 :]).strip()
        key, sep, value = line.partition(":")
        if sep and key.strip() and not line.startswith((" ", "\t")):
            meta[key.strip()] = value.strip().strip("\"'")
    return {}, text


def discover_skills(*roots: str | Path) -> list[Skill]:
    """The skills of every **/SKILL.md under `roots`; of two of the same name, the first."""
    skills: dict[str, Skill] = {}
    paths = (p for root in roots for p in sorted(Path(root).expanduser().glob("**/SKILL.md")))
    for path in paths:
        try:
            meta, _ = parse_skill_file(path.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError) as exc:
            why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror
            warnings.warn(f"{path}: skipped, cannot read it ({why})", stacklevel=2)
            continue
        name, description = meta.get("name"), meta.get("description")
        if not name or not description:
            warnings.warn(
                f"{path}: skipped, its front matter needs name and description", stacklevel=2
            )
            continue
        if name in skills:
            warnings.warn(
                f"{path}: skill {name!r} is already defined by "
                f"{skills[name].path}; the first one wins",
                stacklevel=2,
            )
            continue
        skills[name] = Skill(name, description, path)
    return list(skills.values())


def skills_prompt(skills: list[Skill]) -> str:
    lines = [
        "You have skills: instructions for particular tasks. When a task matches one, "
        "call the `skill` tool with its name to read them first."
    ]
    lines += [f"- {s.name}: {s.description}" for s in skills]
    return "\n".join(lines)


def skill_tool(skills: list[Skill]) -> Tool:
    by_name = {s.name: s for s in skills}

    def skill(name: str) -> ToolResult:
        """Load a skill's full instructions and the list of its files.

        Args:
            name: the skill's name, as listed in the system prompt.
        """
        found = by_name.get(name)
        if found is None:
            known = ", ".join(sorted(by_name))
            return ToolResult(f"error: no skill named {name!r} (skills: {known})", is_error=True)
        files = found.files()
        listing = "\n".join(f"- {f}" for f in files[:MAX_LISTED_FILES]) or "(none)"
        if len(files) > MAX_LISTED_FILES:
            listing += f"\n... {len(files) - MAX_LISTED_FILES} more files"
        return ToolResult(
            f"# Skill: {found.name}\n\n{found.instructions()}\n\n"
            f"## Files in {found.path.parent}\n{listing}"
        )

    tool = define_tool(
        skill,
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string", "enum": sorted(by_name)}},
            "required": ["name"],
        },
    )
    tool.source = "skills"
    return tool
