"""toolnexus.tools._command_line: a command line read the way the shell reads it, for the
command rules.
`Parsed` cuts it into simple commands, also those inside `$(...)` and backticks, and calls
it plain only when it is one command with nothing chained, substituted or redirected; a
line nobody can read (unbalanced quotes) is not ok. `programs_run` names every program a
command runs, through wrappers (`sudo`, `env`, `xargs`...) and scripts (`bash -c`, `eval`,
`env -S`). Patterns match word for word as written, or, for deny rules, the program
however it is spelled. `allow_covers` (toolnexus.tools._command_vetting) says which commands an
"allow" rule covers: for git, sed, tar, find, awk, sort, rg and fd only the forms known to
read only, never a program that runs others or has a shell escape, and for the rest any
command without an option known to write files or run code."""

from __future__ import annotations

import shlex
import time

import pytest

from toolnexus.tools._command_line import (
    Parsed,
    matches_as_written,
    names_program,
    pattern_words,
    program,
    programs_run,
)
from toolnexus.tools._command_vetting import allow_covers


def commands(line: str) -> list[list[str]]:
    return Parsed(line).commands


def run_by(words: list[str]) -> list[str]:
    """The programs `words` runs, in the order they are found."""
    return [run[0] for run in programs_run(words)]


# ----------------------------------------------------------------------------- Parsed


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("ls -la src", ["ls", "-la", "src"]),
        ("ls 'a b' \"c d\" e\\ f", ["ls", "a b", "c d", "e f"]),
        ("echo 'a;b' \"a|b\" a\\;b a\\&\\&b", ["echo", "a;b", "a|b", "a;b", "a&&b"]),
        ("echo a#b '#' \\#", ["echo", "a#b", "#", "#"]),
        ("echo '$HOME' ${HOME} ~ *.py", ["echo", "$HOME", "${HOME}", "~", "*.py"]),
        ("FOO=1 BAR='x y' git status", ["FOO=1", "BAR=x y", "git", "status"]),
        ("  git\tstatus  ", ["git", "status"]),
        ("echo 'line one\nline two'", ["echo", "line one ; line two"]),
    ],
)
def test_one_simple_command_is_plain(line, words):
    parsed = Parsed(line)
    assert (parsed.ok, parsed.plain, parsed.commands) == (True, True, [words])


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("a; b", [["a"], ["b"]]),
        ("a;b", [["a"], ["b"]]),
        ("a && b || c", [["a"], ["b"], ["c"]]),
        ("a|b", [["a"], ["b"]]),
        ("a |& b", [["a"], ["b"]]),
        ("a & b", [["a"], ["b"]]),
        ("a &", [["a"]]),
        ("a\nb", [["a"], ["b"]]),
        ("a\r\nb", [["a"], ["b"]]),
        ("(a; b)", [["a"], ["b"]]),
        ("{ a; }", [["{", "a"], ["}"]]),
        ("a;;b", [["a"], ["b"]]),
        (";a", [["a"]]),
    ],
)
def test_chained_commands_are_each_read_and_none_is_plain(line, expected):
    parsed = Parsed(line)
    assert parsed.commands == expected and not parsed.plain and parsed.ok


@pytest.mark.parametrize(
    "line",
    [
        "ls > out",
        "ls >> out",
        "ls >out",
        "ls 2>&1",
        "ls 2>/dev/null",
        "ls &> all",
        "ls >| f",
        "cat < in",
        "cat <<EOF",
        "cat <<< 'word'",
        "ls>out",
    ],
)
def test_a_redirection_is_not_plain(line):
    parsed = Parsed(line)
    assert parsed.commands[0][0] in ("ls", "cat") and not parsed.plain


def test_a_hash_hides_nothing():
    assert commands("ls # ; rm -rf x") == [["ls", "#"], ["rm", "-rf", "x"]]
    assert Parsed("ls #comment").commands == [["ls", "#comment"]]


