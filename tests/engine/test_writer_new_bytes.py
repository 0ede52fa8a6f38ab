"""The bytes the disk writer puts in a file (files._new_bytes) are exactly the new text encoded,
whichever way they are built: spliced from the bytes read (an ASCII file read from disk, edits
with offsets) or encoded from the new text (anything else)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine import files
from lsp_server.engine.model import FileChange, LineEdit
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.text import DiskRead, decode_file, encode_file

LINE = st.sampled_from(["a\n", "bb\n", "\n", "c\r\n", "d\r", "é\n", "𝄞x\n", "tail"])
NEW = st.lists(st.sampled_from(["n\n", "é\n", "\r\n", "z", "\t\n", "ü\r\n"]), max_size=3)


@st.composite
def changes(draw: st.DrawFn) -> FileChange:
    """An update of a file read from disk, by edits over random line ranges (some known by
    their offsets, some not), with or without a BOM, ASCII or not."""
    bom = draw(st.booleans())
    text = "".join(draw(st.lists(LINE, max_size=12)))
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    snap = decode_file("f.txt", data, disk=DiskRead(1, len(data), 0, 0, 0, data))
    lines = snap.lines
    cuts = sorted(draw(st.lists(st.integers(0, len(lines) - 1), max_size=6)))
    with_offsets = draw(st.booleans())
    edits: list[LineEdit] = []
    for start, end in zip(cuts[::2], cuts[1::2], strict=False):
        new = tuple(draw(NEW))
        span = (sum(map(len, lines[:start])), sum(map(len, lines[:end])))
        edits.append(LineEdit(start, end, new, span if with_offsets else None))
    keep_bom = draw(st.sampled_from([None, bom, not bom]))
    return FileChange("update", snap, tuple(edits), new_bom=keep_bom)


@settings(max_examples=200, deadline=None)
@given(changes())
def test_new_bytes_are_the_new_text_encoded(change: FileChange) -> None:
    got = files._new_bytes(change)
    fresh = FileChange("update", change.before, change.edits, new_bom=change.new_bom)
    assert got == encode_file(fresh.new_text, fresh.bom)


def test_a_patch_applied_on_disk_is_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the writer: an ASCII file with a BOM and CRLF lines, a non-ASCII line added."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+zwei \xfc\n*** End Patch\n"
    plan = plan_patch(patch, lambda p: files.read_snapshot(str(root), p))
    (change,) = plan.changes
    assert "new_text" not in change.__dict__
    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "state"))
    files.apply_plan(str(root), plan)
    assert (root / "a.txt").read_bytes() == "\ufeffone\r\nzwei \xfc\r\nthree\r\n".encode()
    # The result's token is the new text's (without the BOM).
    new = "one\r\nzwei \xfc\r\nthree\r\n".encode()
    assert change.new_sha256 == hashlib.sha256(new).hexdigest()
