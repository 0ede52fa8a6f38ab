"""The journal's blob walk returns a list of short lines whole, without a call per line: it must
still move to blob files exactly what it moved before (one huge line in a short list, a long list
of lines that adds up, a huge string anywhere) and read every record back as it was written."""

from __future__ import annotations

from pathlib import Path

from lsp_server.engine import journal
from lsp_server.engine.blobs import Blobs
from lsp_server.engine.journal import BLOB_JSON, BLOB_MIN, BLOB_TEXT, _externalize, _parse

HUGE = "x" * BLOB_MIN + "\n"


def _walk(value: object) -> tuple[object, list[str]]:
    used: list[str] = []
    return _externalize(value, journal._SizeOnly(), used), used


def test_short_line_lists_stay_whole() -> None:
    lines = ("a\n", "b\n", "c\n")
    out, used = _walk({"hunks": [[1, 2, 3, lines, list(lines)]]})
    assert out == {"hunks": [[1, 2, 3, lines, list(lines)]]} and used == []


def test_one_huge_line_in_a_short_list_goes_to_a_blob() -> None:
    out, used = _walk(["a\n", HUGE])
    assert len(used) == 1 and out == ["a\n", {BLOB_TEXT: used[0]}]


def test_a_long_list_that_adds_up_is_one_blob() -> None:
    lines = ["y" * 5000 + "\n"] * 20  # > 16 lines, >= BLOB_MIN together, each one short
    out, used = _walk({"before": lines})
    assert len(used) == 1 and out == {"before": {BLOB_JSON: used[0]}}


def test_a_short_list_that_adds_up_keeps_its_lines_inline() -> None:
    lines = ["y" * 20000 + "\n"] * 4  # <= 16 lines: each line is looked at, none is huge
    out, used = _walk(lines)
    assert out == lines and used == []


def test_records_read_back_as_written(tmp_path: Path) -> None:
    blobs = Blobs(tmp_path / "blobs")
    rec = {
        "t": "begin",
        "id": 1,
        "short": [["a\n", "b\n"], ("c\n",)],
        "mixed": ["a\n", HUGE],
        "long": ["z" * 5000 + "\n"] * 20,
        "text": HUGE,
    }
    line = journal._dump(rec, blobs)
    assert len(line) < BLOB_MIN  # every large value went to a blob
    (back,) = _parse([line.rstrip(b"\n")], None, blobs)
    assert back == {**rec, "short": [["a\n", "b\n"], ["c\n"]]}
