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
the new file by its inode and read it again from the start.

The journal knows records only as JSON objects with a `t` (type) field; what they mean is
`history.py`'s business.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_server.engine import state
from lsp_server.engine.state import ENV_STATE_DIR as ENV_STATE_DIR
from lsp_server.engine.state import fsync_dir as _fsync_dir

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writer per workspace is assumed there
    fcntl = None  # type: ignore[assignment]

JOURNAL_NAME = "journal.jsonl"
LOCK_NAME = "journal.lock"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


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
        self.max_bytes = max_bytes
        self._offset = 0
        self._inode: int | None = None
        self._tail = b""  # a partial last line seen by the reader (a torn write, or in progress)

    # -- files -------------------------------------------------------------------------------

    def _ensure_dir(self) -> None:
        if not self.dir.is_dir():
            state.make_dir(self.dir)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self._ensure_dir()
        fd = os.open(self.dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
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

    # -- reading -----------------------------------------------------------------------------

    def _read_new(self) -> Batch:
        """Records appended since the last read (the whole file after a compaction)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            reset = self._inode is not None
            self._offset, self._inode, self._tail = 0, None, b""
            return Batch([], reset)
        reset = False
        if self._inode is not None and (st.st_ino != self._inode or st.st_size < self._offset):
            reset = True
        if reset or self._inode is None:
            self._offset, self._tail = 0, b""
        self._inode = st.st_ino
        if st.st_size == self._offset:
            return Batch([], reset)
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        self._offset += len(data)
        data = self._tail + data
        lines = data.split(b"\n")
        self._tail = lines.pop()
        skipped = [0]
        records = _parse(lines, skipped)
        return Batch(records, reset, skipped[0])

    def read_all(self) -> list[dict[str, Any]]:
        """Every complete record in the file, from the start (resets the reader position)."""
        self._offset, self._inode, self._tail = 0, None, b""
        return self._read_new().records

    def unfinished(self) -> list[dict[str, Any]]:
        """`begin` records with no `finish`: plans that may have been half carried out."""
        begun: dict[int, dict[str, Any]] = {}
        with contextlib.suppress(FileNotFoundError), open(self.path, "rb") as f:
            for rec in _parse(f.read().split(b"\n")):
                t, entry_id = rec.get("t"), rec.get("id")
                if type(entry_id) is not int:
                    continue  # not a record this can use (history.py counts those)
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

    def _append(self, records: list[dict[str, Any]], sync: bool = True) -> None:
        if not records:
            return
        data = b"".join(_dump(r) for r in records)
        if self._tail:
            # A torn line from a crash: end it so the new record starts on a line of its own.
            data = b"\n" + data
            self._tail = b""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            created = self._inode is None
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
        self._inode = st.st_ino
        self._offset = st.st_size

    def _rewrite(self, records: list[dict[str, Any]]) -> None:
        tmp = self.dir / (JOURNAL_NAME + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            data = b"".join(_dump(r) for r in records)
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        _fsync_dir(self.dir)
        st = self.path.stat()
        self._inode, self._offset, self._tail = st.st_ino, st.st_size, b""


class _Writer:
    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    def append(self, *records: dict[str, Any], sync: bool = True) -> None:
        """Append whole records (one write) and, with `sync`, fsync before returning."""
        self._journal._append(list(records), sync)

    def rewrite(self, records: list[dict[str, Any]]) -> None:
        """Replace the whole journal atomically (compaction)."""
        self._journal._rewrite(records)


def _dump(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
        "utf-8", "surrogatepass"
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a record may hold")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: a float that would overflow every later int()
        raise ValueError(f"{text[:20]} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def _parse(lines: list[bytes], skipped: list[int] | None = None) -> list[dict[str, Any]]:
    """The records among `lines`; each line that is not one (torn by a crash, hand-edited, NaN,
    `1e400`, a 5,000-digit integer, nested past the parser's depth, invalid UTF-8) is counted in
    `skipped[0]` and left out: the record never happened."""
    out: list[dict[str, Any]] = []
    bad = 0
    for raw in lines:
        if not raw.strip():
            continue
        try:
            rec = _DECODER.decode(raw.decode("utf-8", "surrogatepass"))
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
