"""Real Emacs: the file's format survives the agent's edits.

A CRLF file read and edited in its buffer (Emacs shows it with LF), then closed, and the reverse
(edited on disk, then opened): what the agent saw in one shape holds in the other, no STALE over
an untouched file, undo works, the file keeps its CRLF (lsp_server/engine/eol_views.py). An ASCII
file (coding undecided) an edit brings non-ASCII text into is saved, as the user's own save
would. The runner is test_emacs.py's."""

from __future__ import annotations

from pathlib import Path

from tests.clients.test_emacs import emacs, ok, run_scenario

__all__ = ["emacs"]  # the fixture, imported for pytest


def test_a_crlf_files_buffer_then_its_disk_keep_one_content(emacs: str, tmp_path: Path) -> None:
    files = {"crlf.txt": "one\r\ntwo\r\nthree\r\n", "crlf2.txt": "a\r\nb\r\n", "other.txt": "x\n"}
    data = run_scenario(emacs, "crlf_closed", tmp_path, files)
    assert data["coding"].endswith("-dos"), data["coding"]
    assert ok(data["edit"], data)["status"] == "applied"
    assert data["disk_after_edit"] == "one\r\nTWO\r\nthree\r\n"
    # Closed: the next edit goes on from what the agent saw (no STALE), in CRLF.
    assert ok(data["edit_closed"], data)["status"] == "applied"
    assert data["disk_after_edit_closed"] == "one\r\nTWO\r\nTHREE\r\n"
    # The disk shows what the agent left: not "changed since the agent's last edit".
    (net,) = ok(data["history_closed"], data)["net"]
    assert (net["liveChanged"], net["notes"]) == (False, []), net
    # The buffer's edit undone on the disk, in the file's CRLF.
    assert ok(data["undo_closed"], data)["status"] == "applied"
    assert data["disk_after_undo_closed"] == "one\r\ntwo\r\nTHREE\r\n"
    # The disk's edit undone in the buffer (LF there), saved as CRLF.
    assert ok(data["edit_disk"], data)["status"] == "applied"
    assert ok(data["undo_open"], data)["status"] == "applied"
    assert data["text_after_undo_open"] == "a\nb\n"
    assert data["disk_after_undo_open"] == "a\r\nb\r\n"


def test_non_ascii_text_an_agent_brings_into_an_ascii_file_is_saved(
    emacs: str, tmp_path: Path
) -> None:
    files = {"lf.txt": "one\ntwo\n", "crlf.txt": "one\r\ntwo\r\n"}
    data = run_scenario(emacs, "ascii_gains_unicode", tmp_path, files)
    for name, brk in (("lf", "\n"), ("crlf", "\r\n")):
        assert data[f"{name}_coding"].startswith("undecided"), data[f"{name}_coding"]
        result = ok(data[f"{name}_edit"], data)
        assert result["status"] == "applied" and result["saved"] is True, result
        assert data[f"{name}_modified"] is False
        assert data[f"{name}_disk"] == f"one{brk}two — é 😀{brk}", data[f"{name}_disk"]
