"""The crash-safe journal: append-only JSON lines in a per-workspace state directory.

One journal per workspace, shared by the language server and the CLI, lives under the user's state
directory (platformdirs), keyed by a hash of the workspace's real path, and never inside the
workspace (so it is not edited, committed or watched by the editor). `AGENT_EDIT_STATE_DIR`
replaces the base directory (tests).

Records are whole lines written with one `write` under an exclusive lock. A plan's `begin` line is
fsynced before the caller goes on, so it is on disk before the editor or the disk is touched;
outcome lines are not (losing one to a power cut only makes the plan look unfinished, and recovery
then finds from the files what landed). A crash can only tear the last line; readers skip a line
that does not parse, and the next writer starts a fresh line. Compaction rewrites
the file atomically (temporary file, fsync, rename, fsync of the directory); other processes notice
the new file by its inode and read it again from the start. A reader keeps the file it read
open (`_Held`): a file replaced twice between two reads could otherwise get the first one's inode
number back, and grown past the reader's offset it was taken for the same file, read from the
middle of a line.

Values too large for a line (a file's text, a long run of a hunk's lines: BLOB_MIN characters
or more) live in content-addressed blob files beside the journal (`Blobs`, blobs.py), each written
and fsynced before the record naming them is appended; a compaction that keeps one does not write it
again, and removes the blobs nothing names any more (a record may name a blob it refers to in its
own way, the history's pre-image pack: `append(named=...)`; the blob an interrupted disk apply's
journal names is kept too, and so is the one a journal set aside for a human names). Compaction
runs (`wants_compaction`) once the journal's line file is past `max_bytes`, or the line file and
its blob files together are, and a quarter of `max_bytes` (or of what the last compaction left,
if more) was added since: blob bytes count, or the blob folder, which only a compaction cleans,
grew without bound beside a small line file. So that every process knows that weight without a
stat per transaction, a line whose append wrote blob files ends with their bytes (`$new`), and
the checkpoint a compaction writes with the bytes of those it kept (`$kept`); the reader takes
both off the record (`_counted`). A line that
cannot be read back (torn, hand-edited, a number no record holds, a blob missing or altered)
is skipped and counted (`Batch.skipped`).

The journal knows records only as JSON objects with a `t` (type) field; what they mean is
the history's business (history/replay.py).

Why this module is over 500 lines (~750): its line format is one crash-safety contract between
the writer (`_dump` and the blobs it moves values to, the lock, compaction, the counts that end a
line) and the reader (`_parse`, `_resolve`, the count of skipped lines, the file it holds). A
change to a record's shape changes both halves at once, and tests/engine/test_journal*.py hold
them to each other here.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lsp_server.engine import state
from lsp_server.engine.blobs import BLOB_DIR, NOFOLLOW, Blobs
from lsp_server.engine.state import ENV_STATE_DIR as ENV_STATE_DIR
from lsp_server.engine.state import fsync_dir as _fsync_dir

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writer per workspace is assumed there
    fcntl = None  # type: ignore[assignment]

JOURNAL_NAME = "journal.jsonl"
APPLY_JOURNAL_NAME = "journal.json"  # the disk writer's, files.py's JOURNAL
LOCK_NAME = "journal.lock"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
BLOB_MIN = 64 * 1024  # characters: a value this long goes to a blob file, not the line
BLOB_TEXT, BLOB_JSON = "$blob", "$json"  # markers: a string's UTF-8, a list's JSON
# Compiled by its first use (`re`'s cache), not at import: only a compaction reads it.
_NAMED = rb'"\$blobs":\[([^\]]*)\]'


def state_base(env: Mapping[str, str] | None = None) -> Path:
    """The base state directory (engine/state.py): `$AGENT_EDIT_STATE_DIR`, else the user's."""
    return Path(state.state_base(env))


