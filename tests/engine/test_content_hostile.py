"""Hostile file content through the engine: refused unless it round-trips, then kept byte for byte.

Covers decode_file (binary, size cap, invalid UTF-8, BOM), LSP line splitting (CRLF, lone CR, mixed
endings, form feed / U+2028 and friends that are *not* line breaks), and replace/write planning on
those files: untouched lines keep their own terminator, new lines take the file's first one, and
`NO_MATCH` explains tabs-vs-spaces misses.
"""

from __future__ import annotations

import pytest

from lsp_server.engine.diffing import file_diff
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.planner import plan_replace, plan_write
from lsp_server.engine.text import (
    BINARY_SNIFF_BYTES,
    Snapshot,
    decode_file,
    describe_eol,
    encode_file,
    split_lines,
)
from tests.unidiff import apply_unified_diff


def roundtrip(data: bytes) -> bytes:
    snap = decode_file("f", data)
    return encode_file(snap.text, snap.bom)


def replaced(data: bytes, old: str, new: str, **kw: object) -> bytes:
    snap = decode_file("f", data)
    change = plan_replace(snap, old, new, **kw)  # type: ignore[arg-type]
    # The reviewable diff must describe exactly this change.
    assert apply_unified_diff(snap.text, file_diff(change)) == change.new_text
    return encode_file(change.new_text, change.bom)


def written(data: bytes, text: str) -> bytes:
    snap = decode_file("f", data)
    change = plan_write(snap, text)
    return encode_file(change.new_text, change.bom)


# --- refused content -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"\0",
        b"abc\0def",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
        b"\xff\xfeh\0i\0",  # UTF-16 LE with BOM: NULs, refused as binary, never guessed at
        b"a" * (BINARY_SNIFF_BYTES - 1) + b"\0",
    ],
)
def test_binary_refused(data: bytes) -> None:
    with pytest.raises(EditError) as info:
        decode_file("f", data)
    assert info.value.code == Code.BINARY
    assert info.value.details["size"] == len(data)


def test_nul_after_the_sniff_window_is_text_like_git() -> None:
    data = b"a" * BINARY_SNIFF_BYTES + b"\0tail"
    assert roundtrip(data) == data


def test_size_cap() -> None:
    assert roundtrip(b"x" * 100) == b"x" * 100
    decode_file("f", b"x" * 100, max_bytes=100)
    with pytest.raises(EditError) as info:
        decode_file("f", b"x" * 101, max_bytes=100)
    assert info.value.code == Code.TOO_LARGE
    assert info.value.details == {"path": "f", "size": 101, "cap": 100}
    assert "100" in info.value.message and "101" in info.value.message


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"caf\xe9\n", 3),  # Latin-1
        (b"ok\n\x80", 3),  # stray continuation byte
        (b"a\xe2\x82", 1),  # truncated sequence at the end
        (b"\xc0\x80", 0),  # overlong NUL
        (b"\xed\xa0\x80", 0),  # UTF-8-encoded surrogate
        (b"\xf4\x90\x80\x80", 0),  # above U+10FFFF
        (b"\xef\xbb\xbfabc\xff", 6),  # after a BOM: the offset counts the BOM's bytes
    ],
)
def test_invalid_utf8_refused_with_the_offset(data: bytes, offset: int) -> None:
    with pytest.raises(EditError) as info:
        decode_file("f", data)
    err = info.value
    assert err.code == Code.INVALID_ENCODING
    assert err.details["offset"] == offset
    assert repr(data[offset : offset + 1]) in err.message
    assert "not be re-encoded" in err.message


# --- BOM -------------------------------------------------------------------------------------


def test_bom_kept_through_replace_and_write() -> None:
    data = b"\xef\xbb\xbfhello\nworld\n"
    snap = decode_file("f", data)
    assert snap.bom and snap.text == "hello\nworld\n"
    assert roundtrip(data) == data
    assert replaced(data, "world", "there") == b"\xef\xbb\xbfhello\nthere\n"
    assert written(data, "new\n") == b"\xef\xbb\xbfnew\n"
    # An agent that copies the BOM into its text does not get two.
    assert written(data, "\ufeffnew\n") == b"\xef\xbb\xbfnew\n"


def test_no_bom_stays_without() -> None:
    assert replaced(b"a\n", "a", "b") == b"b\n"
    assert roundtrip(b"\xef\xbb\xbf") == b"\xef\xbb\xbf"


def test_second_bom_is_content() -> None:
    data = b"\xef\xbb\xbf\xef\xbb\xbfx"
    assert decode_file("f", data).text == "\ufeffx"
    assert roundtrip(data) == data


# --- line endings ----------------------------------------------------------------------------


