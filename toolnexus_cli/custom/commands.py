"""The person's own slash commands: prompt files found in the repository and the config
folder. Markdown files in `.toolnexus/commands/`, the config folder's `commands/` and
Claude Code's `.claude/commands/` (front matter `description`, `argument-hint`, `model`,
`allowed-tools`); Gemini CLI's TOML files in `.gemini/commands/` (`prompt`,
`description`). A file's path below its folder names it: `git/commit.md` is /git:commit.
They are prompts, read as they are: expanding one is expansion.py's job."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from toolnexus.tools.skills import parse_skill_file

from ..tools.claude_names import OURS_BY_CLAUDE_NAME

Syntax = Literal["claude", "gemini"]
MAX_COMMAND_BYTES = 256 * 1024
NAME = re.compile(r"/[\w.:-]+")  # a prompt file larger than this is no prompt
# Where a repository keeps them (first wins on a clash), and in which syntax.
PROJECT_FOLDERS: tuple[tuple[str, Syntax], ...] = (
    (".toolnexus/commands", "claude"),
    (".claude/commands", "claude"),
    (".gemini/commands", "gemini"),
)


@dataclass(frozen=True)
class CustomCommand:
    name: str  # "/review", "/git:commit"
    template: str  # the prompt as written
    syntax: Syntax  # how its placeholders read
    path: Path  # the file it came from
    description: str = ""
    argument_hint: str = ""
    model: str | None = None
    allowed_tools: tuple[str, ...] | None = None  # as written; None: the chat's tools

    def tools(self) -> tuple[list[str], list[str]]:
        """The tools of ours `allowed_tools` names, and the names it gives that are no tool
        of ours (Claude Code's TodoWrite, say)."""
        ours: list[str] = []
        unknown: list[str] = []
        for entry in self.allowed_tools or ():
            base = entry.split("(", 1)[0].strip()  # Bash(git status:*) -> Bash
            name = OURS_BY_CLAUDE_NAME.get(base, base)
            if name in OURS_BY_CLAUDE_NAME.values() or not base[:1].isupper():
                ours.append(name)  # a name of ours (bash, an MCP tool's) as it is
            else:
                unknown.append(entry)
        return ours, unknown


@dataclass
class CommandBook:
    """The commands found (by name), and what could not be used, each in one line."""

    commands: dict[str, CustomCommand] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def get(self, word: str) -> CustomCommand | None:
        return self.commands.get(word)


def command_hint(command: CustomCommand) -> str:
    """What completion shows beside a command: its argument hint and description."""
    return " · ".join(part for part in (command.argument_hint, command.description) if part)


def slash_command(prompt: str, book: CommandBook) -> tuple[CustomCommand | None, str]:
    """For `ask PROMPT`: the command PROMPT runs and its arguments, when its first word
    names one; else no command and the prompt to send (`//x` sends `/x`)."""
    if prompt.startswith("//"):
        return None, prompt[1:]
    word, *rest = prompt.split(maxsplit=1) or [""]
    command = book.get(word) if prompt.startswith("/") else None
    return (command, "".join(rest).strip()) if command is not None else (None, prompt)


def repository_top(folder: Path) -> Path:
    """The git top level `folder` is in (a `.git` folder or file above it); the folder
    itself outside a repository."""
    start = Path(os.path.realpath(folder))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def find_commands(workspace: Path, user_folder: Path, built_in: Iterable[str]) -> CommandBook:
    """Every command of the repository holding `workspace` and of `user_folder` (a
    project's command wins over the person's of the same name); one whose name is a
    built-in command's is left out, and a note says so."""
    book = CommandBook()
    top = repository_top(workspace)
    sources: list[tuple[Path, Syntax]] = [
        (top / folder, syntax) for folder, syntax in PROJECT_FOLDERS
    ]
    sources.append((user_folder, "claude"))
    taken = set(built_in)
    for folder, syntax in sources:
        for command in _read_folder(folder, syntax, book.notes):
            if command.name in taken:
                book.notes.append(
                    f"{_shown(command.path)}: not used in the chat, where {command.name} is a "
                    "built-in command"
                )
            elif command.name not in book.commands:
                book.commands[command.name] = command
    return book


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read_folder(folder: Path, syntax: Syntax, notes: list[str]) -> list[CustomCommand]:
    suffix = ".toml" if syntax == "gemini" else ".md"
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.rglob(f"*{suffix}")):
        relative = path.relative_to(folder).with_suffix("")
        name = "/" + ":".join(relative.parts)
        if any(part.startswith(".") for part in relative.parts) or not NAME.fullmatch(name):
            continue  # hidden, or no name one could type
        try:
            text = _read(path)
            parse = parse_toml if syntax == "gemini" else parse_markdown
            found.append(parse(name, text, path))
        except ValueError as exc:
            notes.append(f"{_shown(path)}: not used, {exc}")
    return found


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_COMMAND_BYTES:
            raise ValueError(f"larger than {MAX_COMMAND_BYTES // 1024} KB")
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"cannot read it ({exc.strerror or exc})") from None


def parse_markdown(name: str, text: str, path: Path) -> CustomCommand:
    """A Markdown command: its front matter, then the prompt."""
    meta, body = parse_skill_file(text)
    tools = meta.get("allowed-tools")
    return CustomCommand(
        name=name,
        template=body,
        syntax="claude",
        path=path,
        description=meta.get("description", ""),
        argument_hint=meta.get("argument-hint", ""),
        model=meta.get("model") or None,
        allowed_tools=_tool_list(tools) if tools is not None else None,
    )


def _tool_list(text: str) -> tuple[str, ...]:
    """`Bash(git add:*), Read` or `[Read, Grep]`: the entries, commas inside () kept."""
    text = text.strip().removeprefix("[").removesuffix("]")
    entries, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char in ", " and depth == 0:
            entries.append(current)
            current = ""
        else:
            current += char
    entries.append(current)
    return tuple(e.strip().strip("\"'") for e in entries if e.strip().strip("\"'"))


def parse_toml(name: str, text: str, path: Path) -> CustomCommand:
    """A Gemini CLI command: `prompt` (needed) and `description`."""
    import tomllib

    try:
        data: Mapping[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not TOML ({exc})") from None
    prompt, description = data.get("prompt"), data.get("description", "")
    if not isinstance(prompt, str):
        raise ValueError('it needs prompt = "..."')
    return CustomCommand(
        name=name,
        template=prompt,
        syntax="gemini",
        path=path,
        description=description if isinstance(description, str) else "",
    )
