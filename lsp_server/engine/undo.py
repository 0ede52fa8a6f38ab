"""Reversible change records, undo with a three-way check, and rollback of partly applied plans.

A `ChangeRecord` is what the journal keeps of one file's change so it can be reversed later without
the whole file: for text edits the changed regions as they were before and after (with a little
context to find them again), for a deletion the whole pre-image, for a creation the whole text.

`plan_undo` reverses a recorded edit only where the lines it changed are still exactly as it left
them; user edits elsewhere in the file are allowed (regions are relocated when lines shifted). Any
other difference is a `CONFLICT` listing the lines. `plan_rollback` looks at what a partly applied
plan left behind, says per file what landed, and plans the compensating changes for what did.
All of it is pure: snapshots in, plans and lists out.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import (
    ChangeKind,
    EditedLines,
    FileChange,
    LineEdit,
    Plan,
    minimal_edit,
)
from lsp_server.engine.text import Snapshot, absent, content, split_lines

CONTEXT = 3
# A diff between two versions of a file trims the common prefix and suffix first (O(n)); only the
# middle goes through difflib, and past this many lines it is reported as one changed block, so a
# request never costs seconds (difflib needs 0.5-1.9 s on a 100k-line file).
MIDDLE_LIMIT = 50_000
MAX_CONFLICT_LINES = 50

CommitState = Literal["applied", "not-applied", "unknown"]


def line_diff(old: Sequence[str], new: Sequence[str], limit: int = MIDDLE_LIMIT) -> list[LineEdit]:
    """Sorted, non-overlapping line edits turning `old` into `new` (LSP line lists)."""
    whole = minimal_edit(old, new)
    if whole is None:
        return []
    p = whole.start
    a, b = old[whole.start : whole.end], list(whole.new_lines)
    if not a or not b or len(a) + len(b) > limit:
        return [whole]
    matcher = difflib.SequenceMatcher(None, a, b)
    return [
        LineEdit(p + i1, p + i2, tuple(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


@dataclass(frozen=True, slots=True)
class Hunk:
    """One changed region: `before` was old lines [start, end); `after` is at `after_start` now."""

    start: int
    end: int
    after_start: int
    before: tuple[str, ...]
    after: tuple[str, ...]
    ctx_before: tuple[str, ...] = ()
    ctx_after: tuple[str, ...] = ()

    def to_json(self) -> list[Any]:
        return [
            self.start,
            self.end,
            self.after_start,
            list(self.before),
            list(self.after),
            list(self.ctx_before),
            list(self.ctx_after),
        ]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Hunk:
        return cls(
            int(data[0]),
            int(data[1]),
            int(data[2]),
            tuple(data[3]),
            tuple(data[4]),
            tuple(data[5]),
            tuple(data[6]),
        )

    def edit(self) -> LineEdit:
        """The forward edit, in before-coordinates."""
        return LineEdit(self.start, self.end, self.after)


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    """One file's change as the journal keeps it: enough to verify and reverse it later."""

    path: str
    change: ChangeKind
    moved_to: str | None = None
    bom: bool = False
    new_bom: bool = False
    # Content hashes when they were known when the record was made (the failure path computes
    # them; the hot path does not hash a 100k-line file just to journal an edit).
    before_sha256: str | None = None
    after_sha256: str | None = None
    before_lines: int = 0  # line count before, so "is this the old / new state" is O(edit)
    hunks: tuple[Hunk, ...] = ()
    before_text: str | None = None  # delete: the whole pre-image
    after_text: str | None = None  # add: the whole new text
    # False once the pre-images were dropped (outside the undo window or over the size cap).
    preimage: bool = True

    @property
    def target_path(self) -> str:
        return self.moved_to or self.path

    def edits(self) -> list[LineEdit]:
        return [h.edit() for h in self.hunks]

    def stripped(self) -> ChangeRecord:
        # The hashes go too: they only serve telling old from new state, which an entry whose
        # pre-images are gone never needs again (and 10,000 of them are ~1 MB).
        return replace(
            self,
            hunks=(),
            before_text=None,
            after_text=None,
            before_sha256=None,
            after_sha256=None,
            preimage=False,
        )

    def file_entry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "change": self.change}
        if self.moved_to:
            out["movedTo"] = self.moved_to
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "change": self.change,
            "bom": self.bom,
            "newBom": self.new_bom,
            "beforeSha256": self.before_sha256,
            "afterSha256": self.after_sha256,
            "lines": self.before_lines,
            "preimage": self.preimage,
        }
        if self.moved_to:
            out["movedTo"] = self.moved_to
        if self.hunks:
            out["hunks"] = [h.to_json() for h in self.hunks]
        if self.before_text is not None:
            out["beforeText"] = self.before_text
        if self.after_text is not None:
            out["afterText"] = self.after_text
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChangeRecord:
        return cls(
            # Interned: a long session repeats the same few paths in thousands of records.
            path=sys.intern(str(data["path"])),
            change=data["change"],
            moved_to=sys.intern(str(data["movedTo"])) if data.get("movedTo") else None,
            bom=bool(data.get("bom", False)),
            new_bom=bool(data.get("newBom", False)),
            before_sha256=data.get("beforeSha256"),
            after_sha256=data.get("afterSha256"),
            before_lines=int(data.get("lines", 0)),
            hunks=tuple(Hunk.from_json(h) for h in data.get("hunks", ())),
            before_text=data.get("beforeText"),
            after_text=data.get("afterText"),
            preimage=bool(data.get("preimage", True)),
        )

    def size(self) -> int:
        """Roughly how many characters of pre-image this record holds."""
        n = len(self.before_text or "") + len(self.after_text or "")
        for h in self.hunks:
            n += sum(map(len, h.before)) + sum(map(len, h.after))
        return n


