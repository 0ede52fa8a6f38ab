"""The edit history of a workspace: every action's entry, and the agent's net diff per file.

Every action gets an entry (id, time, action, argument summary, files, outcome, its own diff, and
for failures the committed list). Actions that reach the editor or the disk are journaled in two
steps: `begin` writes the plan with its pre-images (fsynced) *before* anything is sent, `finish`
writes the outcome. Refused actions are one `record`.

The history is event-sourced: the in-memory state is what replaying the journal gives, so the
server, a restarted server and the CLI (which all read the same journal) agree. Other writers'
records are picked up whenever this process writes or calls `refresh()`.

The net diff compares, per file, the content before the agent first touched it (the baseline) with
the content after the agent's latest edit. It is kept as a list of changed regions over the
baseline and composed with each edit, so showing it costs what the changes cost, not a diff of two
100k-line files. User edits made between agent edits are folded into the baseline (not the agent's
doing) unless they land inside lines the agent changed, which is said in a note. A file whose live
content moved on after the agent's last edit is flagged, never diffed as if the agent did it.
"""

from __future__ import annotations

import datetime
import json
import os
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate, islice
from operator import attrgetter
from typing import Any, TypeVar

from lsp_server.engine import state
from lsp_server.engine.diffing import blob_sha1, file_diff
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.journal import Batch, Journal, line_size
from lsp_server.engine.model import FileChange, LineEdit, Plan, apply_line_edits, minimal_edit
from lsp_server.engine.records import problem
from lsp_server.engine.text import Snapshot, absent, content, split_lines
from lsp_server.engine.undo import (
    ChangeRecord,
    line_diff,
    plan_undo,
    record_change,
    rollback_records,
    undo_paths,
)

ARG_STRING_CAP = 200
ARG_LIST_CAP = 20
ENTRY_DIFF_CAP = 256 * 1024
# What one `history` answer builds at most: the files of the net diff, the files each entry
# names (a 100k-file patch made a 90 s answer of every one of them).
NET_FILES = 200
ENTRY_FILES = 1000
DEFAULT_UNDO_WINDOW = 100
# In-memory budgets (characters), so a long session stays small: oldest first are dropped.
PREIMAGE_BUDGET = 8 * 1024 * 1024
DIFF_BUDGET = 4 * 1024 * 1024
LIVE_CHANGED = "the buffer has changed since the agent's last edit"