def test_crlf_file() -> None:
    data = b"one\r\ntwo\r\nthree\r\n"
    assert replaced(data, "two", "2") == b"one\r\n2\r\nthree\r\n"
    # oldText with LF matches a CRLF file; new lines take CRLF.
    assert replaced(data, "one\ntwo\n", "a\nb\nc\n") == b"a\r\nb\r\nc\r\nthree\r\n"
    assert replaced(data, "one\r\ntwo", "x") == b"x\r\nthree\r\n"
    assert written(data, "one\nTWO\nthree\n") == b"one\r\nTWO\r\nthree\r\n"


def test_lone_cr_file() -> None:
    data = b"a\rb\rc"
    assert split_lines("a\rb\rc") == ["a\r", "b\r", "c"]
    assert describe_eol("a\rb\rc") == "cr"
    assert replaced(data, "b", "B") == b"a\rB\rc"
    assert replaced(data, "a\nb", "x\ny\nz") == b"x\ry\rz\rc"
    # An agent copying the file's own CRs must match too (engine fix: lone CR was NO_MATCH).
    assert replaced(data, "a\rb", "x\ry") == b"x\ry\rc"
    assert written(data, "a\nb\nc\nd") == b"a\rb\rc\rd"


def test_cr_in_new_text_becomes_a_line_break_not_a_hidden_cr() -> None:
    snap = Snapshot("f", "a\nb\n")
    change = plan_replace(snap, "a", "x\ry")
    # Every element of the line list is one LSP line (a CR inside one would shift line numbers).
    assert all("\r" not in line[:-1] for line in change.new_lines)
    assert change.new_text == "x\ny\nb\n"


@pytest.mark.parametrize(
    ("text", "old", "new", "lines"),
    [
        # Found by test_fuzz: a line ending in a lone CR followed by an empty LF line is one CRLF
        # line, so a line break silently vanished (engine fix: text.keep_line_breaks).
        ("ab\rx\n", "ab\rx", "\n", 3),
        ("a\rb\n", "b", "", 3),
        ("a\rX\n\nb", "X\n", "", 3),
        ("x\n\ny", "x", "p\rq", 4),
    ],
)
def test_a_cr_never_glues_to_the_next_lf(text: str, old: str, new: str, lines: int) -> None:
    change = plan_replace(Snapshot("f", text), old, new)
    assert len(split_lines(change.new_text)) == lines
    assert change.new_lines == split_lines(change.new_text)
    assert change.new_text.replace("\r\n", "\n").replace("\r", "\n") == text.replace(
        "\r\n", "\n"
    ).replace("\r", "\n").replace(old.replace("\r", "\n"), new.replace("\r", "\n"), 1)


def test_mixed_endings_kept_per_line() -> None:
    data = b"a\r\nb\nc\rd\r\ne"
    assert describe_eol(data.decode()) == "mixed"
    assert replaced(data, "b", "B") == b"a\r\nB\nc\rd\r\ne"
    assert replaced(data, "c\nd", "C\nD") == b"a\r\nb\nC\rD\r\ne"
    # A line inserted in the middle takes the file's first terminator (Codex's rule).
    assert replaced(data, "b\nc", "b\nNEW\nc") == b"a\r\nb\nNEW\r\nc\rd\r\ne"
    assert replaced(data, "e", "e\nf") == b"a\r\nb\nc\rd\r\ne\r\nf"


def test_write_keeps_untouched_lines_endings_in_a_mixed_file() -> None:
    # Engine fix: write used to turn every line of a mixed file into the agent's `\n`.
    data = b"a\r\nb\nc\rd"
    # A changed line is a new line: it takes the file's first terminator (CRLF here).
    assert written(data, "a\nB\nc\nd") == b"a\r\nB\r\nc\rd"
    assert written(data, "top\na\nb\nc\nd") == b"top\r\na\r\nb\nc\rd"
    assert written(data, "a\nc\nd") == b"a\r\nc\rd"
    assert written(data, "a\nb\nc\nd\n") == b"a\r\nb\nc\rd\r\n"
    # Text that carries its own CRs is taken as given.
    assert written(data, "a\r\nb\r\n") == b"a\r\nb\r\n"