def _record_hunks(
    old: Sequence[str], new: Sequence[str], edits: Sequence[LineEdit]
) -> tuple[Hunk, ...]:
    out: list[Hunk] = []
    delta = 0
    for e in edits:
        a_start = e.start + delta
        a_end = a_start + len(e.new_lines)
        before = tuple(old[e.start : e.end])
        after = tuple(new[a_start:a_end])
        if e.end >= len(old):
            # Applying an edit at the end may append the empty final line: keep it in the region.
            before = tuple(old[e.start :])
            after = tuple(new[a_start:])
            a_end = len(new)
        out.append(
            Hunk(
                e.start,
                e.start + len(before),
                a_start,
                before,
                after,
                tuple(new[max(0, a_start - CONTEXT) : a_start]),
                tuple(new[a_end : a_end + CONTEXT]),
            )
        )
        delta += len(e.new_lines) - (e.end - e.start)
    return tuple(out)


def record_change(fc: FileChange, *, hashes: bool = False) -> ChangeRecord:
    """The reversible record of one planned file change (computed before it is sent).

    Content hashes are included when already known, or always with `hashes`.
    """
    before = fc.before
    before_sha = (before.sha256 if hashes else before.sha256_if_known()) if before.exists else None
    after_sha = None if fc.change == "delete" else fc.new_sha256 if hashes else fc.digest.sha256
    base = ChangeRecord(
        path=fc.path,
        change=fc.change,
        moved_to=fc.moved_to,
        bom=fc.before.bom,
        new_bom=fc.bom,
        before_sha256=before_sha,
        after_sha256=after_sha,
        before_lines=len(fc.before.lines) if fc.before.exists else 0,
    )
    if fc.change == "add":
        return replace(base, after_text=fc.new_text)
    if fc.change == "delete":
        return replace(base, before_text=fc.before.text)
    if fc.new_text_override is not None:
        one = minimal_edit(fc.before.lines, fc.new_lines)
        edits: Sequence[LineEdit] = [one] if one else []
        new: Sequence[str] = fc.new_lines
    else:
        # Only the lines around the edits are read: no need to build the whole new file.
        edits = fc.edits
        new = EditedLines(fc.before.lines, edits)
    return replace(base, hunks=_record_hunks(fc.before.lines, new, edits))


