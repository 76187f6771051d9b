"""toolnexus.tools.builtins promises the opt-in built-in tools, bound to a workspace: a tool
that must ask first returns its approval request instead of failing (`guarded`);
`read_file` numbers lines and pages through any file, a huge line or a huge file alike,
saying where to go on; `list_dir`, `glob` and `grep` stop at their caps and say so, and
`glob` patterns keep `*` inside one folder; `edit_file` replaces one exact piece as
written and leaves the file alone when it cannot; `builtin_tools` picks tools by name.

The tools' ordinary use, and bash (a subprocess), are in tests/library/test_tool_sources.py;
secrets, special files and the caps on a large tree in tests/cli/test_security_tools.py.
This file calls the tools directly, on odd and huge input."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolnexus.tools.builtins as builtins_module
from toolnexus.tools.builtins import ALL, Builtins, builtin_tools, glob_regex, guarded
from toolnexus.tools.tool import ToolContext, ToolResult
from toolnexus.tools.workspace import ApprovalNeeded, Refused, Workspace

ASKING = ToolResult("asking")


@pytest.fixture
def tools(tmp_path: Path) -> Builtins:
    return Builtins(Workspace(tmp_path))


def read(tools: Builtins, path: str | Path, **kw: int) -> str:
    return tools.read_file(str(path), context=ToolContext(), **kw)


def numbered(*lines: tuple[int, str]) -> str:
    return "\n".join(f"{n:>6}\t{text}" for n, text in lines)


# ----------------------------------------------------------------------------- guarded


async def test_guarded_returns_the_approval_request_of_a_sync_or_async_tool():
    @guarded
    def sync_tool() -> str:
        """Sync."""
        raise ApprovalNeeded(ASKING)

    @guarded
    async def async_tool() -> str:
        """Async."""
        raise ApprovalNeeded(ASKING)

    assert sync_tool() is ASKING and await async_tool() is ASKING
    assert (sync_tool.__name__, async_tool.__doc__) == ("sync_tool", "Async.")


async def test_guarded_lets_every_other_failure_through():
    @guarded
    def sync_tool() -> str:
        raise FileNotFoundError("gone")

    @guarded
    async def async_tool() -> str:
        raise Refused("no")

    with pytest.raises(FileNotFoundError):
        sync_tool()
    with pytest.raises(Refused):
        await async_tool()


def test_each_tool_is_offered_by_its_own_name_doc_and_parameters_without_the_context():
    offered = {t.name: t for t in builtin_tools(True)}
    assert list(offered) == list(ALL)
    read_file = offered["read_file"]
    assert read_file.description == "Read a text file, numbering its lines."
    assert read_file.input_schema["properties"] == {
        "path": {"type": "string", "description": "the file to read."},
        "offset": {"type": "integer", "description": "the first line to show (1-based)."},
        "limit": {"type": "integer", "description": "how many lines to show at most."},
    }
    assert read_file.input_schema["required"] == ["path"]
    assert read_file.context_param == "context"


@pytest.mark.parametrize("which", [False, None, []])
def test_no_built_ins_asked_for_is_none(which):
    assert builtin_tools(which) == []


def test_an_unknown_built_in_names_the_choices():
    with pytest.raises(
        ValueError,
        match="unknown built-in tool 'delete': choose from "
        "read_file, list_dir, glob, grep, fetch_url",
    ):
        builtin_tools(["read_file", "delete"])


def test_a_device_is_refused_when_opened(tmp_path):
    with pytest.raises(Refused, match="/dev/null is a special file"):
        Workspace(tmp_path).open_path(Path("/dev/null"), None, action="read")


def test_a_folder_given_to_a_file_tool_is_called_a_folder(tools, tmp_path):
    (tmp_path / "src").mkdir()
    for attempt in (
        lambda: read(tools, "src"),
        lambda: tools.edit_file("src", "a", "b", context=ToolContext()),
    ):
        with pytest.raises(
            IsADirectoryError,
            match=f"{tmp_path / 'src'} is a folder, not a file: list_dir shows what it holds",
        ):
            attempt()


def test_what_asks_first_returns_the_request_and_touches_nothing(tools, tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    result = tools.write_file(str(outside), "x", context=ToolContext(call_id="c1"))
    assert result.output.startswith(f"waiting for the user: write {outside}, outside the workspace")
    assert result.metadata["pending"]["kind"] == "approval"
    assert not outside.exists()


# ----------------------------------------------------------------------------- read_file


def test_line_ends_and_undecodable_bytes_are_shown_not_fatal(tools, tmp_path):
    (tmp_path / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    assert read(tools, "win.txt") == numbered((1, "one"), (2, "two"))
    assert read(tools, "latin.txt") == numbered((1, "caf\ufffd"))
    assert read(tools, "empty.txt") == ""


def test_the_rest_is_counted_with_or_without_a_final_newline(tools, tmp_path):
    (tmp_path / "open.txt").write_text("a\nb\nc\nd")
    (tmp_path / "closed.txt").write_text("a\nb\nc\nd\n")
    for name in ("open.txt", "closed.txt"):
        assert read(tools, name, limit=1) == numbered((1, "a")) + (
            "\n... 3 more lines (use offset)"
        )


def test_offset_and_limit_below_their_range_are_taken_as_their_least(tools, tmp_path):
    (tmp_path / "f.txt").write_text("a\nb\n")
    assert read(tools, "f.txt", offset=-3) == numbered((1, "a"), (2, "b"))
    assert read(tools, "f.txt", limit=-1) == "\n... 2 more lines (use offset)"


def test_an_offset_past_the_last_line_says_how_many_lines_there_are(tools, tmp_path):
    (tmp_path / "f.txt").write_text("a\nb\nc")
    (tmp_path / "one.txt").write_text("a\n")
    assert read(tools, "f.txt", offset=4) == "[offset=4 is past the end: the file has 3 lines]"
    assert read(tools, "one.txt", offset=9) == "[offset=9 is past the end: the file has 1 line]"
    assert read(tools, "f.txt", offset=3) == numbered((3, "c"))


def test_a_long_file_shows_the_default_number_of_lines_then_how_many_more(tools, tmp_path):
    (tmp_path / "long.txt").write_text("".join(f"{n}\n" for n in range(1, 2501)))
    shown = read(tools, "long.txt").splitlines()
    assert len(shown) == 2001 and shown[1999] == numbered((2000, "2000"))
    assert shown[-1] == "... 500 more lines (use offset)"


def test_one_line_longer_than_a_read_shows_its_beginning_and_where_to_go_on(tools, tmp_path):
    (tmp_path / "min.js").write_text("x" * 400_000 + "\nsecond\n")
    first = read(tools, "min.js")
    assert first.startswith("     1\txxx")
    assert len(first.encode()) < builtins_module.MAX_READ_BYTES
    assert first.endswith(
        "[truncated: read_file shows at most 256 KiB of text at a time; go on with offset=2]"
    )


def test_lines_after_one_longer_than_a_read_keep_their_numbers_in_the_file(tools, tmp_path):
    (tmp_path / "min.js").write_text("x" * 600_000 + "\nsecond\n" + "y" * 300_000 + "\nlast")
    assert read(tools, "min.js", offset=2, limit=1) == numbered((2, "second")) + (
        "\n... 2 more lines (use offset)"
    )
    assert read(tools, "min.js", offset=3).endswith("go on with offset=4]")
    assert read(tools, "min.js", offset=4) == numbered((4, "last"))
    assert tools.grep("last", context=ToolContext()) == f"{tmp_path / 'min.js'}:4: last"


def test_a_binary_file_is_refused_by_its_first_bytes(tools, tmp_path):
    (tmp_path / "a.out").write_bytes(b"\x7fELF\x00" + b"text\n" * 10)
    with pytest.raises(ValueError, match="a.out looks like a binary file"):
        read(tools, "a.out")


# ----------------------------------------------------------------------------- list_dir


def test_a_folder_over_the_cap_says_how_many_more(tools, tmp_path, monkeypatch):
    monkeypatch.setattr(builtins_module, "MAX_ENTRIES", 2)
    for name in ("c", "a", "b", "d"):
        (tmp_path / name).write_text("")
    assert tools.list_dir(str(tmp_path), context=ToolContext()) == "a\nb\n... 2 more entries"


def test_an_empty_folder_lists_nothing_and_a_linked_folder_ends_in_a_slash(tools, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    assert tools.list_dir("empty", context=ToolContext()) == ""
    assert tools.list_dir(".", context=ToolContext()) == "empty/\nlink/"


# ----------------------------------------------------------------------------- glob


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "pkg/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "x/y/z.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/u/v/test_a.py", True),
        ("src/**/test_*.py", "lib/test_a.py", False),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("?.txt", "/.txt", False),
        ("[ab].md", "b.md", True),
        ("[ab].md", "c.md", False),
        ("[!ab].md", "c.md", True),
        ("[!ab].md", "a.md", False),
        ("a[.md", "a[.md", True),
        ("a+b (1).txt", "a+b (1).txt", True),
        ("a+b (1).txt", "aab (1).txt", False),
        ("*", "a/b", False),
        ("**", "a/b", True),
        ("*.py", "a.pyc", False),
    ],
)
def test_glob_patterns_keep_a_star_inside_one_folder(pattern, path, matches):
    assert bool(glob_regex(pattern).match(path)) is matches


def test_glob_without_a_double_star_finds_files_only_at_the_patterns_depth(tools, tmp_path):
    for name in ("top.py", "src/mid.py", "src/deep/low.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert tools.glob("*.py", context=ToolContext()) == "top.py"
    assert tools.glob("src/*.py", context=ToolContext()) == "src/mid.py"
    assert tools.glob("**/*.py", context=ToolContext()) == "src/deep/low.py\nsrc/mid.py\ntop.py"


def test_glob_over_the_cap_says_where_it_stopped(tools, tmp_path, monkeypatch):
    monkeypatch.setattr(builtins_module, "MAX_ENTRIES", 3)
    for n in range(5):
        (tmp_path / f"f{n}.txt").write_text("")
    assert tools.glob("*.txt", context=ToolContext()) == (
        "f0.txt\nf1.txt\nf2.txt\n... stopped at 3 files"
    )


# ----------------------------------------------------------------------------- grep


def test_grep_skips_binary_files_and_shows_long_lines_stripped_and_cut(tools, tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"needle\x00\x01")
    (tmp_path / "wide.txt").write_text("   needle" + "y" * 1000 + "   \n")
    [line] = tools.grep("needle", context=ToolContext()).splitlines()
    assert line == f"{tmp_path / 'wide.txt'}:1: needle" + "y" * 294


def test_grep_reads_only_the_beginning_of_a_huge_file(tools, tmp_path, monkeypatch):
    monkeypatch.setattr(builtins_module, "MAX_GREP_FILE_BYTES", 64)
    (tmp_path / "big.log").write_text("early needle\n" + "x" * 100 + "\nlate needle\n")
    assert tools.grep("needle", context=ToolContext()) == f"{tmp_path / 'big.log'}:1: early needle"


def test_a_pattern_that_is_no_regular_expression_is_an_error(tools):
    with pytest.raises(ValueError, match=r"'\(unclosed' is not in RE2 syntax \(missing \)"):
        tools.grep("(unclosed", context=ToolContext())


def test_grep_filters_by_glob_on_the_relative_path(tools, tmp_path):
    for name in ("a.md", "docs/b.md", "c.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("hit\n")
    found = tools.grep("hit", glob="**/*.md", context=ToolContext()).splitlines()
    assert found == [f"{tmp_path / 'a.md'}:1: hit", f"{tmp_path / 'docs' / 'b.md'}:1: hit"]


# ----------------------------------------------------------------------------- write and edit


def test_write_file_counts_bytes_not_characters(tools, tmp_path):
    assert tools.write_file("n.txt", "naïve ☃", context=ToolContext()).output == (
        f"wrote 10 bytes to {tmp_path / 'n.txt'}"
    )


def test_edit_file_inserts_the_new_text_as_written(tools, tmp_path):
    path = tmp_path / "f.py"
    path.write_text("price = 5\n")
    tools.edit_file("f.py", "5", r"\1 $1 \g<0> {x}", context=ToolContext())
    assert path.read_text() == "price = \\1 $1 \\g<0> {x}\n"


def test_edit_file_keeps_the_files_line_ends(tools, tmp_path):
    path = tmp_path / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    tools.edit_file("win.txt", "two", "2", context=ToolContext())
    assert path.read_bytes() == b"one\r\n2\r\n"


@pytest.mark.parametrize(
    ("content", "old", "error"),
    [
        ("abc", "", "occurs 4 times"),
        (b"caf\xe9 au lait", "lait", "can't decode byte 0xe9"),
    ],
    ids=["empty-old", "not-utf8"],
)
def test_an_edit_that_cannot_be_made_leaves_the_file_alone(tools, tmp_path, content, old, error):
    path = tmp_path / "f.txt"
    data = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(data)
    with pytest.raises(ValueError, match=error):
        tools.edit_file("f.txt", old, "x", context=ToolContext())
    assert path.read_bytes() == data


def test_a_file_too_big_to_edit_is_refused_unchanged(tools, tmp_path, monkeypatch):
    monkeypatch.setattr(builtins_module, "MAX_EDIT_BYTES", 2048)
    path = tmp_path / "big.txt"
    path.write_text("a" * 2049)
    with pytest.raises(ValueError, match="big.txt is over 2 KiB: too big to edit here"):
        tools.edit_file("big.txt", "a" * 2049, "b", context=ToolContext())
    assert path.read_text() == "a" * 2049