def state_dir_for(workspace: str | os.PathLike[str], base: Path | None = None) -> Path:
    """The workspace's own state directory: `<base>/workspaces/<name>-<sha256 of real path>`."""
    return Path(state.workspace_state_path(workspace, None if base is None else str(base)))


@dataclass
class Batch:
    """What a locked transaction found: records other writers appended since this reader's last
    look (`reset` means the file was compacted or replaced, so `records` is the whole file)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    reset: bool = False
    skipped: int = 0  # lines that were not records (see `_parse`)


class Journal:
    """The journal file of one workspace, with a reader position for following other writers."""

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        state_dir: str | os.PathLike[str] | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        if state_dir is None:
            self.dir = state_dir_for(self.workspace)
        else:
            self.dir = Path(state_dir)
            state.check_outside(self.dir, self.workspace)
        self.path = self.dir / JOURNAL_NAME
        self.blobs = Blobs(self.dir / BLOB_DIR)
        self.max_bytes = max_bytes
        # The size the last compaction left (see `wants_compaction`), and the bytes of the blob
        # files it kept; the bytes of blob files appended records wrote since (their `$new`).
        self.compacted_size = 0
        self.compacted_blobs = 0
        self.blob_bytes = 0
        self._blobs_counted = 0  # `blobs.written` as far as a record counted it
        self._offset = 0
        self._held: _Held | None = None  # the file the reader read last, kept open
        self._reset_due = False  # the next batch must say `reset` (see `_read_new`)
        self._tail = b""  # a partial last line seen by the reader (a torn write, or in progress)

    # -- files -------------------------------------------------------------------------------

    def _ensure_dir(self) -> None:
        if not self.dir.is_dir():
            state.make_dir(self.dir)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self._ensure_dir()
        fd = _open_regular(self.dir / LOCK_NAME, os.O_RDWR | os.O_CREAT)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the flock

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def exists(self) -> bool:
        return self.path.exists()

    def wants_compaction(self) -> bool:
        """Past `max_bytes`, with a quarter of it appended since the last compaction, or a
        quarter of what that compaction left when it left more (one that could not get below
        `max_bytes` is not redone on every write, and rewriting N bytes waits for N/4 new
        ones: each byte appended costs a bounded rewrite however large the journal stays).
        The last compaction's size is where its checkpoint line ends (`_last_checkpoint`), so
        a process that only read the journal knows it too: each CLI run is a new process, and
        one that took 0 for it rewrote a journal that compaction cannot get below `max_bytes`
        on every apply (~6 s a run once bench_patch's 1,000-file patch had been applied 8
        times). With a quarter of `max_bytes` alone, a 46 MB journal was rewritten every
        second 1,000-file apply, 3.4-4.7 s each (bench/bench_history_seq.py --workload many).

        The same rule holds for the journal with its blob files: compaction is their only
        clean-up, and with the line file alone counted, 60 whole-file writes of a 200 KB
        file (undo window 5) left a 42 KB journal beside 12.4 MB of blobs, never collected.
        What the blob files weigh is known without a stat per transaction: each record says
        what its append wrote (`$new`), and the checkpoint what the compaction kept (`$kept`,
        which it rereads and hashes: part of the rewrite's cost, so part of what it waits
        for); older records say nothing and count 0."""
        size = self.size()
        grown = size - self.compacted_size
        if size > self.max_bytes and grown >= max(self.max_bytes, self.compacted_size) // 4:
            return True
        left = self.compacted_size + self.compacted_blobs
        grown += self.blob_bytes
        return left + grown > self.max_bytes and grown >= max(self.max_bytes, left) // 4

    # -- reading -----------------------------------------------------------------------------

    def _hold(self, held: _Held | None) -> None:
        """Read `held` from now on (None: no file), closing the one read before."""
        if self._held is not None and self._held is not held:
            self._held.close()
        self._held = held

    def _read_new(self) -> Batch:
        """Records appended since the last read (the whole file after a compaction)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            reset = self._reset_due or self._held is not None
            self._from_start(None)
            self._reset_due = False
            return Batch([], reset)
        held = self._held
        if self._reset_due or held is None or not held.same(st) or st.st_size < self._offset:
            # From the start, and a reset if anything was read before. Due until a batch says
            # so: a read that fails on the way (the path briefly a directory, the file put
            # back) must not leave the next one to read the file again as if it were new.
            self._reset_due = self._reset_due or held is not None
            if held is None or not held.same(st):
                held = _Held(_open_regular(self.path, os.O_RDONLY))
                st = held.stat()  # the file opened, if it was replaced since the stat
            self._from_start(held)
        if st.st_size > self._offset:
            data = held.read_from(self._offset)
        else:
            data = b""
        start = self._offset - len(self._tail)  # where `data` begins in the file
        self._offset += len(data)
        data = self._tail + data
        lines = data.split(b"\n")
        self._tail = lines.pop()
        i = _last_checkpoint(lines)
        if i is not None:
            self.compacted_size = start + sum(map(len, lines[: i + 1])) + i + 1
            self.compacted_blobs = _count(lines[i], _KEPT_COUNT)
            self.blob_bytes = 0
        for j in range(0 if i is None else i + 1, len(lines)):
            self.blob_bytes += _count(lines[j], _NEW_COUNT)
        skipped = [0]
        records = _parse(lines, skipped, self.blobs)
        reset, self._reset_due = self._reset_due, False
        return Batch(records, reset, skipped[0])

    def _from_start(self, held: _Held | None) -> None:
        """Read `held` (None: no file) from its start, nothing of it counted yet."""
        self._hold(held)
        self._offset, self._tail = 0, b""
        self.compacted_size = self.compacted_blobs = self.blob_bytes = 0

    def read_all(self) -> list[dict[str, Any]]:
        """Every complete record in the file, from the start (resets the reader position)."""
        self._from_start(None)
        self._reset_due = False
        return self._read_new().records

    def close(self) -> None:
        """Close the file the reader holds; a later read takes the whole file again, as a
        reset (a context that is done with the journal closes it: headless.open)."""
        self._reset_due = self._reset_due or self._held is not None
        self._from_start(None)

    def unfinished(self) -> list[dict[str, Any]]:
        """`begin` records with no `finish`: plans that may have been half carried out."""
        begun: dict[int, dict[str, Any]] = {}
        with (
            contextlib.suppress(FileNotFoundError),
            os.fdopen(_open_regular(self.path, os.O_RDONLY), "rb") as f,
        ):
            for rec in _parse(f.read().split(b"\n"), None, self.blobs):
                t, entry_id = rec.get("t"), rec.get("id")
                if type(entry_id) is not int:
                    continue  # not a record this can use (history/replay.py counts those)
                if t == "begin":
                    begun[entry_id] = rec
                elif t in ("finish", "record"):
                    begun.pop(entry_id, None)
        return [begun[k] for k in sorted(begun)]

    # -- writing -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[tuple[Batch, _Writer]]:
        """Lock the journal, hand over what others appended, and let the caller append."""
        with self._lock():
            batch = self._read_new()
            writer = _Writer(self)
            yield batch, writer

    def _append(
        self, records: list[dict[str, Any]], sync: bool = True, named: Sequence[str] = ()
    ) -> None:
        if not records:
            return
        lines = [_dump(r, self.blobs, named) for r in records]  # blobs first, fsynced
        new = self.blobs.written - self._blobs_counted  # with a pack put under this lock
        if new > 0:
            lines[-1] = _counted(lines[-1], _NEW_COUNT, new)
        data = b"".join(lines)
        if self._tail:
            # A torn line from a crash: end it so the new record starts on a line of its own.
            data = b"\n" + data
            self._tail = b""
        fd = _open_regular(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            created = self._held is None
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if sync:
                os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.dir)
        if self._held is None or not self._held.same(st):
            # Created by this append (a transaction read the file it appends to): hold it.
            self._hold(_Held(_open_regular(self.path, os.O_RDONLY)))
        self._offset = st.st_size
        self.blob_bytes += new
        self._blobs_counted += new

    def _rewrite(self, records: list[dict[str, Any]]) -> None:
        tmp = self.dir / (JOURNAL_NAME + ".tmp")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # a crash's leftover, or a symlink: O_EXCL makes a file of our own
        held = _Held(_open_regular(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL))
        try:
            lines = [_dump(r, self.blobs) for r in records]
            # What stays: what the new journal names, and the pre-images an interrupted disk
            # apply still needs to be rolled back (files.py). Weighed before the checkpoint is
            # written, so that it can say so (`wants_compaction`).
            keep = set().union(*map(_named_blobs, lines)) | _apply_journal_blobs(self.dir)
            kept = self.blobs.size_of(keep)
            if lines and lines[-1].startswith(_CHECKPOINT):
                lines[-1] = _counted(lines[-1], _KEPT_COUNT, kept)
            data = b"".join(lines)
            view = memoryview(data)
            while view:
                n = os.write(held.fd, view)
                view = view[n:]
            os.fsync(held.fd)
            os.replace(tmp, self.path)
        except BaseException:
            held.close()
            raise
        _fsync_dir(self.dir)
        self._hold(held)  # the new journal: read on from its end
        self._offset, self._tail = len(data), b""
        self.compacted_size, self.compacted_blobs = len(data), kept
        self.blob_bytes, self._blobs_counted = 0, self.blobs.written
        # Under the lock, so no writer is between a blob and the record naming it: what the
        # new journal does not name (dropped pre-images, a crash's leftovers) goes. The apply
        # journals are looked at again: one the disk writer made meanwhile names its pack too.
        self.blobs.collect(keep | _apply_journal_blobs(self.dir))


