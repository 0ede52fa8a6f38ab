"""Rollback of partly applied plans: what landed of a plan, and the plan that reverts what did.

`plan_rollback` looks at what a plan left behind (snapshots observed afterwards), says per file
whether its change landed (`applied`, `not-applied`, `unknown`, with a note) and plans the
compensating changes for what did; `rollback_records` does the same from journal records (an
interrupted plan found on start). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.text import Snapshot
from lsp_server.engine.undo.changes import ChangeRecord, is_after, is_before, record_change
from lsp_server.engine.undo.reverting import Conflicts, reverse_hunks

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

CommitState: TypeAlias = "Literal['applied', 'not-applied', 'unknown']"  # quoted: no typing


def _classify(
    rec: ChangeRecord, observed: Mapping[str, Snapshot]
) -> tuple[CommitState, FileChange | None, str | None]:
    src = observed.get(rec.path)
    if rec.change == "add":
        if src is None:
            return "unknown", None, "not observed"
        if not src.exists:
            return "not-applied", None, None
        if is_after(rec, src):
            return "applied", FileChange("delete", src), None
        return "unknown", None, "the file exists with other content"
    if rec.change == "delete":
        if src is None:
            return "unknown", None, "not observed"
        if not src.exists:
            pre = rec.before_text
            if pre is None:
                return "applied", None, "pre-image not kept"
            back = FileChange("add", src, new_text_override=pre, new_bom=rec.bom, new_mode=rec.mode)
            return "applied", back, None
        if is_before(rec, src):
            return "not-applied", None, None
        return "unknown", None, "the file has other content"
    if rec.change == "update":
        if src is None or not src.exists:
            return "unknown", None, "not observed" if src is None else "the file is gone"
        if is_after(rec, src):
            edits = reverse_hunks(rec, src, Conflicts(), exact=True) or ()
            return "applied", FileChange("update", src, edits, new_bom=rec.bom), None
        if is_before(rec, src):
            return "not-applied", None, None
        return "unknown", None, "the file has neither the old nor the new content"
    # move
    dst = observed.get(rec.target_path)
    if src is None or dst is None:
        return "unknown", None, "not observed"
    if not src.exists and is_after(rec, dst):
        edits = reverse_hunks(rec, dst, Conflicts(), exact=True) or ()
        back = FileChange("move", dst, edits, moved_to=rec.path, new_bom=rec.bom)
        return "applied", back, None
    if is_before(rec, src) and not dst.exists:
        return "not-applied", None, None
    if not src.exists and is_before(rec, dst):
        # VS Code applies resource operations without the text edits after a failure ("abort"):
        # the rename landed, its edits did not. Moving it back restores the old state exactly.
        back = FileChange("move", dst, (), moved_to=rec.path, new_bom=rec.bom)
        return "unknown", back, "renamed, but its text edits did not land"
    return "unknown", None, "neither the old nor the new state is there"


def rollback_records(
    records: Sequence[ChangeRecord], observed: Mapping[str, Snapshot]
) -> tuple[list[dict[str, Any]], Plan]:
    """What landed of `records` (the committed list) and the plan that reverts what did."""
    committed: list[dict[str, Any]] = []
    compensate: list[FileChange] = []
    for rec in records:
        state, back, note = _classify(rec, observed)
        item: dict[str, Any] = {"path": rec.path, "change": rec.change, "state": state}
        if rec.moved_to:
            item["movedTo"] = rec.moved_to
        if note:
            item["note"] = note
        if state != "not-applied":
            # Whether the compensating plan reverts this file; if any landed file is not
            # revertible, a rollback cannot undo the whole action (PARTIAL, not _ROLLED_BACK).
            item["revertible"] = back is not None
        committed.append(item)
        if back is not None and not (back.change == "update" and not back.edits):
            compensate.append(back)
    return committed, Plan("rollback", tuple(compensate), {})


def plan_rollback(
    plan: Plan, observed: Mapping[str, Snapshot]
) -> tuple[list[dict[str, Any]], Plan]:
    """Given the plan that was sent and the snapshots observed afterwards (keyed by path, moves by
    both paths), the committed list `[{path, change, state, movedTo?, note?}]` and a compensating
    plan that reverts exactly the changes that landed. Pure."""
    return rollback_records([record_change(c, hashes=True) for c in plan.changes], observed)
