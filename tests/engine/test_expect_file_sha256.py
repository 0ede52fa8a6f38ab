"""An `expect` sha256 is the content's, whichever way the caller took it: the read's token
(the text's sha256), the file's bytes' (`sha256sum`, what the CLI's --expect-sha256 help
names) for a file with a BOM, or the same hex in capitals. Those were refused STALE, "changed
since it was read", over a file nobody had touched."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.errors import EditError
from lsp_server.engine.planner import check_precondition
from lsp_server.engine.text import Snapshot


def _snap(tmp_path: Path, data: bytes) -> Snapshot:
    (tmp_path / "f.txt").write_bytes(data)
    return files.read_snapshot(str(tmp_path), "f.txt")


def test_a_bom_files_bytes_sha256_holds(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbfhello\r\n"
    snap = _snap(tmp_path, data)
    for sha in (hashlib.sha256(data).hexdigest(), snap.sha256, snap.sha256.upper()):
        check_precondition(snap, {"sha256": sha}, None, required=True)


def test_another_content_is_still_stale(tmp_path: Path) -> None:
    snap = _snap(tmp_path, b"\xef\xbb\xbfhello\r\n")
    # (b"hello\n" is not in this list: it is the token of Emacs's buffer of this file, which
    # shows its CRLF as LF and its BOM as a flag: the same content, test_eol_views.py.)
    for other in (b"\xef\xbb\xbfbye\r\n", b"hello \n", b"hello\r\n\n", b""):
        with pytest.raises(EditError) as exc:
            check_precondition(
                snap, {"sha256": hashlib.sha256(other).hexdigest()}, None, required=True
            )
        assert exc.value.code == "STALE"