@pytest.mark.parametrize(
    ("line", "inner"),
    [
        ("echo $(rm x)", ["rm", "x"]),
        ("echo `rm x`", ["rm", "x"]),
        ('echo "$(rm x)"', ["rm", "x"]),
        ('echo "`rm x`"', ["rm", "x"]),
        ('echo "a$(rm x)b"', ["rm", "x"]),
        ("x=$(rm x) ls", ["rm", "x"]),
        ("echo $(echo $(rm x))", ["rm", "x"]),
        ("echo $(ls | rm x)", ["rm", "x"]),
        ("cat <(rm x)", ["rm", "x"]),
        ('echo "${v:-$(rm x)}"', ["rm", "x"]),
        ("echo '$(rm x)'", ["rm", "x"]),  # quoted, so inert: counted anyway, to be safe
    ],
)
def test_what_a_substitution_runs_is_a_command_of_the_line(line, inner):
    parsed = Parsed(line)
    assert inner in parsed.commands and not parsed.plain


@pytest.mark.parametrize(
    "line",
    [
        'echo "$( (rm x) )"',
        'echo "$(cat <(rm x))"',
        'echo "$(rm x $(id))"',
        'echo "a$( (rm x))b"',
        'echo "$(rm x"',
        'echo "`echo \\`rm x\\``"',
        "echo `echo \\`rm x\\``",
        'echo "`rm x"',
    ],
)
def test_a_substitution_with_parentheses_inside_or_left_open_is_read_too(line):
    parsed = Parsed(line)
    assert "rm" in [words[0] for words in parsed.commands] and not parsed.plain


@pytest.mark.parametrize(
    "line",
    [
        "ls 'x",
        'ls "x',
        "echo 'it''s",
        'echo "a\\"',
        "ls \\",
        'echo "$(echo \')"',
    ],
)
def test_a_line_with_unbalanced_quotes_is_not_ok(line):
    parsed = Parsed(line)
    assert not parsed.ok and not parsed.plain


@pytest.mark.parametrize("line", ["", "   ", "\n", ";", "&&", "\t;\t"])
def test_an_empty_line_runs_nothing_and_is_not_plain(line):
    parsed = Parsed(line)
    assert parsed.ok and not parsed.plain and parsed.commands == []


def test_a_huge_line_is_read_whole():
    line = " && ".join(f"echo {n}" for n in range(5000)) + " && rm x"
    parsed = Parsed(line)
    assert len(parsed.commands) == 5001 and parsed.commands[-1] == ["rm", "x"]


# ----------------------------------------------------------------------------- programs


@pytest.mark.parametrize(
    ("word", "name"),
    [
        ("rm", "rm"),
        ("\\rm", "rm"),
        ("/bin/rm", "rm"),
        ("./rm", "rm"),
        ("../../usr/bin/rm", "rm"),
        ("\\/usr/bin/rm", "rm"),
        ("//bin//rm", "rm"),
        ("", ""),
    ],
)
def test_a_program_is_named_however_its_path_is_spelled(word, name):
    assert program(word) == name