@pytest.mark.parametrize("sep", ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_python_line_separators_are_not_lsp_line_breaks(sep: str) -> None:
    text = f"one{sep}two\nthree\n"
    assert split_lines(text) == [f"one{sep}two\n", "three\n", ""]
    snap = Snapshot("f", text)
    change = plan_replace(snap, "three", "3")
    assert change.edits[0].start == 1  # LSP line 1, not 2
    assert change.new_text == f"one{sep}two\n3\n"
    assert plan_replace(snap, f"one{sep}two", "x").new_text == "x\nthree\n"
    assert plan_replace(snap, "two", "2").new_text == f"one{sep}2\nthree\n"
    with pytest.raises(EditError) as info:
        plan_replace(Snapshot("f", f"x{sep}x\nx\n"), "x", "y")
    assert info.value.code == Code.AMBIGUOUS
    assert info.value.details["lines"] == [1, 1, 2]
    data = text.encode()
    assert roundtrip(data) == data


def test_very_long_lines() -> None:
    line = "x" * 2_000_000
    data = f"head\n{line}MARK{line}\ntail".encode()
    out = replaced(data, "MARK", "mark")
    assert out == f"head\n{line}mark{line}\ntail".encode()
    snap = decode_file("f", data)
    change = plan_replace(snap, "MARK", "mark")
    assert [(e.start, e.end) for e in change.edits] == [(1, 2)]


def test_empty_file() -> None:
    assert roundtrip(b"") == b""
    snap = decode_file("f", b"")
    assert snap.lines == [""] and snap.exists
    with pytest.raises(EditError) as info:
        plan_replace(snap, "x", "y")
    assert info.value.code == Code.NO_MATCH
    assert info.value.details["candidates"] == []
    change = plan_write(snap, "hello\n")
    assert change.change == "update" and change.new_text == "hello\n"
    assert apply_unified_diff("", file_diff(change)) == "hello\n"
    # Emptying a file is an update to "", not a delete.
    emptied = plan_write(decode_file("f", b"a\nb\n"), "")
    assert emptied.change == "update" and emptied.new_text == ""
    assert apply_unified_diff("a\nb\n", file_diff(emptied)) == ""


def test_a_crlf_write_into_a_buffer_shown_with_lf_takes_its_lf() -> None:
    # Emacs shows a CRLF file's buffer with "\n" (and writes CRLF on save): CRs written into it
    # were saved as CR CR LF. A buffer with CRs, and a file on disk, keep the agent's CRLF.
    shown = Snapshot("f", "one\ntwo\n", source="buffer", version=3)
    assert plan_write(shown, "ONE\r\ntwo\r\nthree\r\n").new_text == "ONE\ntwo\nthree\n"
    crlf = Snapshot("f", "one\r\ntwo\r\n", source="buffer", version=3)
    assert plan_write(crlf, "ONE\r\ntwo\r\n").new_text == "ONE\r\ntwo\r\n"
    assert written(b"one\ntwo\n", "ONE\r\ntwo\r\n") == b"ONE\r\ntwo\r\n"


def test_no_final_newline_kept() -> None:
    assert replaced(b"a\nb", "b", "c") == b"a\nc"
    assert replaced(b"a\nb", "a", "x") == b"x\nb"
    assert replaced(b"a\r\nb", "b", "c\nd") == b"a\r\nc\r\nd"
    assert written(b"a\nb", "a\nb\n") == b"a\nb\n"
    assert written(b"a\nb\n", "a\nb") == b"a\nb"
    diff = file_diff(plan_replace(Snapshot("f", "a\nb"), "b", "c"))
    assert diff.count("\\ No newline at end of file") == 2


# --- NO_MATCH explanations -------------------------------------------------------------------


def _no_match(text: str, old: str) -> list[dict[str, object]]:
    with pytest.raises(EditError) as info:
        plan_replace(Snapshot("f", text), old, "new")
    assert info.value.code == Code.NO_MATCH
    cands: list[dict[str, object]] = info.value.details["candidates"]
    return cands


def test_tabs_vs_spaces_explained() -> None:
    text = "def f():\n\treturn 1\n"
    (cand,) = _no_match(text, "    return 1")
    assert cand["line"] == 2 and cand["text"] == "\treturn 1"
    assert "tabs vs spaces" in str(cand["why"]) and "tabs in the file" in str(cand["why"])
    (cand,) = _no_match("if x:\n    y()\n", "if x:\n\ty()")
    assert "tabs vs spaces" in str(cand["why"]) and "tabs in oldText" in str(cand["why"])
    assert "line 2 of oldText" in str(cand["why"])


def test_other_near_misses_explained() -> None:
    (cand,) = _no_match("x = 1  \n", "x = 1\ny")
    assert "runs past the end" in str(cand["why"]) or "trailing" in str(cand["why"])
    (cand,) = _no_match("  x = 1\n", "    x = 1")
    assert "indentation differs" in str(cand["why"])
    (cand,) = _no_match("s = \u201chi\u201d\n", 's = "hi"')
    assert "typographic" in str(cand["why"])


def test_crlf_oldtext_is_not_a_mismatch() -> None:
    assert replaced(b"a\nb\n", "a\r\nb", "x") == b"x\n"


def test_lenient_replace_on_the_unterminated_last_line() -> None:
    # Found by test_fuzz: the new first line took the last line's missing terminator, so two
    # lines merged into one (engine fix in planner._plan_lenient).
    change = plan_replace(Snapshot("f", "x = 1"), "x = 1  ", "a\nb", match="lenient")
    assert change.new_text == "a\nb"
    assert change.new_lines == ["a\n", "b"]


def test_reading_a_fifo_is_refused_without_blocking(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Engine fix (files.read_snapshot): the open itself used to block until a writer appeared.
    import os
    import threading

    from lsp_server.engine.files import read_snapshot

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    rescued = threading.Event()

    def rescue() -> None:
        # Only if the read hangs: open the write end so the test ends (and fails) instead.
        if not done.wait(10):
            rescued.set()
            os.close(os.open(fifo, os.O_WRONLY))

    done = threading.Event()
    watchdog = threading.Thread(target=rescue)
    watchdog.start()
    try:
        with pytest.raises(EditError) as info:
            read_snapshot(str(tmp_path), "pipe")
    finally:
        done.set()
        watchdog.join()
    assert not rescued.is_set()
    assert info.value.details.get("reason") == "NOT_REGULAR"


def test_decoded_snapshot_is_the_dataclass_one() -> None:
    # decode_file builds its Snapshot through the dataclass __init__, like any other.
    import dataclasses

    for data, text, bom in [(b"a\r\nb", "a\r\nb", False), (b"\xef\xbb\xbfx\n", "x\n", True)]:
        snap = decode_file("f", data)
        made = Snapshot("f", text, "disk", bom=bom)
        assert vars(snap) == vars(made) and repr(snap) == repr(made)
        assert (snap.lines, snap.sha256, snap.eol, snap.exists) == (
            made.lines, made.sha256, made.eol, made.exists
        )  # fmt: skip
        assert dataclasses.replace(snap, version=3).version == 3
        with pytest.raises(dataclasses.FrozenInstanceError):
            snap.text = "y"  # type: ignore[misc]


@pytest.mark.parametrize("piece", [1, 7, 4096, None])
def test_read_snapshot_reads_whole_files_and_the_cap_in_pieces(
    tmp_path, monkeypatch: pytest.MonkeyPatch, piece: int | None
) -> None:  # type: ignore[no-untyped-def]
    # read_snapshot stops after one read that returns the size fstat gave; a short read (a
    # signal, a network file system), or none at all, must still read the rest.
    import os

    from lsp_server.engine import files

    real_read = os.read

    def short_read(fd: int, n: int) -> bytes:
        return real_read(fd, min(n, piece) if piece else n)

    sizes = {"empty": 0, "small": 5, "big": 10_000, "cap": 9_000, "over": 9_001}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(bytes(65 + i % 26 for i in range(size)))
    monkeypatch.setattr(os, "read", short_read)
    try:
        for name, size in sizes.items():
            data = (tmp_path / name).read_bytes()
            if size > 9_000:
                with pytest.raises(EditError) as info:
                    files.read_snapshot(str(tmp_path), name, 9_000)
                assert info.value.code == Code.TOO_LARGE
                assert info.value.details["size"] == size  # the file's, not the cap + 1 read
            else:
                assert files.read_snapshot(str(tmp_path), name, 9_000).text.encode() == data
            assert files.read_snapshot(str(tmp_path), name, 10_000).text.encode() == data
    finally:
        monkeypatch.undo()


def _reference_lines(text: str) -> list[str]:
    import re

    pieces = re.split(r"(\r\n|\r|\n)", text)
    lines = [pieces[i] + pieces[i + 1] for i in range(0, len(pieces) - 1, 2)]
    return [*lines, pieces[-1]]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "a\n",
        "a\x85",
        "a\n\x85",
        "\x85\n",
        "a\x85b\n",
        "\u2028",
        "x\u2029\n\u2029",
        "\f\v\n\x1c",
        "one\ntwo\nthree",
        "a\r\nb\x85\rc\n",
    ],
)
def test_split_lines_matches_a_reference_splitter(text: str) -> None:
    assert split_lines(text) == _reference_lines(text)


def test_split_lines_matches_a_reference_splitter_on_random_text() -> None:
    import random

    rnd = random.Random(7)
    alphabet = ["a", "b", "\n", "\r", "\r\n", "\x85", "\u2028", "\f", "\v", "\x1c", " "]
    for _ in range(3000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 12)))
        assert split_lines(text) == _reference_lines(text), repr(text)