class _Held:
    """An open journal file (read-only, or the compaction's own), closed by `close` or when
    dropped. While it is open its inode cannot be freed, so no other file can get its number:
    `same` is then a true identity test."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._ident = _ident(os.fstat(fd))

    def close(self, _close: Any = os.close) -> None:  # `os.close` bound: also at interpreter exit
        """Close it (once; a dropped one closes itself)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            _close(fd)

    # Not weakref.finalize: that imports weakref (2 modules) into every CLI start for one fd.
    __del__ = close

    def stat(self) -> os.stat_result:
        return os.fstat(self.fd)

    def same(self, st: os.stat_result) -> bool:
        """Whether `st` (of the journal's path) is this file."""
        return _ident(st) == self._ident

    def read_from(self, offset: int) -> bytes:
        """Everything from `offset` to the end of the file."""
        parts = []
        while chunk := os.pread(self.fd, 1 << 24, offset):
            parts.append(chunk)
            offset += len(chunk)
        return b"".join(parts)


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class _Writer:
    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    def append(
        self, *records: dict[str, Any], sync: bool = True, named: Sequence[str] = ()
    ) -> None:
        """Append whole records (one write) and, with `sync`, fsync before returning; `named`
        lists blobs the records refer to in their own way (written by the caller, under this
        transaction), kept by compaction while a record names them."""
        self._journal._append(list(records), sync, named)

    def rewrite(self, records: list[dict[str, Any]]) -> None:
        """Replace the whole journal atomically (compaction)."""
        self._journal._rewrite(records)