@pytest.mark.parametrize(
    ("words", "found"),
    [
        (["sudo", "-u", "root", "rm"], ["sudo", "rm"]),
        (["sudo", "--user=root", "rm"], ["sudo", "rm"]),
        (["sudo", "--user", "root", "rm"], ["sudo", "rm"]),
        (["sudo", "--", "rm"], ["sudo", "rm"]),
        (["env", "-i", "A=1", "B=2", "rm"], ["env", "rm"]),
        (["env", "-u", "X", "--chdir", "/", "rm"], ["env", "rm"]),
        (["/usr/bin/env", "rm"], ["env", "rm"]),
        (["timeout", "-s", "KILL", "5", "rm"], ["timeout", "rm"]),
        (["timeout", "--signal=KILL", "5s", "rm"], ["timeout", "rm"]),
        (["nice", "-n", "5", "rm"], ["nice", "rm"]),
        (["nice", "-n5", "rm"], ["nice", "rm"]),
        (["xargs", "-0", "-n1", "-I", "{}", "rm", "{}"], ["xargs", "rm"]),
        (["xargs", "-I{}", "rm"], ["xargs", "rm"]),
        (["exec", "-a", "name", "rm"], ["exec", "rm"]),
        (["chroot", "/srv", "rm"], ["chroot", "rm"]),
        (["flock", "/tmp/lock", "rm"], ["flock", "rm"]),
        (["taskset", "0x1", "rm"], ["taskset", "rm"]),
        (["ionice", "-c", "3", "rm"], ["ionice", "rm"]),
        (["stdbuf", "-oL", "rm"], ["stdbuf", "rm"]),
        (["strace", "-o", "trace", "-f", "rm"], ["strace", "rm"]),
        (["watch", "-n", "1", "rm"], ["watch", "rm"]),
        (["\\sudo", "nohup", "nice", "env", "rm"], ["sudo", "nohup", "nice", "env", "rm"]),
        (["A=1", "sudo", "B=2", "rm"], ["sudo", "rm"]),
        (["busybox", "rm"], ["busybox", "rm"]),
        (["command", "-v", "rm"], ["command", "rm"]),
    ],
)
def test_a_wrapper_runs_the_program_after_its_own_options(words, found):
    assert run_by(words) == found
    assert list(programs_run(words))[-1] == ["rm", *words[words.index("rm") + 1 :]]


@pytest.mark.parametrize(
    "words",
    [
        ["env", "-iu", "X", "rm"],
        ["sudo", "-Eu", "root", "rm"],
        ["sudo", "-uroot", "rm"],
        ["timeout", "-vs", "KILL", "5", "rm"],
        ["xargs", "-0I", "{}", "rm"],
        ["nice", "-n5", "rm"],
        ["ionice", "-tc3", "rm"],
        ["strace", "-fo", "trace", "rm"],
    ],
)
def test_short_options_run_together_are_read_as_the_wrapper_reads_them(words):
    """The last letter of `-iu` takes the next word as its value; in `-uroot` it is attached."""
    assert run_by(words) == [words[0], "rm"]


@pytest.mark.parametrize(
    ("words", "found"),
    [
        (["bash", "-c", "rm x"], ["bash", "rm"]),
        (["bash", "-lc", "rm x; id"], ["bash", "rm", "id"]),
        (["bash", "-o", "pipefail", "-xc", "rm x"], ["bash", "rm"]),
        (["sh", "--norc", "-c", "echo $(rm x)"], ["sh", "echo", "rm"]),
        (["zsh", "-c", "rm x"], ["zsh", "rm"]),
        (["fish", "-c", "rm x"], ["fish", "rm"]),
        (["/bin/dash", "-c", "rm x"], ["dash", "rm"]),
        (["bash", "-c", "bash -c 'sh -c \"rm x\"'"], ["bash", "bash", "sh", "rm"]),
        (["eval", "rm", "x"], ["eval", "rm"]),
        (["eval", "sudo rm x; id"], ["eval", "sudo", "rm", "id"]),
        (["env", "-S", "rm x"], ["env", "rm"]),
        (["env", "-Srm x"], ["env", "rm"]),
        (["env", "--split-string=rm", "x"], ["env", "rm", "x"]),
        (["sudo", "bash", "-c", "rm x"], ["sudo", "bash", "rm"]),
        (["xargs", "sh", "-c", "rm $0"], ["xargs", "sh", "rm"]),
    ],
)
def test_a_shell_or_eval_runs_its_script(words, found):
    assert run_by(words) == found


@pytest.mark.parametrize(
    "words",
    [
        ["nice"] * 30 + ["rm", "x"],
        ["command"] * 9 + ["rm", "x"],
        ["sudo", "-u", "a"] * 500 + ["rm"],
        ["sudo", "eval"] * 6 + ["rm x"],
    ],
)
def test_a_long_chain_of_wrappers_still_names_the_program_at_its_end(words):
    assert run_by(words)[-1] == "rm"