class Undoable(Protocol):
    """What `plan_undo` needs from a history entry."""

    @property
    def id(self) -> int: ...

    @property
    def changes(self) -> Sequence[ChangeRecord]: ...

    @property
    def committed(self) -> list[dict[str, Any]]: ...


class _Conflicts:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.files: list[dict[str, Any]] = []

    def file(self, path: str, why: str) -> None:
        self.files.append({"path": path, "why": why})

    def __bool__(self) -> bool:
        return bool(self.lines or self.files)


def _matches(lines: Sequence[str], p: int, want: Sequence[str]) -> bool:
    k = len(want)
    if p < 0 or p + k > len(lines):
        return False
    return all(lines[p + i] == want[i] for i in range(k))


def _context_ok(lines: Sequence[str], p: int, h: Hunk) -> bool:
    end = p + len(h.after)
    if not _matches(lines, p - len(h.ctx_before), h.ctx_before):
        return False
    return _matches(lines, end, h.ctx_after)


def _relocate(lines: Sequence[str], h: Hunk, expected: int, floor: int, slack: int) -> int | None:
    """Where the hunk's after-region is now: its expected place, else the nearest unique match.
    `slack` is how many lines the file grew or shrank since the edit (in absolute value)."""
    if expected >= floor and _matches(lines, expected, h.after):
        if h.after or _context_ok(lines, expected, h):
            return expected
    last = len(lines) - len(h.after)
    first_line = h.after[0] if h.after else None
    with_context: list[int] = []
    bare: list[int] = []
    for p in range(floor, last + 1):
        if first_line is not None and lines[p] != first_line:
            continue
        if not _matches(lines, p, h.after):
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
        if h.ctx_before and _matches(lines, p - len(h.ctx_before), h.ctx_before):
            found.append(p)
        elif h.ctx_after and _matches(lines, p + len(h.after), h.ctx_after):
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


def _reverse_hunks(
    rec: ChangeRecord, snap: Snapshot, conflicts: _Conflicts, exact: bool
) -> tuple[LineEdit, ...] | None:
    """Edits on `snap` restoring every hunk's pre-image, or None (conflicts filled in)."""
    lines = snap.lines
    edits: list[LineEdit] = []
    shift = 0
    floor = 0
    ok = True
    delta = sum(len(h.after) - len(h.before) for h in rec.hunks)
    slack = abs(len(lines) - (rec.before_lines + delta))
    for h in rec.hunks:
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


def _describe_missing(rec: ChangeRecord, why: str) -> EditError:
    return EditError(
        Code.INVALID_ARGUMENT,
        why,
        "Only recent edits can be undone; edit the file directly (agentEdit.read, then replace).",
        {"argument": "editId", "path": rec.path},
    )


