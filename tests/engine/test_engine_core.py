"""Engine unit tests: snapshots, replace/write planning, preconditions, diffs."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lsp_server.engine.diffing import file_diff
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import apply_line_edits
from lsp_server.engine.planner import check_precondition, plan_replace, plan_write
from lsp_server.engine.text import Snapshot, absent, decode_file, describe_eol, split_lines
from tests.unidiff import apply_unified_diff


@pytest.mark.parametrize(
    "text,lines",
    [
        ("", [""]),
        ("a", ["a"]),
        ("a\n", ["a\n", ""]),
        ("a\r\nb", ["a\r\n", "b"]),
        ("a\rb\r", ["a\r", "b\r", ""]),
        ("a\n\r\nb", ["a\n", "\r\n", "b"]),
        ("form\ffeed\n", ["form\ffeed\n", ""]),  # not a line break in LSP
        ("ls\u2028ps\u2029nel\x85\n", ["ls\u2028ps\u2029nel\x85\n", ""]),
        ("a\r\r\n", ["a\r", "\r\n", ""]),
    ],
)
def test_lsp_line_splitting(text, lines):
    assert split_lines(text) == lines
    assert "".join(split_lines(text)) == text


@pytest.mark.parametrize(
    "text,style",
    [
        ("a\nb\n", "lf"),
        ("a\r\nb\r\n", "crlf"),
        ("a\rb", "cr"),
        ("a\r\nb\n", "mixed"),
        ("x", "none"),
    ],
)
def test_eol_detection(text, style):
    assert describe_eol(text) == style


def test_decode_refuses_what_cannot_round_trip():
    assert decode_file("b.txt", b"\xef\xbb\xbfhi\n").bom is True
    with pytest.raises(EditError) as e:
        decode_file("bin", b"abc\0def")
    assert e.value.code == Code.BINARY
    with pytest.raises(EditError) as e:
        decode_file("latin1.txt", "café".encode("latin-1"))
    assert e.value.code == Code.INVALID_ENCODING
    with pytest.raises(EditError) as e:
        decode_file("big", b"x" * 11, max_bytes=10)
    assert e.value.code == Code.TOO_LARGE and e.value.details["cap"] == 10


def snap(text: str, **kw) -> Snapshot:
    return Snapshot("f.txt", text, **kw)


@pytest.mark.parametrize(
    "text,old,new,want",
    [
        ("a\nb\nc\n", "b", "B", "a\nB\nc\n"),
        ("a\r\nb\r\nc\r\n", "a\nb", "x\ny\nz", "x\r\ny\r\nz\r\nc\r\n"),  # LF oldText on a CRLF file
        ("a\r\nb\nc\r", "b\nc", "1\n2", "a\r\n1\n2\r"),  # mixed endings kept per line
        ("no newline", "newline", "eol", "no eol"),
        ("x 😀 y\n", "😀", "🎉", "x 🎉 y\n"),
        ("a\nb\n", "a\n", "", "b\n"),
        ("a\nb\n", "b\n", "b\nc\n", "a\nb\nc\n"),
    ],
)
def test_replace_table(text, old, new, want):
    change = plan_replace(snap(text), old, new)
    assert change.new_text == want
    assert "".join(change.new_lines) == want
    if "\r" not in text.replace("\r\n", ""):  # a lone CR prints as a line end: not re-appliable
        assert apply_unified_diff(text, file_diff(change)) == want


def test_replace_all_and_same_line_matches():
    change = plan_replace(snap("ab ab\nab\n"), "ab", "X", replace_all=True)
    assert change.new_text == "X X\nX\n"


@pytest.mark.parametrize(
    "text,old,why",
    [
        ("def f():\n\treturn 1\n", "def f():\n    return 1", "tabs vs spaces"),
        ("x = 1   \ny = 2\n", "x = 1\ny = 2", "trailing whitespace"),
        ("say(“hi”)\n", 'say("hi")', "quotes"),
        ("  deep()\n", "    deep()", "indentation differs"),
        ("Hello World\n", "hello world", "letter case"),
    ],
)
def test_no_match_names_the_difference(text, old, why):
    with pytest.raises(EditError) as e:
        plan_replace(snap(text), old, "z")
    assert e.value.code == Code.NO_MATCH
    cands = e.value.details["candidates"]
    assert cands and cands[0]["line"] == 1
    assert why in cands[0]["why"]


def test_ambiguous_lists_every_line_and_invalid_arguments():
    with pytest.raises(EditError) as e:
        plan_replace(snap("x\ny\nx\nx\n"), "x", "z")
    assert e.value.code == Code.AMBIGUOUS and e.value.details["lines"] == [1, 3, 4]
    for old, new, arg in [("", "a", "oldText"), ("a", "a", "newText")]:
        with pytest.raises(EditError) as e:
            plan_replace(snap("a\n"), old, new)
        assert e.value.code == Code.INVALID_ARGUMENT and e.value.details["argument"] == arg
    with pytest.raises(EditError) as e:
        plan_replace(absent("gone.txt"), "a", "b")
    assert e.value.code == Code.NOT_FOUND


def test_lenient_is_opt_in_and_still_unique():
    text = "def f():\n    return “x”   \n"
    with pytest.raises(EditError):
        plan_replace(snap(text), 'return "x"', "return 1")
    change = plan_replace(snap(text), 'return "x"', "    return 1", match="lenient")
    assert change.new_text == "def f():\n    return 1\n"
    with pytest.raises(EditError) as e:
        plan_replace(snap("  a\na  \n"), "a", "b", match="lenient")
    assert e.value.code == Code.AMBIGUOUS


def test_write_create_overwrite_keeps_style():
    add = plan_write(absent("new.txt"), "hello\n")
    assert add.change == "add" and add.new_text == "hello\n"
    assert file_diff(add).startswith(
        "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n"
    )
    over = plan_write(snap("a\r\nb\r\n"), "a\nc\n")
    assert over.new_text == "a\r\nc\r\n"
    assert [(e.start, e.end) for e in over.edits] == [(1, 2)]
    bom = plan_write(snap("x\n", bom=True), "y\n")
    assert bom.bom is True


def test_new_lines_of_a_buffer_showing_no_break_take_the_break_its_text_shows():
    # A Neovim buffer with 'fileformat' dos shows CRLF in its text, but one line (or none) shows
    # no break at all: an agent's lines, "\n" or CRLF, were planned with "\n", and Neovim sent
    # them back as CRLF (PARTIAL). Emacs shows a CRLF file with "\n": no `shown_eol`, as before.
    neovim = snap("a", source="buffer", version=1, declared_eol="crlf", shown_eol="\r\n")
    assert plan_write(neovim, "x\nS\n").new_text == "x\r\nS\r\n"
    assert plan_write(neovim, "x\r\nS").new_text == "x\r\nS"
    assert plan_replace(neovim, "a", "a\nb").new_text == "a\r\nb"
    emacs = snap("a", source="buffer", version=1, declared_eol="crlf")
    assert plan_write(emacs, "x\r\nS\n").new_text == "x\nS\n"


def test_preconditions():
    s = snap("a\n", source="buffer", version=4)
    check_precondition(s, {"version": 4}, None, required=True)
    check_precondition(s, None, {"version": 3, "sha256": s.sha256}, required=True)  # undo-redo
    check_precondition(s, {"sha256": s.sha256}, None, required=True)
    with pytest.raises(EditError) as e:
        check_precondition(s, {"version": 3}, None, required=True)
    assert e.value.code == Code.STALE
    assert e.value.details["expected"]["version"] == 3
    assert e.value.details["current"] == {"version": 4, "sha256": s.sha256}
    with pytest.raises(EditError) as e:
        check_precondition(s, None, None, required=True)
    assert e.value.code == Code.STALE
    check_precondition(s, None, None, required=False)


texts = st.lists(st.sampled_from(list("ab \t\n") + ["é", "😀", "ab\n"]), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(
    texts, st.text(alphabet="ab\n😀", min_size=1, max_size=6), st.text(alphabet="xyz\n", max_size=6)
)
def test_unique_replace_equals_str_replace_once(text, old, new):
    assume(old != new and "\r" not in text)
    count = text.count(old)
    try:
        change = plan_replace(snap(text), old, new)
    except EditError as err:
        assert err.code == (Code.NO_MATCH if count == 0 else Code.AMBIGUOUS)
        assert count != 1
        return
    assert count == 1
    assert change.new_text == text.replace(old, new, 1)
    assert apply_unified_diff(text, file_diff(change)) == change.new_text


@settings(max_examples=300, deadline=None)
@given(texts, texts)
def test_write_diff_applies_and_edits_are_minimal(before, after):
    assume(before != after and "\r" not in before + after)
    change = plan_write(snap(before), after)
    assert change.new_text == after
    assert "".join(apply_line_edits(split_lines(before), list(change.edits))) == after
    assert apply_unified_diff(before, file_diff(change)) == after
    old_lines, new_lines = split_lines(before), split_lines(after)
    for e in change.edits:  # minimal: no unchanged line at either end of the edit
        if e.end > e.start and e.new_lines:
            assert e.new_lines[0] != old_lines[e.start]
            assert e.new_lines[-1] != old_lines[e.end - 1] or len(new_lines) != len(old_lines)


@settings(max_examples=300, deadline=None)
@given(st.data(), texts.filter(lambda x: "\n" in x), st.text(alphabet="xy\n", max_size=5))
def test_replace_in_crlf_file_keeps_crlf(data, lf_text, new):
    i = data.draw(st.integers(0, len(lf_text) - 1))
    j = data.draw(st.integers(i + 1, len(lf_text)))
    old = lf_text[i:j]
    assume(old != new and lf_text.count(old) == 1)
    crlf = lf_text.replace("\n", "\r\n")
    change = plan_replace(snap(crlf), old, new)
    assert change.new_text == lf_text.replace(old, new, 1).replace("\n", "\r\n")
    assert apply_unified_diff(crlf, file_diff(change)) == change.new_text
