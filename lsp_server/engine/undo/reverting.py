"""Undo with a three-way check: the plan that reverts a recorded edit where it is still in place.

`plan_undo` reverses a recorded edit only where the lines it changed are still exactly as it left
them; user edits elsewhere in the file are allowed (regions are relocated when lines shifted,
never onto a lookalike far away). Any other difference is a `CONFLICT` listing the lines. Pure:
snapshots in, a plan out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lsp_server.engine import errors
from lsp_server.engine.eol_views import line_break_map, map_line_breaks
from lsp_server.engine.errors import EditError
from lsp_server.engine.model import EditedLines, FileChange, LineEdit, Plan, minimal_edit
from lsp_server.engine.text import Snapshot, absent, content, split_lines
from lsp_server.engine.undo.changes import ChangeRecord, Hunk, is_after, line_diff, matches

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, Protocol
else:
    Protocol = object  # `Undoable` is the type checker's; a run needs no typing for it

MAX_CONFLICT_LINES = 50


class Undoable(Protocol):
    """What `plan_undo` needs from a history entry."""

    @property
    def id(self) -> int: ...

    @property
    def changes(self) -> Sequence[ChangeRecord]: ...

    @property
    def committed(self) -> list[dict[str, Any]]: ...

    @property
    def saves(self) -> Sequence[ChangeRecord]: ...


class Conflicts:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.files: list[dict[str, Any]] = []

    def file(self, path: str, why: str) -> None:
        self.files.append({"path": path, "why": why})

    def __bool__(self) -> bool:
        return bool(self.lines or self.files)


def _context_ok(lines: Sequence[str], p: int, h: Hunk) -> bool:
    end = p + len(h.after)
    if not matches(lines, p - len(h.ctx_before), h.ctx_before):
        return False
    return matches(lines, end, h.ctx_after)


def _relocate(lines: Sequence[str], h: Hunk, expected: int, floor: int, slack: int) -> int | None:
    """Where the hunk's after-region is now: its expected place, else the nearest unique match.
    `slack` is how many lines the file grew or shrank since the edit (in absolute value)."""
    if expected >= floor and matches(lines, expected, h.after):
        if h.after or _context_ok(lines, expected, h):
            return expected
    last = len(lines) - len(h.after)
    first_line = h.after[0] if h.after else None
    with_context: list[int] = []
    bare: list[int] = []
    for p in range(floor, last + 1):
        if first_line is not None and lines[p] != first_line:
            continue
        if not matches(lines, p, h.after):
            continue
        if _context_ok(lines, p, h):
            with_context.append(p)
        elif h.after:
            bare.append(p)
    if with_context:
        with_context.sort(key=lambda p: abs(p - expected))
        if len(with_context) > 1 and abs(with_context[0] - expected) == abs(
            with_context[1] - expected
        ):
            return None  # two equally likely places: refuse rather than guess
        return with_context[0]
    # Without its context the region is only trusted where it is the one place it occurs, and
    # only as far from its place as the file's lines grew or shrank: the same lines found
    # further away are other lines that happen to read the same (the edit's own were retyped),
    # and reverting them would change lines the edit never touched.
    if len(bare) == 1 and abs(bare[0] - expected) <= slack:
        return bare[0]
    return None


def _best_guess(lines: Sequence[str], h: Hunk, expected: int, floor: int) -> int:
    """Where the changed region most likely is now, to show what differs there: after its
    leading context or before its trailing context (nearest to where it was), else in place."""
    found: list[int] = []
    last = len(lines) - len(h.after)
    for p in range(max(floor, 0), last + 1):
        if h.ctx_before and matches(lines, p - len(h.ctx_before), h.ctx_before):
            found.append(p)
        elif h.ctx_after and matches(lines, p + len(h.after), h.ctx_after):
            found.append(p)
    if not found:
        return expected
    return min(found, key=lambda p: abs(p - expected))


def _differing_lines(
    path: str, lines: Sequence[str], p: int, want: Sequence[str]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, w in enumerate(want):
        cur = lines[p + i] if 0 <= p + i < len(lines) else None
        if cur != w:
            out.append(
                {
                    "path": path,
                    "line": p + i + 1,
                    "expected": content(w),
                    "current": None if cur is None else content(cur),
                }
            )
    return out


def _diff_lines(path: str, want: Sequence[str], have: Sequence[str]) -> list[dict[str, Any]]:
    """The lines where `have` differs from `want`, in `have`'s 1-based numbering."""
    out: list[dict[str, Any]] = []
    delta = 0
    for e in line_diff(want, have):
        at = e.start + delta
        old_part = want[e.start : e.end]
        for i in range(max(len(old_part), len(e.new_lines))):
            w = old_part[i] if i < len(old_part) else None
            h = e.new_lines[i] if i < len(e.new_lines) else None
            out.append(
                {
                    "path": path,
                    "line": at + min(i, max(len(e.new_lines) - 1, 0)) + 1,
                    "expected": None if w is None else content(w),
                    "current": None if h is None else content(h),
                }
            )
            if len(out) >= MAX_CONFLICT_LINES:
                return out
        delta += len(e.new_lines) - (e.end - e.start)
    return out