def test_a_line_built_to_branch_at_every_word_is_read_in_bounded_work():
    words = ["env", "--split-string=env"] * 40 + ["rm", "x"]  # each env both runs and wraps
    found = list(programs_run(words))
    assert ["rm", "x"] in found and len(found) < 100  # not one reading per way through


@pytest.mark.parametrize(
    "words",
    [
        ["python3", "-c", "rm x"],
        ["bash", "script.sh"],
        ["bash", "--", "script.sh"],
        ["sh", "-c"],
        ["eval"],
        ["ls", "-c", "rm"],
        ["perl", "-e", "rm"],
        ["FOO=1", "BAR=2"],
        [],
    ],
)
def test_what_runs_no_named_program_yields_only_itself(words):
    assert run_by(words) == [program(w) for w in words if "=" not in w][:1]


def test_assignments_before_a_command_are_not_the_program():
    assert list(programs_run(["LD_PRELOAD=/x.so", "GIT_DIR=/y", "git", "status"])) == [
        ["git", "status"]
    ]


# ----------------------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    ("pattern", "parsed"),
    [
        ("git status*", (["git", "status"], True)),
        ("git status *", (["git", "status"], True)),
        ("ls", (["ls"], False)),
        ("grep 'a b' *", (["grep", "a b"], True)),
        ("echo \\\\*", (["echo", "\\*"], False)),  # an escaped star is a star, not "more"
        ("git 'unbalanced", (["git", "'unbalanced"], False)),
        ("", ([], False)),
        ("*", ([], True)),
    ],
)
def test_a_pattern_is_its_words_and_whether_more_may_follow(pattern, parsed):
    assert pattern_words(pattern) == parsed


@pytest.mark.parametrize(
    ("pattern", "words", "matches"),
    [
        ("git status*", ["git", "status"], True),
        ("git status*", ["git", "status", "-s", "--", "x"], True),
        ("git status*", ["git", "status-x"], False),
        ("git status*", ["git", "statusx"], False),
        ("git status", ["git", "status", "-s"], False),
        ("git status*", ["/usr/bin/git", "status"], False),
        ("git status*", ["git", "-c", "x=y", "status"], False),
        ("git status*", ["GIT_DIR=/x", "git", "status"], False),
        ("git status*", ["git"], False),
        ("ls *", ["ls"], True),
        ("git log -n*", ["git", "log", "-n", "5"], True),
        (
            "git log -n*",
            ["git", "log", "-n5"],
            False,
        ),  # a final * means more words, not more letters
        ("git l?g", ["git", "log"], True),
        ("cat *.txt", ["cat", "a.txt"], True),
        ("cat *.txt", ["cat", "a.txt", "b.txt"], False),
        ("", [], True),
    ],
)
def test_an_allow_pattern_matches_word_for_word_as_written(pattern, words, matches):
    assert matches_as_written(pattern, words) is matches


@pytest.mark.parametrize(
    ("pattern", "run", "named"),
    [
        ("rm *", ["rm"], True),
        ("rm *", ["rm", "-rf", "/"], True),
        ("/bin/rm *", ["rm", "x"], True),
        ("rm *", ["rmdir", "x"], False),
        ("git push*", ["git", "-c", "x=y", "push", "origin"], True),
        ("git push --force*", ["git", "push", "origin", "--force"], True),
        ("git push --force*", ["git", "--force", "push"], False),  # in order
        ("git push*", ["git", "pull"], False),
        ("python* *", ["python3.12", "-c", "x"], True),
        ("python*", ["python3.12", "-c", "x"], False),  # the final * means any arguments
        ("curl * | sh", ["curl", "x"], False),
        ("", ["rm"], False),
    ],
)
def test_a_deny_pattern_names_the_program_and_its_words_in_order(pattern, run, named):
    assert names_program(pattern, run) is named


# ----------------------------------------------------------------------------- allow rules


