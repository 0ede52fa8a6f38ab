"""Recording actions in the history: the journal's transactions, `begin`/`finish`/`record`,
recovery of interrupted plans and undo plans, over the state `Replay` keeps.

Every action gets an entry. Actions that reach the editor or the disk are journaled in two
steps: `begin` writes the plan with its pre-images (fsynced) *before* anything is sent, `finish`
writes the outcome. Refused actions are one `record`. Each write takes in first what other
processes journaled since (`refresh` does only that), so the server and the CLI agree.

Recording a disk apply must not cost as much as the apply (issue 15's speed bar). The tricks,
all here and in `begin`'s arguments, measured together against main at 0941b12 on a machine
loaded by other jobs (load 7-8 on 2 cores, so walls are inflated; CPU is the steadier figure):
`bench/bench_ab.py --rounds 5 main WORKTREE`, 1,000 files: median CPU 998 -> 885 ms, wall
6547 -> 5184 ms; `--workload big`: CPU 359 -> 286 ms, wall 1884 -> 1571 ms. In-process CPU of
`begin` (bench_recording's workload, best of 5): 1,000 files 258 -> 165 ms, one 100k-line file
58 -> 28-35 ms; `finish` 54 -> 41 ms; the next run's replay unchanged (~180 ms).
- the pack: the baselines (the full texts of files the agent touches for the first time) of a
  plan read from disk go, as the files' bytes, to one blob (`_pack`), not into the record's
  line as JSON strings; the disk writer's apply journal names that blob for its pre-images
  (`pack_of`, files.py `_begin`), so they are written once;
- `diff=`: the entry's diff is the plan's diff the caller made for its result, not every
  file's diff made again;
- `sync=False`: the record and the pack are made durable by the writer's `syncfs` before any
  file changes (`files.flushes_state`), not fsynced on their own first.

Then (branch `record`, against main 2a090b2): `finish` leaves the net diff to the first read of
the tracked files (replay.py `_settle`), the begin record's change records are encoded item by
item instead of walked (journal.py `_dump_split`), and `record_change` makes its hunks as named
tuples in one constructor call (undo/changes.py). In-process CPU, best of 7 (bench_recording's
workload, gc off as in the CLI): 1,000 files begin + finish 141 -> 72 ms, the next run's replay
(with the net diff taken in) 115 -> 101 ms; one 100k-line file 31.5 -> 18 ms, replay 26-29 ms
either way. Whole applies, `bench/bench_ab.py --instructions --rounds 1 [--workload big] main
WORKTREE`: 3,161 -> 2,598 M instructions on the 1,000 files, 1,108 -> 1,034 M on the big file;
`--rounds 5` at load 9: CPU 853 -> 788 ms and 222 -> 203 ms.

Then (branch `record2`): a pack of a few files is hashed, written and fsynced in a thread while
the rest of `begin` runs (`_PackWriter`, its figures there). (Change records written without
their hunks' context lines, read again from the pack, were tried and taken out: no gain above
bench_ab's noise, and a release before it undid such a record's deletion at the wrong line.)

Then (session 25): a large file's pack is written ahead, while its plan is made
(`History.prestage`, the headless context's snapshots): `begin` no longer waits 16-20 ms for
the pack of bench_patch's 100k-line file (`bench/bench_ab.py --rounds 11 --workload big`: wall
270 -> 259 ms).

Why this module is over 500 lines (~725): `History` is the journal's one transaction API
(begin, finish, record, recovery, undo plans), and `_PackWriter` is the thread its `begin`
(or `prestage`) writes the pack with; the figures above, which keep each of begin's tricks
accountable, sit with the code they measure.
"""

from __future__ import annotations

import _thread
import os
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from contextlib import contextmanager

from lsp_server.engine import errors, processes, state
from lsp_server.engine.blobs import Blobs, Pack, Staged
from lsp_server.engine.diffing import file_diff
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import rendering
from lsp_server.engine.history.budgets import DEFAULT_UNDO_WINDOW
from lsp_server.engine.history.entries import (
    Entry,
    args_json,
    cap_diff,
    error_json,
    landed_paths,
    now_iso,
    summarize_args,
    undoes_of,
)
from lsp_server.engine.history.netdiff import edits_json
from lsp_server.engine.history.replay import Replay
from lsp_server.engine.journal import BLOB_MIN, Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.text import Snapshot
from lsp_server.engine.undo import ChangeRecord, line_diff, record_change

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