def reverse_hunks(
    rec: ChangeRecord, snap: Snapshot, conflicts: Conflicts, exact: bool
) -> tuple[LineEdit, ...] | None:
    """Edits on `snap` restoring every hunk's pre-image, or None (conflicts filled in)."""
    lines = snap.lines
    edits: list[LineEdit] = []
    shift = 0
    floor = 0
    ok = True
    delta = sum(len(h.after) - len(h.before) for h in rec.hunks)
    slack = abs(len(lines) - (rec.before_lines + delta))
    for h in _in_shape_of(rec.hunks, snap):
        expected = h.after_start + shift
        p = expected if exact else _relocate(lines, h, expected, floor, slack)
        if p is None:
            ok = False
            where = _best_guess(lines, h, expected, floor)
            diff = _differing_lines(rec.target_path, lines, where, h.after)
            if not diff:
                # The lines are there but not at one place we can be sure of (or around them the
                # context moved): name the region anyway so the agent can look.
                diff = [
                    {
                        "path": rec.target_path,
                        "line": expected + 1,
                        "expected": "".join(content(x) + "\n" for x in h.ctx_before + h.after),
                        "current": None,
                    }
                ]
            conflicts.lines.extend(diff)
            continue
        shift = p - h.after_start
        floor = p + len(h.after)
        e = minimal_edit(list(lines[p : p + len(h.after)]), list(h.before), p)
        if e is not None:
            edits.append(e)
    return tuple(edits) if ok else None


def _in_shape_of(hunks: Sequence[Hunk], snap: Snapshot) -> Sequence[Hunk]:
    """`hunks` with their line breaks as `snap` has them, where they were recorded from the
    same file in its other shape: CRLF on disk, LF in Emacs's buffer (engine/eol_views.py).
    Reverted in the file's own line ends; compared as they were, `TWO` was a CONFLICT with
    `TWO`."""
    recorded = [
        x for h in hunks for part in (h.before, h.after, h.ctx_before, h.ctx_after) for x in part
    ]
    how = line_break_map(snap, recorded)
    if how is None:
        return hunks
    return [
        h._replace(
            before=map_line_breaks(h.before, how),
            after=map_line_breaks(h.after, how),
            ctx_before=map_line_breaks(h.ctx_before, how),
            ctx_after=map_line_breaks(h.ctx_after, how),
        )
        for h in hunks
    ]


def _describe_missing(rec: ChangeRecord, why: str) -> EditError:
    return errors.invalid_argument(
        why,
        "Only recent edits can be undone; edit the file directly (agentEdit.read, then replace).",
        argument="editId",
        path=rec.path,
    )


def _before_save(save: ChangeRecord, snap: Snapshot) -> Snapshot | None:
    """`snap` with what the editor's save changed after the edit reverted (the text the edit
    left, with whatever else changed since), or None when the save's lines are not as it left
    them: the edit's own undo then checks `snap` as it is."""
    edits = reverse_hunks(save, snap, Conflicts(), exact=False)
    if edits is None:
        return None
    lines = list(EditedLines(snap.lines, edits))
    return Snapshot(snap.path, "".join(lines), snap.source, bom=snap.bom, given_lines=lines)


