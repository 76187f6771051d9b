"""toolnexus.shell: a command line read the way the shell reads it, for the command rules.
`Parsed` cuts it into simple commands, also those inside `$(...)` and backticks, and calls
it plain only when it is one command with nothing chained, substituted or redirected; a
line nobody can read (unbalanced quotes) is not ok. `programs_run` names every program a
command runs, through wrappers (`sudo`, `env`, `xargs`...) and scripts (`bash -c`, `eval`,
`env -S`). Patterns match word for word as written, or, for deny rules, the program
however it is spelled; `risky` spots the options that make a read-only program write
files or run code."""

from __future__ import annotations

import pytest

from toolnexus.shell import (
    Parsed,
    matches_as_written,
    names_program,
    pattern_words,
    program,
    programs_run,
    risky,
)


def commands(line: str) -> list[list[str]]:
    return Parsed(line).commands


def run_by(words: list[str]) -> list[str]:
    """The programs `words` runs, in the order they are found."""
    return [run[0] for run in programs_run(words)]


# ----------------------------------------------------------------------------- Parsed

@pytest.mark.parametrize(("line", "words"), [
    ("ls -la src", ["ls", "-la", "src"]),
    ("ls 'a b' \"c d\" e\\ f", ["ls", "a b", "c d", "e f"]),
    ("echo 'a;b' \"a|b\" a\\;b a\\&\\&b", ["echo", "a;b", "a|b", "a;b", "a&&b"]),
    ("echo a#b '#' \\#", ["echo", "a#b", "#", "#"]),
    ("echo '$HOME' ${HOME} ~ *.py", ["echo", "$HOME", "${HOME}", "~", "*.py"]),
    ("FOO=1 BAR='x y' git status", ["FOO=1", "BAR=x y", "git", "status"]),
    ("  git\tstatus  ", ["git", "status"]),
    ("echo 'line one\nline two'", ["echo", "line one ; line two"]),
])
def test_one_simple_command_is_plain(line, words):
    parsed = Parsed(line)
    assert (parsed.ok, parsed.plain, parsed.commands) == (True, True, [words])


@pytest.mark.parametrize(("line", "expected"), [
    ("a; b", [["a"], ["b"]]), ("a;b", [["a"], ["b"]]), ("a && b || c", [["a"], ["b"], ["c"]]),
    ("a|b", [["a"], ["b"]]), ("a |& b", [["a"], ["b"]]), ("a & b", [["a"], ["b"]]),
    ("a &", [["a"]]), ("a\nb", [["a"], ["b"]]), ("a\r\nb", [["a"], ["b"]]),
    ("(a; b)", [["a"], ["b"]]), ("{ a; }", [["{", "a"], ["}"]]),
    ("a;;b", [["a"], ["b"]]), (";a", [["a"]]),
])
def test_chained_commands_are_each_read_and_none_is_plain(line, expected):
    parsed = Parsed(line)
    assert parsed.commands == expected and not parsed.plain and parsed.ok


@pytest.mark.parametrize("line", [
    "ls > out", "ls >> out", "ls >out", "ls 2>&1", "ls 2>/dev/null", "ls &> all", "ls >| f",
    "cat < in", "cat <<EOF", "cat <<< 'word'", "ls>out",
])
def test_a_redirection_is_not_plain(line):
    parsed = Parsed(line)
    assert parsed.commands[0][0] in ("ls", "cat") and not parsed.plain


def test_a_hash_hides_nothing():
    assert commands("ls # ; rm -rf x") == [["ls", "#"], ["rm", "-rf", "x"]]
    assert Parsed("ls #comment").commands == [["ls", "#comment"]]


@pytest.mark.parametrize(("line", "inner"), [
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
])
def test_what_a_substitution_runs_is_a_command_of_the_line(line, inner):
    parsed = Parsed(line)
    assert inner in parsed.commands and not parsed.plain