def covers(line: str) -> bool:
    return allow_covers(shlex.split(line))


# What the vetting kept from the options it used to refuse one by one.
@pytest.mark.parametrize(
    "line",
    [
        "git -c core.pager=id log",
        "git -C /elsewhere status",
        "git --git-dir=/x status",
        "git --work-tree /x diff",
        "git -p log",
        "git --exec-path=/x log",
        "git diff --ext-diff",
        "git log --output=/tmp/x",
        "git grep --open-files-in-pager=id x",
        "git fetch --upload-pack=id",
        "git --config-env=core.pager=X log",
        "find . -exec id ;",
        "find . -execdir id +",
        "find . -ok id",
        "find . -delete",
        "find . -fprintf f x",
        "find . -fls f",
        "fd -x id",
        "fdfind --exec-batch id",
        "rg --pre id x",
        "rg --pre=id x",
        "rg -z x",
        "tar -tf a.tar -I id",
        "tar --to-command=id -xf a",
        "tar --checkpoint-action=exec=id -tf a",
        "tar --use-compress-program=id",
        "less -o log f",
        "sort -o /etc/x f",
        "sort -o/etc/x f",
        "sort --output f",
        "curl -o f u",
        "sed -i s/a/b/ f",
        "sed -i.bak s/a/b/ f",
        "sed --in-place f",
        "sed -f script.sed f",
        "sed --file=script.sed f",
        "sed 's/a/b/w /tmp/out' f",
        "sed '1e id' f",
        "sed -n '$e id' f",
        "sed '/x/r /etc/shadow' f",
        "sed '/x/!W out' f",
        "sed '{e id}' f",
        "awk 'BEGIN{system(\"id\")}'",
        "gawk '{print | \"sh\"}'",
        "mawk '{print > \"f\"}'",
        "awk 'BEGIN{\"id\" | getline x}'",
        "awk -f prog.awk",
        "nawk -i inc",
        "gawk --exec=prog",
        "gawk -E prog",
        "/usr/bin/sed -i s/a/b/ f",
        # a long option abbreviated, as GNU tools and git take any start of one
        "sed --in s/a/b/ f",
        "sed --in-pl=.bak s/a/b/ f",
        "sed --fi=script.sed f",
        "sort --outp=/etc/x f",
        "sort --out f",
        "tar --to-com=sh -xf a.tar",
        "tar --checkpoint-act=exec=id -tf a",
        "tar --use-comp=id -tf a",
        "git diff --ext",
        "gawk --exe prog",
        "awk --fil=prog.awk",
        "gawk --incl=lib",
        # a sed script or option inside an option word
        "sed '-e1e id' f",
        "sed '-ne$e id' f",
        "sed '--expression=1e id' f",
        "sed '--expr=s/a/b/w /tmp/out' f",
        "sed -ni s/a/b/p f",
        "sed -nf script.sed f",
        "sed -sEi.bak s/a/b/ f",
        # and sed scripts, also where a text or label could hide the command after it
        "sed 's/a/b/e' f",
        "sed 's/a/b/ w FILE' f",
        "sed 'e CMD' f",
        "sed 'w FILE' f",
        "sed -n 'W FILE' f",
        "sed 'R /etc/shadow' f",
        "sed 's/a/b/;e id' f",
        "sed '1!G;h;$!d;e id' f",
        "sed -e p -e 'e id' f",
        "sed -e '$!{N;e id' -e '}' f",
        "sed 1,3e f",
        "sed ':x}a;e id' f",
        "sed 'b x}a;e id' f",
        "tar -F x -tf a.tar",
        "git show --ext-diff",
        "git grep -O id x",
        "find . -exec id \\;",
        "find . -okdir id \\;",
        "find . -fprint /tmp/x",
        "find . -fprint0 /tmp/x",
        "gawk -o '{print}'",
        "sort -of f",
        "sort --compress-program=id f",
        "rg --search-zip x",
        "fd -X id",
        "fd --exec id",
    ],
)
def test_options_that_write_files_or_run_code_still_ask(line):
    assert not covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "sed 's/x/y/ge' f",
        "sed 's/a/b/gw FILE' f",
        "sed 's/a/b/pw FILE' f",
        "sed 's|a|b|e' f",
        "sed '\\%x%e id' f",
        "sed -n '/x/Ie id' f",
        "sed '/x/Mw out' f",
        "sed 'v' f",  # a command the reading does not know
        "sed 's/a/b' f",
        "sed 'y/ab/' f",
        "sed 's\\a\\b\\' f",  # not understood
    ],
)
def test_a_sed_script_that_runs_writes_or_is_not_understood_asks(line):
    assert not covers(line)