Live = Mapping[str, Snapshot] | Callable[[str], Snapshot | None]
# Shared empty containers for finished entries; never mutated.
_NO_ANY: dict[str, Any] = {}
_NO_DIFFS: dict[str, str] = {}
_NO_LINES: dict[str, list[str]] = {}
_NO_VERSIONS: dict[str, int | None] = {}
_NO_FILES: list[dict[str, Any]] = []
_NO_COMMITTED: list[dict[str, Any]] = []


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def summarize_args(value: Any, depth: int = 0) -> Any:
    """The arguments as an entry shows them: big strings and lists cut, with their size said."""
    if isinstance(value, str):
        if len(value) <= ARG_STRING_CAP:
            return value
        return value[:ARG_STRING_CAP] + f"... ({len(value)} chars)"
    if isinstance(value, Mapping):
        if depth > 4:
            return "{...}"
        return {str(k): summarize_args(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [summarize_args(v, depth + 1) for v in value[:ARG_LIST_CAP]]
        if len(value) > ARG_LIST_CAP:
            items.append(f"... ({len(value)} items)")
        return items
    if value is None or isinstance(value, bool | int | float):
        return value
    return summarize_args(str(value), depth)


def _args_json(args: Mapping[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def _edits_json(edits: Sequence[LineEdit]) -> list[list[Any]]:
    return [[e.start, e.end, list(e.new_lines)] for e in edits]


def _edits_from(data: Sequence[Sequence[Any]]) -> list[LineEdit]:
    return [LineEdit(int(a), int(b), tuple(c)) for a, b, c in data]


# -- the net diff of one file --------------------------------------------------------------------


def _last_lines(
    base: Sequence[str],
    regions: Sequence[tuple[int, int, LineEdit]],
    d_before: int,
    start: int,
    edits: Sequence[LineEdit],
    end: int,
) -> list[str]:
    """Lines [start, end) of the agent's last text with `edits` applied, read from the base and
    the net regions (sorted, with their last-coordinates) alone: the last text is never built."""
    out: list[str] = []
    pos = start
    d = d_before  # base index = last index - d, for unchanged lines
    ri = 0

    def walk(target: int, keep: bool) -> None:
        nonlocal pos, d, ri
        while True:
            # Regions that end at or before `pos` (pure deletions at `pos` included) are behind.
            while ri < len(regions) and regions[ri][1] <= pos:
                r = regions[ri][2]
                d += len(r.new_lines) - (r.end - r.start)
                ri += 1
            if pos >= target:
                return
            if ri < len(regions) and regions[ri][0] <= pos:
                rls, rle, r = regions[ri]
                take = min(target, rle)
                if keep:
                    out.extend(r.new_lines[pos - rls : take - rls])
                pos = take
            else:
                nxt = regions[ri][0] if ri < len(regions) else target
                take = min(target, nxt)
                if keep:
                    out.extend(base[pos - d : take - d])
                pos = take

    for e in edits:
        walk(e.start, True)
        out.extend(e.new_lines)
        walk(e.end, False)
    walk(end, True)
    return out


@dataclass(frozen=True)
class NetIndex:
    """Where each net region is in the last text: `cum[i]` is the line-count change of regions
    before i (so region i starts at `net[i].start + cum[i]`), `lstarts`/`lends` its span."""

    cum: list[int]
    lstarts: list[int]
    lends: list[int]

    @classmethod
    def build(cls, net: Sequence[LineEdit]) -> NetIndex:
        cum = list(accumulate((len(r.new_lines) - (r.end - r.start) for r in net), initial=0))
        lstarts = [r.start + c for r, c in zip(net, cum, strict=False)]
        lends = [ls + len(r.new_lines) for ls, r in zip(lstarts, net, strict=True)]
        return cls(cum, lstarts, lends)


MAX_SPANS = 500


def map_spans(
    spans: Sequence[tuple[int, int, int]], edits: Sequence[LineEdit]
) -> list[tuple[int, int, int]]:
    """Carry line spans `(start, end, editId)` through `edits` (sorted, same coordinates): a span
    an edit touches is dropped (its lines are no longer the ones that edit left), the others move.
    An empty span marks the place of a pure deletion."""
    if len(edits) == 1:  # the usual case, in one comprehension (500 spans on every edit)
        e = edits[0]
        d = len(e.new_lines) - (e.end - e.start)
        return [
            (s + d, t + d, i) if e.end <= s else (s, t, i)
            for s, t, i in spans
            if e.end <= s or e.start >= t
        ]
    out: list[tuple[int, int, int]] = []
    for s, t, entry_id in spans:
        shift = 0
        keep = True
        for e in edits:
            if e.end <= s:
                shift += len(e.new_lines) - (e.end - e.start)  # wholly before the span
                continue
            if e.start >= t:
                break  # wholly after it
            keep = False
            break
        if keep:
            out.append((s + shift, t + shift, entry_id))
    return out


def _shifted(values: list[int], shift: int) -> list[int]:
    return [x + shift for x in values] if shift else values


def compose(
    base: list[str],
    net: Sequence[LineEdit],
    edits: Sequence[LineEdit],
    *,
    fold: bool,
    index: NetIndex | None = None,
) -> tuple[list[str], list[LineEdit], bool, NetIndex]:
    """Compose `edits` (on the last text, which is `base` with `net` applied) into `net`.

    Returns (new base, new net, mixed, new index). With `fold` (user edits) a change that does
    not overlap the agent's regions goes into the base instead, so it is not shown as the
    agent's; `mixed` says some did overlap and are now shown as part of the agent's change. With
    the previous `index` it costs O(log regions) plus the touched regions plus a shift of the
    later regions' positions (list work); the last text is never built.
    """
    if index is None:
        index = NetIndex.build(net)
    if not edits:
        return base, list(net), False, index
    cum, lstarts, lends = index.cum, index.lstarts, index.lends
    lo = min(e.start for e in edits)
    hi = max(e.end for e in edits)
    i0 = bisect_left(lends, lo)
    i1 = bisect_right(lstarts, hi)
    items: list[tuple[int, int, int, LineEdit]] = [
        (lstarts[i], lends[i], 0, net[i]) for i in range(i0, i1)
    ]
    items.extend((e.start, e.end, 1, e) for e in edits)
    items.sort(key=lambda x: (x[0], x[1], x[2]))
    clusters: list[list[tuple[int, int, int, LineEdit]]] = []
    cluster_end = -1
    for it in items:
        s, end = it[0], it[1]
        joins = clusters and (s < cluster_end or (not fold and s <= cluster_end))
        if joins:
            clusters[-1].append(it)
            cluster_end = max(cluster_end, end)
        else:
            clusters.append([it])
            cluster_end = end
    new_net: list[LineEdit] = list(net[:i0])
    base_edits: list[LineEdit] = []
    d_before = cum[i0]
    bshift = 0
    mixed = False
    for cl in clusters:
        ls = cl[0][0]
        le = max(x[1] for x in cl)
        regions = [x[3] for x in cl if x[2] == 0]
        eds = [x[3] for x in cl if x[2] == 1]
        dsum = sum(len(r.new_lines) - (r.end - r.start) for r in regions)
        if not eds:
            # Untouched; only user edits folded into the base before them move them.
            new_net.extend(LineEdit(r.start + bshift, r.end + bshift, r.new_lines) for r in regions)
            d_before += dsum
            continue
        bs = ls - d_before
        be = le - d_before - dsum
        placed = [(x[0], x[1], x[3]) for x in cl if x[2] == 0]
        parts = _last_lines(base, placed, d_before, ls, eds, le)
        if fold and not regions:
            base_edits.append(LineEdit(bs, be, tuple(parts)))
            bshift += len(parts) - (be - bs)
        else:
            if fold:
                mixed = True
            m = minimal_edit(base[bs:be], parts, bs)
            if m is not None:
                new_net.append(LineEdit(m.start + bshift, m.end + bshift, m.new_lines))
        d_before += dsum
    mid = new_net[i0:]
    if bshift:
        new_net.extend(LineEdit(r.start + bshift, r.end + bshift, r.new_lines) for r in net[i1:])
    else:
        new_net.extend(net[i1:])
    new_base = apply_line_edits(base, base_edits) if base_edits else base
    # The index: unchanged before the window, rebuilt inside it, shifted after it.
    shift = sum(len(e.new_lines) - (e.end - e.start) for e in edits)
    mid_cum = list(accumulate((len(r.new_lines) - (r.end - r.start) for r in mid), initial=cum[i0]))
    mid_starts = [r.start + c for r, c in zip(mid, mid_cum, strict=False)]
    mid_ends = [ls + len(r.new_lines) for ls, r in zip(mid_starts, mid, strict=True)]
    cum_shift = mid_cum[-1] - cum[i1]
    # Most edits keep the line count (a one-line replace): then the tail is copied, not shifted
    # number by number (10,000 regions: ~1 ms an edit in Python).
    new_index = NetIndex(
        cum[:i0] + mid_cum + _shifted(cum[i1 + 1 :], cum_shift),
        lstarts[:i0] + mid_starts + _shifted(lstarts[i1:], shift),
        lends[:i0] + mid_ends + _shifted(lends[i1:], shift),
    )
    return new_base, new_net, mixed, new_index


@dataclass(slots=True)
class Tracked:
    """One file the agent touched: its baseline, the agent's net regions over it, and what the
    agent last wrote (the baseline with the regions applied, built only when asked for)."""

    origin: str
    path: str
    base: list[str]
    base_exists: bool
    base_bom: bool
    net: list[LineEdit] = field(default_factory=list)
    last_exists: bool = False
    last_bom: bool = False
    # The buffer version the editor reported after the agent's last edit: when the next edit's
    # snapshot has it, nobody else changed the file and no comparison is needed.
    last_version: int | None = None
    notes: list[str] = field(default_factory=list)
    uncertain: bool = False
    # Lines each recent agent edit left, in the last text's coordinates: where code lenses go.
    spans: list[tuple[int, int, int]] = field(default_factory=list)
    _last: list[str] | None = field(default=None, repr=False)
    _index: NetIndex | None = field(default=None, repr=False)
    _rendered: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def start(
        cls, path: str, text: str | None, bom: bool, exists: bool, lines: list[str] | None = None
    ) -> Tracked:
        return cls(
            origin=path,
            path=path,
            base=lines if lines is not None else split_lines(text or ""),
            base_exists=exists,
            base_bom=bom,
            last_exists=exists,
            last_bom=bom,
        )

    @property
    def last(self) -> list[str]:
        if self._last is None:
            self._last = apply_line_edits(self.base, self.net) if self.net else self.base
        return self._last

    def last_len(self) -> int:
        if self._index is None:
            self._index = NetIndex.build(self.net)
        return len(self.base) + self._index.cum[-1]

    def _changed(self) -> None:
        self._last = None
        self._rendered = None

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def shows(self, snap: Snapshot) -> bool:
        """Whether `snap` is exactly what the agent last wrote."""
        if snap.exists != self.last_exists:
            return False
        if not snap.exists:
            return True
        if snap.bom != self.last_bom:
            return False
        if (
            snap.source == "buffer"
            and snap.version is not None
            and snap.version == self.last_version
            and len(snap.lines) == self.last_len()
        ):
            return True
        return snap.lines == self.last

    def user_edits(self, edits: Sequence[LineEdit], entry_id: int) -> None:
        self.spans = map_spans(self.spans, edits)
        self.base, self.net, mixed, self._index = compose(
            self.base, self.net, edits, fold=True, index=self._index
        )
        if mixed:
            self._note(
                f"lines the agent had changed were edited by someone else before edit "
                f"#{entry_id}; those edits are shown as part of the agent's change"
            )
        self.uncertain = False
        self.last_version = None
        self._changed()

    def rebase(self, text: str | None, bom: bool, exists: bool, entry_id: int) -> None:
        """The file appeared or vanished outside the agent: start its net diff over from here."""
        self.origin = self.path
        self.base = split_lines(text or "")
        self.base_exists = self.last_exists = exists
        self.base_bom = self.last_bom = bom
        self.net = []
        self._index = None
        self.spans = []
        self.last_version = None
        self._note(
            f"the file was {'created' if exists else 'deleted'} outside the agent before edit "
            f"#{entry_id}; its net diff starts there"
        )
        self._changed()

    def agent_change(self, rec: ChangeRecord, version: int | None, entry_id: int) -> None:
        n = self.last_len()
        if rec.change == "add":
            new = tuple(split_lines(rec.after_text or ""))
            edits = [LineEdit(0, n, new)]
            self.spans = [(0, len(new) - 1 if new[-1] == "" else len(new), entry_id)]
        elif rec.change == "delete":
            edits = [LineEdit(0, n, ("",))]
            self.spans = []
        else:
            edits = rec.edits()
            mine = [(h.after_start, h.after_start + len(h.after), entry_id) for h in rec.hunks]
            self.spans = sorted(map_spans(self.spans, edits) + mine)[-MAX_SPANS:]
        self.base, self.net, _, self._index = compose(
            self.base, self.net, edits, fold=False, index=self._index
        )
        self.last_exists = rec.change != "delete"
        self.last_bom = rec.new_bom
        self.last_version = version
        if rec.moved_to:
            self.path = rec.moved_to
        self._changed()

    def kind(self) -> str | None:
        if self.base_exists and self.last_exists:
            return "move" if self.path != self.origin else "update"
        if self.last_exists:
            return "add"
        if self.base_exists:
            return "delete"
        return None

    def render(self) -> dict[str, Any] | None:
        """This file's net change: kind, paths, blob ids and the git-style diff (cached)."""
        if self._rendered is not None:
            return self._rendered
        kind = self.kind()
        if kind is None:
            return None
        if kind == "update" and self.base_bom == self.last_bom:
            # Regions can cancel out across each other (lines deleted here, the same added next
            # to it): the content is what counts.
            if not self.net or self.last == self.base:
                return None
        base_text = "".join(self.base)
        before = Snapshot(
            self.origin,
            base_text,
            source="disk" if self.base_exists else "absent",
            bom=self.base_bom,
            given_lines=self.base,
        )
        if kind == "add":
            fc = FileChange(
                "add",
                absent(self.path),
                new_text_override="".join(self.last),
                new_bom=self.last_bom,
            )
        elif kind == "delete":
            fc = FileChange("delete", before)
        else:
            fc = FileChange(
                kind,  # type: ignore[arg-type]
                before,
                tuple(self.net),
                moved_to=self.path if kind == "move" else None,
                new_bom=self.last_bom,
            )
        out: dict[str, Any] = {"path": self.path, "change": kind}
        if kind == "move":
            out["movedFrom"] = self.origin
        out["baseBlob"] = blob_sha1(base_text, self.base_bom) if self.base_exists else None
        out["agentBlob"] = (
            blob_sha1("".join(self.last), self.last_bom) if self.last_exists else None
        )
        diff = file_diff(fc, with_index=True)
        out["diff"] = diff
        at = diff.find("\n@@")
        body = diff[at + 1 :].splitlines() if at >= 0 else []  # the hunks, not the headers
        out["added"] = sum(1 for x in body if x.startswith("+"))
        out["removed"] = sum(1 for x in body if x.startswith("-"))
        self._rendered = out
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "path": self.path,
            "base": "".join(self.base) if self.base_exists else None,
            "baseBom": self.base_bom,
            "net": _edits_json(self.net),
            "lastExists": self.last_exists,
            "lastBom": self.last_bom,
            "lastVersion": self.last_version,
            "notes": self.notes,
            "uncertain": self.uncertain,
            "spans": [list(x) for x in self.spans],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tracked:
        base_text = data.get("base")
        return cls(
            origin=str(data["origin"]),
            path=str(data["path"]),
            base=split_lines(base_text or ""),
            base_exists=base_text is not None,
            base_bom=bool(data.get("baseBom")),
            net=_edits_from(data.get("net", [])),
            last_exists=bool(data.get("lastExists")),
            last_bom=bool(data.get("lastBom")),
            last_version=data.get("lastVersion"),
            notes=list(data.get("notes", [])),
            uncertain=bool(data.get("uncertain")),
            spans=[(int(a), int(b), int(c)) for a, b, c in data.get("spans", [])],
        )


# -- entries -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Entry:
    """One action in the history."""

    id: int
    time: str
    action: str
    # The summarised arguments as compact JSON: a dict with its own key and value strings cost
    # ~600 bytes an entry, the text ~150 (10,000 edits: 4.5 MB); `args` decodes it when shown.
    args_json: str
    # The files of a refused action (it has no change records); otherwise derived from `changes`.
    refused_files: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "pending"
    ok: bool = False
    diff: str | None = ""
    committed: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    undoes: int | None = None
    undone_by: int | None = None
    changes: tuple[ChangeRecord, ...] = ()
    finished: bool = False
    # Buffer versions the editor reported after the edit, per target path (from `finish`).
    versions: dict[str, int | None] = field(default_factory=dict)
    pid: int | None = None  # the process that began it, while it is unfinished
    # Between begin and finish only: what the net diff needs to take the edit in.
    _user: dict[str, Any] = field(default_factory=dict, repr=False)
    _baselines: dict[str, Any] = field(default_factory=dict, repr=False)
    _diffs: dict[str, str] = field(default_factory=dict, repr=False)
    # The baselines' line lists, copied at begin: sharing the line strings with the document
    # store instead of splitting the text again halves what a big file costs in memory.
    _base_lines: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @property
    def args(self) -> dict[str, Any]:
        args: dict[str, Any] = json.loads(self.args_json)
        return args

    @property
    def files(self) -> list[dict[str, Any]]:
        if self.changes:
            return [c.file_entry() for c in self.changes]
        return self.refused_files

    @property
    def paths(self) -> list[str]:
        return undo_paths(self.changes)

    @property
    def undoable(self) -> bool:
        if not self.finished or self.undone_by is not None:
            return False
        if self.outcome == "applied":  # the usual case, without a list of every path landed
            landed = bool(self.changes)
        else:
            landed = bool(_landed(self, self.outcome, self.committed, unknown=True))
        return landed and all(map(_has_preimage, self.changes))

    def to_json(self, with_diff: bool = True, files_cap: int | None = None) -> dict[str, Any]:
        if files_cap is not None and len(self.changes) > files_cap:
            files = [c.file_entry() for c in self.changes[:files_cap]]
        else:
            files = self.files
        out: dict[str, Any] = {
            "id": self.id,
            "time": self.time,
            "action": self.action,
            "args": self.args,
            "files": files,
            "outcome": self.outcome,
            "ok": self.ok,
        }
        if len(files) < len(self.changes):
            out["filesTotal"] = len(self.changes)
        if with_diff:
            out["diff"] = self.diff
            if self.diff is None:
                out["diffDropped"] = True
        if self.error:
            out["error"] = self.error
        if self.committed:
            out["committed"] = self.committed
        if self.undoes is not None:
            out["undoes"] = self.undoes
        if self.undone_by is not None:
            out["undoneBy"] = self.undone_by
        out["undoable"] = self.undoable
        if not self.finished:
            out["unfinished"] = True
        return out


_has_preimage = attrgetter("preimage")


def _record_diff(rec: ChangeRecord) -> str:
    """A diff from a record alone (for plans recovered after a crash, whose snapshots are gone)."""
    old_p, new_p = rec.path, rec.target_path
    head = f"diff --git a/{old_p} b/{new_p}\n"
    if rec.change == "add":
        lines = split_lines(rec.after_text or "")
        n = len(lines) - 1 if lines[-1] == "" else len(lines)
        body = "".join("+" + content(x) + "\n" for x in lines[:n])
        return (
            head + f"new file mode 100644\n--- /dev/null\n+++ b/{new_p}\n@@ -0,0 +1,{n} @@\n" + body
        )
    if rec.change == "delete":
        lines = split_lines(rec.before_text or "")
        n = len(lines) - 1 if lines[-1] == "" else len(lines)
        body = "".join("-" + content(x) + "\n" for x in lines[:n])
        return (
            head
            + f"deleted file mode 100644\n--- a/{old_p}\n+++ /dev/null\n@@ -1,{n} +0,0 @@\n"
            + body
        )
    if rec.change == "move":
        head += f"rename from {old_p}\nrename to {new_p}\n"
    if not rec.hunks:
        return head if rec.change == "move" else ""
    out = [head, f"--- a/{old_p}\n+++ b/{new_p}\n"]
    for h in rec.hunks:
        before = [x for x in h.before if x]
        after = [x for x in h.after if x]
        c1, c2 = list(h.ctx_before), [x for x in h.ctx_after if x]
        o_start = h.start - len(c1)
        n_start = h.after_start - len(c1)
        o_len = len(c1) + len(before) + len(c2)
        n_len = len(c1) + len(after) + len(c2)
        out.append(f"@@ -{o_start + 1},{o_len} +{n_start + 1},{n_len} @@\n")
        out.extend(" " + content(x) + "\n" for x in c1)
        out.extend("-" + content(x) + "\n" for x in before)
        out.extend("+" + content(x) + "\n" for x in after)
        out.extend(" " + content(x) + "\n" for x in c2)
    return "".join(out)


def _cap_diff(parts: Sequence[str], cap: int = ENTRY_DIFF_CAP) -> str:
    out: list[str] = []
    size = 0
    for d in parts:
        if size + len(d) > cap:
            first = d.split("\n", 1)[0]
            plus = sum(1 for x in d.splitlines() if x.startswith("+") and not x.startswith("+++"))
            minus = sum(1 for x in d.splitlines() if x.startswith("-") and not x.startswith("---"))
            d = f"{first}\n# diff cut: +{plus} -{minus} lines\n"
        size += len(d)
        out.append(d)
    return "".join(out)


def _landed(
    entry: Entry, outcome: str, committed: Sequence[Mapping[str, Any]], *, unknown: bool = False
) -> list[str]:
    """The paths whose change is in effect after the action (with `unknown`: or may be).

    For partial outcomes the committed list says it, as it stands after any rollback; a
    PARTIAL_ROLLED_BACK action left nothing in effect whatever its list says landed for a while.
    """
    if outcome == "applied":
        return [c.path for c in entry.changes]
    if outcome in ("dry-run", "PARTIAL_ROLLED_BACK"):
        return []
    wanted = ("applied", "unknown") if unknown else ("applied",)
    states = {c.get("path"): c.get("state") for c in committed}
    return [c.path for c in entry.changes if states.get(c.path) in wanted]


# -- the history ---------------------------------------------------------------------------------


class History:
    """A workspace's edit history, kept in memory and (with a journal) on disk.

    From the server, after each action:
      - refused before anything was sent (or a dry run): `record(action, args, error=e)` /
        `record(action, args, plan=plan, outcome="dry-run")`;
      - about to send a plan (applyEdit or disk write): `entry_id = begin(plan, args)` first
        (before the snapshots' lent lines are released), then after verification
        `finish(entry_id, "applied", versions={path: version})` or
        `finish(entry_id, error.code, error=error, committed=committed)`.
    On start: `History.load(journal)`, then for each of `unfinished()` snapshot its `paths` and
    call `recover(entry.id, snapshots)`; report it and offer `plan_undo`.
    """

    def __init__(
        self,
        journal: Journal | None = None,
        *,
        undo_window: int = DEFAULT_UNDO_WINDOW,
        clock: Callable[[], str] = now_iso,
    ) -> None:
        self.journal = journal
        self.undo_window = undo_window
        self.clock = clock
        self._own: set[int] = set()
        self.listeners: list[Callable[[Entry], None]] = []
        # Set when the journal could not be written: the history then lives in memory only.
        self.journal_error: str | None = None
        self._reset()

    def _reset(self) -> None:
        self._entries: dict[int, Entry] = {}
        self._by_path: dict[str, Tracked] = {}
        self._retired: list[Tracked] = []
        self._next_id = 1
        self._with_preimages: deque[int] = deque()
        self._preimage_size = 0
        self._diff_size = 0
        self._diff_queue: deque[int] = deque()
        # Records replay could not use (records.py), counted from the journal's start.
        self.skipped = 0
        self.skip_reason = ""

    @classmethod
    def load(cls, journal: Journal, **kwargs: Any) -> History:
        """The history as the journal has it (entries, net diff state, unfinished plans)."""
        history = cls(journal, **kwargs)
        history.refresh()
        return history

    # -- journal plumbing ---------------------------------------------------------------------

    @contextmanager
    def _txn(self) -> Iterator[Callable[[dict[str, Any], bool], None]]:
        if self.journal is None:
            yield lambda rec, sync: self._apply(rec)
            return
        with self.journal.transaction() as (batch, writer):
            self._ingest(batch)

            def write(rec: dict[str, Any], sync: bool) -> None:
                writer.append(rec, sync=sync)
                self._apply(rec)

            yield write
            if self.journal.wants_compaction():
                try:
                    writer.rewrite(self._compacted(self.journal.max_bytes // 2))
                except OSError as exc:  # the old file is intact; compaction is retried later
                    self.journal_error = f"compacting the journal failed: {exc}"

    def refresh(self) -> bool:
        """Take in what other processes journaled since; True when anything was new."""
        if self.journal is None:
            return False
        try:
            with self.journal.transaction() as (batch, _writer):
                self._ingest(batch)
        except OSError as exc:
            self.journal_error = f"reading the journal failed: {exc}"
            return False
        return bool(batch.records) or batch.reset

    def _ingest(self, batch: Batch) -> None:
        if batch.reset:
            self._reset()
        if batch.skipped:
            self._skip(batch.skipped, "a line that is not a JSON record")
        for rec in batch.records:
            # A record this version cannot use (hand-edited, cut, from another version) is
            # skipped whole, checked before any of it is applied, rather than refuse to start.
            why = problem(rec)
            if why is None:
                try:
                    self._apply(rec)
                except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
                    why = f"{type(exc).__name__}: {str(exc)[:80]}"
            if why is not None:
                self._skip(1, why)

    def _skip(self, count: int, why: str) -> None:
        self.skipped += count
        self.skip_reason = why

    def skipped_note(self) -> str | None:
        """The sentence that says replay skipped records, if it did."""
        if not self.skipped:
            return None
        return (
            f"agent-edit: skipped {self.skipped} journal record(s) it could not use (last: "
            f"{self.skip_reason}); the rest of the history is intact."
        )

    def _apply(self, rec: dict[str, Any]) -> None:
        t = rec.get("t")
        if t == "checkpoint":
            tracked = [Tracked.from_json(data) for data in rec.get("tracked", [])]
            for tr in tracked:
                if not _fits(tr.net, len(tr.base)):
                    raise ValueError(f"the net diff of {tr.path[:80]} is outside its file")
            self._next_id = max(self._next_id, int(rec.get("nextId", 1)))
            self._by_path, self._retired = {}, []
            for tr in tracked:
                self._key(tr)
            return
        entry_id = int(rec["id"])
        self._next_id = max(self._next_id, entry_id + 1)
        if t == "begin":
            self._apply_begin(rec)
        elif t == "finish":
            entry = self._entries.get(entry_id)
            if entry is not None and not entry.finished:
                self._apply_finish(entry, rec)
        elif t == "record":
            self._apply_begin(rec)
            self._apply_finish(self._entries[entry_id], rec)

    def _apply_begin(self, rec: Mapping[str, Any]) -> None:
        changes = tuple(ChangeRecord.from_json(c) for c in rec.get("changes", []))
        entry = Entry(
            id=int(rec["id"]),
            time=str(rec.get("time", "")),
            action=str(rec.get("action", "")),
            args_json=_args_json(rec.get("args", {})),
            refused_files=_NO_FILES if changes else list(rec.get("files", [])),
            undoes=rec.get("undoes"),
            pid=rec.get("pid"),
            changes=changes,
            _user=dict(rec.get("user", {})),
            _baselines=dict(rec.get("baselines", {})),
        )
        self._entries[entry.id] = entry

    def _apply_finish(self, entry: Entry, rec: Mapping[str, Any]) -> None:
        entry.outcome = str(rec.get("outcome", ""))
        entry.ok = bool(rec.get("ok", entry.outcome in ("applied", "dry-run")))
        entry.error = rec.get("error")
        entry.committed = list(rec["committed"]) if rec.get("committed") else _NO_COMMITTED
        entry.finished = True
        entry.pid = None  # only an unfinished entry needs the process that began it
        entry.versions = dict(rec["versions"]) if rec.get("versions") else _NO_VERSIONS
        if "undoneBy" in rec:
            entry.undone_by = rec["undoneBy"]
        if "diff" in rec:
            entry.diff = rec["diff"]
        elif entry._diffs:
            landed = set(_landed(entry, entry.outcome, entry.committed))
            entry.diff = _cap_diff([d for p, d in entry._diffs.items() if p in landed])
        else:
            landed = set(_landed(entry, entry.outcome, entry.committed))
            entry.diff = _cap_diff([_record_diff(c) for c in entry.changes if c.path in landed])
        if not rec.get("compacted"):
            self._track(entry)
        # Done with them: share empty ones (four dicts per entry add up over 10,000 edits). The
        # versions only served the net diff (`_track`).
        entry.versions = _NO_VERSIONS
        entry._user = entry._baselines = _NO_ANY
        entry._diffs = _NO_DIFFS
        entry._base_lines = _NO_LINES
        if entry.undoes is not None and _landed(entry, entry.outcome, entry.committed):
            target = self._entries.get(entry.undoes)
            if target is not None:
                target.undone_by = entry.id
        self._budget(entry)

    def _key(self, tr: Tracked) -> None:
        old = self._by_path.get(tr.path)
        if old is not None and old is not tr:
            self._retired.append(old)
        self._by_path[tr.path] = tr

    def _track(self, entry: Entry) -> None:
        """Take the entry's effect into the net diff: user edits seen at begin, then what landed."""
        for path, data in entry._baselines.items():
            if path not in self._by_path:
                self._key(
                    Tracked.start(
                        path,
                        data.get("text"),
                        bool(data.get("bom")),
                        bool(data.get("exists")),
                        entry._base_lines.get(path),
                    )
                )
        for path, data in entry._user.items():
            tr = self._by_path.get(path)
            if tr is None:
                continue
            if "rebase" in data:
                r = data["rebase"]
                tr.rebase(r.get("text"), bool(r.get("bom")), bool(r.get("exists")), entry.id)
            else:
                edits = _edits_from(data["edits"])
                if not _fits(edits, tr.last_len()):
                    _unsure(tr, entry.id)
                    continue
                tr.user_edits(edits, entry.id)
                if "bom" in data:
                    tr.last_bom = bool(data["bom"])
        if entry.outcome == "dry-run":
            return
        landed = set(_landed(entry, entry.outcome, entry.committed))
        states = {c.get("path"): c.get("state") for c in entry.committed}
        for rec in entry.changes:
            tr = self._by_path.get(rec.path)
            if tr is None:
                continue
            if rec.path in landed:
                if rec.change in ("update", "move") and not _fits(rec.edits(), tr.last_len()):
                    _unsure(tr, entry.id)
                    continue
                tr.agent_change(rec, entry.versions.get(rec.target_path), entry.id)
                if rec.moved_to and rec.moved_to != rec.path:
                    del self._by_path[rec.path]
                    self._key(tr)
            elif states.get(rec.path) == "unknown":
                tr.uncertain = True
                tr._note(
                    f"edit #{entry.id} may have partly landed here; later changes are compared "
                    "with what the agent last knew"
                )

    def _budget(self, entry: Entry) -> None:
        if entry.changes and all(c.preimage for c in entry.changes):
            self._with_preimages.append(entry.id)
            self._preimage_size += sum(c.size() for c in entry.changes)
        while self._with_preimages and (
            len(self._with_preimages) > self.undo_window or self._preimage_size > PREIMAGE_BUDGET
        ):
            old = self._entries.get(self._with_preimages.popleft())
            if old is not None:
                self._preimage_size -= sum(c.size() for c in old.changes)
                old.changes = tuple(c.stripped() for c in old.changes)
        if entry.diff:
            self._diff_queue.append(entry.id)
            self._diff_size += len(entry.diff)
        while self._diff_queue and self._diff_size > DIFF_BUDGET:
            old = self._entries.get(self._diff_queue.popleft())
            if old is not None and old.diff:
                self._diff_size -= len(old.diff)
                old.diff = None

    def _compacted(self, target: int) -> list[dict[str, Any]]:
        """The journal rewritten: entries (pre-images only inside the undo window), unfinished
        plans as they are, and a checkpoint of the net diff state. Oldest diffs and then oldest
        entries go first when it would still not fit in `target` bytes."""
        keep_pre = set(list(self._with_preimages)[-self.undo_window :])
        records: list[dict[str, Any]] = []
        for e in self._entries.values():
            if not e.finished:
                records.append(self._begin_json(e))
                continue
            rec = {
                "t": "record",
                "compacted": True,
                "id": e.id,
                "time": e.time,
                "action": e.action,
                "args": e.args,
                "files": e.files,
                "outcome": e.outcome,
                "ok": e.ok,
                "committed": e.committed,
                "diff": e.diff,
                "changes": [(c if e.id in keep_pre else c.stripped()).to_json() for c in e.changes],
            }
            if e.error:
                rec["error"] = e.error
            if e.undoes is not None:
                rec["undoes"] = e.undoes
            if e.undone_by is not None:
                rec["undoneBy"] = e.undone_by
            records.append(rec)
        checkpoint = {
            "t": "checkpoint",
            "time": self.clock(),
            "nextId": self._next_id,
            "tracked": [t.to_json() for t in [*self._retired, *self._by_path.values()]],
        }

        def size(r: dict[str, Any]) -> int:
            return line_size(r)  # what stays in the line: big values live in blob files

        sizes = [size(r) for r in records]
        total = sum(sizes) + size(checkpoint)
        for i, r in enumerate(records):  # oldest diffs first
            if total <= target:
                break
            if r.get("t") == "record" and r.get("diff"):
                r["diff"] = None
                new = size(r)
                total += new - sizes[i]
                sizes[i] = new
        for i, r in enumerate(records):  # then oldest entries outside the undo window
            if total <= target:
                break
            if r.get("t") == "record" and r["id"] not in keep_pre:
                total -= sizes[i]
                sizes[i] = 0
        return [r for r, s in zip(records, sizes, strict=True) if s] + [checkpoint]

    def _begin_json(self, e: Entry) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "t": "begin",
            "id": e.id,
            "time": e.time,
            "action": e.action,
            "args": e.args,
            "changes": [c.to_json() for c in e.changes],
        }
        if e._user:
            rec["user"] = e._user
        if e._baselines:
            rec["baselines"] = e._baselines
        if e.undoes is not None:
            rec["undoes"] = e.undoes
        if e.pid is not None:
            rec["pid"] = e.pid
        return rec

    def _notify(self, entry: Entry) -> None:
        for listener in list(self.listeners):
            listener(entry)

    # -- the actions --------------------------------------------------------------------------

    def _prepare(self, plan: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
        """Baselines of files touched for the first time, and user edits since the agent's last."""
        user: dict[str, Any] = {}
        baselines: dict[str, Any] = {}
        for c in plan.changes:
            snap = c.before
            tr = self._by_path.get(c.path)
            if tr is None:
                baselines[c.path] = {
                    "text": snap.text if snap.exists else None,
                    "bom": snap.bom,
                    "exists": snap.exists,
                }
                continue
            if tr.shows(snap):
                continue
            if snap.exists != tr.last_exists:
                user[c.path] = {
                    "rebase": {
                        "text": snap.text if snap.exists else None,
                        "bom": snap.bom,
                        "exists": snap.exists,
                    }
                }
                continue
            edits = line_diff(tr.last, snap.lines)
            user[c.path] = {"edits": _edits_json(edits), "bom": snap.bom}
        return user, baselines

    def begin(
        self,
        plan: Plan,
        args: Mapping[str, Any] | None = None,
        *,
        undoes: int | None = None,
        action: str | None = None,
    ) -> int:
        """Journal `plan` with its pre-images (fsynced) before it is sent; returns the entry id."""
        records = [record_change(c) for c in plan.changes]
        diffs = {c.path: file_diff(c) for c in plan.changes}
        try:
            return self._begin(plan, args, undoes, action, records, diffs)
        except OSError as exc:
            # Without the pre-images on disk a crash could not be undone: do not send the plan.
            self.journal_error = f"writing the journal failed: {exc}"
            raise EditError(
                Code.IO_ERROR,
                f"The edit was not sent: its undo record could not be written ({exc}).",
                "Free disk space or fix the permissions of the agent-edit state directory "
                f"({self.journal.dir if self.journal else '?'}), then retry.",
                {"path": str(self.journal.path) if self.journal else None},
            ) from None

    def _begin(
        self,
        plan: Plan,
        args: Mapping[str, Any] | None,
        undoes: int | None,
        action: str | None,
        records: list[ChangeRecord],
        diffs: dict[str, str],
    ) -> int:
        with self._txn() as write:
            user, baselines = self._prepare(plan)
            entry_id = self._next_id
            e = Entry(
                id=entry_id,
                time=self.clock(),
                action=action or plan.action,
                args_json=_args_json(summarize_args(dict(args or {}))),
                undoes=undoes if undoes is not None else _undoes(plan),
                changes=tuple(records),
                _user=user,
                _baselines=baselines,
                pid=os.getpid(),
            )
            write(self._begin_json(e), True)
            self._own.add(entry_id)
            entry = self._entries[entry_id]
            entry._diffs = diffs
            entry._base_lines = {
                c.path: list(c.before.lines)
                for c in plan.changes
                if c.path in baselines and c.before.exists
            }
        return entry_id

    def finish(
        self,
        entry_id: int,
        outcome: str,
        *,
        error: EditError | None = None,
        committed: list[dict[str, Any]] | None = None,
        versions: Mapping[str, int | None] | None = None,
    ) -> Entry:
        """Record how a begun plan ended: "applied", or the error code (with the committed list
        from `plan_rollback` for partial outcomes). Returns the finished entry."""
        entry = self._entries.get(entry_id)
        if entry is None:
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"There is no edit #{entry_id} to finish.",
                "Finish only ids returned by begin().",
                {"argument": "editId"},
            )
        if entry.finished:
            return entry
        rec: dict[str, Any] = {
            "t": "finish",
            "id": entry_id,
            "time": self.clock(),
            "outcome": str(outcome),
            "ok": str(outcome) in ("applied", "dry-run"),
            "committed": committed or [],
        }
        if error is not None:
            rec["error"] = _error_json(error)
        landed = set(_landed(entry, str(outcome), committed or []))
        if entry._diffs:
            rec["diff"] = _cap_diff([d for p, d in entry._diffs.items() if p in landed])
        if versions:
            rec["versions"] = dict(versions)
        try:
            with self._txn() as write:
                # Not fsynced: if this line is lost in a crash, the plan looks unfinished on the
                # next start and recovery finds from the files that it landed. Only `begin` must
                # be durable.
                write(rec, False)
        except OSError as exc:
            self.journal_error = f"writing the journal failed: {exc}"
            if not entry.finished:
                self._apply(rec)
        self._own.discard(entry_id)
        self._notify(entry)
        return entry

    def record(
        self,
        action: str,
        args: Mapping[str, Any] | None = None,
        *,
        plan: Plan | None = None,
        outcome: str | None = None,
        error: EditError | None = None,
        committed: list[dict[str, Any]] | None = None,
        versions: Mapping[str, int | None] | None = None,
        files: Sequence[str] | None = None,
    ) -> Entry:
        """One-step entry for an action that never reached the editor or disk (refused, dry run),
        or whose outcome is known at once (a front end without a crash window, a recovery);
        `files` names the files of an entry without a plan."""
        if outcome is None:
            outcome = str(error.code) if error is not None else "applied"
        done: list[int] = []

        def build(write: Callable[[dict[str, Any], bool], None]) -> None:
            entry_id = self._next_id
            rec: dict[str, Any] = {
                "t": "record",
                "id": entry_id,
                "time": self.clock(),
                "action": action,
                "args": summarize_args(dict(args or {})),
                "outcome": outcome,
                "ok": outcome in ("applied", "dry-run"),
                "committed": committed or [],
                "files": [],
            }
            if error is not None:
                rec["error"] = _error_json(error)
                path = error.details.get("path") if isinstance(error.details, dict) else None
                if path:
                    rec["files"] = [{"path": path}]
            if files:
                rec["files"] = [{"path": str(p)} for p in files]
            if plan is not None:
                records = [record_change(c) for c in plan.changes]
                rec["changes"] = [r.to_json() for r in records]
                landed = {r.path for r in records} if outcome in ("applied", "dry-run") else set()
                if committed:
                    landed = {str(c["path"]) for c in committed if c.get("state") == "applied"}
                rec["diff"] = _cap_diff([file_diff(c) for c in plan.changes if c.path in landed])
                if outcome != "dry-run":
                    user, baselines = self._prepare(plan)
                    if user:
                        rec["user"] = user
                    if baselines:
                        rec["baselines"] = baselines
                if _undoes(plan) is not None:
                    rec["undoes"] = _undoes(plan)
            else:
                rec["diff"] = ""
            if versions:
                rec["versions"] = dict(versions)
            write(rec, False)
            done.append(entry_id)

        try:
            with self._txn() as write:
                build(write)
        except OSError as exc:
            self.journal_error = f"writing the journal failed: {exc}"
            if not done:
                build(lambda rec, sync: self._apply(rec))
        entry = self._entries[done[0]]
        self._notify(entry)
        return entry

    # -- reading ------------------------------------------------------------------------------

    @property
    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def entry(self, entry_id: int) -> Entry:
        entry = self._entries.get(entry_id)
        if entry is None:
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"There is no edit #{entry_id} in the history.",
                "List the history (agentEdit.history) and use one of its ids.",
                {"argument": "editId", "editId": entry_id},
            )
        return entry

    def unfinished(self) -> list[Entry]:
        """Plans begun (journaled) but never finished, by a process that is gone (a plan another
        live process, say the server while the CLI runs, is still carrying out is not listed)."""
        return [
            e
            for e in self._entries.values()
            if not e.finished and e.id not in self._own and not _pid_alive(e.pid)
        ]

    def recover(self, entry_id: int, observed: Mapping[str, Snapshot]) -> Entry:
        """Settle an unfinished plan from what is observed now (snapshots of `entry.paths`):
        all landed -> "applied"; none -> NOT_APPLIED; some -> PARTIAL with the committed list.
        Undo stays available through `plan_undo` for what landed."""
        entry = self.entry(entry_id)
        committed, _ = rollback_records(entry.changes, observed)
        states = {c["state"] for c in committed}
        if states == {"applied"}:
            outcome = "applied"
            error = None
        elif states <= {"not-applied"}:
            outcome = str(Code.NOT_APPLIED)
            error = EditError(
                Code.NOT_APPLIED,
                f"Edit #{entry_id} was interrupted (the process stopped before confirming it); "
                "none of it landed.",
                "Read the files again and redo the edit if it is still wanted.",
                {"files": committed},
                committed,
            )
        else:
            outcome = str(Code.PARTIAL)
            error = EditError(
                Code.PARTIAL,
                f"Edit #{entry_id} was interrupted (the process stopped before confirming it); "
                "part of it landed.",
                f"Inspect it with agentEdit.history {{editId: {entry_id}}} and undo it with "
                f"agentEdit.undo {{editId: {entry_id}}}, or finish it by hand after reading "
                "the files again.",
                {"files": committed},
                committed,
            )
        self._own.add(entry_id)
        return self.finish(entry_id, outcome, error=error, committed=committed)

    def undo_paths(self, entry_id: int) -> list[str]:
        """The paths to snapshot for `plan_undo(entry_id, ...)`."""
        return self.entry(entry_id).paths

    def plan_undo(self, entry_id: int, current: Mapping[str, Snapshot]) -> Plan:
        """The undo plan for an entry (three-way checked); send it, then `begin`/`finish` it as
        any plan (its action is "undo" and it names the entry it undoes)."""
        entry = self.entry(entry_id)
        if entry.undone_by is not None:
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"Edit #{entry_id} was already undone by edit #{entry.undone_by}.",
                f"Undo #{entry.undone_by} instead to redo it.",
                {"argument": "editId", "editId": entry_id},
            )
        if not entry.finished:
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"Edit #{entry_id} has not finished.",
                "Wait for it to finish, then undo it.",
                {"argument": "editId", "editId": entry_id},
            )
        if not _landed(entry, entry.outcome, entry.committed, unknown=True):
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"Edit #{entry_id} changed nothing ({entry.outcome}), so there is nothing to undo.",
                "Check agentEdit.history for the edit you meant.",
                {"argument": "editId", "editId": entry_id},
            )
        return plan_undo(entry, current)

    def tracked_files(self) -> list[Tracked]:
        """Every file the agent touched this session (what `net` renders), oldest first."""
        return [*self._retired, *self._by_path.values()]

    def net(self, live: Live | None = None, files: int | None = None) -> list[dict[str, Any]]:
        """Per file: the agent's net change since it first touched it, git-style, with notes
        (the first `files` changed files when given)."""
        return drive(self.iter_net(live, files))[0]

    def iter_net(
        self, live: Live | None = None, files: int | None = None
    ) -> Iterator_[tuple[list[dict[str, Any]], bool]]:
        """`net` one file at a time (a generator: it yields between files, so a front end can
        let other work run; `drive` runs it through). Returns (items, cut): `cut` when files
        past `files` were left out (not rendered at all)."""
        out: list[dict[str, Any]] = []
        # A copy of the list: an edit that lands while this yields does not disturb the walk
        # (each file's diff is made in one step, so each is consistent by itself).
        for tr in self.tracked_files():
            if files is not None and len(out) >= files:
                return out, True
            yield
            rendered = tr.render()
            if rendered is None:
                continue
            item = dict(rendered)
            notes = list(tr.notes)
            changed = self._live_changed(tr, live)
            if changed:
                notes.append(LIVE_CHANGED)
            item["liveChanged"] = changed
            item["notes"] = notes
            out.append(item)
        return out, False

    def tracked_count(self) -> int:
        """How many files the net diff can name (an upper bound: some may be back as they were)."""
        return len(self._retired) + len(self._by_path)

    def _live_changed(self, tr: Tracked, live: Live | None) -> bool:
        if live is None:
            return False
        snap = live.get(tr.path) if isinstance(live, Mapping) else live(tr.path)
        if snap is None:
            return False
        return not tr.shows(snap)

    def lenses(self, path: str, live: Snapshot | None = None) -> list[dict[str, Any]]:
        """Where to put code lenses in `path`: the lines each still-undoable agent edit left,
        `[{line, endLine, editId, action, title}]` (0-based, end exclusive), in the coordinates
        of `live` (the buffer now) when given; user edits since the agent's last edit move them
        (an O(file) comparison, done only when the text differs)."""
        tr = self._by_path.get(path)
        if tr is None or not tr.last_exists or not tr.spans:
            return []
        spans = tr.spans
        if live is not None and not tr.shows(live):
            if not live.exists:
                return []
            spans = map_spans(spans, line_diff(tr.last, live.lines))
        out: list[dict[str, Any]] = []
        for start, end, entry_id in spans:
            entry = self._entries.get(entry_id)
            if entry is None or not entry.undoable:
                continue
            out.append(
                {
                    "line": start,
                    "endLine": end,
                    "editId": entry_id,
                    "action": entry.action,
                    "title": f"agent edit #{entry_id}",
                }
            )
        return out

    def to_json(
        self,
        live: Live | None = None,
        edit_id: int | None = None,
        limit: int | None = None,
        diffs: bool = True,
        net_cap: int = ENTRY_DIFF_CAP,
        net_files: int | None = NET_FILES,
    ) -> dict[str, Any]:
        """The `agentEdit.history` result (`format: json`); see `iter_json`."""
        return drive(self.iter_json(live, edit_id, limit, diffs, net_cap, net_files))

    def iter_json(
        self,
        live: Live | None = None,
        edit_id: int | None = None,
        limit: int | None = None,
        diffs: bool = True,
        net_cap: int = ENTRY_DIFF_CAP,
        net_files: int | None = NET_FILES,
    ) -> Iterator_[dict[str, Any]]:
        """`to_json` as a generator that yields between entries and files (run it with `drive`,
        or a step at a time between other work). Builds only what the answer shows: the last
        `limit` entries (with their diffs unless `diffs` is false; each names at most
        ENTRY_FILES files, `filesTotal` says how many it has), `total`, and the net diff of the
        first `net_files` changed files (`netCut: true` and `netFiles`, the files tracked, when
        more may have changed), cut past `net_cap` characters in all (`diffCut: true`)."""
        if edit_id is not None:
            return {"ok": True, "entries": [self.entry(edit_id).to_json()], "total": 1}
        # Counted with the entries chosen: edits that land while this yields (the server runs
        # it in slices) are in neither, so `total` never names entries the answer lacks.
        total = len(self._entries)
        count = total if limit is None else max(0, min(limit, total))
        chosen = list(islice(reversed(self._entries.values()), count))[::-1]
        entries = []
        for e in chosen:
            yield
            entries.append(e.to_json(with_diff=diffs, files_cap=ENTRY_FILES))
        net, cut = yield from self.iter_net(live, net_files)
        size = 0
        for item in net:
            # The net diff of a long session can be megabytes: past the cap each file is summed
            # up (`format: diff` gives it whole).
            if size + len(item["diff"]) > net_cap:
                first = item["diff"].split("\n", 1)[0]
                item["diff"] = f"{first}\n# diff cut: +{item['added']} -{item['removed']} lines\n"
                item["diffCut"] = True
            size += len(item["diff"])
        out: dict[str, Any] = {
            "ok": True,
            "entries": entries,
            "total": total,
            "net": net,
        }
        if cut:
            out["netCut"] = True
            out["netFiles"] = self.tracked_count()
            out["netNote"] = (
                f"the net diff shows the first {len(net)} changed files of up to "
                f"{self.tracked_count()} the agent touched; ask for more with netLimit"
            )
        if self.skipped:
            out["skipped"] = self.skipped
            out["skippedNote"] = self.skipped_note()
        return out

    def to_diff_text(
        self, live: Live | None = None, edit_id: int | None = None, net_files: int | None = None
    ) -> str:
        """The `agentEdit.history` result text for `format: diff`; see `iter_diff_text`."""
        return drive(self.iter_diff_text(live, edit_id, net_files))

    def iter_diff_text(
        self, live: Live | None = None, edit_id: int | None = None, net_files: int | None = None
    ) -> Iterator_[str]:
        """One entry's diff, or the session's net diff (of the first `net_files` changed files,
        when given, with a `#` line saying so) with notes as `#` lines (which `git apply` skips);
        a generator as `iter_json`."""
        if edit_id is not None:
            e = self.entry(edit_id)
            head = f"# agent edit #{e.id} {e.action} {e.outcome} {e.time}\n"
            return head + (e.diff or "")
        parts: list[str] = []
        net, cut = yield from self.iter_net(live, net_files)
        for item in net:
            for note in item["notes"]:
                parts.append(f"# {item['path']}: {note}\n")
            parts.append(item["diff"])
        if cut:
            parts.append(
                f"# net diff cut: the first {len(net)} changed files of up to "
                f"{self.tracked_count()}; ask for more with netLimit\n"
            )
        return "".join(parts)


T = TypeVar("T")
Iterator_ = Generator[None, None, T]


def drive(gen: Generator[None, None, T]) -> T:
    """Run an `iter_*` generator of the history to its end; its result."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            result: T = stop.value
            return result


def open_history(workspace: str | os.PathLike[str], **kwargs: Any) -> History:
    """The workspace's history from its journal; in memory only (with `journal_error` saying
    why) when the journal cannot be used, so a broken state directory never stops editing."""
    try:
        journal = Journal(workspace)
        state.make_dir(journal.dir)  # a folder that cannot be made: memory only, said once
        return History.load(journal, **kwargs)
    except (EditError, OSError) as exc:
        history = History(**kwargs)
        history.journal_error = f"the edit journal is not available: {exc}"
        return history


def _fits(edits: Sequence[LineEdit], length: int) -> bool:
    """Whether sorted `edits` lie inside a text of `length` lines (a journal record from a
    file that is not this one, or a hand-edited one, may not)."""
    return not edits or edits[-1].end <= length


def _unsure(tr: Tracked, entry_id: int) -> None:
    tr.uncertain = True
    tr._note(
        f"edit #{entry_id}'s journal record does not fit this file; its net diff is shown as "
        "the agent last knew it"
    )


def _pid_alive(pid: int | None) -> bool:
    if pid is None or pid == os.getpid():
        return False
    if os.name == "nt":  # os.kill would terminate it there; treat the plan as abandoned
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _undoes(plan: Plan) -> int | None:
    value = plan.summary.get("undoes")
    return value if isinstance(value, int) else None


def _error_json(error: EditError) -> dict[str, Any]:
    return {
        "code": str(error.code),
        "message": error.message,
        "hint": error.hint,
        "details": summarize_args(error.details),
    }