# From this many bytes of baselines a disk plan's go to one blob (`History._pack`) rather
# than into the record's line as JSON strings: encoding and parsing 9 MB of text was most of
# a 1,000-file apply's recording (bench/bench_recording.py); below it, a blob file is more
# than it saves.
PACK_MIN = BLOB_MIN
# The journal lines that hold an entry (a compacted journal's `record`, an unfinished `begin`).
_ENTRY_LINES = ("begin", "record")


def packed(baselines: Mapping[str, Any], pack: Pack) -> dict[str, Any]:
    """The baselines as the record keeps them: a packed one's text is its file's bytes `at`
    [offset, size] in the record's `pack` (replay.py decodes it back)."""
    out: dict[str, Any] = {}
    for path, data in baselines.items():
        where = pack.at.get(path)
        if where is None:
            out[path] = data
        else:
            out[path] = {"at": list(where), "bom": data["bom"], "exists": data["exists"]}
    return out


class History(Replay):
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
        self._own: set[int] = set()
        self._packs: dict[int, Pack] = {}  # begun entries' baseline blobs (`pack_of`)
        self._early: _PackWriter | None = None  # a pack written ahead of its plan (`prestage`)
        self.listeners: list[Callable[[Entry], None]] = []
        # Set when the journal could not be written: the history then lives in memory only.
        self.journal_error: str | None = None
        super().__init__(undo_window=undo_window, clock=clock)

    @classmethod
    def load(cls, journal: Journal, **kwargs: Any) -> History:
        """The history as the journal has it (entries, net diff state, unfinished plans)."""
        history = cls(journal, **kwargs)
        history.refresh()
        return history

    # -- journal plumbing ---------------------------------------------------------------------

    @contextmanager
    def _txn(self, apply: bool = True, sending: bool = False) -> Iterator[Callable[..., None]]:
        """A locked journal transaction; each record written is applied to the state too,
        unless `apply` is False (the caller then puts in the state what the record says).
        `write(rec, sync, named=())`: `named`, the blobs the record's slice markers use.
        `sending`: a plan's begin, whose edit is sent right after: no compaction for the
        number of entries then (it can wait for the finish; 20-50 ms more between the plan and
        the editor's buffer is more time for the user's typing to make the edit STALE)."""
        if self.journal is None:
            yield lambda rec, sync, named=(): self._apply(rec) if apply else None
            return
        with self.journal.transaction() as (batch, writer):
            self._ingest(batch)

            written: set[int] = set()

            def write(rec: dict[str, Any], sync: bool, named: Sequence[str] = ()) -> None:
                writer.append(rec, sync=sync, named=named)
                written.add(rec.get("id", 0))
                if apply:
                    self._apply(rec)

            yield write
            if self.journal.wants_compaction() or (not sending and self.wants_fewer_entries()):
                try:
                    # Never without the entries this transaction wrote, which its caller goes
                    # on with and was told about: dropped (for size, when the undo window fits
                    # in nothing less; for their number, when the older ones are all unfinished
                    # or undoable), this process kept them and every other one did not.
                    records = self._compacted(self.journal.max_bytes // 2, written)
                    writer.rewrite(records)
                    # As a process replaying the compacted journal holds it: only its entries,
                    # none new since (`_forget_dropped`).
                    held = {r["id"] for r in records if r["t"] in _ENTRY_LINES}
                    self._forget_dropped(held)
                    self._fresh = 0
                    self._journaled = sum(r["t"] in _ENTRY_LINES for r in records)
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

    def _blob(self, sha: str) -> bytes:
        if self.journal is None:
            return super()._blob(sha)
        return self.journal.blobs.get(sha)

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
            user[c.path] = {"edits": edits_json(edits), "bom": snap.bom}
        return user, baselines

    def begin(
        self,
        plan: Plan,
        args: Mapping[str, Any] | None = None,
        *,
        undoes: int | None = None,
        action: str | None = None,
        diff: str | None = None,
        sync: bool = True,
        diff_later: bool = False,
    ) -> int:
        """Journal `plan` with its pre-images (fsynced) before it is sent; returns the entry id.

        `diff`: the plan's whole diff (`diffing.plan_diff`) when the caller made it already; it
        is the entry's diff if all of the plan lands (another outcome's is made from the change
        records then). `diff_later`: the caller gives that diff with `set_diff` before it
        finishes the entry (made while the disk writer waits on the disk, actions/execute.py).
        `sync=False`: the caller makes the state folder's file system durable before any file
        changes (the disk writer's `syncfs`, `files.flushes_state`), so the record is not
        fsynced twice. The baselines of a disk plan go to one blob, which the
        disk writer's apply journal can name too (`pack_of`).
        """
        writer = self._take_early(plan) or _PackWriter.start(
            self.journal, plan, sync, self._by_path
        )
        try:
            records = [record_change(c) for c in plan.changes]
            # Not every file's diff when the caller has the whole one: a 1,000-file plan's diffs
            # cost ~40 ms, and past ENTRY_DIFF_CAP they are only cut to one line each anyway.
            later = diff is not None or diff_later
            diffs = {} if later else {c.path: file_diff(c) for c in plan.changes}
            return self._begin(plan, args, undoes, action, records, diffs, diff, sync, writer)
        except OSError as exc:
            # Without the pre-images on disk a crash could not be undone: do not send the plan.
            self.journal_error = f"writing the journal failed: {exc}"
            raise errors.io_error(
                f"The edit was not sent: its undo record could not be written ({exc}).",
                "Free disk space or fix the permissions of the agent-edit state directory "
                f"({self.journal.dir if self.journal else '?'}), then retry.",
                path=str(self.journal.path) if self.journal else None,
            ) from None
        finally:
            if writer is not None:
                writer.close()  # not taken (an error, or other paths packed): its file goes

    def set_diff(self, entry_id: int, diff: str) -> None:
        """The whole diff of the plan begun as `entry_id` with `diff_later` (see `begin`)."""
        entry = self._entries.get(entry_id)
        if entry is not None and not entry.finished:
            entry._plan_diff = diff

    def prestage(self, path: str, data: bytes) -> None:
        """Start writing `data`, the bytes of `path` as just read from disk, as the pack of a
        plan about to be made on it: when that plan packs exactly these bytes (a one-file edit
        of a file touched for the first time), `begin` takes the pack written meanwhile
        instead of writing it then (`_PackWriter`, the figures there). Only the first
        file of PRESTAGE_MIN bytes or more is prestaged; one that `begin` does not take
        (another plan, several files) is removed by it, or by `drop_prestaged`."""
        if (
            self.journal is None
            or self._early is not None
            or len(data) < PRESTAGE_MIN
            or path in self._by_path  # tracked already: its baseline is not packed again
        ):
            return
        try:
            self._early = _PackWriter(self.journal.blobs, [data], True)
        except RuntimeError:
            pass  # no thread to be had (a process at its limit): `begin` writes the pack itself

    def drop_prestaged(self) -> None:
        """Remove a prestaged pack that no `begin` took (a dry run, a refusal), once its
        thread is done: call it before the process ends or the history is put away."""
        early, self._early = self._early, None
        if early is not None:
            early.close()

    def _take_early(self, plan: Plan) -> _PackWriter | None:
        """The prestaged writer when it writes this plan's pack (`_pack` takes it by the
        identity of its parts), else None (and a prestaged one is closed)."""
        early, self._early = self._early, None
        if early is None:
            return None
        parts = _unpacked_preimages(plan, self._by_path)
        if early.writes(parts):
            return early
        early.close()
        return None

    def _begin(
        self,
        plan: Plan,
        args: Mapping[str, Any] | None,
        undoes: int | None,
        action: str | None,
        records: list[ChangeRecord],
        diffs: dict[str, str],
        diff: str | None,
        sync: bool,
        writer: _PackWriter | None = None,
    ) -> int:
        with self._txn(apply=False, sending=True) as write:
            user, baselines = self._prepare(plan)
            entry_id = self._next_id
            e = Entry(
                id=entry_id,
                time=self.clock(),
                action=action or plan.action,
                args_json=args_json(summarize_args(dict(args or {}))),
                undoes=undoes if undoes is not None else undoes_of(plan),
                changes=tuple(records),
                _user=user,
                _baselines=baselines,
                pid=os.getpid(),
            )
            pack = self._pack(plan, baselines, sync, writer)
            rec = self._begin_json(e)
            if pack is not None:
                rec["baselines"] = packed(baselines, pack)
                rec["pack"] = e.pack = pack.sha
                self._packs[entry_id] = pack
            write(rec, sync, () if pack is None else (pack.sha,))
            # The entry itself goes in, not one rebuilt from its record (what replaying the
            # record gives: the change records decoded again cost ~13 ms on 1,000 files).
            self._entries[entry_id] = entry = e
            self._fresh += 1
            self._journaled += 1
            self._next_id = max(self._next_id, entry_id + 1)
            self._own.add(entry_id)
            entry._diffs = diffs
            entry._plan_diff = diff
            # The baselines' lines where they are split already (copied: a document store's
            # are lent); the others are split from the baseline's text if the net diff ever
            # takes this entry in (`Tracked.start`), which a CLI run ends before doing.
            entry._base_lines = {
                c.path: list(lines)
                for c in plan.changes
                if c.path in baselines
                and c.before.exists
                and (lines := c.before.lines_if_split()) is not None
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
            raise errors.invalid_argument(
                f"There is no edit #{entry_id} to finish.",
                "Finish only ids returned by begin().",
                argument="editId",
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
            rec["error"] = error_json(error)
        landed = set(landed_paths(entry, str(outcome), committed or []))
        if entry._plan_diff is not None and len(landed) == len(entry.changes):
            rec["diff"] = entry._plan_diff
        elif entry._diffs:
            rec["diff"] = cap_diff([d for p, d in entry._diffs.items() if p in landed])
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
        # The entry as the history holds it now: when the transaction took in another
        # process's compaction (every kept_entries/2 edits), replay rebuilt every entry and
        # the one fetched above is stale, still "pending" (the server told its editor so).
        entry = self._entries.get(entry_id, entry)
        self._own.discard(entry_id)
        self._packs.pop(entry_id, None)
        self._notify(entry)
        return entry

    def saved(self, entry_id: int, saves: Sequence[ChangeRecord]) -> None:
        """The editor's save changed what edit `entry_id` left (format on save, trimmed
        whitespace, a final newline: `undo.save_record` of each file): kept with the entry, so
        its history shows it and its undo restores the text from before the edit."""
        rec = {
            "t": "saved",
            "id": entry_id,
            "time": self.clock(),
            "saves": [c.to_json() for c in saves],
        }
        try:
            with self._txn() as write:
                write(rec, False)  # not fsynced: lost in a crash, undo is CONFLICT, as before
        except OSError as exc:
            self.journal_error = f"writing the journal failed: {exc}"
            self._apply(rec)
        entry = self._entries.get(entry_id)
        if entry is not None:
            self._notify(entry)

    def _pack(
        self,
        plan: Plan,
        baselines: Mapping[str, Any],
        sync: bool,
        writer: _PackWriter | None = None,
    ) -> Pack | None:
        """The baselines' bytes in one blob (the pack, see the module docstring), or None
        (no journal, not read from disk, or too small to be worth a file of their own);
        the one `writer` staged when it holds these very bytes."""
        if self.journal is None:
            return None
        parts: list[bytes] = []
        at: dict[str, tuple[int, int]] = {}
        data: dict[str, bytes] = {}
        offset = 0
        for c in plan.changes:
            disk = c.before.disk
            if c.path not in baselines or disk is None or c.before.link is not None:
                continue
            parts.append(disk.data)
            at[c.path] = (offset, len(disk.data))
            data[c.path] = disk.data
            offset += len(disk.data)
        if offset < PACK_MIN:
            return None
        sha = writer.take(parts) if writer is not None else None
        if sha is None:
            sha = self.journal.blobs.put_parts(parts, sync=sync)
        return Pack(sha, self.journal.blobs.path(sha), at, data)

    def pack_of(self, entry_id: int) -> Pack | None:
        """The blob holding begun entry `entry_id`'s baselines (`begin`), until it finishes:
        the disk writer's apply journal names it instead of a second copy (files.py)."""
        return self._packs.get(entry_id)

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
        # Nothing of this action reaches the disk: a pack written ahead for it goes first (its
        # thread joined, its temporary removed), so it does not take the space, on a nearly
        # full disk, that this record needs.
        self.drop_prestaged()
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
                rec["error"] = error_json(error)
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
                rec["diff"] = cap_diff([file_diff(c) for c in plan.changes if c.path in landed])
                if outcome != "dry-run":
                    user, baselines = self._prepare(plan)
                    if user:
                        rec["user"] = user
                    if baselines:
                        rec["baselines"] = baselines
                if undoes_of(plan) is not None:
                    rec["undoes"] = undoes_of(plan)
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
        from lsp_server.engine.undo import rollback_records  # here: see undo/__init__.py

        committed, _ = rollback_records(entry.changes, observed)
        states = {c["state"] for c in committed}
        if states == {"applied"}:
            outcome = "applied"
            error = None
        elif states <= {"not-applied"}:
            outcome = str(Code.NOT_APPLIED)
            error = errors.not_applied(
                f"Edit #{entry_id} was interrupted (the process stopped before confirming it); "
                "none of it landed.",
                "Read the files again and redo the edit if it is still wanted.",
                files=committed,
                committed=committed,
            )
        else:
            outcome = str(Code.PARTIAL)
            error = errors.partial(
                f"Edit #{entry_id} was interrupted (the process stopped before confirming it); "
                "part of it landed.",
                f"Inspect it with agentEdit.history {{editId: {entry_id}}} and undo it with "
                f"agentEdit.undo {{editId: {entry_id}}}, or finish it by hand after reading "
                "the files again.",
                files=committed,
                committed=committed,
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
            raise errors.invalid_argument(
                f"Edit #{entry_id} was already undone by edit #{entry.undone_by}.",
                f"Undo #{entry.undone_by} instead to redo it.",
                argument="editId",
                editId=entry_id,
            )
        if not entry.finished:
            raise errors.invalid_argument(
                f"Edit #{entry_id} has not finished.",
                "Wait for it to finish, then undo it.",
                argument="editId",
                editId=entry_id,
            )
        if not landed_paths(entry, entry.outcome, entry.committed, unknown=True):
            raise errors.invalid_argument(
                f"Edit #{entry_id} changed nothing ({entry.outcome}), so there is nothing to undo.",
                "Check agentEdit.history for the edit you meant.",
                argument="editId",
                editId=entry_id,
            )
        from lsp_server.engine.undo import plan_undo  # here: see undo/__init__.py

        return plan_undo(entry, current)

    # -- rendering: the history's answers are rendering.py's functions, as methods -------------

    net = rendering.net
    iter_net = rendering.iter_net
    lenses = rendering.lens_spans
    to_json = rendering.to_json
    iter_json = rendering.iter_json
    to_diff_text = rendering.to_diff_text
    iter_diff_text = rendering.iter_diff_text


# From this many bytes a file read for a plan has its pack written ahead (`History.prestage`):
# below, writing the pack in `begin` is a few milliseconds that a thread's start barely hides.
PRESTAGE_MIN = 1 << 20


class _PackWriter:
    """A plan's pack written in a thread (`Blobs.stage`: hashed, written and, with `sync`,
    fsynced; hashlib and the writes let go of the GIL) while `begin` makes the change records
    and encodes its record; `take` names it under the journal's lock (`Blobs.commit`).

    Started before the lock, with the pre-images of the files not tracked yet: the pack holds
    those of the files touched for the first time (`_prepare`, under the lock, after what
    other processes journaled since is taken in), nearly always the same; when not, or
    anything failed (a compaction's clean-up removed the staged file, a write error), `_pack`
    writes the pack itself as before, and `close` removes the staged file. The pack is durable
    before the record naming it is appended, as before.

    The thread needs the GIL back after each hash and write, and while `begin` runs Python
    it gets it only once the switch interval has passed: `Blobs.stage` joins many small
    pre-images into a few groups first (a 1,000-file pack: a few waits, not 1,000; until
    then such packs were written by `_pack`, in the calling thread; bench/bench_ab.py
    --rounds 11 fd0cba1 ae730ca, the 1,000 files, with the diff made while the writer
    flushes (2acb583, alone 0.988): 601 -> 517 ms wall (per-round ratio median 0.862), CPU
    618 -> 603 ms; `_pack` 12-23 -> 1.5-2 ms in 2 of 3 timed runs). For bench_patch's
    100k-line file
    (one 4.5 MB part; one file, so `sync`: the pack is fsynced here), `begin`'s CPU in the
    calling thread (time.thread_time, best of 3 rounds of 5, against the commit before this
    one) 14.7 -> 7.6 ms: the hash, the write and the fsync's wait overlap the change records,
    the lock and the record's encoding."""

    def __init__(self, blobs: Blobs, parts: list[bytes], sync: bool) -> None:
        self._blobs = blobs
        self._parts = parts
        self._sync = sync
        self._staged: Staged | None = None
        self._taken = False
        # `_thread`, not `threading`: a one-file apply does not import that module otherwise
        # (files.py imports it for many files only), and a lock held until the thread is done
        # is all the joining `begin` needs.
        self._done = _thread.allocate_lock()
        self._done.acquire()
        try:
            _thread.start_new_thread(self._run, ())
        except BaseException:
            self._done.release()  # no thread: `take` finds nothing staged
            raise

    @classmethod
    def start(
        cls, journal: Journal | None, plan: Plan, sync: bool, tracked: Container[str]
    ) -> _PackWriter | None:
        """One writing what `_pack` will most likely pack (the pre-images of the files not
        `tracked` yet), or None (no journal, too small)."""
        if journal is None:
            return None
        parts = _unpacked_preimages(plan, tracked)
        if sum(map(len, parts)) < PACK_MIN:
            return None
        try:
            return cls(journal.blobs, parts, sync)
        except RuntimeError:
            return None  # no thread to be had (a process at its limit): `_pack` writes it

    def writes(self, parts: Sequence[bytes]) -> bool:
        """Whether this writer writes `parts` (the same bytes objects, in order)."""
        return len(parts) == len(self._parts) and all(
            a is b for a, b in zip(parts, self._parts, strict=True)
        )

    def _run(self) -> None:
        try:
            self._staged = self._blobs.stage(self._parts, self._sync)
        except OSError:
            self._staged = None  # `_pack` writes it itself, and reports what fails then
        finally:
            self._done.release()

    def _join(self) -> None:
        with self._done:
            pass

    def take(self, parts: Sequence[bytes]) -> str | None:
        """The staged pack's name, now named in the blobs folder, when it holds `parts` (the
        same bytes objects, in order); None when it does not or could not be named."""
        self._join()
        staged = self._staged
        if staged is None or not self.writes(parts):
            return None
        try:
            sha = self._blobs.commit(staged)
        except OSError:
            return None
        self._taken = True
        return sha

    def close(self) -> None:
        """Wait for the thread; remove the staged file unless `take` named it."""
        self._join()
        if self._staged is not None and not self._taken:
            self._blobs.discard(self._staged)


def _unpacked_preimages(plan: Plan, tracked: Container[str]) -> list[bytes]:
    """The pre-images `_pack` will most likely pack: those read from disk of the files not
    `tracked` yet (no link), in the plan's order."""
    return [
        c.before.disk.data
        for c in plan.changes
        if c.before.disk is not None and c.before.link is None and c.path not in tracked
    ]


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


def _pid_alive(pid: int | None) -> bool:
    """Whether the process that began a plan still runs (another user's counts: it exists)."""
    if pid is None or pid == os.getpid():
        return False
    return processes.probe(pid) != processes.NONE