def _undo_one(
    rec: ChangeRecord,
    current: Mapping[str, Snapshot],
    conflicts: Conflicts,
    save: ChangeRecord | None = None,
) -> FileChange | None:
    snap = current.get(rec.target_path) or absent(rec.target_path)
    if rec.change == "add":
        if not snap.exists:
            conflicts.file(rec.path, "the file the edit created no longer exists")
            return None
        if not is_after(rec, snap):
            if rec.after_text is not None:
                conflicts.lines.extend(
                    _diff_lines(rec.path, split_lines(rec.after_text), snap.lines)
                )
            conflicts.file(rec.path, "the file the edit created has changed since")
            return None
        return FileChange("delete", snap)
    if rec.change == "delete":
        if snap.exists:
            conflicts.file(rec.path, "a file exists again where the edit deleted one")
            return None
        if rec.before_text is None:
            raise _describe_missing(rec, f"The pre-image of {rec.path} is no longer kept.")
        return FileChange(
            "add", snap, new_text_override=rec.before_text, new_bom=rec.bom, new_mode=rec.mode
        )
    if not snap.exists:
        conflicts.file(rec.target_path, "the file the edit changed no longer exists")
        return None
    if rec.change == "move":
        origin = current.get(rec.path)
        if origin is not None and origin.exists:
            conflicts.file(rec.path, "a file now exists at the path the edit moved away from")
            return None
    # The editor's save changed the text after the edit (History.saved): undone with it, so the
    # text from before the edit comes back, not a CONFLICT on the lines the save trimmed.
    unsaved = _before_save(save, snap) if save is not None else None
    if unsaved is not None:
        undone = reverse_hunks(rec, unsaved, conflicts, exact=False)
        if undone is None:
            return None
        # Minimal ranges (a save trims lines far apart): not one edit spanning all of them.
        edits: tuple[LineEdit, ...] | None = tuple(
            line_diff(snap.lines, list(EditedLines(unsaved.lines, undone)))
        )
    else:
        edits = reverse_hunks(rec, snap, conflicts, exact=False)
    if edits is None:
        return None
    if rec.change == "move":
        return FileChange("move", snap, edits, moved_to=rec.path, new_bom=rec.bom)
    if not edits and snap.bom == rec.bom:
        return None
    return FileChange("update", snap, edits, new_bom=rec.bom)


def plan_undo(entry: Undoable, current: Mapping[str, Snapshot]) -> Plan:
    """The plan that reverts `entry`, checked three ways against `current` snapshots.

    `current` maps each path of `undo_paths(entry)` to its snapshot now (absent files may be
    missing or given as `absent(path)`). Changes the committed list says did not land are skipped.
    """
    states = {c.get("path"): c.get("state") for c in entry.committed}
    saves = {s.path: s for s in entry.saves}
    conflicts = Conflicts()
    changes: list[FileChange] = []
    for rec in entry.changes:
        if states.get(rec.path) == "not-applied":
            continue
        if not rec.preimage:
            raise _describe_missing(
                rec,
                f"Edit #{entry.id} is too old to undo: its pre-images are no longer kept.",
            )
        fc = _undo_one(rec, current, conflicts, saves.get(rec.target_path))
        if fc is not None:
            changes.append(fc)
    if conflicts:
        lines = conflicts.lines[:MAX_CONFLICT_LINES]
        where = ", ".join(sorted({str(x["path"]) for x in conflicts.lines + conflicts.files}))
        raise errors.conflict(
            f"Edit #{entry.id} cannot be undone: the lines it changed in {where} are no longer "
            "as it left them.",
            "Read the file again and revert the change by hand with agentEdit.replace, or keep it.",
            lines=lines,
            files=conflicts.files,
            editId=entry.id,
        )
    if not changes:
        raise errors.invalid_argument(
            f"Edit #{entry.id} changed nothing that is still there to undo.",
            "Check agentEdit.history for the edit you meant.",
            argument="editId",
            editId=entry.id,
        )
    return Plan("undo", tuple(changes), {"undoes": entry.id})


def undo_paths(changes: Sequence[ChangeRecord]) -> list[str]:
    """Every path whose current snapshot `plan_undo` / `rollback_records` needs."""
    out: list[str] = []
    for rec in changes:
        for p in (rec.path, rec.moved_to):
            if p and p not in out:
                out.append(p)
    return out