@pytest.mark.parametrize(
    "script",
    [
        "# a comment ends at the new line, even after a backslash \\\ns/a/b/ge",
        "p\ns/a/b/ge",
        "1{\np\n}\ns/x/y/pw /tmp/out",
        "s/a\nb/c/",
    ],
)
def test_a_sed_script_is_read_line_by_line_as_gnu_sed_reads_it(script):
    assert not allow_covers(["sed", "-n", script, "f"])


@pytest.mark.parametrize(
    "words",
    [
        ["sed", "-n", "1,20p", "f"],
        ["sed", "s/a/b/g", "f"],
        ["sed", "-ne", "s/if/of/p", "f"],
        ["sed", "-es/fi/if/", "f"],
        ["sed", "-l80", "-n", "l", "f"],
        ["sed", "-E", "s/(a)/\\1/", "f"],
        ["sed", "--expression=s/a/b/", "f"],
        ["sed", "-nE", "-e", "/x/p", "f"],
        ["sed", "--debug", "p", "f"],
        ["sed", "/start/,/end/d", "f"],
        ["sed", "-n", "$p", "f"],
        ["sed", "1~2d", "f"],
        ["sed", "0,/re/s//X/", "f"],
        ["sed", "-n", "/a/,+3p", "f"],
        ["sed", ":a;N;$!ba;s/\\n/ /g", "f"],
        ["sed", "y/abc/xyz/", "f"],
        ["sed", "s|/usr|/opt|g", "f"],
        ["sed", "-n", "/foo/{p;q}", "f"],
        ["sed", "=", "f"],
        ["sed", "s/a/b/3g", "f"],
        ["sed", "2q", "f"],
        ["sed", "Q5", "f"],
        ["sed", "-n", "/x/I,/y/Mp", "f"],
        ["sed", "-s", "-n", "1p", "a", "b"],
        ["sed", "-n", "# print\np", "f"],
        ["sed", "s/x/y/;p", "f"],
        ["sed", "1i\\header", "f"],
        ["sed", "$a footer; e id", "f"],  # text to the end of the line: nothing runs
        ["sed", "-e", "1a foo\\", "-e", "e id", "f"],  # the escaped line end goes on into the text
    ],
)
def test_sed_scripts_that_only_read_are_covered(words):
    assert allow_covers(words)