def _dumps(value: Any) -> str:
    if _C_ENCODE is None or type(value) is str:
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


# What `json.dumps(value, ensure_ascii=False, separators=(",", ":"))` builds on every call, made
# once: `_dump` encodes a begin record's change records one by one (~2 us a call saved).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _c_encoder() -> Any:
    """The C encoder `_ENCODER.encode` makes on every call of an object or a list, made once
    (a 1,000-file begin record encodes ~1,000 change records one by one). Made without the
    check for circular references, which needs a fresh marker table per call: a record is
    plain data this package builds, and a cycle in one would end in RecursionError rather than
    ValueError. None without json's C accelerator, or where it takes other arguments (then
    `_ENCODER.encode`).
    Figures, 4057579 (before) -> 2b28f3a (this, with the split child closing its pipe early):
    `bench/bench_recording.py --runs 9`, run three times from each checkout alternately, begin
    median 137/134/126 -> 98/94/91 ms; `bench/bench_ab.py --journaled-fs --rounds 11 4057579
    2b28f3a`: per-round wall ratio 0.926, CPU 703 -> 666 ms; `--workload big --rounds 9`:
    0.964, CPU 183 -> 164 ms."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    e = _ENCODER
    try:
        return make(
            None,
            e.default,
            json.encoder.encode_basestring,
            e.indent,
            e.key_separator,
            e.item_separator,
            e.sort_keys,
            e.skipkeys,
            e.allow_nan,
        )
    except TypeError:
        return None


_C_ENCODE = _c_encoder()


def _dump(
    record: dict[str, Any], blobs: Blobs | _SizeOnly | None = None, named: Sequence[str] = ()
) -> bytes:
    """One record as a journal line; with `blobs`, a record of BLOB_MIN characters or more has
    its large values (a file's text, a long list of lines) moved to blob files first, named in
    the record's `$blobs` (only such a record's markers are ever resolved); so are the blobs
    in `named`, which the record refers to in its own way (the history's pre-image pack), so
    that compaction keeps them while the record does.

    Encoded once: every value `_externalize` moves is BLOB_MIN characters or more, so the walk
    returns a record under BLOB_MIN as it is and needs no encoding first to measure the record
    (the same line as measuring, walking and encoding again; tests/engine/test_journal_dump.py).
    bench_patch's 1,000-file begin record (2.3 MB): 59 -> 46 ms CPU, the best of 15 in one
    process. With the walk's kept numbers (`_externalize`), the whole apply: 3,399 -> 3,165 M
    instructions on the 1,000 files, 1,141 -> 1,108 M on the 100k-line file
    (`bench/bench_ab.py --instructions --rounds 1 [--workload big] main WORKTREE`)."""
    if isinstance(record.get("pack"), str):
        # A begin record's pre-image pack (history/recording.py), also when a compaction
        # writes an unfinished entry's record again: named so that it is kept.
        named = (*named, record["pack"])
    if blobs is None:
        return (_dumps(record) + "\n").encode("utf-8", "surrogatepass")
    used: list[str] = list(named)
    if (
        any(map(_split, record.values()))
        and all(type(k) is str for k in record)
        and "$blobs" not in record
    ):
        # (Other keys: json's own conversion of them, through the whole walk; a `$blobs` of
        # the record's own: replaced where it is, as the walk's copy does.)
        return _dump_split(record, blobs, used)
    small = _externalize(record, blobs, used)
    if used:
        small["$blobs"] = sorted(set(used))
    return (_dumps(small) + "\n").encode("utf-8", "surrogatepass")


def _split(value: Any) -> bool:
    """Whether `value` is a list `_dump_split` encodes item by item: of objects or lists (a begin
    record's change records, a change record's hunks)."""
    return type(value) is list and bool(value) and all(isinstance(x, _CONTAINERS) for x in value)


_CONTAINERS = (dict, list, tuple)  # a tuple's subclass too: a hunk (undo/changes.py) is one


def _dump_split(record: dict[str, Any], blobs: Blobs | _SizeOnly, used: list[str]) -> bytes:
    """`_dump` of a record holding a list of objects or lists (`_split`: a begin record's change
    records, a compacted journal's): each item is encoded on its own, and only one whose
    encoding is BLOB_MIN characters or more is looked into (`_large`: its own such lists item
    by item, the rest walked by `_externalize`); the others hold no value the walk would move (a
    string is as long as its encoding at least), and they are nearly all of them (a hunk's few
    lines). The same line, byte for byte, and the same blobs in the same order as walking the
    whole record (tests/engine/test_journal_dump.py).
    bench_patch's 1,000-file begin record: `_dump` 55 -> 26 ms CPU (the best of 15 in one
    process, gc off as in the CLI), the walk of its ~31,000 values gone; the 100k-line
    file's (one change record of 1,000 hunks, `_wide`): `_dump` 8.3 -> 4.7 ms."""
    parts = [f"{_dumps(key)}:{_member(value, blobs, used)}" for key, value in record.items()]
    if used:
        parts.append(f'"$blobs":{_dumps(sorted(set(used)))}')
    return ("{" + ",".join(parts) + "}\n").encode("utf-8", "surrogatepass")


def _member(value: Any, blobs: Blobs | _SizeOnly, used: list[str]) -> str:
    """One value of an object `_dump_split` encodes, as it encodes it."""
    if _split(value):
        items = []
        for item in value:
            if _wide(item):  # encoded to be measured, it would be encoded again: look inside
                items.append(_large(item, blobs, used))
                continue
            text = _dumps(item)
            if len(text) >= BLOB_MIN:
                text = _large(item, blobs, used)
            items.append(text)
        return f"[{','.join(items)}]"
    if type(value) in _KEPT:
        return _dumps(value)
    return _dumps(_externalize(value, blobs, used))


# From this many items an object's list makes the object `_wide`.
WIDE_MIN = 64


def _wide(item: Any) -> bool:
    """Whether `item` is an object with a long list (a change record of many hunks: the 100k-line
    file's has 1,000), which `_member` looks into without encoding it whole first."""
    return type(item) is dict and any(type(v) is list and len(v) >= WIDE_MIN for v in item.values())


def _large(value: Any, blobs: Blobs | _SizeOnly, used: list[str]) -> str:
    """An item of BLOB_MIN characters or more: an object's values one by one (`_member`), any
    other value walked whole (`_externalize`)."""
    if type(value) is dict and all(type(k) is str for k in value):
        members = [f"{_dumps(k)}:{_member(v, blobs, used)}" for k, v in value.items()]
        return "{" + ",".join(members) + "}"
    return _dumps(_externalize(value, blobs, used))


def line_size(record: dict[str, Any]) -> int:
    """About how many bytes `record` takes as a journal line (its large values in blobs): the
    line `_dump` writes, with stand-in blob ids (nothing written). Compaction sizes every record
    it keeps this way; measuring by walking each large record whole (`_externalize`) after
    encoding it once to see whether it was large took ~2 s of every compaction of a 20 MB
    journal of 1,000-file entries (bench/bench_history_seq.py --workload many)."""
    return len(_dump(record, _SizeOnly()))


class _SizeOnly:
    """Blobs that keep nothing: a value's id, as `Blobs.put` would name it (64 hex digits),
    from its hash rather than its sha256 (two values only share an id when they are equal, or
    by a hash collision that at worst makes a size a little smaller)."""

    def put(self, data: bytes) -> str:
        return format(hash(data) & _ID_MASK, "064x")


_ID_MASK = (1 << 256) - 1


def _externalize(value: Any, blobs: Blobs | _SizeOnly, used: list[str]) -> Any:
    if isinstance(value, str):
        if len(value) < BLOB_MIN:
            return value
        sha = blobs.put(value.encode("utf-8", "surrogatepass"))
        used.append(sha)
        return {BLOB_TEXT: sha}
    # Numbers, booleans and None are kept without a call each: the change records and hunks
    # of bench_patch's 1,000-file begin record hold ~23,000 of them (its walk 29 -> 25 ms CPU,
    # the best of 15 in one process).
    if isinstance(value, dict):
        return {
            k: v if type(v) in _KEPT else _externalize(v, blobs, used) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        if all(type(x) is str for x in value):
            # A list of lines (a hunk's, its context): returned as it is unless it or one of
            # its lines is large, without a call per line (a 1,000-file begin record has ~90,000
            # of them; the walk was a third of its encoding time, bench/bench_ab.py).
            total = sum(map(len, value))
            if total < BLOB_MIN:
                return value
            if len(value) > 16:  # a hunk's lines: one blob, not a line each
                sha = blobs.put(_dumps(list(value)).encode("utf-8", "surrogatepass"))
                used.append(sha)
                return {BLOB_JSON: sha}
        return [v if type(v) in _KEPT else _externalize(v, blobs, used) for v in value]
    return value


# The values `_externalize` keeps as they are, by exact type (a subclass takes the call).
_KEPT = frozenset({int, float, bool, type(None)})


def _resolve(value: Any, blobs: Blobs, named: frozenset[str]) -> Any:
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, sha),) = value.items()
            # `sha` is checked to be a string first: a hand-edited `{"$blob": [1]}` is a record
            # to skip (get() refuses a name not in `named`), not an unhashable-type crash.
            if key in (BLOB_TEXT, BLOB_JSON) and isinstance(sha, str) and sha in named:
                data = blobs.get(sha)
                if key == BLOB_TEXT:
                    return data.decode("utf-8", "surrogatepass")
                return _DECODER.decode(data.decode("utf-8", "surrogatepass"))
        return {k: _resolve(v, blobs, named) for k, v in value.items()}
    if isinstance(value, list):
        if _LEAVES.issuperset(map(type, value)):  # a hunk's lines: no call per line
            return value
        return [_resolve(v, blobs, named) for v in value]
    return value