@pytest.mark.parametrize("line", [
    'echo "$( (rm x) )"', 'echo "$(cat <(rm x))"', 'echo "$(rm x $(id))"', 'echo "a$( (rm x))b"',
    'echo "$(rm x"', 'echo "`echo \\`rm x\\``"', "echo `echo \\`rm x\\``", 'echo "`rm x"',
])
def test_a_substitution_with_parentheses_inside_or_left_open_is_read_too(line):
    parsed = Parsed(line)
    assert "rm" in [words[0] for words in parsed.commands] and not parsed.plain


@pytest.mark.parametrize("line", [
    "ls 'x", 'ls "x', "echo 'it''s", 'echo "a\\"', "ls \\", 'echo "$(echo \')"',
])
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

@pytest.mark.parametrize(("word", "name"), [
    ("rm", "rm"), ("\\rm", "rm"), ("/bin/rm", "rm"), ("./rm", "rm"), ("../../usr/bin/rm", "rm"),
    ("\\/usr/bin/rm", "rm"), ("//bin//rm", "rm"), ("", ""),
])
def test_a_program_is_named_however_its_path_is_spelled(word, name):
    assert program(word) == name


@pytest.mark.parametrize(("words", "found"), [
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
])
def test_a_wrapper_runs_the_program_after_its_own_options(words, found):
    assert run_by(words) == found
    assert list(programs_run(words))[-1] == ["rm", *words[words.index("rm") + 1:]]


@pytest.mark.parametrize("words", [
    ["env", "-iu", "X", "rm"], ["sudo", "-Eu", "root", "rm"], ["sudo", "-uroot", "rm"],
    ["timeout", "-vs", "KILL", "5", "rm"], ["xargs", "-0I", "{}", "rm"], ["nice", "-n5", "rm"],
    ["ionice", "-tc3", "rm"], ["strace", "-fo", "trace", "rm"],
])
def test_short_options_run_together_are_read_as_the_wrapper_reads_them(words):
    """The last letter of `-iu` takes the next word as its value; in `-uroot` it is attached."""
    assert run_by(words) == [words[0], "rm"]


@pytest.mark.parametrize(("words", "found"), [
    (["bash", "-c", "rm x"], ["bash", "rm"]),
    (["bash", "-lc", "rm x; id"], ["bash", "rm", "id"]),
    (["bash", "-o", "pipefail", "-xc", "rm x"], ["bash", "rm"]),
    (["sh", "--norc", "-c", "echo $(rm x)"], ["sh", "echo", "rm"]),
    (["zsh", "-c", "rm x"], ["zsh", "rm"]), (["fish", "-c", "rm x"], ["fish", "rm"]),
    (["/bin/dash", "-c", "rm x"], ["dash", "rm"]),
    (["bash", "-c", "bash -c 'sh -c \"rm x\"'"], ["bash", "bash", "sh", "rm"]),
    (["eval", "rm", "x"], ["eval", "rm"]),
    (["eval", "sudo rm x; id"], ["eval", "sudo", "rm", "id"]),
    (["env", "-S", "rm x"], ["env", "rm"]),
    (["env", "-Srm x"], ["env", "rm"]),
    (["env", "--split-string=rm", "x"], ["env", "rm", "x"]),
    (["sudo", "bash", "-c", "rm x"], ["sudo", "bash", "rm"]),
    (["xargs", "sh", "-c", "rm $0"], ["xargs", "sh", "rm"]),
])
def test_a_shell_or_eval_runs_its_script(words, found):
    assert run_by(words) == found


@pytest.mark.parametrize("words", [
    ["nice"] * 30 + ["rm", "x"], ["command"] * 9 + ["rm", "x"], ["sudo", "-u", "a"] * 500 + ["rm"],
    ["sudo", "eval"] * 6 + ["rm x"],
])
def test_a_long_chain_of_wrappers_still_names_the_program_at_its_end(words):
    assert run_by(words)[-1] == "rm"


