"""Project instructions: the AGENTS.md files (or CLAUDE.md, GEMINI.md: the names the config's
`[instructions] files` gives, first found per folder) from the repository's top folder down
to the working folder, nearest last, after a personal one in the config folder. `@path` in
them imports another file, within bounds: inside the repository (the config folder for the
personal one), MAX_DEPTH deep, MAX_BYTES in all, never a file twice."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ..config.file import Config

MAX_DEPTH = 5  # imports inside imports
MAX_BYTES = 64 * 1024  # of every file read, imports included
HEADER = "# Project instructions"
# `@path` at the start of a line or after a space (not an e-mail address), a path of the
# usual characters; a trailing full stop or comma ends a sentence, not the path
IMPORT = re.compile(r"(?:(?<=\s)|^)@((?:~/|\.{1,2}/|/)?[\w.\-/]*[\w\-/])", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")


class InstructionFile(NamedTuple):
    """One file found (`path`), its text with what it imports after it, and every file
    that text came from (itself first)."""

    path: Path
    text: str
    sources: tuple[Path, ...]


Stamp = tuple[int, int] | None  # a file's modification time and size (None: gone)


class Instructions(NamedTuple):
    """What was found, most general first; `problems`: imports refused, one line each;
    `stamps`: each file read as it was when read (a change says to read them again)."""

    files: tuple[InstructionFile, ...] = ()
    problems: tuple[str, ...] = ()
    stamps: Mapping[Path, Stamp] = MappingProxyType({})

    def section(self) -> str | None:
        """The system prompt's section holding every file (None: there is none)."""
        if not self.files:
            return None
        parts = [HEADER]
        for found in self.files:
            parts.append(f"## {found.path}\n\n{found.text.strip()}")
        return "\n\n".join(parts)


def stamp(path: Path) -> Stamp:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def repository_top(folder: Path) -> Path:
    """The git top folder holding `folder` (a `.git` folder or file), else `folder`."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def project_instructions(config: Config) -> Instructions:
    """The instructions for a chat in the current folder, by the config's file names."""
    from ..config.file import config_dir

    return read_instructions(Path.cwd(), config_dir(), config.settings.instructions.files)


def read_instructions(working: Path, personal: Path, names: Sequence[str]) -> Instructions:
    """The instruction files for a chat started in `working`, `personal` being the config
    folder (its file comes first)."""
    working = working.resolve()
    top = repository_top(working)
    folders = [top, *reversed([p for p in working.parents if p.is_relative_to(top) and p != top])]
    if working != top:
        folders.append(working)
    reader = _Reader()
    found = [reader.first(personal, names, personal)]
    found += [reader.first(folder, names, top) for folder in folders]
    return Instructions(
        tuple(f for f in found if f is not None),
        tuple(reader.problems),
        MappingProxyType(reader.stamps),
    )


class _Reader:
    """Reads files and their imports, counting bytes across all of them."""

    def __init__(self) -> None:
        self.left = MAX_BYTES
        self.problems: list[str] = []
        self.seen: set[Path] = set()
        self.stamps: dict[Path, Stamp] = {}

    def first(self, folder: Path, names: Sequence[str], inside: Path) -> InstructionFile | None:
        for name in names:
            path = folder / name
            if path.is_file():
                refused = self.refusal(path.resolve(), inside.resolve())
                if refused is not None:
                    self.problems.append(f"{path}: not read: {refused}")
                    return None
                sources: list[Path] = []
                text = self.read(path, inside.resolve(), 0, sources)
                return None if text is None else InstructionFile(path, text, tuple(sources))
        return None

    def refusal(self, real: Path, inside: Path) -> str | None:
        """Why the file at `real` (links followed) is not read, or None: what is read goes
        to the model, so nothing outside `inside` and nothing that looks like a secret."""
        from toolnexus.tools.secret_files import is_git_config, looks_secret

        if not real.is_relative_to(inside):
            return f"it is outside {inside}"
        if looks_secret(real) or is_git_config(real):
            return "it looks like it holds secrets"
        if real in self.seen:
            return "it was read already (an import loop, or imported twice)"
        return None

    def read(self, path: Path, inside: Path, depth: int, sources: list[Path]) -> str | None:
        real = path.resolve()
        self.stamps[real] = stamp(real)  # before reading: a change meanwhile shows next time
        try:
            data = real.read_bytes()
        except OSError as exc:
            self.problems.append(f"{path}: not read: {exc.strerror or exc}")
            return None
        if len(data) > self.left:
            self.problems.append(
                f"{path}: not read: project instructions are limited to "
                f"{MAX_BYTES // 1024} KiB in all"
            )
            return None
        self.left -= len(data)
        self.seen.add(real)
        sources.append(real)
        text = data.decode("utf-8", errors="replace")
        imported = [
            self.imported(path, target, inside, depth, sources)
            for target in dict.fromkeys(_imports(text))
        ]
        return "\n\n".join([text, *(part for part in imported if part)])

    def imported(
        self, importer: Path, target: str, inside: Path, depth: int, sources: list[Path]
    ) -> str | None:
        """The text an `@target` in `importer` brings (None: refused, said in `problems`)."""
        path = (importer.parent / Path(target).expanduser()).resolve()
        refused = self.refusal(path, inside)
        if refused is None and depth + 1 > MAX_DEPTH:
            refused = f"imports go at most {MAX_DEPTH} deep"
        if refused is None and not path.is_file():
            return None  # a handle or a word with an @, not a file
        if refused is not None:
            self.problems.append(f"{importer}: @{target} not imported: {refused}")
            return None
        text = self.read(path, inside, depth + 1, sources)
        return None if text is None else f"(imported from @{target})\n{text}"


def _imports(text: str) -> list[str]:
    """The `@path` imports of a Markdown text, outside code blocks and code spans."""
    prose = CODE_SPAN.sub("", FENCE.sub("", text))
    return IMPORT.findall(prose)
