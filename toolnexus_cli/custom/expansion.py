"""A custom command (commands.py) made into the message it sends: the arguments put
in (`$ARGUMENTS`, `$1`... or Gemini's `{{args}}`), the files it names attached (`@path`,
`@{path}`: inside the workspace, not secret-looking, bounded), and the output of its inline
shell (`` !`cmd` ``, `!{cmd}`) put in, each command run by `run_shell` (which asks as for
any command, and raises a UsageError when it is refused). Anything that cannot be done is a
UsageError of one line, and nothing is sent."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..errors import UsageError

if TYPE_CHECKING:
    from toolnexus.content import Attachment

    from .commands import CustomCommand

RunShell = Callable[[str], Awaitable[str]]
MAX_INCLUDE_BYTES = 256 * 1024  # one file a command includes
CLAUDE_SHELL = re.compile(r"!`([^`\n]+)`")
# `@path`, after a space or at the start, not ending in the punctuation after it
CLAUDE_FILE = re.compile(r"(?:(?<=\s)|^)@([^\s`]*[^\s`.,;:!?)\]'\"])")
CLAUDE_ARGUMENT = re.compile(r"\$ARGUMENTS|\$([1-9])")
GEMINI_FILE = re.compile(r"@\{([^{}]+)\}")
GEMINI_ARGS = "{{args}}"


class Expansion(NamedTuple):
    prompt: str
    attachments: list[Attachment]


async def expand(
    command: CustomCommand,
    arguments: str,
    *,
    workspace: Path,
    run_shell: RunShell,
    secret_names: tuple[str, ...] = (),
) -> Expansion:
    """The message `command` run with `arguments` sends."""
    files = Includes(workspace, secret_names)
    if command.syntax == "gemini":
        template = GEMINI_FILE.sub(lambda m: files.attach(m[1], named=True), command.template)
        pieces = _gemini_pieces(template)
        shown = _gemini_arguments
    else:
        template = CLAUDE_FILE.sub(lambda m: files.attach(m[1], named=False), command.template)
        pieces = CLAUDE_SHELL.split(template)
        shown = _claude_arguments
    text = []
    for index, piece in enumerate(pieces):
        if index % 2:  # an inline command: its arguments quoted for the shell
            output = await run_shell(shown(piece, arguments, quoted=True))
            text.append(output.removeprefix("exit code 0\n").rstrip("\n"))
        else:
            text.append(shown(piece, arguments, quoted=False))
    prompt = "".join(text).strip()
    if arguments.strip() and not _takes_arguments(command):
        # as each tool does with arguments its prompt has no place for
        if command.syntax == "gemini":
            prompt += f"\n\n{command.name} {arguments}"
        else:
            prompt += f"\n\nARGUMENTS: {arguments}"
    return Expansion(prompt, files.attached)


def _takes_arguments(command: CustomCommand) -> bool:
    if command.syntax == "gemini":
        return GEMINI_ARGS in command.template
    return CLAUDE_ARGUMENT.search(command.template) is not None


def _claude_arguments(text: str, arguments: str, *, quoted: bool) -> str:
    words = _words(arguments)

    def value(match: re.Match[str]) -> str:
        if match[1] is None:
            return shlex.quote(arguments) if quoted else arguments
        at = int(match[1]) - 1
        word = words[at] if at < len(words) else ""
        return shlex.quote(word) if quoted else word

    return CLAUDE_ARGUMENT.sub(value, text)


def _gemini_arguments(text: str, arguments: str, *, quoted: bool) -> str:
    return text.replace(GEMINI_ARGS, shlex.quote(arguments) if quoted else arguments)


def _words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unclosed quote: as typed
        return arguments.split()


def _gemini_pieces(template: str) -> list[str]:
    """Text, then an inline command, text, ...: `!{...}` ends at its balancing brace."""
    pieces, start, at = [], 0, 0
    while (at := template.find("!{", at)) >= 0:
        depth, end = 0, at + 1
        while end < len(template):
            depth += {"{": 1, "}": -1}.get(template[end], 0)
            if depth == 0:
                break
            end += 1
        if depth:
            raise UsageError("its !{...} has no closing brace")
        pieces += [template[start:at], template[at + 2 : end]]
        start = at = end + 1
    return [*pieces, template[start:]]


class Includes:
    """The files a command names, attached: only regular files inside the workspace, at
    most MAX_INCLUDE_BYTES each, none that looks like it holds secrets."""

    def __init__(self, workspace: Path, secret_names: tuple[str, ...]) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.secret_names = secret_names
        self.attached: list[Attachment] = []

    def attach(self, written: str, *, named: bool) -> str:
        """Attach the file `written` names; the text that stands in its place. A Claude
        `@word` that names no file stays as written (it may be a handle, a decorator)."""
        path = Path(os.path.realpath(self.workspace / Path(written).expanduser()))
        if not named and not path.is_file():
            return f"@{written}"
        if path != self.workspace and self.workspace not in path.parents:
            raise UsageError(f"{written} is outside the workspace {self.workspace}: not included")
        if not path.is_file():
            missing = "no such file in the workspace" if not path.exists() else "not a file"
            raise UsageError(f"{written}: {missing}")
        self._refuse_secret(path, written)
        from toolnexus import ToolnexusError
        from toolnexus.content import Attachment

        try:
            found = Attachment.from_path(path, max_bytes=MAX_INCLUDE_BYTES)
        except ToolnexusError as exc:
            raise UsageError(str(exc)) from None
        self.attached.append(dataclasses.replace(found, name=written))
        return written if named else f"@{written}"

    def _refuse_secret(self, path: Path, written: str) -> None:
        from toolnexus.tools.secret_files import SecretNames, holds_credentials, is_git_config

        from ..session.attach import refuse_secret

        secret = SecretNames(self.secret_names).matches(path.relative_to(self.workspace))
        if secret or (is_git_config(path) and holds_credentials(path.read_text(errors="replace"))):
            raise UsageError(f"{written} looks like it holds secrets: not included")
        refuse_secret(path)