@pytest.mark.parametrize(
    "line",
    [
        "tar --rsh-command=/x -tf h:a",
        "tar --info-script=x -tf a.tar",
        "tar --new-volume-script=x -tf a.tar",
        "tar -tf host:file",
        "tar -f host:file -t",
        "tar tvf host:file",
        "tar tfz host:file",
        "tar -tf user@host:/x",
        "tar --file=host:x -t",
        "tar -xf a.tar",
        "tar xf a.tar",
        "tar -cf x.tar .",
        "tar -tf a.tar -C /",
        "tar -T list -tf a.tar",
        "tar -g snap -tf a.tar",
        "tar -tx -f a.tar",
        "tar",
    ],
)
def test_tar_asks_unless_it_lists_or_extracts_to_stdout_a_local_archive(line):
    assert not covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "tar -tzf x.tgz",
        "tar tvf a.tar",
        "tar --list --file=a.tar",
        "tar -tf a.tar",
        "tar -xOf a.tar member",
        "tar xOzf a.tgz",
        "tar --extract --to-stdout -f a.tar",
        "tar -tf a:b --force-local",
        "tar -tf ./a:b",
        "tar -tjvf x.tar.bz2 --wildcards 'dir/*'",
    ],
)
def test_tar_listing_and_extracting_to_stdout_are_covered(line):
    assert covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "git diff --no-index ~/.ssh/id_rsa /dev/null",
        "git diff /dev/null ~/.ssh/id_rsa",
        "git diff ../../.ssh/id_rsa README.md",
        "git diff '$HOME/.ssh/id_rsa' README.md",
        "git diff '{/etc/passwd,README.md}'",
        "git diff '.?/.?/etc/passwd' README.md",
        "git diff --textconv",
        "git diff --no-in a b",
        "git diff -O/tmp/order",
        "git show --textconv",
        "git grep --no-index x",
        "git grep -f ~/.ssh/id_rsa",
        "git blame --contents ~/.ssh/id_rsa f",
        "git ls-files -X /etc/x",
        "git ls-files --exclude-from=x",
        "git cat-file --textconv HEAD:x",
        "git lg",
        "git co main",
        "git commit -m x",
        "git push",
        "git config --get user.name",
        "git remote -v",
        "git help log",
        "git log --help",
        "git branch new",
        "git branch -d x",
        "git branch --edit-description",
        "git branch --color newbranch",
        "git tag v1",
        "git tag -d v1",
        "git tag -v v1",
        "git stash",
        "git stash drop",
        "git reflog expire --all",
        "git log -- ~/.ssh",
        "git log --format=x -- /etc",
    ],
)
def test_git_asks_for_aliases_writing_forms_and_options_or_paths_that_reach_elsewhere(line):
    assert not covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "git status",
        "git status -s",
        "git log --oneline -5",
        "git log -n 5 --stat",
        "git diff HEAD~1 -- src/x.py",
        "git diff --cached",
        "git show HEAD:README.md",
        "git --no-pager log",
        "git -P diff",
        "git --version",
        "git branch",
        "git branch -a -v",
        "git branch --contains HEAD~2",
        "git branch --list 'feat*'",
        "git branch --merged main",
        "git tag -l 'v1*'",
        "git tag -n5",
        "git tag --sort=-creatordate",
        "git rev-parse HEAD",
        "git ls-files",
        "git blame -L 1,5 f",
        "git grep -n needle -- src",
        "git log origin/main..HEAD",
        "git show stash@{0}",
        "git stash list",
        "git stash show -p",
        "git reflog",
        "git reflog show main",
        "git describe --tags",
        "git shortlog -sn",
        "git log -p --no-ext-diff",
    ],
)
def test_git_read_only_subcommands_in_read_only_forms_are_covered(line):
    assert covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "find . -files0-from list",
        "find . -newfangled",
        "find -D exec .",
    ],
)
def test_find_asks_for_any_test_or_action_not_known_to_only_read(line):
    assert not covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "find . -name '*.py' -type f",
        "find src -maxdepth 2 -not -path '*/.git/*' -print0",
        "find . ( -name a -o -name b ) -prune",
        "find -L . -newer x -size +1k -printf '%p\\n'",
        "find . -name -exec",  # a pattern that looks like an action
        "find . -newermt 2024-01-01",
        "find",
    ],
)
def test_find_with_known_tests_and_actions_is_covered(line):
    assert covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "gawk '@load \"filefuncs\"'",
        "gawk '@include \"x\"'",
        'gawk \'BEGIN{f="sys" "tem"; @f("id")}\'',
        "awk 'BEGIN{print ENVIRON[\"KEY\"]}'",
        "gawk -l filefuncs '{print}'",
        "gawk --load=x '{print}'",
        "gawk -p '{print}'",
        "gawk -d '{print}'",
        "gawk -D '{print}'",
    ],
)
def test_awk_asks_for_anything_that_runs_writes_loads_or_reads_the_environment(line):
    assert not covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "awk '{print $1}' f",
        "awk -F: '{print $NF}' /etc/passwd",
        "awk -v n=2 'NR==n' f",
        "gawk --sandbox '{print}'",
    ],
)
def test_awk_that_only_reads_is_covered(line):
    assert covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "xargs grep x",
        "xargs",
        "env",
        "env -i ls",
        "printenv",
        "printenv HOME",
        "sudo ls",
        "doas ls",
        "nice ls",
        "timeout 5 ls",
        "nohup ls",
        "bash script.sh",
        "sh -c ls",
        "eval ls",
        "exec ls",
        "less f",
        "less -R f",
        "more f",
        "most f",
        "man ls",
        "vi f",
        "vim f",
        "nvim f",
        "emacs f",
        "nano f",
        "ed f",
        "watch ls",
        "script -c id",
        "source x",
        ". x",
    ],
)
def test_a_program_that_runs_others_or_has_a_shell_escape_is_never_covered(line):
    assert not covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "sort -T /tmp f",
        "sort --files0-from=f",
        "sort -u -ro x f",
        "rg --hostname-bin=id x",
        "rg -nz x",
        "fd -l",
        "curl -so f u",
        "GIT_EXTERNAL_DIFF=x git diff",
        "LD_PRELOAD=x ls",
    ],
)
def test_sort_rg_fd_and_other_programs_ask_for_options_that_write_or_run(line):
    assert not covers(line)