def _undo_one(
    rec: ChangeRecord, current: Mapping[str, Snapshot], conflicts: _Conflicts
) -> FileChange | None:
    snap = current.get(rec.target_path) or absent(rec.target_path)
    if rec.change == "add":
        if not snap.exists:
            conflicts.file(rec.path, "the file the edit created no longer exists")
            return None
        if not _is_after(rec, snap):
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
        return FileChange("add", snap, new_text_override=rec.before_text, new_bom=rec.bom)
    if not snap.exists:
        conflicts.file(rec.target_path, "the file the edit changed no longer exists")
        return None
    if rec.change == "move":
        origin = current.get(rec.path)
        if origin is not None and origin.exists:
            conflicts.file(rec.path, "a file now exists at the path the edit moved away from")
            return None
    edits = _reverse_hunks(rec, snap, conflicts, exact=False)
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
    conflicts = _Conflicts()
    changes: list[FileChange] = []
    for rec in entry.changes:
        if states.get(rec.path) == "not-applied":
            continue
        if not rec.preimage:
            raise _describe_missing(
                rec,
                f"Edit #{entry.id} is too old to undo: its pre-images are no longer kept.",
            )
        fc = _undo_one(rec, current, conflicts)
        if fc is not None:
            changes.append(fc)
    if conflicts:
        lines = conflicts.lines[:MAX_CONFLICT_LINES]
        where = ", ".join(sorted({str(x["path"]) for x in conflicts.lines + conflicts.files}))
        raise EditError(
            Code.CONFLICT,
            f"Edit #{entry.id} cannot be undone: the lines it changed in {where} are no longer "
            "as it left them.",
            "Read the file again and revert the change by hand with agentEdit.replace, or keep it.",
            {"lines": lines, "files": conflicts.files, "editId": entry.id},
        )
    if not changes:
        raise EditError(
            Code.INVALID_ARGUMENT,
            f"Edit #{entry.id} changed nothing that is still there to undo.",
            "Check agentEdit.history for the edit you meant.",
            {"argument": "editId", "editId": entry.id},
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


def _hunks_at(rec: ChangeRecord, lines: Sequence[str], after: bool) -> bool:
    """Whether every hunk's after (or before) lines are exactly where the edit put (or found)
    them, and the file has the line count that goes with it: O(edit), no hashing."""
    delta = sum(len(h.after) - len(h.before) for h in rec.hunks)
    if len(lines) != rec.before_lines + (delta if after else 0):
        return False
    for h in rec.hunks:
        if after and not _matches(lines, h.after_start, h.after):
            return False
        if not after and not _matches(lines, h.start, h.before):
            return False
    return True


def _is_after(rec: ChangeRecord, snap: Snapshot) -> bool:
    """Whether `snap` shows the content the change produced (hash when known, else its regions)."""
    if not snap.exists:
        return False
    if rec.change == "add" and rec.after_text is not None:
        return snap.text == rec.after_text
    if rec.after_sha256 is not None:
        return snap.sha256 == rec.after_sha256
    return rec.change in ("update", "move") and _hunks_at(rec, snap.lines, after=True)


def _is_before(rec: ChangeRecord, snap: Snapshot) -> bool:
    """Whether `snap` shows the content the change started from."""
    if not snap.exists:
        return False
    if rec.change == "delete" and rec.before_text is not None:
        return snap.text == rec.before_text
    if rec.before_sha256 is not None:
        return snap.sha256 == rec.before_sha256
    return rec.change in ("update", "move") and _hunks_at(rec, snap.lines, after=False)


def _classify(
    rec: ChangeRecord, observed: Mapping[str, Snapshot]
) -> tuple[CommitState, FileChange | None, str | None]:
    src = observed.get(rec.path)
    if rec.change == "add":
        if src is None:
            return "unknown", None, "not observed"
        if not src.exists:
            return "not-applied", None, None
        if _is_after(rec, src):
            return "applied", FileChange("delete", src), None
        return "unknown", None, "the file exists with other content"
    if rec.change == "delete":
        if src is None:
            return "unknown", None, "not observed"
        if not src.exists:
            pre = rec.before_text
            if pre is None:
                return "applied", None, "pre-image not kept"
            return "applied", FileChange("add", src, new_text_override=pre, new_bom=rec.bom), None
        if _is_before(rec, src):
            return "not-applied", None, None
        return "unknown", None, "the file has other content"
    if rec.change == "update":
        if src is None or not src.exists:
            return "unknown", None, "not observed" if src is None else "the file is gone"
        if _is_after(rec, src):
            edits = _reverse_hunks(rec, src, _Conflicts(), exact=True) or ()
            return "applied", FileChange("update", src, edits, new_bom=rec.bom), None
        if _is_before(rec, src):
            return "not-applied", None, None
        return "unknown", None, "the file has neither the old nor the new content"
    # move
    dst = observed.get(rec.target_path)
    if src is None or dst is None:
        return "unknown", None, "not observed"
    if not src.exists and _is_after(rec, dst):
        edits = _reverse_hunks(rec, dst, _Conflicts(), exact=True) or ()
        back = FileChange("move", dst, edits, moved_to=rec.path, new_bom=rec.bom)
        return "applied", back, None
    if _is_before(rec, src) and not dst.exists:
        return "not-applied", None, None
    if not src.exists and _is_before(rec, dst):
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
