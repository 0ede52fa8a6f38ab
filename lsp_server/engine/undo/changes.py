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
from itertools import chain

from lsp_server.engine.model import ChangeKind, EditedLines, FileChange, LineEdit, minimal_edit
from lsp_server.engine.text import Snapshot, split_lines, splitlines_is_lsp
from lsp_server.engine.values import frozen_writes_refused

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


@frozen_writes_refused
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
    mode: int | None = None  # delete: the file's permission bits, where they were read

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
        if self.mode is not None:
            out["mode"] = self.mode
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
            mode=_mode(data.get("mode")),
            after_text=data.get("afterText"),
            preimage=bool(data.get("preimage", True)),
        )

    def size(self) -> int:
        """Roughly how many characters this record holds until it is `stripped`: the whole
        texts and every line of its hunks, context included (the history's budgets weigh
        entries by it). Counting the pre-image and new lines alone, bench_patch's 1,000-file
        entry weighed ~0.4 M characters for the ~2.3 M its change records keep (each hunk's
        context is most of it): twenty of them stayed within the 8 M budget, a 46 MB journal
        that compaction could not shrink and every CLI run read back (bench/bench_history_seq.py
        --workload many)."""
        n = len(self.before_text or "") + len(self.after_text or "")
        for h in self.hunks:
            n += sum(map(len, chain(h.before, h.after, h.ctx_before, h.ctx_after)))
        return n


def _mode(value: Any) -> int | None:
    """A record's `mode`: permission bits, or None (absent, or not such a number)."""
    return value if type(value) is int and 0 <= value <= 0o7777 else None


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


def _record_hunks_at(text: str, edits: Sequence[LineEdit]) -> tuple[int, tuple[Hunk, ...]] | None:
    """`_record_hunks` of an LF text whose lines were never split, from the edits' offsets:
    (the old line count, the hunks), or None where it would read a line of the new file or
    the file's last lines (an edit without offsets, one near the end or within CONTEXT lines
    of another), which the caller then takes from the split lines.

    The planner finds a patch's chunks on the text itself and gives each edit the offsets of
    its first and end lines (patching._exact_edits), so nothing before this needs the file's
    line list but the history's records, which split each file whole (a line object for each
    of bench_patch's 200,000 lines), while a hunk's own lines and context are 7 lines found
    with `str.find`/`rfind` around those offsets and split at once. The same hunks as
    `_record_hunks` (tests/engine/test_record_hunks_at.py, hypothesis differential tests).
    `record_change` of bench_patch's 1,000 planned files, one shot in a fresh process (as the
    CLI runs it), CPU, three alternating runs: 34.4/35.0/33.7 -> 21.9/22.3/23.6 ms; whole CLI
    applies, `bench/bench_ab.py --journaled-fs --rounds 11 HEAD WORKTREE` on a loaded machine
    (load 2.7): per-round wall ratio median 0.954, CPU 344 -> 330 ms."""
    if not splitlines_is_lsp(text):
        return None
    n_old = text.count("\n") + 1  # split_lines' count for a text without CR
    out: list[Hunk] = []
    delta = 0
    find, rfind = text.find, text.rfind
    last = len(edits) - 1
    for k, e in enumerate(edits):
        span = e.offsets
        start, stop = e.start, e.end
        nxt = edits[k + 1].start if k < last else n_old
        # Context after the edit from the old lines, as `_record_hunks` takes it: CONTEXT lines
        # clear of the next edit (then the next one's context before is clear of this one too)
        # and of the last line (then this edit is inside the file too).
        if span is None or stop + CONTEXT >= n_old - 1 or nxt < stop + CONTEXT:
            return None
        char, end = span
        # The CONTEXT lines before, the edit's old lines and the CONTEXT after, split at once.
        if start >= CONTEXT:
            b = CONTEXT
            p = rfind("\n", 0, rfind("\n", 0, rfind("\n", 0, char - 1))) + 1
        else:
            b, p = start, 0  # the lines from the first one
        q = find("\n", find("\n", find("\n", end) + 1) + 1) + 1
        seg = text[p:q].splitlines(True)
        n = b + stop - start
        out.append(
            Hunk(
                start,
                stop,
                start + delta,
                tuple(seg[b:n]),
                e.new_lines,
                tuple(seg[:b]),
                tuple(seg[n:]),
            )
        )
        delta += len(e.new_lines) - (stop - start)
    return n_old, tuple(out)


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
    mode = None
    n_old = -1
    if fc.change == "add":
        after_text = fc.new_text
    elif fc.change == "delete":
        before_text = fc.before.text
        mode = before.disk.mode if before.disk is not None else None
    elif fc.new_text_override is not None:
        one = minimal_edit(fc.before.lines, fc.new_lines)
        hunks = _record_hunks(fc.before.lines, fc.new_lines, [one] if one else [])
    else:
        at = None
        if fc.edits and before.lines_if_split() is None and not before.has_cr:
            at = _record_hunks_at(before.text, fc.edits)  # no whole line list made
        if at is not None:
            n_old, hunks = at
        else:
            # Only the lines around the edits are read: no need to build the whole new file.
            lines = before.lines
            hunks = _record_hunks(lines, EditedLines(lines, fc.edits), fc.edits)
    if n_old < 0:
        n_old = len(before.lines) if before.exists else 0
    return ChangeRecord(
        fc.path,
        fc.change,
        fc.moved_to,
        before.bom,
        fc.bom,
        before_sha,
        after_sha,
        n_old,
        hunks,
        before_text,
        after_text,
        mode=mode,
    )


def save_record(path: str, edited: str, saved: str, bom: bool = False) -> ChangeRecord:
    """What an editor's save changed after an edit (format on save, trimmed whitespace, a final
    newline): the update from the edit's text `edited` to the `saved` text, as a record that
    undo reverts before the edit's own (undo/reverting.py)."""
    before = Snapshot(path, edited, "buffer", bom=bom)
    edits = tuple(line_diff(before.lines, split_lines(saved)))
    return record_change(FileChange("update", before, edits), hashes=True)


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