def test_a_line_built_to_branch_at_every_word_is_read_in_bounded_work():
    words = ["env", "--split-string=env"] * 40 + ["rm", "x"]  # each env both runs and wraps
    found = list(programs_run(words))
    assert ["rm", "x"] in found and len(found) < 100  # not one reading per way through


@pytest.mark.parametrize("words", [
    ["python3", "-c", "rm x"], ["bash", "script.sh"], ["bash", "--", "script.sh"], ["sh", "-c"],
    ["eval"], ["ls", "-c", "rm"], ["perl", "-e", "rm"], ["FOO=1", "BAR=2"], [],
])
def test_what_runs_no_named_program_yields_only_itself(words):
    assert run_by(words) == [program(w) for w in words if "=" not in w][:1]


def test_assignments_before_a_command_are_not_the_program():
    assert list(programs_run(["LD_PRELOAD=/x.so", "GIT_DIR=/y", "git", "status"])) == [
        ["git", "status"]]


# ----------------------------------------------------------------------------- patterns

@pytest.mark.parametrize(("pattern", "parsed"), [
    ("git status*", (["git", "status"], True)),
    ("git status *", (["git", "status"], True)),
    ("ls", (["ls"], False)),
    ("grep 'a b' *", (["grep", "a b"], True)),
    ("echo \\\\*", (["echo", "\\*"], False)),  # an escaped star is a star, not "more"
    ("git 'unbalanced", (["git", "'unbalanced"], False)),
    ("", ([], False)),
    ("*", ([], True)),
])
def test_a_pattern_is_its_words_and_whether_more_may_follow(pattern, parsed):
    assert pattern_words(pattern) == parsed


@pytest.mark.parametrize(("pattern", "words", "matches"), [
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
    ("git log -n*", ["git", "log", "-n5"], False),  # a final * means more words, not more letters
    ("git l?g", ["git", "log"], True),
    ("cat *.txt", ["cat", "a.txt"], True),
    ("cat *.txt", ["cat", "a.txt", "b.txt"], False),
    ("", [], True),
])
def test_an_allow_pattern_matches_word_for_word_as_written(pattern, words, matches):
    assert matches_as_written(pattern, words) is matches


@pytest.mark.parametrize(("pattern", "run", "named"), [
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
])
def test_a_deny_pattern_names_the_program_and_its_words_in_order(pattern, run, named):
    assert names_program(pattern, run) is named


# ----------------------------------------------------------------------------- risky options

@pytest.mark.parametrize("words", [
    ["git", "-c", "core.pager=id", "log"], ["git", "-C", "/elsewhere", "status"],
    ["git", "--git-dir=/x", "status"], ["git", "--work-tree", "/x", "diff"],
    ["git", "-p", "log"], ["git", "--exec-path=/x", "log"], ["git", "diff", "--ext-diff"],
    ["git", "log", "--output=/tmp/x"], ["git", "grep", "--open-files-in-pager=id", "x"],
    ["git", "fetch", "--upload-pack=id"], ["git", "--config-env=core.pager=X", "log"],
    ["find", ".", "-exec", "id", ";"], ["find", ".", "-execdir", "id", "+"],
    ["find", ".", "-ok", "id"], ["find", ".", "-delete"], ["find", ".", "-fprintf", "f", "x"],
    ["find", ".", "-fls", "f"], ["fd", "-x", "id"], ["fdfind", "--exec-batch", "id"],
    ["rg", "--pre", "id", "x"], ["rg", "--pre=id", "x"], ["rg", "-z", "x"],
    ["tar", "-tf", "a.tar", "-I", "id"], ["tar", "--to-command=id", "-xf", "a"],
    ["tar", "--checkpoint-action=exec=id", "-tf", "a"], ["tar", "--use-compress-program=id"],
    ["less", "-o", "log", "f"], ["sort", "-o", "/etc/x", "f"], ["sort", "-o/etc/x", "f"],
    ["sort", "--output", "f"], ["curl", "-o", "f", "u"],
    ["sed", "-i", "s/a/b/", "f"], ["sed", "-i.bak", "s/a/b/", "f"], ["sed", "--in-place", "f"],
    ["sed", "-f", "script.sed", "f"], ["sed", "--file=script.sed", "f"],
    ["sed", "s/a/b/w /tmp/out", "f"], ["sed", "1e id", "f"], ["sed", "-n", "$e id", "f"],
    ["sed", "/x/r /etc/shadow", "f"], ["sed", "/x/!W out", "f"], ["sed", "{e id}", "f"],
    ["awk", "BEGIN{system(\"id\")}"], ["gawk", "{print | \"sh\"}"], ["mawk", "{print > \"f\"}"],
    ["awk", "BEGIN{\"id\" | getline x}"], ["awk", "-f", "prog.awk"], ["nawk", "-i", "inc"],
    ["gawk", "--exec=prog"], ["gawk", "-E", "prog"], ["git", "log", "--pager=id"],
    ["/usr/bin/sed", "-i", "s/a/b/", "f"],
])
def test_options_that_write_files_or_run_code_are_risky(words):
    assert risky(words)


