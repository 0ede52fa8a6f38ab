"""Whole before/after texts of a history entry or of the session's net change, for a diff editor.

An entry keeps only the regions it changed (its change records), not whole files: enough to undo
it, not to show it in a side-by-side diff with the file's own line numbers. Such a view is built
here from what the file holds now: `after` is the file as it is now, `before` the same text with
the edit's regions put back (located the way undo locates them, so user edits elsewhere are
kept on both sides and only the agent's change differs). When nothing touched the file since the
edit, that is exactly the edit's before and after. A created file diffs against empty, a deleted
one against its kept pre-image. When the edit's lines are no longer as it left them, or its
pre-images were dropped, the file gets a `reason` instead of texts: never a made-up view.

The net change already keeps whole texts (the baseline and what the agent last wrote), so its
texts are those two.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import Entry, History
from lsp_server.engine.model import apply_line_edits
from lsp_server.engine.read_results import HistoryTexts
from lsp_server.engine.text import Snapshot, absent
from lsp_server.engine.undo import ChangeRecord, plan_undo
from lsp_server.engine.values import frozen_writes_refused


@frozen_writes_refused
@dataclass(frozen=True, slots=True)
class _OneFile:
    """One change record of an entry, as `plan_undo` takes an entry: one file at a time, so a
    conflict in one file does not hide the texts of the others."""

    id: int
    changes: Sequence[ChangeRecord]
    committed: list[dict[str, Any]] = field(default_factory=list)
    # What the editor's save changed after the edit (History.saved): shown as the edit's part.
    saves: Sequence[ChangeRecord] = ()


def _file_head(rec: ChangeRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"path": rec.path, "change": rec.change}
    if rec.moved_to:
        out["movedTo"] = rec.moved_to
    return out


def _one(entry: Entry, rec: ChangeRecord, current: Mapping[str, Snapshot]) -> dict[str, Any]:
    out = _file_head(rec)
    if not rec.preimage:
        out["reason"] = f"edit #{entry.id} is too old: its pre-images are no longer kept"
        return out
    if rec.change == "add":
        out["before"], out["after"] = "", rec.after_text or ""
        return out
    if rec.change == "delete":
        out["before"], out["after"] = rec.before_text or "", ""
        return out
    snap = current.get(rec.target_path) or absent(rec.target_path)
    view = dict(current)
    if rec.change == "move":
        # A file made since at the path it moved away from blocks undoing the move, not showing
        # it: without this, its diff was refused as "lines changed again", which they were not.
        view[rec.path] = absent(rec.path)
    try:
        saves = tuple(s for s in entry.saves if s.path == rec.target_path)
        plan = plan_undo(_OneFile(entry.id, (rec,), saves=saves), view)
    except EditError as exc:
        # plan_undo's messages are about undoing; here the question is what can be shown.
        out["reason"] = (
            f"the lines edit #{entry.id} changed in {rec.target_path} were changed again "
            "since, so it cannot be shown on the file as it is now"
            if exc.code == Code.CONFLICT
            else exc.message
        )
        return out
    undo = plan.changes[0]
    out["before"] = "".join(apply_line_edits(snap.lines, list(undo.edits)))
    out["after"] = snap.text
    return out


def entry_texts(entry: Entry, current: Mapping[str, Snapshot]) -> list[dict[str, Any]]:
    """Per file of `entry`: `{path, change, movedTo?, before, after}` (whole texts, BOM left
    out) or `{path, change, movedTo?, reason}`. `current` maps the entry's paths (`History.
    undo_paths`) to what they show now."""
    out: list[dict[str, Any]] = []
    for rec in entry.changes:
        why = _not_landed(entry, rec)
        if why is not None:
            item = _file_head(rec)
            item["reason"] = why
            out.append(item)
            continue
        out.append(_one(entry, rec, current))
    return out


def _not_landed(entry: Entry, rec: ChangeRecord) -> str | None:
    """Why `rec` of `entry` has nothing to show (it did not land, or that is not known yet)."""
    if not entry.finished:
        # Whether it landed is not known yet: say that, never "changed nothing".
        return f"edit #{entry.id} has not finished"
    landed = entry.outcome == "applied" or any(
        c.get("state") in ("applied", "unknown") for c in entry.committed
    )
    states = {c.get("path"): c.get("state") for c in entry.committed}
    if not landed or states.get(rec.path) == "not-applied":
        return f"edit #{entry.id} changed nothing in this file ({entry.outcome})"
    return None


def net_texts(history: History) -> list[dict[str, Any]]:
    """Per file the agent changed this session: `{path, change, movedFrom?, before, after}`, the
    whole texts the net diff compares (before the agent first touched it, after its latest edit;
    an added file's `before` and a deleted file's `after` are empty)."""
    out: list[dict[str, Any]] = []
    for tr in history.tracked_files():
        kind = tr.kind()
        if kind is None:
            continue
        item: dict[str, Any] = {"path": tr.path, "change": kind}
        if kind == "move":
            item["movedFrom"] = tr.origin
        item["before"] = "".join(tr.base) if tr.base_exists else ""
        item["after"] = "".join(tr.last) if tr.last_exists else ""
        if kind == "update" and item["before"] == item["after"]:
            continue  # changes that cancelled out: the net diff leaves them out too
        out.append(item)
    return out


def texts_result(
    history: History, edit_id: int | None, live: Callable[[str], Snapshot | None]
) -> HistoryTexts:
    """The `agentEdit.history {texts: true}` answer: `{ok, files}` for one edit (`editId`) or for
    the session's net change. `live(path)` is what a path shows now (None if unreadable)."""
    if edit_id is None:
        return HistoryTexts(files=net_texts(history))
    entry = history.entry(edit_id)
    current = {p: live(p) or absent(p) for p in history.undo_paths(edit_id)}
    files = entry_texts(entry, current)
    # An undo that was itself undone put the edit's lines back: they are read off the file.
    if entry.undone_by is not None and history.entry(entry.undone_by).undone_by is None:
        files = _through_undo(history, entry, files, live)
    return HistoryTexts(edit_id=edit_id, files=files)


def _through_undo(
    history: History,
    entry: Entry,
    files: list[dict[str, Any]],
    live: Callable[[str], Snapshot | None],
) -> list[dict[str, Any]]:
    """An undone edit's lines are gone from the file, but its undo is an exact mirror of it: the
    undo's after and before are the edit's before and after (on the file as it is now)."""
    assert entry.undone_by is not None
    undo = history.entry(entry.undone_by)
    current = {p: live(p) or absent(p) for p in history.undo_paths(undo.id)}
    # The undo of a change to path P is a change whose target is P (a move goes back to it).
    mirror = {
        rec.target_path: item
        for rec, item in zip(undo.changes, entry_texts(undo, current), strict=True)
    }
    out: list[dict[str, Any]] = []
    for rec, item in zip(entry.changes, files, strict=True):
        # Only the undo can tell where an undone update or move was: its own regions are gone
        # from the file, and reading them off the file as it is now would find the same lines
        # wherever else they occur and show a change the edit never made. An add or a delete
        # keeps whole texts, and an item that did not land has nothing to show either way.
        if rec.change in ("add", "delete") or not rec.preimage or _not_landed(entry, rec):
            out.append(item)
            continue
        back = mirror.get(rec.path)
        item = _file_head(rec)
        if back is not None and "before" in back:
            item["before"], item["after"] = back["after"], back["before"]
        else:
            item["reason"] = (
                f"edit #{entry.id} was undone by edit #{undo.id}, and the lines the undo "
                f"changed in {rec.path} were changed again since, so it cannot be shown on "
                "the file as it is now"
            )
        out.append(item)
    return out
