"""Which commands an "allow" command rule covers (approval.py), vetted per program.

A program with a vetter is covered only in the forms known to read only: git's read-only
subcommands, sed scripts of known commands, tar listing, find's tests... Programs that run
other programs or have a shell escape (xargs, env, sudo, shells, less, editors...) are never
covered. Any other program is covered unless an option known to write files or run code
(--output, -o...) is among its words. The words come from a model: what is not understood
is not covered, and each reading is one pass over the words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ._command_line import ASSIGNMENT, SHELLS, WRAPPERS, program

# Programs that run a program or script they are given, have a shell escape (less, man and
# editors run commands; LESSOPEN runs one on every file), or print the environment, where
# the API keys of toolnexus are (env, printenv).
RUNS_OTHERS = (
    frozenset(WRAPPERS)
    | SHELLS
    | {
        "eval",
        "source",
        ".",
        "printenv",
        "less",
        "more",
        "most",
        "man",
        "pg",
        "vi",
        "vim",
        "nvim",
        "view",
        "vimdiff",
        "ex",
        "emacs",
        "nano",
        "pico",
        "ed",
        "script",
        "parallel",
        "su",
        "runuser",
        "pkexec",
    }
)

# Long options that make a program without a vetter write a file or run a program.
WRITES_OR_RUNS = (
    "--output",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "--config-env",
    "--to-command",
    "--checkpoint-action",
    "--use-compress-program",
    "--compress-program",
    "--pre",
    "--open-files-in-pager",
    "--ext-diff",
    "--in-place",
    "--pager",
    "--editor",
)


def allow_covers(words: list[str]) -> bool:
    """Whether an "allow" rule that matches this plain command may run it without asking."""
    if not words or ASSIGNMENT.match(words[0]):
        return False  # a variable set in front changes what runs (LD_PRELOAD, GIT_DIR...)
    name, args = program(words[0]), words[1:]
    if name in RUNS_OTHERS:
        return False
    vetter = VETTERS.get(name)
    return vetter(args) if vetter else _without(args, WRITES_OR_RUNS, "o")


def _without(args: list[str], options: tuple[str, ...], letters: str) -> bool:
    """Whether no word is one of the long `options` or a bundle of short options holding
    one of `letters` (`-so` holds `o`)."""
    for arg in args:
        if arg.startswith("--"):
            if _names(arg, options):
                return False
        elif arg.startswith("-") and any(letter in letters for letter in arg[1:]):
            return False
    return True


def _names(arg: str, options: tuple[str, ...]) -> bool:
    """Whether `arg` is one of the long `options`: written out, run on (`--output-dir`), or
    abbreviated, as GNU tools and git take any start of one for it (`--in` is `--in-place`)."""
    option = arg.split("=", 1)[0]
    return option.startswith(options) or (
        len(option) > 2 and option.startswith("--") and any(o.startswith(option) for o in options)
    )


# ----------------------------------------------------------------------------- options


@dataclass(frozen=True)
class Options:
    """The options of a program known to be harmless: letters alone, letters taking a
    value, long names alone (a value only after `=`) and long names taking a value."""

    letters: str
    letters_valued: str
    names: frozenset[str]
    names_valued: frozenset[str]


class Reading(NamedTuple):
    options: list[tuple[str, str]]  # ("-e", script), ("--file", "a.tar"), ("-n", "")
    operands: list[str]


def _read_options(args: list[str], known: Options) -> Reading | None:
    """`args` read as GNU getopt reads them (options anywhere before `--`, letters bundled,
    long names abbreviated), or None where an option is not one of `known`."""
    options: list[tuple[str, str]] = []
    operands: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--":
            operands.extend(words)
        elif word.startswith("--"):
            given, equals, value = word[2:].partition("=")
            name = _resolve(given, known.names | known.names_valued)
            if name is None:
                return None
            if name in known.names_valued and not equals:
                value = next(words, "")
            options.append(("--" + name, value))
        elif word.startswith("-") and word != "-":
            for at, letter in enumerate(word[1:], 2):
                if letter in known.letters_valued:
                    options.append(("-" + letter, word[at:] or next(words, "")))
                    break
                if letter not in known.letters:
                    return None
                options.append(("-" + letter, ""))
        else:
            operands.append(word)
    return Reading(options, operands)


def _resolve(given: str, names: frozenset[str]) -> str | None:
    """The long option `given` names: itself, or the one of `names` it abbreviates. Where the
    program has another option starting the same way, it refuses the abbreviation as
    ambiguous; none of the vetted programs has a harmful option that starts a harmless one."""
    if given in names:
        return given
    found = [name for name in names if given and name.startswith(given)]
    return found[0] if len(found) == 1 else None


# ----------------------------------------------------------------------------- git

# git's own options before the subcommand: only these (-c, -C, --git-dir, --exec-path, -p...
# change what git runs, reads or where it pages).
GIT_GLOBAL = {"--no-pager", "-P", "--no-optional-locks", "--version"}
# Subcommands that only read the repository. Not config or remote: they print remote URLs
# and settings, where credentials live (tokens in URLs, http.extraHeader). Not help: it
# starts a man page viewer. An alias is none of these, so it asks.
GIT_READ_ONLY = {
    "status",
    "log",
    "show",
    "diff",
    "diff-tree",
    "diff-index",
    "diff-files",
    "rev-parse",
    "rev-list",
    "ls-files",
    "ls-tree",
    "cat-file",
    "blame",
    "grep",
    "describe",
    "shortlog",
    "merge-base",
    "name-rev",
    "show-ref",
    "for-each-ref",
    "count-objects",
    "check-ignore",
    "whatchanged",
    "cherry",
    "version",
    "branch",
    "tag",
    "stash",
    "reflog",
}
# Their options that write a file, run a program (an external diff, a textconv or filter
# driver, a pager, the man page viewer of --help) or read a file they name (--contents;
# --no-index compares any two).
GIT_RISKY = (
    "--output",
    "--ext-diff",
    "--textconv",
    "--no-index",
    "--open-files-in-pager",
    "--contents",
    "--ignore-revs-file",
    "--exclude-from",
    "--filters",
    "--exec",
    "--upload-pack",
    "--help",
)
# Short options of those kinds: -O<orderfile> reads a file (and is grep's pager), grep -f,
# blame -S and ls-files -X read one.
GIT_RISKY_LETTERS = {"grep": "Of", "blame": "OS", "ls-files": "OX"}

# The options of `git branch` and `git tag` that filter or format a listing and take a
# value: the next word, unless it is given after `=`.
REF_FILTERS = {
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "--sort",
    "--format",
}
BRANCH_LISTING = re.compile(
    r"-[arvil]+|--(?:all|remotes|verbose|list|show-current|ignore-case|omit-empty|no-color"
    r"|no-column|no-abbrev|color|column|abbrev)(?:=.*)?"
)
TAG_LISTING = re.compile(
    r"-(?=.)[li]*(?:n\d*)?|--(?:list|ignore-case|omit-empty|no-color|no-column|color|column)"
    r"(?:=.*)?"
)


def _lists_refs(args: list[str], listing: re.Pattern[str]) -> bool:
    """Whether `git branch` or `git tag` only lists: listing options, and a name (which
    would create a branch or tag) only as a pattern after --list."""
    lists = named = False
    words = iter(args)
    for word in words:
        option = word.partition("=")[0]
        if option in REF_FILTERS:
            if option == word:
                next(words, None)
        elif listing.fullmatch(word):
            lists = lists or word == "--list" or (word[1] != "-" and "l" in word)
        elif word.startswith("-"):
            return False
        else:
            named = True
    return lists or not named


GIT_FORMS: dict[str, Callable[[list[str]], bool]] = {
    "branch": lambda args: _lists_refs(args, BRANCH_LISTING),
    "tag": lambda args: _lists_refs(args, TAG_LISTING),
    # the first word picks what they do: `git stash` alone saves, `reflog expire` writes
    "stash": lambda args: args[:1] in (["list"], ["show"]),
    "reflog": lambda args: args[:1] in ([], ["show"]),
}


def _git_reads_only(args: list[str]) -> bool:
    """A read-only subcommand in a read-only form, with no option that runs, writes or
    reads a named file, and no path outside the current folder: `git diff` with one
    compares any two files, as --no-index does."""
    at = 0
    while at < len(args) and args[at] in GIT_GLOBAL:
        at += 1
    if at == len(args):
        return True  # `git --version`
    subcommand, rest = args[at], args[at + 1 :]
    form = GIT_FORMS.get(subcommand)
    return (
        subcommand in GIT_READ_ONLY
        and (form is None or form(rest))
        and _without(rest, GIT_RISKY, GIT_RISKY_LETTERS.get(subcommand, "O"))
        and all(_stays_in_folder(_path_in(word)) for word in rest)
    )


def _path_in(word: str) -> str:
    """The part of an argument that may be a path: its value after `=` for a long option,
    none for short options, the whole of any other word."""
    if word.startswith("--"):
        return word.partition("=")[2]
    return "" if word.startswith("-") else word


def _stays_in_folder(path: str) -> bool:
    """Whether a path as the shell passes it stays in the current folder: not absolute or
    from a home (~), nothing the shell expands to another ($HOME, {/etc/x,y}), no `..` (nor
    a pattern such as `.?` that matches it)."""
    if path.startswith(("/", "~")) or "$" in path or _braces(path):
        return False
    return not any(
        part == ".." or (part.startswith(".") and any(c in part for c in "*?["))
        for part in path.split("/")
    )


def _braces(word: str) -> bool:
    """Whether bash may expand braces in `word` (`{a,b}`, `{1..3}`; not `stash@{0}`)."""
    start = word.find("{")
    return start >= 0 and ("," in word[start:] or ".." in word[start:])


# ----------------------------------------------------------------------------- sed

SED = Options(
    letters="nErsuzb",
    letters_valued="el",
    names=frozenset(
        {
            "quiet",
            "silent",
            "debug",
            "posix",
            "sandbox",
            "separate",
            "unbuffered",
            "null-data",
            "zero-terminated",
            "regexp-extended",
            "follow-symlinks",
            "binary",
            "help",
            "version",
        }
    ),
    names_valued=frozenset({"expression", "line-length"}),
)
# Commands that only read, print or change what sed holds: alone, with an optional number
# (l, q, Q), with a label (b, t, T, :) or with text to the end of the line (a, i, c).
SED_ALONE = "=dDgGhHnNpPxzF}"
SED_NUMBERED = "lqQ"
SED_LABELLED = "btT:"
SED_TEXT = "aic"
SED_S_FLAGS = "gpiImM0123456789"  # not e (runs the result) nor w (writes a file)
BLANKS = " \t"
DIGITS = "0123456789"


def _sed_reads_only(args: list[str]) -> bool:
    """Known options only (not -i, -f), and a script of known commands. The script is the
    -e and --expression values, one a line as sed joins them, or else the first operand."""
    reading = _read_options(args, SED)
    if reading is None:
        return False
    scripts = [value for name, value in reading.options if name in ("-e", "--expression")]
    return _sed_script_reads_only("\n".join(scripts or reading.operands[:1]))


def _sed_script_reads_only(script: str) -> bool:
    """Whether every command of a sed script is one that only reads (GNU sed's grammar);
    e, w, W, r, R, the s flags e and w, and anything not understood are not."""
    at: int | None = 0
    while at is not None and at < len(script):
        at = _skip(script, at, " \t\n;")
        if at < len(script):
            at = _sed_command(script, at)
    return at is not None


def _sed_command(script: str, at: int) -> int | None:
    """Where the command at `at` (with its address and `!`) ends, or None."""
    if script[at] == "#":
        return _line_end(script, at)
    address_end = _sed_address(script, at)
    if address_end is None:
        return None
    at = _skip(script, address_end, BLANKS + "!")
    if at >= len(script):
        return None
    command, at = script[at], at + 1
    if command == "{":
        return at
    if command in SED_ALONE:
        return _sed_end(script, at)
    if command in SED_NUMBERED:
        return _sed_end(script, _skip(script, _skip(script, at, BLANKS), DIGITS))
    if command in SED_LABELLED:
        return _sed_label(script, at)
    if command in SED_TEXT:
        return _text_end(script, at)
    if command in ("s", "y"):
        end = _sed_delimited(script, at, 2)
        if end is not None and command == "s":
            end = _skip(script, end, SED_S_FLAGS)
        return None if end is None else _sed_end(script, end)
    return None


def _sed_address(script: str, at: int) -> int | None:
    """Where the address at `at` ends (`at` itself when there is none), or None."""
    first = _sed_one_address(script, at)
    if first is None:
        return None
    comma = _skip(script, first, BLANKS)
    if first == at or comma >= len(script) or script[comma] != ",":
        return first
    second = _skip(script, comma + 1, BLANKS)
    if second < len(script) and script[second] in "+~":  # `addr,+N`, `addr,~N`
        end: int | None = _skip(script, second + 1, DIGITS)
    else:
        end = _sed_one_address(script, second)
    return None if end is None or end == second else end


def _sed_one_address(script: str, at: int) -> int | None:
    """A line number (or `first~step`), `$`, `/regex/` or `\\cregexc` with flags I and M."""
    if at < len(script) and script[at] in "/\\":
        end = _sed_delimited(script, at + (script[at] == "\\"), 1)
        return None if end is None else _skip(script, end, "IM")
    if at < len(script) and script[at] == "$":
        return at + 1
    end = _skip(script, at, DIGITS)
    if end > at and end < len(script) and script[end] == "~":
        return _skip(script, end + 1, DIGITS)
    return end


def _sed_delimited(script: str, at: int, parts: int) -> int | None:
    """Past the `parts` parts of `s/regex/replacement/` or `/regex/` whose delimiter is at
    `at`: a backslash escapes the next character, a bare new line ends nothing (sed fails)."""
    if at >= len(script) or script[at] in "\n\\" or not script[at].isascii():
        return None
    delimiter, at = script[at], at + 1
    for _ in range(parts):
        while at < len(script) and script[at] != delimiter:
            if script[at] == "\n":
                return None
            at += 2 if script[at] == "\\" else 1
        if at >= len(script):
            return None
        at += 1
    return at


def _sed_label(script: str, at: int) -> int | None:
    """Past a label, which GNU sed reads to a blank or `;`. One holding anything else (`}`,
    which other seds end it at) is not understood."""
    start = _skip(script, at, BLANKS)
    end = start
    while end < len(script) and script[end] not in " \t\n\r\v\f;":
        end += 1
    label = script[start:end]
    return end if all(c.isascii() and (c.isalnum() or c in "_.-") for c in label) else None


def _sed_end(script: str, at: int) -> int | None:
    """Past the blanks after a command, which must end there: at `;`, a new line, `}`, `#`."""
    at = _skip(script, at, BLANKS)
    return at if at >= len(script) or script[at] in ";\n}#" else None


def _text_end(script: str, at: int) -> int:
    """The end of a/i/c text: the first new line not escaped by a backslash (one at the end
    of an -e goes on into the next, as the scripts are joined)."""
    while at < len(script) and script[at] != "\n":
        at += 2 if script[at] == "\\" else 1
    return at


def _line_end(script: str, at: int) -> int:
    """The end of a comment: the next new line, whatever comes before it."""
    end = script.find("\n", at)
    return len(script) if end < 0 else end


def _skip(text: str, at: int, characters: str) -> int:
    while at < len(text) and text[at] in characters:
        at += 1
    return at


# ----------------------------------------------------------------------------- tar

TAR = Options(
    letters="tvxOzjJZai",
    letters_valued="f",
    names=frozenset(
        {
            "list",
            "extract",
            "get",
            "to-stdout",
            "verbose",
            "gzip",
            "gunzip",
            "ungzip",
            "bzip2",
            "xz",
            "lzma",
            "lzip",
            "lzop",
            "zstd",
            "compress",
            "uncompress",
            "auto-compress",
            "force-local",
            "wildcards",
            "no-wildcards",
            "anchored",
            "no-anchored",
            "ignore-case",
            "numeric-owner",
            "full-time",
            "utc",
            "ignore-zeros",
            "occurrence",
        }
    ),
    names_valued=frozenset({"file", "exclude", "strip-components"}),
)


def _tar_reads_only(args: list[str]) -> bool:
    """Listing (-t, --list) or extracting to stdout (-xO, --to-stdout), known options only,
    and no archive on a remote host (`host:file`, which tar reaches through rsh)."""
    words = _tar_old_style(args)
    reading = None if words is None else _read_options(words, TAR)
    if reading is None:
        return False
    given = {name for name, _ in reading.options}
    lists = bool(given & {"-t", "--list"})
    extracts = bool(given & {"-x", "--extract", "--get"})
    to_stdout = bool(given & {"-O", "--to-stdout"})
    archives = [value for name, value in reading.options if name in ("-f", "--file")]
    remote = "--force-local" not in given and any(_on_a_host(a) for a in archives)
    return (lists != extracts) and (to_stdout or not extracts) and not remote


def _tar_old_style(args: list[str]) -> list[str] | None:
    """`tar tvf a.tar x` as `tar -t -v -f a.tar x`: in a first word without a dash, each
    letter is an option, and one that takes a value takes the next word. None where that
    word holds what is not a letter."""
    if not args or args[0].startswith("-"):
        return args
    rest = iter(args[1:])
    words: list[str] = []
    for letter in args[0]:
        if not letter.isalpha():
            return None
        words.append("-" + letter)
        if letter in TAR.letters_valued:
            words.append(next(rest, ""))
    return [*words, *rest]


def _on_a_host(archive: str) -> bool:
    head, colon, _ = archive.partition(":")
    return bool(colon) and "/" not in head


# ----------------------------------------------------------------------------- find

# find's options, tests and actions that only look and print (operators such as `!` and
# `(` are words without a dash, as starting points are); those below take the next word.
FIND_ALONE = {
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-true",
    "-false",
    "-empty",
    "-readable",
    "-writable",
    "-executable",
    "-nouser",
    "-nogroup",
    "-xdev",
    "-mount",
    "-depth",
    "-d",
    "-daystart",
    "-follow",
    "-noleaf",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-nowarn",
    "-warn",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "-H",
    "-L",
    "-P",
    "-help",
    "--help",
    "-version",
    "--version",
}
FIND_VALUED = {
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-lname",
    "-ilname",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-maxdepth",
    "-mindepth",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-newer",
    "-anewer",
    "-cnewer",
    "-used",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-samefile",
    "-fstype",
    "-printf",
    "-context",
}
FIND_NEWER_XY = re.compile(r"-newer[aBcmt][aBcmt]")


def _find_reads_only(args: list[str]) -> bool:
    """Known tests and actions only: not -exec, -ok, -delete, -fprint, -fls... (which run,
    delete or write)."""
    words = iter(args)
    for word in words:
        if word in FIND_VALUED or FIND_NEWER_XY.fullmatch(word):
            next(words, None)
        elif word.startswith("-") and word not in FIND_ALONE:
            return False
    return True


# ----------------------------------------------------------------------------- awk

AWK = Options(
    letters="S",
    letters_valued="Fve",
    names=frozenset({"sandbox", "posix", "traditional"}),
    names_valued=frozenset({"field-separator", "assign", "source"}),
)
# What lets an awk program run a command, write or read a file, load code, or read the
# environment: system(), getline, pipes, redirections, @load, @include and indirect calls.
AWK_RISKY = re.compile(r"system|getline|ENVIRON|[|>@]")


def _awk_reads_only(args: list[str]) -> bool:
    """Known options only (not -f, -i, -l, -E...), and nothing in any word that runs,
    writes or loads (a `>` comparison asks too)."""
    return _read_options(args, AWK) is not None and not any(AWK_RISKY.search(a) for a in args)


# ----------------------------------------------------------------------------- sort

SORT = Options(
    letters="bcCdfghiMmnRrsuVz",
    letters_valued="ktS",
    names=frozenset(
        {
            "ignore-leading-blanks",
            "dictionary-order",
            "ignore-case",
            "general-numeric-sort",
            "ignore-nonprinting",
            "month-sort",
            "human-numeric-sort",
            "numeric-sort",
            "random-sort",
            "reverse",
            "version-sort",
            "check",
            "merge",
            "stable",
            "unique",
            "zero-terminated",
            "debug",
            "help",
            "version",
        }
    ),
    names_valued=frozenset(
        {"sort", "key", "field-separator", "buffer-size", "parallel", "batch-size"}
    ),
)


def _sort_reads_only(args: list[str]) -> bool:
    """Known options only: not -o/--output, -T, --compress-program, --files0-from..."""
    return _read_options(args, SORT) is not None


VETTERS: dict[str, Callable[[list[str]], bool]] = {
    "git": _git_reads_only,
    "sed": _sed_reads_only,
    "tar": _tar_reads_only,
    "find": _find_reads_only,
    "sort": _sort_reads_only,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _awk_reads_only),
    # Too many options to list those that are harmless; these are the ones that run.
    "rg": lambda args: _without(args, ("--pre", "--hostname-bin", "--search-zip"), "z"),
    **dict.fromkeys(
        ("fd", "fdfind"),
        lambda args: _without(args, ("--exec", "--exec-batch", "--list-details"), "xXl"),
    ),
}