@pytest.mark.parametrize(
    "line",
    [
        "sort -u -r f",
        "sort -k2,2n -t, f",
        "sort -nk2 f",
        "sort --key=2 f",
        "rg -n needle",
        "rg -e foo -g '*.py'",
        "fd -e py",
        "fd -H name",
        "ls -l",
        "cat -n f",
        "ls -la src",
        "wc -l f",
    ],
)
def test_sort_rg_fd_and_other_programs_are_covered_without_such_options(line):
    assert covers(line)


@pytest.mark.parametrize(
    "words",
    [
        ["sed", "s/a/b/;" * 50_000, "f"],
        ["sed", "{" * 50_000],
        ["sed", "s/" + "\\" * 50_001],
        ["sed", "-e", "1a " + "\\\n" * 50_000],
        ["sed", ":" + "a" * 50_000],
        ["git", "log", *["-n"] * 50_000],
        ["git", *["--no-pager"] * 50_000],
        ["git", "branch", *["--contains"] * 50_000],
        ["find", ".", *["-name", "x"] * 50_000],
        ["tar", "-" + "v" * 50_000 + "tf", "a"],
        ["tar", "t" * 50_000, *["a"] * 1000],
        ["awk", "x" * 50_000],
        ["sort", *["-k1"] * 50_000],
        ["rg", *["-n"] * 50_000],
        ["ls", *["-l"] * 50_000],
    ],
)
def test_a_huge_command_is_read_in_one_pass(words):
    """A reading that went back over the words would take minutes here, not a fraction of
    a second (measured in CPU time, which other work on the machine does not stretch)."""
    started = time.process_time()
    allow_covers(words)
    assert time.process_time() - started < 2


@pytest.mark.parametrize("program", ["git", "sed", "tar", "find", "awk", "sort", "rg", "ls"])
def test_malformed_words_never_raise(program):
    odd = [
        "",
        "-",
        "--",
        "---",
        "-=",
        "--=",
        "=",
        "'",
        "\\",
        "\n",
        "{",
        "}",
        ":",
        "s",
        "s/",
        "y",
        "/",
        "\\%",
        "-e",
        "-f",
        "-l",
        "--file",
        "--expression",
        "--list",
        "~",
        "$",
        "branch",
        "tag",
        "stash",
        "reflog",
        "diff",
        "\x00",
        "é",
        "\udcff",
    ]
    for first in odd:
        for second in odd:
            assert allow_covers([program, first, second]) in (True, False)
