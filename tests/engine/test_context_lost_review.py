"""Review of branch rpipeline: a change record written without its context lines
(undo/changes.py `CONTEXT_IN_PACK`) whose pack is lost is read back without them. Its undo
then had nothing to place a removed region by: a pure deletion was put back at its old line
number, which later lines above it had moved, so the lines came back in the wrong place
(wrong bytes) where the record with its context refuses or relocates correctly. Now such a
region is refused (CONFLICT saying why), or undone in place when the file is exactly what
the edit left (after_sha256); the flag survives a rewrite of the record (compaction).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_replace
from lsp_server.engine.text import Snapshot
from lsp_server.engine.undo import ChangeRecord, record_change
from lsp_server.engine.undo.changes import CONTEXT_LOST
from tests.engine.test_undo import FakeEntry, undo
from tests.history_helpers import apply_plan

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 21))


def _deletion() -> tuple[ChangeRecord, str]:
    plan = Plan("replace", (plan_replace(Snapshot("f.txt", ORIGINAL), "line 10\n", ""),))
    after = apply_plan({"f.txt": ORIGINAL}, plan)["f.txt"]
    return record_change(plan.changes[0]), after


def _lost(rec: ChangeRecord) -> ChangeRecord:
    """The record as replay reads it when its pack is gone (`_change_record`'s fallback)."""
    data = json.loads(json.dumps(rec.to_json(context=False)))
    assert data["context"] == "pack"
    return ChangeRecord.from_json(data)


def test_a_pure_deletion_without_its_context_is_not_put_back_by_position() -> None:
    rec, after = _deletion()
    user = "new 1\nnew 2\nnew 3\n" + after  # lines added above: the deleted line's place moved
    # With its context the undo finds the place.
    assert undo({"f.txt": user}, FakeEntry((rec,)))["f.txt"] == "new 1\nnew 2\nnew 3\n" + ORIGINAL
    lost = _lost(rec)
    assert lost.context_lost
    with pytest.raises(EditError) as exc:
        undo({"f.txt": user}, FakeEntry((lost,)))  # was: "line 10" put back after "line 6"
    assert exc.value.code == Code.CONFLICT
    assert "pre-image pack" in exc.value.details["files"][0]["why"]


def test_without_its_context_it_is_undone_where_the_file_is_as_the_edit_left_it() -> None:
    rec, after = _deletion()
    lost = _lost(replace(rec, after_sha256=Snapshot("f.txt", after).sha256))
    assert undo({"f.txt": after}, FakeEntry((lost,)))["f.txt"] == ORIGINAL


def test_the_lost_flag_survives_a_rewrite_of_the_record() -> None:
    lost = _lost(_deletion()[0])
    data = json.loads(json.dumps(lost.to_json()))  # as a compaction writes it
    assert data["context"] == CONTEXT_LOST
    assert ChangeRecord.from_json(data) == lost
