"""What a shell command line would run, read the way the shell reads it (shlex), for the
command rules of approval.py: its simple commands as words, and the program behind wrappers
(`sudo rm`, `env -i rm`, `xargs rm`, `bash -c "rm ..."`). Which forms of a program an
"allow" rule covers is command_vetting.py's.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Iterator

PUNCTUATION = "();<>|&`"
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class Parsed:
    """A command line cut into simple commands. `plain`: one command, nothing chained,
    substituted or redirected (the only kind an "allow" rule may cover)."""

    def __init__(self, command: str) -> None:
        self.commands: list[list[str]] = []
        self.plain = False
        self.ok = True
        self.nested = False  # it holds a script the shell reads again (see below)
        try:
            tokens = _tokens(command)
        except ValueError:  # unbalanced quotes: nobody can say what it runs
            self.ok = False
            return
        words: list[str] = []
        separated = False
        for token in tokens:
            if token and all(c in PUNCTUATION for c in token):
                separated = True
                if words:
                    self.commands.append(words)
                words = []
            else:
                words.append(token)
        if words:
            self.commands.append(words)
        substituted = [
            inner for cmd in self.commands for word in cmd for inner in _substitutions(word)
        ]
        self.plain = len(self.commands) == 1 and not separated and not substituted
        # A script inside the command (a substitution, `bash -c`, `eval`) is read by the
        # same rules, but shell syntax nested in quotes is where shlex and bash part ways.
        self.nested = bool(substituted) or any(
            _scripts(run[0], run[1:]) for cmd in self.commands for run in programs_run(cmd)
        )
        for inner in substituted:
            nested = Parsed(inner)
            self.ok = self.ok and nested.ok
            self.commands.extend(nested.commands)


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=PUNCTUATION)
    lexer.whitespace_split = True
    lexer.commenters = ""  # a `#` hides nothing from the rules
    return list(lexer)


def _substitutions(word: str) -> list[str]:
    """The scripts of the `$(...)` and backticks in a word: parentheses inside `$(` are
    counted, `\\`` inside backticks nests, and one left open runs to the end of the word."""
    scripts: list[str] = []
    i = 0
    while i < len(word):
        if word.startswith("$(", i):
            end, depth = i + 2, 1
            while end < len(word) and depth:
                depth += {"(": 1, ")": -1}.get(word[end], 0)
                end += 1
            scripts.append(word[i + 2 : end - 1 if depth == 0 else end])
        elif word[i] == "`":
            end = i + 1
            while end < len(word) and word[end] != "`":
                end += 2 if word[end] == "\\" else 1
            scripts.append(word[i + 1 : end].replace("\\`", "`"))
            end += 1
        else:
            end = i + 1
        i = end
    return scripts


# Programs that run the program named after their own options (and, for some, positional
# arguments): option letters that take a value, and how many positionals come first.
WRAPPERS: dict[str, tuple[str, int]] = {
    "command": ("", 0),
    "builtin": ("", 0),
    "exec": ("a", 0),
    "nohup": ("", 0),
    "time": ("fo", 0),
    "setsid": ("", 0),
    "busybox": ("", 0),
    "env": ("uCS", 0),
    "sudo": ("ugCDhprtTU", 0),
    "doas": ("uC", 0),
    "nice": ("n", 0),
    "ionice": ("cnp", 0),
    "timeout": ("sk", 1),
    "xargs": ("adEILnPs", 0),
    "stdbuf": ("ioe", 0),
    "chroot": ("", 1),
    "taskset": ("", 1),
    "flock": ("wE", 1),
    "unbuffer": ("", 0),
    "watch": ("nd", 0),
    "strace": ("oepsSuE", 0),
    "ltrace": ("oepsSuE", 0),
    "caffeinate": ("", 0),
}
LONG_WITH_VALUE = {
    "--user",
    "--group",
    "--signal",
    "--kill-after",
    "--chdir",
    "--unset",
    "--adjustment",
    "--split-string",
    "--arg-file",
    "--delimiter",
    "--max-args",
    "--max-procs",
    "--replace",
    "--max-lines",
    "--prompt",
    "--close-from",
    "--host",
    "--role",
    "--type",
    "--other-user",
    "--interval",
}
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"}


def words_anywhere(command: str) -> list[str]:
    """Every word of a command line cut at blanks, quotes and shell punctuation, however the
    shell would group them: what a deny rule falls back on where the parse may be wrong."""
    return [word for word in re.split(r"[\s;&|()<>`'\"$={}]+", command) if word]


def program(word: str) -> str:
    """The program a word names however it is spelled: `\\rm`, `/bin/rm`, `./rm` -> rm."""
    return os.path.basename(word.lstrip("\\"))


