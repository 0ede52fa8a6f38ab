"""Reversible change records: what the journal keeps of one file's change to reverse it later.

A `ChangeRecord` holds, for text edits, the changed regions as they were before and after (`Hunk`,
with a little context to find them again), for a deletion the whole pre-image, for a creation the
whole text; `record_change` makes one from a planned `FileChange` without building the whole new
file. `is_after` / `is_before` tell, in O(edit) where no hash is known, whether a snapshot shows
the state the change produced or started from. `line_diff` is the line diff both undo and the
history's net diff use. All pure.
"""

from __future__ import annotations

import sys
from collections import namedtuple
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from lsp_server.engine.model import ChangeKind, EditedLines, FileChange, LineEdit, minimal_edit
from lsp_server.engine.text import Snapshot

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

CONTEXT = 3
# A diff between two versions of a file trims the common prefix and suffix first (O(n)); only the
# middle goes through difflib, and past this many lines it is reported as one changed block, so a
# request never costs seconds (difflib needs 0.5-1.9 s on a 100k-line file).
MIDDLE_LIMIT = 50_000


def line_diff(old: Sequence[str], new: Sequence[str], limit: int = MIDDLE_LIMIT) -> list[LineEdit]:
    """Sorted, non-overlapping line edits turning `old` into `new` (LSP line lists)."""
    whole = minimal_edit(old, new)
    if whole is None:
        return []
    p = whole.start
    a, b = old[whole.start : whole.end], list(whole.new_lines)
    if not a or not b or len(a) + len(b) > limit:
        return [whole]
    # One line on a side that the other side lacks (a line changed in place, the common case
    # of a user's edit between two agent edits): no line matches, so difflib's answer is the
    # whole middle replaced, said without importing it (with heapq: bench/bench_startup.py,
    # whose runs diff such an edit, --instructions --rounds 3, without -> with this: 154.7
    # -> 152.5 M instructions past interpreter start; tests/engine/test_line_diff_one_line.py).
    if (len(a) == 1 and a[0] not in b) or (len(b) == 1 and b[0] not in a):
        return [whole]
    # Imported here, by the first diff with a middle to compare: at import it cost every server
    # start and `agent-edit history`/`undo` 1.8-5 ms (`-X importtime`), more than the history
    # package's own modules.
    import difflib

    matcher = difflib.SequenceMatcher(None, a, b)
    return [
        LineEdit(p + i1, p + i2, tuple(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


if TYPE_CHECKING:
    from typing import NamedTuple

    class _HunkFields(NamedTuple):
        start: int
        end: int
        after_start: int
        before: tuple[str, ...]
        after: tuple[str, ...]
        ctx_before: tuple[str, ...] = ()
        ctx_after: tuple[str, ...] = ()

else:  # typing's NamedTuple is typing imported by every headless edit: collections' is free
    _HunkFields = namedtuple(
        "_HunkFields",
        "start end after_start before after ctx_before ctx_after",
        defaults=((), ()),
    )


class Hunk(_HunkFields):
    """One changed region: `before` was old lines [start, end); `after` is at `after_start` now.

    A named tuple, not a frozen dataclass: a 1,000-file patch makes 5,000 of them at begin, and
    a frozen dataclass's `__init__` sets each field through `object.__setattr__`; a tuple is
    also already what the journal keeps (`to_json` is the hunk itself, no lists copied).
    bench_recording's 1,000 files, CPU best of 9: the begin record's `to_json` 5.6 -> 0.7 ms."""

    __slots__ = ()

    def to_json(self) -> Sequence[Any]:
        """`[start, end, after_start, before, after, ctx_before, ctx_after]` as JSON encodes
        it: the tuple itself (json writes a tuple as a list)."""
        return self

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
    # True when its hunks' context lines were left to its begin record's pack and could not be
    # read again (the pack lost, or not the pre-image: `with_context`); written `"context":
    # "lost"`. Without them a region the edit removed has nothing to be placed by: undo refuses
    # it (undo/reverting.py `reverse_hunks`) rather than put the lines back by position alone.
    context_lost: bool = False

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

    def to_json(self, context: bool = True) -> dict[str, Any]:
        """The record as the journal keeps it. Without `context`, its hunks' context lines are
        left out (written empty, with `"context": "pack"` saying so): a begin record whose file's
        pre-image is in the record's pack writes that (`with_context` reads them again)."""
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
        # Only the last hunk may reach the file's end: one there holds the new file's lines to
        # its end, a later hunk's too, so its region is not an edit `with_context` can use.
        if self.hunks and not context and all(h.end < self.before_lines for h in self.hunks[:-1]):
            out["hunks"] = [h[:5] + _NO_CONTEXT for h in self.hunks]
            out["context"] = CONTEXT_IN_PACK
        elif self.hunks:
            out["hunks"] = [h.to_json() for h in self.hunks]
            if self.context_lost:
                out["context"] = CONTEXT_LOST
        if self.before_text is not None:
            out["beforeText"] = self.before_text
        if self.after_text is not None:
            out["afterText"] = self.after_text
        return out

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], hunks: tuple[Hunk, ...] | None = None
    ) -> ChangeRecord:
        """The record `to_json` wrote; with `hunks`, those instead of its own (`with_context`)."""
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
            hunks=tuple(map(Hunk.from_json, data.get("hunks", ()))) if hunks is None else hunks,
            before_text=data.get("beforeText"),
            after_text=data.get("afterText"),
            preimage=bool(data.get("preimage", True)),
            # Read without the hunks `with_context` made: a record written without its context
            # lines has lost them.
            context_lost=hunks is None and data.get("context") in (CONTEXT_IN_PACK, CONTEXT_LOST),
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
    n_old = len(old)
    prev_end = 0  # where the previous edit ended (old coordinates)
    for k, e in enumerate(edits):
        a_start = e.start + delta
        a_end = a_start + len(e.new_lines)
        # Inside the file and CONTEXT lines clear of its neighbours (nearly every hunk), the
        # new file's lines there are the edit's own and the old ones around it: read them
        # from those rather than through `new` (an EditedLines, a bisect per line: ~40 ms for
        # a 1,000-file patch).
        inside = e.end < n_old - 1
        if inside:
            before = tuple(old[e.start : e.end])
            after = tuple(e.new_lines)
        elif e.end >= n_old:
            # Applying an edit at the end may append the empty final line: keep it in the region.
            before = tuple(old[e.start :])
            after = tuple(new[a_start:])
            a_end = len(new)
        else:
            before = tuple(old[e.start : e.end])
            after = tuple(new[a_start:a_end])
        if prev_end <= e.start - CONTEXT or (k == 0 and e.start < CONTEXT):
            ctx_before = tuple(old[max(0, e.start - CONTEXT) : e.start])
        else:
            ctx_before = tuple(new[max(0, a_start - CONTEXT) : a_start])
        nxt = edits[k + 1].start if k + 1 < len(edits) else n_old
        if inside and e.end + CONTEXT < n_old - 1 and nxt >= e.end + CONTEXT:
            ctx_after = tuple(old[e.end : e.end + CONTEXT])
        else:
            ctx_after = tuple(new[a_end : a_end + CONTEXT])
        out.append(
            Hunk(e.start, e.start + len(before), a_start, before, after, ctx_before, ctx_after)
        )
        delta += len(e.new_lines) - (e.end - e.start)
        prev_end = e.end
    return tuple(out)


# A change record's `context` when its hunks' context lines were left out of its journal line
# (`ChangeRecord.to_json(context=False)`), to be read again from its file's pre-image.
#
# Why: they are most of a begin record (bench_patch's 1,000 files: 2.25 MB of change records,
# 0.81 MB without them), and the record's pack holds the lines they are read from. The hunks keep
# their seven items, the context two empty lists, so a release before this one (03eec8d) reads
# such a record as one without context (tests/engine/test_journal_context_in_pack.py): it undoes
# the edit where it is, relocates a moved region only where it is unique, and its history's
# per-file diffs (finish records hold the diff) are not affected. A lost pack loses the context
# (and the net diff's baselines), not the edit nor its undo. Whole applies against main 03eec8d,
# `bench/bench_ab.py --instructions --rounds 1 [--workload big] main WORKTREE`: 2,346 -> 2,175 M
# instructions on the 1,000 files, 933 -> 800 M on the 100k-line file; the next run's replay
# of that journal (History.load, callgrind, imports subtracted) 1,046 -> 1,008 M and 328 -> 320 M.
CONTEXT_IN_PACK = "pack"
CONTEXT_LOST = "lost"  # (`ChangeRecord.context_lost`)
_NO_CONTEXT: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


def with_context(data: Mapping[str, Any], before: Sequence[str]) -> ChangeRecord:
    """The record `data` (a journal line's, written without context: `CONTEXT_IN_PACK`) with its
    hunks' context lines read from `before`, the file's lines before the change (the record's
    pack): the hunks `record_change` made. Without them (as `from_json` reads it) when `before`
    is not the pre-image its hunks were made from (another line count, a hunk's old lines not
    where it says).

    A hunk CONTEXT lines clear of its neighbours and of the file's end (nearly all of them) has
    its old lines around it as context, two slices, made as the hunk is decoded (no second
    record: `dataclasses.replace` cost ~5 us a record); any other has the record's hunks made
    again by `_record_hunks` over them as edits, which reads the same lines the first time did
    (the hunks' edits give the same new file as the change's own edits)."""
    raw = data.get("hunks", ())
    n = len(before)
    hunks: list[Hunk] = []
    if int(data.get("lines", 0)) == n:
        prev_end = 0
        for k, h in enumerate(raw):
            start, end = int(h[0]), int(h[1])
            # (`h[3]` a list, as JSON decodes it, so the slice compares to it as it is.)
            if not 0 <= start <= end <= n or before[start:end] != h[3]:
                hunks = []
                break
            nxt = int(raw[k + 1][0]) if k + 1 < len(raw) else n
            if not (prev_end <= start - CONTEXT or start < CONTEXT and k == 0) or not (
                end + CONTEXT < n - 1 and nxt >= end + CONTEXT
            ):
                return _with_context_rebuilt(data, before)
            hunks.append(
                Hunk(
                    start,
                    end,
                    int(h[2]),
                    tuple(h[3]),
                    tuple(h[4]),
                    tuple(before[max(0, start - CONTEXT) : start]),
                    tuple(before[end : end + CONTEXT]),
                )
            )
            prev_end = end
    if len(hunks) != len(raw):
        return ChangeRecord.from_json(data)
    return ChangeRecord.from_json(data, tuple(hunks))


def _with_context_rebuilt(data: Mapping[str, Any], before: Sequence[str]) -> ChangeRecord:
    """`with_context` of a record with a hunk near another or the file's end: all its hunks
    made again from their edits (`_record_hunks`), kept only when they are the ones stored."""
    bare = ChangeRecord.from_json(data)
    n = len(before)
    fits = (0 <= h.start <= h.end <= n and matches(before, h.start, h.before) for h in bare.hunks)
    if not all(fits):
        return bare  # (a hand-edited line: kept as written, not skipped on an IndexError)
    edits = [LineEdit(x.start, x.end, x.after) for x in bare.hunks]
    made = _record_hunks(before, EditedLines(before, edits), edits)
    if [x[:5] for x in made] != [x[:5] for x in bare.hunks]:
        return bare
    return ChangeRecord.from_json(data, made)


def record_change(fc: FileChange, *, hashes: bool = False) -> ChangeRecord:
    """The reversible record of one planned file change (computed before it is sent).

    Content hashes are included when already known, or always with `hashes`.
    """
    before = fc.before
    before_sha = (before.sha256 if hashes else before.sha256_if_known()) if before.exists else None
    after_sha = None if fc.change == "delete" else fc.new_sha256 if hashes else fc.digest.sha256
    # One constructor call: `dataclasses.replace` of a base record cost ~5 us a file
    # (bench_recording's 1,000 files, with `Hunk` a named tuple: record_change 23 -> 15 ms CPU).
    hunks: tuple[Hunk, ...] = ()
    before_text = after_text = None
    if fc.change == "add":
        after_text = fc.new_text
    elif fc.change == "delete":
        before_text = fc.before.text
    elif fc.new_text_override is not None:
        one = minimal_edit(fc.before.lines, fc.new_lines)
        hunks = _record_hunks(fc.before.lines, fc.new_lines, [one] if one else [])
    else:
        # Only the lines around the edits are read: no need to build the whole new file.
        lines = fc.before.lines
        hunks = _record_hunks(lines, EditedLines(lines, fc.edits), fc.edits)
    return ChangeRecord(
        fc.path,
        fc.change,
        fc.moved_to,
        before.bom,
        fc.bom,
        before_sha,
        after_sha,
        len(before.lines) if before.exists else 0,
        hunks,
        before_text,
        after_text,
    )


def matches(lines: Sequence[str], p: int, want: Sequence[str]) -> bool:
    k = len(want)
    if p < 0 or p + k > len(lines):
        return False
    return all(lines[p + i] == want[i] for i in range(k))


def hunks_at(rec: ChangeRecord, lines: Sequence[str], after: bool) -> bool:
    """Whether every hunk's after (or before) lines are exactly where the edit put (or found)
    them, and the file has the line count that goes with it: O(edit), no hashing."""
    delta = sum(len(h.after) - len(h.before) for h in rec.hunks)
    if len(lines) != rec.before_lines + (delta if after else 0):
        return False
    for h in rec.hunks:
        if after and not matches(lines, h.after_start, h.after):
            return False
        if not after and not matches(lines, h.start, h.before):
            return False
    return True


def is_after(rec: ChangeRecord, snap: Snapshot) -> bool:
    """Whether `snap` shows the content the change produced (hash when known, else its regions)."""
    if not snap.exists:
        return False
    if rec.change == "add" and rec.after_text is not None:
        return snap.text == rec.after_text
    if rec.after_sha256 is not None:
        return snap.sha256 == rec.after_sha256
    return rec.change in ("update", "move") and hunks_at(rec, snap.lines, after=True)


def is_before(rec: ChangeRecord, snap: Snapshot) -> bool:
    """Whether `snap` shows the content the change started from."""
    if not snap.exists:
        return False
    if rec.change == "delete" and rec.before_text is not None:
        return snap.text == rec.before_text
    if rec.before_sha256 is not None:
        return snap.sha256 == rec.before_sha256
    return rec.change in ("update", "move") and hunks_at(rec, snap.lines, after=False)