@pytest.mark.parametrize("words", [
    ["sed", "--in", "s/a/b/", "f"], ["sed", "--in-pl=.bak", "s/a/b/", "f"],
    ["sed", "--fi=script.sed", "f"], ["sort", "--outp=/etc/x", "f"], ["sort", "--out", "f"],
    ["tar", "--to-com=sh", "-xf", "a.tar"], ["tar", "--checkpoint-act=exec=id", "-tf", "a"],
    ["tar", "--use-comp=id", "-tf", "a"], ["git", "diff", "--ext"],
    ["gawk", "--exe", "prog"], ["awk", "--fil=prog.awk"], ["gawk", "--incl=lib"],
])
def test_a_long_option_abbreviated_is_as_risky_as_written_out(words):
    """GNU tools and git take any unambiguous start of a long option for the option."""
    assert risky(words)


@pytest.mark.parametrize("words", [
    ["sed", "-e1e id", "f"], ["sed", "-ne$e id", "f"], ["sed", "--expression=1e id", "f"],
    ["sed", "--expr=s/a/b/w /tmp/out", "f"], ["sed", "-ni", "s/a/b/p", "f"],
    ["sed", "-nf", "script.sed", "f"], ["sed", "-sEi.bak", "s/a/b/", "f"],
])
def test_a_sed_script_or_option_inside_an_option_word_is_read_too(words):
    assert risky(words)


@pytest.mark.parametrize("words", [
    ["sed", "-ne", "s/if/of/p", "f"], ["sed", "-es/fi/if/", "f"], ["sed", "-l80", "-n", "l", "f"],
    ["sed", "--expression=s/a/b/", "f"], ["sed", "-nE", "-e", "/x/p", "f"], ["sed", "--debug", "f"],
])
def test_harmless_sed_options_with_their_scripts_are_not_risky(words):
    assert not risky(words)


@pytest.mark.parametrize("words", [
    ["git", "status", "--"], ["git", "status", "-s"], ["git", "log", "-n", "5", "--oneline"],
    ["git", "diff", "HEAD~1"],
    ["find", ".", "-name", "*.py", "-type", "f"], ["fd", "-e", "py"], ["rg", "-n", "needle"],
    ["tar", "-tf", "a.tar"], ["sort", "-u", "-r", "f"], ["less", "-R", "f"],
    ["sed", "-n", "1,5p", "f"], ["sed", "s/one/two/g", "f"], ["sed", "-E", "s/(a)/\\1/", "f"],
    ["sed", "s/where/there/", "f"], ["sed", "s/x/y/;p", "f"], ["awk", "{print $1}", "f"],
    ["awk", "-F:", "{print $NF}", "/etc/passwd"], ["ls", "-l"], ["cat", "-n", "f"],
])
def test_read_only_options_are_not_risky(words):
    assert not risky(words)
