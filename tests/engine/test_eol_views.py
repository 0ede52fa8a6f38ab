"""A CRLF file read or edited through Emacs's LF buffer, then seen on disk (and the reverse).

Emacs shows a CRLF file with LF and declares `crlf` (Snapshot.declared_eol); once the buffer is
closed the engine reads the CRLF bytes. Before lsp_server/engine/eol_views.py, a read token of
the buffer was STALE against the untouched file, and an edit made in one shape could not be
undone in the other (CONFLICT with `expected` and `current` reading the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import apply_line_edits
from lsp_server.engine.planner import check_precondition, plan_replace
from lsp_server.engine.text import Snapshot, sha256_text, split_lines
from lsp_server.engine.undo import ChangeRecord, plan_undo, record_change

CRLF = "one\r\ntwo\r\nthree\r\n"
LF = CRLF.replace("\r\n", "\n")


def buffer(text: str, version: int = 1) -> Snapshot:
    """Emacs's buffer of a CRLF file: LF text, `crlf` declared."""
    return Snapshot("a.txt", text, source="buffer", version=version, declared_eol="crlf")


def disk(text: str) -> Snapshot:
    return Snapshot("a.txt", text, source="disk")


@dataclass
class Entry:
    changes: tuple[ChangeRecord, ...]
    id: int = 1
    committed: list[dict[str, Any]] = field(default_factory=list)
    saves: tuple[ChangeRecord, ...] = ()  # what an editor's save changed after it (none here)


def undone(entry: Entry, now: Snapshot) -> str:
    plan = plan_undo(entry, {"a.txt": now})
    (fc,) = plan.changes
    return "".join(apply_line_edits(split_lines(now.text), fc.edits))


def test_a_read_of_the_buffer_holds_for_the_file_on_disk() -> None:
    """Read in Emacs, buffer closed, nothing changed: the edit goes ahead."""
    token = {"version": 0, "sha256": sha256_text(LF)}
    check_precondition(disk(CRLF), None, token, required=True)
    check_precondition(disk(CRLF), {"sha256": sha256_text(LF).upper()}, None, required=True)


@pytest.mark.parametrize(
    "now",
    [
        "one\r\nTWO\r\nthree\r\n",  # really changed
        "one\r\ntwo\nthree\r\n",  # mixed: Emacs would show the CR, not this LF text
        LF,  # the LF file itself is its own text, nothing else
    ],
)
def test_other_content_is_still_stale(now: str) -> None:
    token = {"version": None, "sha256": sha256_text("one\nTWO\nthree\n" if now == LF else LF)}
    with pytest.raises(EditError) as e:
        check_precondition(disk(now), None, token, required=True)
    assert e.value.code == Code.STALE


def test_an_edit_in_the_buffer_is_undone_on_disk_in_crlf() -> None:
    entry = Entry((record_change(plan_replace(buffer(LF), "two", "TWO")),))
    assert undone(entry, disk("one\r\nTWO\r\nthree\r\n")) == CRLF


def test_an_edit_on_disk_is_undone_in_the_buffer_in_lf() -> None:
    entry = Entry((record_change(plan_replace(disk(CRLF), "two", "TWO")),))
    assert undone(entry, buffer("one\nTWO\nthree\n")) == LF


def test_lines_with_both_line_ends_are_not_translated() -> None:
    """A record with CRLF and LF lines is not the other shape of a uniform file."""
    mixed = disk("one\r\ntwo\nthree\r\n")
    entry = Entry((record_change(plan_replace(mixed, "two\nthree", "TWO\nTHREE")),))
    with pytest.raises(EditError) as e:
        undone(entry, buffer("one\nTWO\nTHREE\n"))
    assert e.value.code == Code.CONFLICT


def test_the_net_diff_does_not_call_the_other_shape_a_change() -> None:
    """Edited in Emacs's buffer, then the buffer closed: the disk shows what the agent left."""
    from lsp_server.engine.history.tracked import Tracked

    tr = Tracked.start("a.txt", LF, False, True)
    tr.agent_change(record_change(plan_replace(buffer(LF), "two", "TWO")), 1, 1)
    assert tr.shows(buffer("one\nTWO\nthree\n", version=7))
    assert tr.shows(disk("one\r\nTWO\r\nthree\r\n"))
    assert not tr.shows(disk("one\r\nTWO\r\nTHREE\r\n"))
    assert not tr.shows(disk("one\r\nTWO\nthree\r\n"))


def test_a_history_made_in_both_shapes_still_shows_the_file() -> None:
    """One edit in the buffer (LF lines), the next on disk once it closed (CRLF lines)."""
    from lsp_server.engine.history.tracked import Tracked

    tr = Tracked.start("a.txt", LF, False, True)
    tr.agent_change(record_change(plan_replace(buffer(LF), "two", "TWO")), 1, 1)
    now = "one\r\nTWO\r\nthree\r\n"
    tr.agent_change(record_change(plan_replace(disk(now), "three", "THREE")), None, 2)
    assert tr.shows(disk("one\r\nTWO\r\nTHREE\r\n"))
    assert tr.shows(buffer("one\nTWO\nTHREE\n", version=9))
    assert not tr.shows(buffer("one\nTWO\nthree\n", version=9))


def test_a_buffer_carrying_its_crlf_breaks_is_not_taken_for_an_lf_view() -> None:
    """Neovim's 'fileformat' dos buffer sends its CRLF breaks and declares `crlf` with them
    (`shown_eol`); emptied, it shows no break at all. Taken for Emacs's LF view of a CRLF file,
    an undo of the write that emptied it restored LF breaks: Neovim's buffer then read
    "changed otherwise" and the undo, which had landed, was PARTIAL (found by
    tests/clients/test_neovim_sync.py's random test once the two changes met in main)."""

    def neovim(text: str) -> Snapshot:
        return Snapshot(
            "a.txt", text, source="buffer", version=3, declared_eol="crlf", shown_eol="\r\n"
        )

    emptied = plan_replace(neovim(CRLF), CRLF, "")
    assert undone(Entry((record_change(emptied),)), neovim("")) == CRLF