# What JSON decodes to that holds no marker (`_resolve` leaves a list of only these as it is).
_LEAVES = frozenset({str, int, float, bool, type(None)})


def _open_regular(path: Path, flags: int) -> int:
    """Open a journal file of the state folder: never through a symlink (one into the workspace
    would have records appended to, or a compaction written over, a user's file), and only a
    regular file (a FIFO would block the open, and the server with it, for ever)."""
    fd = os.open(path, flags | NOFOLLOW | getattr(os, "O_NONBLOCK", 0), 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a record may hold")


def _finite(text: str) -> float:
    import math  # here: a record holds a float rarely, and a CLI run need not import it

    value = float(text)
    if not math.isfinite(value):  # 1e400: a float that would overflow every later int()
        raise ValueError(f"{text[:20]} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def _parse(
    lines: list[bytes], skipped: list[int] | None = None, blobs: Blobs | None = None
) -> list[dict[str, Any]]:
    """The records among `lines`, their blobs read back in; each line that is not one (torn by
    a crash, hand-edited, NaN, `1e400`, a 5,000-digit integer, nested past the parser's depth,
    invalid UTF-8, a blob missing or altered) is counted in `skipped[0]` and left out: the
    record never happened."""
    out: list[dict[str, Any]] = []
    bad = 0
    for raw in lines:
        if not raw.strip():
            continue
        try:
            rec = _DECODER.decode(raw.decode("utf-8", "surrogatepass"))
            if isinstance(rec, dict) and raw.endswith(b"}") and b'"$' in raw[-_COUNT_TAIL:]:
                rec.pop("$new", None)  # the journal's own counts (`_counted`), not the record's
                rec.pop("$kept", None)
            if isinstance(rec, dict) and "$blobs" in rec:
                named = rec.pop("$blobs")
                if blobs is None or not isinstance(named, list):
                    raise ValueError("a record names blobs it cannot have")
                if _marked(raw):  # else only named (a pack): no walk of a 2 MB record
                    rec = _resolve(rec, blobs, frozenset(x for x in named if isinstance(x, str)))
        except (ValueError, UnicodeDecodeError, RecursionError):
            bad += 1
            continue
        if isinstance(rec, dict) and "t" in rec:
            out.append(rec)
        else:
            bad += 1
    if skipped is not None:
        skipped[0] += bad
    return out


def _apply_journal_blobs(directory: Path) -> set[str]:
    """The blobs the disk writer's apply journals (files.py, beside this one) name for their
    pre-images: an interrupted apply's, which must outlive a compaction until it is rolled
    back, and one its rollback set aside for a human (`journal.json.unreached-*`, whose files
    could not be put back): the pre-images it names are what that human restores from."""
    out: set[str] = set()
    try:
        names = os.listdir(directory)
    except OSError:
        return out
    for name in names:
        if name != APPLY_JOURNAL_NAME and not name.startswith(APPLY_JOURNAL_NAME + "."):
            continue
        try:
            fd = _open_regular(directory / name, os.O_RDONLY)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as f:
            # Its first line, whole: ~300 bytes a file, so past 1 MiB at ~3,500 files (a
            # cap there cut it, the pack went unseen, and a compaction removed it).
            head = f.readline()
        try:
            pack = json.loads(head).get("pack")
        except (ValueError, AttributeError):
            continue
        if isinstance(pack, str):
            out.add(pack)
    return out


def _marked(raw: bytes) -> bool:
    """Whether a line may hold a blob marker (a record naming blobs only through `named`, the
    history's pre-image pack, holds none: its values need no walk)."""
    return b'"' + BLOB_TEXT.encode() + b'"' in raw or b'"' + BLOB_JSON.encode() + b'"' in raw


# How a checkpoint line starts: `_dumps` of replay's `_compacted` checkpoint, "t" its first key.
_CHECKPOINT = b'{"t":"checkpoint"'


def _last_checkpoint(lines: list[bytes]) -> int | None:
    """The index of the last checkpoint line among `lines`; None without one. A compaction
    ends its file with the checkpoint, so where it ends is the size it left, and its `$kept`
    what the compaction's blob files weigh. Only `wants_compaction` reads them: a line that
    merely starts like one (hand-edited) can delay the next compaction, by a quarter of
    `max_bytes` or of the journal's size where that line ends, whichever is more, and no
    further (the appends after it count from there, and a compaction is never later than
    that); the `$kept` it claims can delay only the compaction the blob files' growth would
    bring, by a quarter of that claim (at most 15 digits: `_count`)."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(_CHECKPOINT):
            return i
    return None


# The counts the journal ends a line with (`_counted`): the bytes of blob files the record's
# append wrote, and those a compaction kept (on its checkpoint).
_NEW_COUNT, _KEPT_COUNT = b',"$new":', b',"$kept":'
_COUNT_TAIL = 32  # a line's last bytes, where its count is


def _counted(line: bytes, key: bytes, count: int) -> bytes:
    """`line` (a record, as `_dump` wrote it) with `count` as its last member `key`: added to
    the line rather than to the record, since the count is only known once `_dump` has written
    the record's blobs. A line that is no such object is returned as it is."""
    if not line.endswith(b"}\n") or line.startswith(b"{}"):
        return line
    return b"".join((memoryview(line)[:-2], key, b"%d}\n" % count))


def _count(line: bytes, key: bytes) -> int:
    """The count `key` that ends `line` (no newline), or 0: looked for in its last bytes only,
    no parse (a record's size does not matter). A hand-edited one changes when the next
    compaction runs, no more."""
    tail = line[-_COUNT_TAIL:]
    at = tail.rfind(key)
    if at < 0 or not tail.endswith(b"}"):
        return 0
    digits = tail[at + len(key) : -1]
    return int(digits) if digits.isdigit() and len(digits) <= 15 else 0


def _named_blobs(data: bytes) -> set[str]:
    """Every blob the journal bytes `data` name (each record's `$blobs` list)."""
    out: set[str] = set()
    for m in re.finditer(_NAMED, data):
        out.update(x.strip(b'" ').decode("ascii", "replace") for x in m.group(1).split(b","))
    return out