def programs_run(words: list[str], depth: int = 0) -> Iterator[list[str]]:
    """The command `words` runs, as [program, *arguments], then whatever it runs in turn
    (the command after `sudo`, `env -i`, `xargs`..., the script of `bash -c` or `eval`)."""
    seen: set[str] = set()  # a wrapper met again further down a chain runs nothing new
    at = 0
    while True:
        while at < len(words) and ASSIGNMENT.match(words[at]):
            at += 1
        if at >= len(words) or depth > 8:
            return
        name = program(words[at])
        if name not in seen:
            seen.add(name)
            yield [name, *words[at + 1 :]]
            for script in _scripts(name, words[at + 1 :]):
                for inner in Parsed(script).commands:
                    yield from programs_run(inner, depth + 1)
        if name not in WRAPPERS:
            return
        at = _unwrapped(name, words, at + 1)  # a chain of wrappers is followed to its end


def _scripts(name: str, args: list[str]) -> list[str]:
    if name == "eval":
        return [" ".join(args)]
    if name in SHELLS:
        for i, arg in enumerate(args):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
                return args[i + 1 : i + 2]
    if name == "env":
        for i, arg in enumerate(args):
            if arg in ("-S", "--split-string"):
                return [" ".join(args[i + 1 :])]
            if arg.startswith("--split-string="):
                return [" ".join([arg.split("=", 1)[1], *args[i + 1 :]])]
            if arg.startswith("-S"):
                return [" ".join([arg[2:], *args[i + 1 :]])]
    return []


def _unwrapped(name: str, words: list[str], i: int) -> int:
    """Where the command a wrapper runs starts: past its own options, NAME=value words and
    positionals, which begin at words[i]."""
    takes_value, positionals = WRAPPERS[name]
    while i < len(words):
        arg = words[i]
        if arg == "--":
            i += 1
            break
        if name == "env" and ASSIGNMENT.match(arg):
            i += 1
        elif arg.startswith("--"):
            i += 2 if arg in LONG_WITH_VALUE else 1
        elif arg.startswith("-") and len(arg) > 1:
            i += 2 if _value_follows(arg[1:], takes_value) else 1
        else:
            break
    return i + positionals


def _value_follows(letters: str, takes_value: str) -> bool:
    """Whether the next word is the value of the short options `letters` (`iu` of `-iu`):
    the first letter that takes a value is the last one (in `-uroot` the value is attached)."""
    for n, letter in enumerate(letters):
        if letter in takes_value:
            return n == len(letters) - 1
    return False


# ----------------------------------------------------------------------------- patterns


def pattern_words(pattern: str) -> tuple[list[str], bool]:
    """A rule's words, and whether it takes any further arguments: a pattern that ends in
    `*` ("git status*", "ls *") allows more arguments after its other words."""
    try:
        words = shlex.split(pattern)
    except ValueError:
        words = pattern.split()
    if words and words[-1] == "*":
        return words[:-1], True
    if words and words[-1].endswith("*") and not words[-1].endswith("\\*"):
        return [*words[:-1], words[-1][:-1]], True
    return words, False


def matches_as_written(pattern: str, words: list[str]) -> bool:
    """Word for word, as the command is written: "git status*" matches `git status -s`,
    not `git status-x`, `/usr/bin/git status` or `git -c x=y status`."""
    fixed, more = pattern_words(pattern)
    if len(words) < len(fixed) or (not more and len(words) != len(fixed)):
        return False
    return all(fnmatch.fnmatchcase(w, p) for w, p in zip(words, fixed, strict=False))


def names_program(pattern: str, command: list[str]) -> bool:
    """For deny rules: the program is the rule's, and the rule's other words occur in the
    arguments in order ("git push*" also catches `git -c x push`)."""
    fixed, _ = pattern_words(pattern)
    if not fixed or not fnmatch.fnmatchcase(command[0], program(fixed[0])):
        return False
    rest = iter(command[1:])
    return all(any(fnmatch.fnmatchcase(arg, p) for arg in rest) for p in fixed[1:])


def names_program_anywhere(pattern: str, words: list[str]) -> bool:
    """For deny rules where the parse may be wrong: the rule's program is one of `words`
    and its other words follow in order (looked for after the program's first occurrence:
    a later one has only some of those words after it)."""
    fixed, _ = pattern_words(pattern)
    if not fixed:
        return False
    name = program(fixed[0])
    first = next(
        (i for i, word in enumerate(words) if fnmatch.fnmatchcase(program(word), name)), None
    )
    return first is not None and names_program(pattern, [name, *words[first + 1 :]])
