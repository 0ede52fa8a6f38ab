"""The only code that writes workspace files: an atomic, journalled apply of a `Plan` on disk.

`apply_plan(root, plan)` carries out a plan so that every file ends up all-old or all-new, even if
the process is killed at any moment:

1. a journal with every touched file's pre-image (and the temp names about to be used) is written
   to the per-workspace state directory, never inside the workspace;
2. each new content goes to a temporary file in the target's own folder (for a large CLI patch
   the files it updates get theirs created ahead, by a child process, while the patch is parsed
   and planned: `reserve`, after a first journal with those files' pre-images and temp names);
3. the journal and every temporary file are made durable: for 16 files or more on Linux one
   `syncfs` per file system involved (one fsync per file cost half a second for 1,000 files),
   else an fsync per file (in a few threads: fsync waits on the disk) and per folder;
4. only then are they renamed over their targets (in a few threads: freeing the replaced files'
   blocks can wait on the disk); deletes and the sources of moves come last; the renames are
   made durable the same way;
5. the journal is removed: that is the commit point.

If the journal is still there on the next run (`recover`, called by the CLI before any command
and by `apply_plan` itself), the apply was interrupted: every file is put back to its pre-image,
temporaries and created folders are removed, and the rollback is reported. A file that was
changed by someone else since the crash (neither its old nor its new content) is left alone and
reported as a conflict. An apply that fails with an OS error rolls back the same way at once.

State directory: `$AGENT_EDIT_STATE_DIR/workspaces/<name>-<hash>/` if that variable is set
(tests use temporary folders), else the same under platformdirs' user state dir for
`agent-edit` (`~/.local/state/agent-edit` on Linux). A lock file there
(`flock`) keeps two applies in one workspace from interleaving, or a recovery from rolling back
an apply that is still running.

Crash testing hook: `AGENT_EDIT_CRASH_AFTER=N` makes the process SIGKILL itself right after its
N-th step (a temporary file written, a rename, or a delete), so tests can interrupt an apply at
every point between the first write and the last rename.

`read_snapshot(root, rel)` is the matching reader: a workspace file's bytes decoded into a
`Snapshot` (BOM kept as a flag; binary, oversized and non-UTF-8 files refused), `absent` when it
does not exist, refused when it is a directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import Plan
from lsp_server.engine.state import ENV_STATE_DIR, state_dir
from lsp_server.engine.state import fsync_dir as _fsync_dir
from lsp_server.engine.state import user_state_base as user_state_base
from lsp_server.engine.text import DEFAULT_MAX_BYTES, Snapshot, absent, decode_file, encode_file

STATE_DIR_ENV = ENV_STATE_DIR  # the state folder is engine/state.py's
CRASH_ENV = "AGENT_EDIT_CRASH_AFTER"
JOURNAL = "journal.json"
_THREADS = 8
_THREADED_FROM = 16  # below this many files the thread pool costs more than it saves
_SYNCFS_FROM = 16  # from this many files one syncfs beats an fsync each (see _Flusher)


def _under(root: str, rel: str) -> str:
    """`os.path.join(root, rel)`, without its generality for the usual case (thousands of
    calls in a large apply)."""
    if rel[:1] == "/" or root[-1:] in ("/", ""):
        return os.path.join(root, rel)
    return f"{root}/{rel}"


# What each file looked like when `read_snapshot` read it (inode, size, mtime), so `apply_plan`
# can refuse, under the workspace lock, a file that changed between planning and writing.
_READ_STATS: dict[str, tuple[int, int, int]] = {}
# The snapshot read last for each full path, with the bytes it was decoded from: the journal's
# pre-images, without encoding every text again.
_READ_BYTES: dict[str, tuple[Snapshot, bytes]] = {}


# O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears, before
# `read_snapshot`'s regular-file check could refuse it (no effect on regular files).
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def read_snapshot(root: str, rel: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Snapshot:
    """The disk snapshot of workspace-relative `rel` (posix separators)."""
    full = _under(root, rel)
    try:
        fd = os.open(full, _READ_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return absent(rel)
    except OSError as exc:
        raise _read_error(rel, exc) from None
    try:
        st = os.fstat(fd)
        size = st.st_size
        _READ_STATS[full] = (st.st_ino, size, st.st_mtime_ns)
        if not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                raise _is_directory(rel)
            # A FIFO or device would block or never end; only regular files are edited.
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"{rel} is not a regular file.",
                "Edit regular files only.",
                {"argument": "path", "path": rel, "reason": "NOT_REGULAR"},
            )
        want = min(size, max_bytes) + 1  # one byte more tells an oversized file
        data = os.read(fd, want)
        # Exactly the size fstat gave, asked for one byte more: the whole file (a read that
        # would find more now could only see bytes appended since, and so would a later one;
        # `apply_plan` refuses a file whose size or mtime moved since this read).
        if len(data) != size:
            parts = [data]
            want -= len(data)
            while want > 0 and data:
                data = os.read(fd, want)
                parts.append(data)
                want -= len(data)
            data = b"".join(parts)
    except OSError as exc:
        raise _read_error(rel, exc) from None
    finally:
        os.close(fd)
    snap = decode_file(rel, data, max_bytes)
    _READ_BYTES[full] = (snap, data)
    return snap


def _read_error(rel: str, exc: OSError) -> EditError:
    return EditError(
        Code.IO_ERROR,
        f"Cannot read {rel}: {exc.strerror or exc}.",
        "Check the file's permissions, then try again.",
        {"path": rel},
    )


def _is_directory(rel: str) -> EditError:
    # NOT_FOUND, as the language server says it: there is no *file* of that name.
    return EditError(
        Code.NOT_FOUND,
        f"{rel} is a directory, not a file; file operations change one file each.",
        "Name a file inside it instead (one '*** Delete File:' per file to remove a folder's "
        "files).",
        {"path": rel, "reason": "IS_DIRECTORY"},
    )


class _Step:
    """One file's part of an apply, as the journal records it."""

    __slots__ = ("path", "op", "pre", "new_sha256", "tmp", "data", "mode")

    def __init__(
        self,
        path: str,
        op: str,
        pre: bytes | None,
        new_sha256: str | None,
        tmp: str | None,
        data: bytes | None = None,
    ) -> None:
        self.path = path  # workspace-relative
        self.op = op  # "write" (content to `path`) or "remove"
        self.pre = pre  # the file's bytes before, when it existed
        self.new_sha256 = new_sha256  # of the bytes written, for "write"
        self.tmp = tmp  # temporary file name in the same folder, for "write"
        self.data = data  # the bytes to write (not journalled)
        self.mode: int | None = None  # the permissions of the file replaced, if known

    @property
    def existed(self) -> bool:
        return self.pre is not None

    def journal(self, offset: int) -> dict[str, Any]:
        return {
            "path": self.path,
            "op": self.op,
            "pre": None if self.pre is None else [offset, len(self.pre)],
            "newSha256": self.new_sha256,
            "tmp": self.tmp,
        }


class _Crasher:
    """The AGENT_EDIT_CRASH_AFTER test hook."""

    def __init__(self) -> None:
        value = os.environ.get(CRASH_ENV, "")
        self.after = int(value) if value.isdigit() else 0
        self.steps = 0

    def step(self) -> None:
        if not self.after:
            return
        self.steps += 1
        if self.steps >= self.after:
            os.kill(os.getpid(), signal.SIGKILL)
            os._exit(137)  # pragma: no cover - platforms without SIGKILL


@contextmanager
def workspace_lock(root: str) -> Iterator[str]:
    """Hold this workspace's apply lock; yields the state directory."""
    sdir = state_dir(root)
    fd = os.open(os.path.join(sdir, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows: no advisory lock
            pass
        yield sdir
    finally:
        os.close(fd)


class Reservation:
    """Temporary files created by a child process while the plan is still being computed.

    Creating a file is kernel work (inode allocation: on ext4 without a journal it skips
    recently freed inodes, up to a third of a millisecond per file here), so for a large patch
    the CLI has the temporary files of the files it updates created on the second core while
    the first one parses and plans (`reserve`). A forked child does it, not a thread: a thread
    would take the GIL between two files, and those hand-overs cost the planning thread about
    as much as the creation saves. The journal with those files' pre-images and temporary
    names is written before the fork, so an interrupted run is rolled back as before; the
    child shares the workspace lock, so no recovery can start while it still creates files,
    even if the parent was killed. `apply_plan` then writes into the reserved files (each
    checked to be the empty regular file the child made) instead of creating them. Used with
    the workspace lock held from `reserve` to the end of `apply_plan`.
    """

    def __init__(self, root: str, sdir: str, token: str, tmps: list[str], budget: int) -> None:
        self.root = root
        self.sdir = sdir
        self.token = token
        self.tmps = tmps  # workspace-relative temporary names, in creation order
        self.budget = budget  # how many may be kept open (the descriptor limit)
        self.fds: dict[str, int] = {}  # temporary name -> open descriptor, once created
        self.handed_over = False  # apply_plan's record in the journal names everything now
        self.pid = 0  # the creating child, until it is waited for
        self.pipe = -1  # where the child says how many files it created
        # Where the journal's blob holds each file's pre-image: path -> (bytes, offset), and the
        # blob's size, so that `apply_plan`'s journal record can point at them (see `_begin`).
        self.pre_images: dict[str, tuple[bytes, int]] = {}
        self.blob_size = 0

    def start(self) -> None:
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            raise
        if pid == 0:  # pragma: no cover - the child (coverage does not follow forks)
            count = 0
            try:
                os.close(read_end)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC
                for tmp in self.tmps[: self.budget]:
                    try:
                        fd = os.open(_under(self.root, tmp), flags, 0o600)
                    except OSError:
                        break  # apply_plan creates the rest itself (and meets the same error)
                    os.close(fd)
                    count += 1
                os.write(write_end, str(count).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        self.pid, self.pipe = pid, read_end

    def _wait(self) -> int:
        """Wait for the child; how many files it created (the first ones of `tmps`)."""
        if not self.pid:
            return 0
        os.waitpid(self.pid, 0)
        self.pid = 0
        try:
            said = os.read(self.pipe, 32)
        finally:
            os.close(self.pipe)
        return int(said) if said.isdigit() else 0

    def finish(self) -> dict[str, int]:
        """Wait for the child; the reserved files it created, opened for writing.

        A file that is not the empty regular file of ours it was (replaced meanwhile) is left
        out: `apply_plan` then fails to create it (it exists) and rolls back.
        """
        uid = os.geteuid()
        flags = os.O_WRONLY | _CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        for tmp in self.tmps[: self._wait()]:
            try:
                fd = os.open(_under(self.root, tmp), flags)
            except OSError:
                continue
            st = os.fstat(fd)
            if (
                stat.S_ISREG(st.st_mode)
                and st.st_nlink == 1
                and not st.st_size
                and st.st_uid == uid
            ):
                self.fds[tmp] = fd
            else:
                os.close(fd)
        return self.fds

    def discard(self) -> None:
        """Remove the reserved files and the reservation's journal (the plan was refused)."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)  # no need to finish creating them
            except OSError:
                pass
            self._wait()
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        if self.handed_over:
            return  # apply_plan's journal and rollback own them now
        for tmp in self.tmps[: self.budget]:
            try:
                os.unlink(_under(self.root, tmp))
            except FileNotFoundError:
                pass
        try:
            os.unlink(os.path.join(self.sdir, JOURNAL))
        except FileNotFoundError:
            pass


_RESERVE_FROM = 16  # below this many files, a child process costs more than it saves


def reserve(root: str, sdir: str, snaps: list[Snapshot]) -> Reservation | None:
    """Start creating the temporary files for updating the existing files `snaps` (see
    `Reservation`); None for a few files. Call with the workspace lock held, after recovery."""
    if len(snaps) < _RESERVE_FROM or not hasattr(os, "fork"):
        return None
    budget = _descriptor_budget(len(snaps))
    if budget < _RESERVE_FROM:
        return None
    token = os.urandom(4).hex()
    entries = []
    blob: list[bytes] = []
    tmps: list[str] = []
    pre_images: dict[str, tuple[bytes, int]] = {}
    offset = 0
    for snap in snaps:
        pre = _pre_image(root, snap)
        assert pre is not None
        tmp = _tmp_name(snap.path, token)
        tmps.append(tmp)
        entries.append(_Step(snap.path, "write", pre, None, tmp).journal(offset))
        blob.append(pre)
        pre_images[snap.path] = (pre, offset)
        offset += len(pre)
    # The journal holds every pre-image and temporary name before the first temporary file
    # exists (the same order as `_run`): a run killed from here on is rolled back by the next.
    header = _journal_header(root, [], entries, offset)
    try:
        os.close(_write_journal(os.path.join(sdir, JOURNAL), header, blob))
    except OSError:
        # No reservation, then: `apply_plan` writes its own journal and reports the failure
        # (IO_ERROR) if the disk still refuses it.
        return None
    reservation = Reservation(root, sdir, token, tmps, budget)
    reservation.pre_images, reservation.blob_size = pre_images, offset
    try:
        reservation.start()
    except OSError:  # no process or pipe to be had: apply_plan creates the files itself
        os.unlink(os.path.join(sdir, JOURNAL))
        return None
    return reservation


def _descriptor_budget(wanted: int) -> int:
    """How many descriptors may stay open at once (raising the soft limit if need be)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    spare = 64  # for everything else the process opens meanwhile
    if soft != resource.RLIM_INFINITY and soft < wanted + spare:
        target = wanted + spare if hard == resource.RLIM_INFINITY else min(hard, wanted + spare)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(0, min(wanted, soft - spare))


def _tmp_name(target: str, token: str) -> str:
    head, name = os.path.split(target)
    return os.path.join(head, f".{name}.agent-edit-{token}.tmp")


def _journal_header(
    root: str, dirs: list[str], entries: list[dict[str, Any]], blob_size: int
) -> dict[str, Any]:
    return {
        "version": 2,
        "root": os.path.realpath(root),
        "pid": os.getpid(),
        "time": time.time(),
        "dirs": dirs,
        "files": entries,
        "blobSize": blob_size,
    }


def apply_plan(
    root: str,
    plan: Plan,
    *,
    locked: str | None = None,
    reservation: Reservation | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """Carry out `plan` on disk under `root`, atomically; returns the recovery report, if any.

    `locked` is the state directory when the caller holds the workspace lock already (and has
    recovered under it); `reservation` the temporary files `reserve` created meanwhile.
    `meanwhile`, if given, is called while the disk flushes the new files (for the caller's
    own work, such as the result's diff, which a `syncfs` of many files would only wait
    for); it must not raise (an exception from it is ignored) and runs whether or not the
    apply then succeeds. Raises `EditError(IO_ERROR)` (after rolling back) when the disk
    refuses a step.
    """
    if locked is not None:
        _apply_locked(root, locked, plan, reservation, meanwhile)
        return []
    with workspace_lock(root) as sdir:
        recovered = recover_locked(root, sdir)
        _apply_locked(root, sdir, plan, None, meanwhile)
    return recovered


def _apply_locked(
    root: str,
    sdir: str,
    plan: Plan,
    reservation: Reservation | None,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    modes = _check_unchanged(root, plan)
    steps = _steps(root, plan, modes, reservation.token if reservation is not None else None)
    if reservation is None:
        if steps:
            _run(root, sdir, steps, meanwhile=meanwhile)
        return
    # Encoding and hashing the new contents, and the journal, overlap the files' creation
    # too: the plan's record can go into the journal before the child is done when it names
    # every reserved file (it always does, unless the plan dropped one); otherwise the files
    # it does not name are removed first, once the child has stopped creating them.
    used = {s.tmp for s in steps}
    begun = None
    if steps and all(t in used for t in reservation.tmps):
        begun = _begin(root, sdir, steps, reservation)
        reservation.handed_over = True
    fds = reservation.finish()
    if begun is None:
        for tmp in [t for t in fds if t not in used]:
            # Reserved for a file the plan does not write after all: no longer needed.
            os.close(fds.pop(tmp))
            os.unlink(os.path.join(root, tmp))
        if not steps:
            reservation.discard()
            return
        begun = _begin(root, sdir, steps, reservation)
        reservation.handed_over = True
    _run(root, sdir, steps, fds, begun, meanwhile)


def _check_unchanged(root: str, plan: Plan) -> dict[str, int]:
    """Refuse (STALE) if a planned file changed on disk since `read_snapshot` read it.

    Returns the permission bits of each existing file by full path (taken now, under the lock),
    for its replacement to keep.
    """
    modes: dict[str, int] = {}
    for change in plan.changes:
        paths: list[tuple[Snapshot | None, str]] = [(change.before, change.path)]
        if change.change == "move" and change.moved_to:
            paths.append((None, change.moved_to))
        for before, rel in paths:
            full = _under(root, rel)
            try:
                st = os.stat(full)
                now: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
                modes[full] = st.st_mode & 0o7777
            except FileNotFoundError:
                now = None
            if before is not None and before.exists:
                seen = _READ_STATS.get(full)
                if seen is None or now == seen:
                    continue  # not read here (a buffer snapshot), or unchanged
            elif now is None:
                continue  # still absent, as planned
            raise EditError(
                Code.STALE,
                f"{rel} changed on disk while the patch was being planned; nothing was written.",
                "Apply the patch again: it will be checked against the file as it is now.",
                {"path": rel, "reason": "CHANGED_ON_DISK"},
            )
    return modes


def recover(root: str) -> list[dict[str, Any]]:
    """Roll back an apply that was interrupted in this workspace; [] when there was none."""
    with workspace_lock(root) as sdir:
        return recover_locked(root, sdir)


def _steps(root: str, plan: Plan, modes: dict[str, int], token: str | None = None) -> list[_Step]:
    token = token or os.urandom(4).hex()
    writes: list[_Step] = []
    removes: list[_Step] = []
    for change in plan.changes:
        before = change.before
        pre = _pre_image(root, before)
        if change.change == "delete":
            removes.append(_Step(change.path, "remove", pre, None, None))
            continue
        data = encode_file(change.new_text, change.bom)
        sha = hashlib.sha256(data).hexdigest()
        if not change.bom and "new_sha256" not in change.__dict__:
            # Without a BOM the bytes are the UTF-8 text: fill the plan's cached hash (what the
            # result reports) instead of encoding and hashing megabytes a second time.
            change.__dict__["new_sha256"] = sha
        target = change.target_path
        tmp = _tmp_name(target, token)
        if change.change == "move":
            writes.append(_Step(target, "write", None, sha, tmp, data))
            removes.append(_Step(change.path, "remove", pre, None, None))
        else:
            step = _Step(target, "write", pre, sha, tmp, data)
            step.mode = modes.get(_under(root, target))
            writes.append(step)
    return writes + removes


def _pre_image(root: str, before: Snapshot) -> bytes | None:
    """The file's bytes as planned against: those `read_snapshot` decoded it from (UTF-8 and
    the BOM flag round-trip exactly), else the snapshot's text encoded."""
    if not before.exists:
        return None
    read = _READ_BYTES.get(_under(root, before.path))
    if read is not None and read[0] is before:
        return read[1]
    return encode_file(before.text, before.bom)


def _missing_dirs(root: str, steps: list[_Step]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for s in steps:
        if s.op != "write":
            continue
        head = os.path.dirname(s.path)
        chain: list[str] = []
        while head and head not in seen:
            seen.add(head)
            if os.path.isdir(os.path.join(root, head)):
                break
            chain.append(head)
            head = os.path.dirname(head)
        out.extend(reversed(chain))
    return out


def _write_journal(path: str, header: dict[str, Any], blob: list[bytes]) -> int:
    """A new journal: one record (see `_read_journal`), whole or absent.

    Raw bytes rather than JSON strings: escaping megabytes of pre-images costs more than the
    rest of a large apply. Written to a temporary name and renamed, so it is whole or absent.
    Returns the open descriptor: the caller fsyncs it once the temporary files are written too
    (one disk flush for all of them), and always before the first target is replaced.
    """
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _CLOEXEC, 0o600)
    try:
        _write_record(fd, header, blob)
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass  # the next recovery removes it
        raise
    return fd


def _append_journal(path: str, header: dict[str, Any], blob: list[bytes]) -> int:
    """Append a record to the journal at `path`; it supersedes the earlier ones once whole.

    A run killed while appending leaves a partial last record, which `_read_journal` ignores:
    the earlier record then still names everything that may exist (nothing the new record
    adds is created before this returns). Returns the open descriptor, as `_write_journal`.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | _CLOEXEC)
    try:
        _write_record(fd, header, blob)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_record(fd: int, header: dict[str, Any], blob: list[bytes]) -> None:
    head = json.dumps(header, ensure_ascii=False).encode("utf-8") + b"\n"
    # One system call per ~1,000 pre-images instead of one each.
    parts = [head, *blob]
    for i in range(0, len(parts), _IOV_MAX):
        group = parts[i : i + _IOV_MAX]
        done = os.writev(fd, group) if hasattr(os, "writev") else 0
        total = sum(map(len, group))
        if done < total:  # a short write (or no writev): finish plainly
            _write_all(fd, b"".join(group)[done:])


_IOV_MAX = 1024  # Linux and macOS; what one writev may take


def _read_journal(path: str) -> tuple[dict[str, Any], bytes]:
    """The journal's last whole record: its header and the pre-image bytes it points into.

    A journal is a sequence of records, each one JSON line (the header, with `blobSize`) and
    then that many bytes of pre-images. A header's `pre` offsets index the blobs of all records
    so far, concatenated: a later record (the full plan, appended by `apply_plan` to the one
    `reserve` wrote) reuses the pre-images already written instead of writing them again. A
    partial last record (a run killed while appending it) is ignored. A version 1 journal is
    one record whose blob is the rest of the file.
    """
    with open(path, "rb") as f:
        data = f.read()
    header: dict[str, Any] | None = None
    blobs: list[bytes] = []
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        try:
            record: dict[str, Any] = json.loads(data[pos:nl])
        except ValueError:
            if header is None:
                raise
            break
        size = record.get("blobSize")
        end = len(data) if size is None else nl + 1 + int(size)
        if end > len(data):
            if header is None:
                raise ValueError("journal truncated")
            break
        header = record
        blobs.append(data[nl + 1 : end])
        pos = end
    if header is None:
        raise ValueError("empty journal")
    return header, blobs[0] if len(blobs) == 1 else b"".join(blobs)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_temp(root: str, step: _Step, sync: bool, umask: int, fd: int | None = None) -> None:
    """Write `step`'s temporary file: created here, or the open `fd` a `Reservation` made."""
    assert step.tmp is not None and step.data is not None
    full = _under(root, step.tmp)
    mode = 0o666
    if step.existed:
        if step.mode is not None:
            mode = step.mode
        else:
            try:
                mode = os.stat(os.path.join(root, step.path)).st_mode & 0o7777
            except OSError:
                pass
    if fd is None:
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, mode)
        narrowed = step.existed and mode & umask
    else:
        narrowed = True  # reserved files are created 0o600 until their mode is known
    try:
        if narrowed:
            os.fchmod(fd, mode)  # the umask must not narrow an existing file's permissions
        _write_all(fd, step.data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _syncfs_function() -> Callable[[int], int] | None:
    """libc's `syncfs(fd)` (Linux), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syncfs
    except (ImportError, OSError, AttributeError):  # pragma: no cover - no libc syncfs
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int

    def syncfs(fd: int) -> int:
        if fn(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return 0

    return syncfs


class _Flusher:
    """Makes what was written so far durable: one `syncfs` per file system on Linux.

    An apply touches a handful of file systems (usually one: the workspace's, which also holds
    the state directory) but may write thousands of files. `syncfs` commits each file system's
    dirty data and metadata in one go, where one `fsync` per file forced one journal commit per
    file (half a second for 1,000 files). But it also waits for everybody else's unwritten data
    on that file system (a build's, a download's), so an apply of a few files, the common case,
    fsyncs its own files instead; so does every apply where `syncfs` does not exist: each
    temporary file as it is written, the journal, and each directory once.
    """

    def __init__(self, dirs: list[str], files: int) -> None:
        self.syncfs = _syncfs_function() if files >= _SYNCFS_FROM else None
        # One open directory per file system (st_dev) among `dirs`, for syncfs; all of them
        # for the per-directory fallback.
        self.dirs = dirs
        self.per_device: dict[int, str] = {}
        if self.syncfs is not None:
            for d in dirs:
                try:
                    self.per_device.setdefault(os.stat(d).st_dev, d)
                except OSError:
                    pass

    @property
    def per_file(self) -> bool:
        """Whether each temporary file must be fsynced itself (no syncfs here)."""
        return self.syncfs is None

    def flush(self) -> None:
        if self.syncfs is None:
            for d in self.dirs:
                _fsync_dir(d)
            return
        for d in self.per_device.values():
            fd = os.open(d, os.O_RDONLY | _CLOEXEC)
            try:
                self.syncfs(fd)
            finally:
                os.close(fd)


def _flush_while(flusher: _Flusher, meanwhile: Callable[[], None] | None) -> None:
    """`flusher.flush()`, with `meanwhile()` run in this thread while a `syncfs` in another
    waits on the disk (the call releases the GIL). Not during the renames: their threads need
    the GIL between two calls, and a busy thread holds it for 5 ms at a time."""
    if meanwhile is None or flusher.per_file:
        flusher.flush()
        if meanwhile is not None:
            _quietly(meanwhile)
        return
    import threading

    failed: list[BaseException] = []

    def flush() -> None:
        try:
            flusher.flush()
        except BaseException as exc:  # handed to the calling thread below
            failed.append(exc)

    thread = threading.Thread(target=flush, daemon=True)
    thread.start()
    try:
        _quietly(meanwhile)
    finally:
        thread.join()
    if failed:
        raise failed[0]


def _quietly(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - a caller's optional work; it does it again if it must
        pass


def _rename_into_place(root: str) -> Callable[[_Step], None]:
    def rename(step: _Step) -> None:
        assert step.tmp is not None
        os.replace(_under(root, step.tmp), _under(root, step.path))

    return rename


def _each(
    fn: Callable[[_Step], None], steps: list[_Step], crash: _Crasher, *, threaded: bool
) -> None:
    """`fn(step)` for every step, in a few threads when asked and worth it; one crash-hook
    step per finished call. After a failure no further call starts, and the first exception
    propagates once every started call is done."""
    if not threaded or len(steps) < _THREADED_FROM:
        for s in steps:
            fn(s)
            crash.step()
        return
    # Plain threads over a shared queue: concurrent.futures (and the logging it imports) would
    # cost a short CLI run more than its convenience is worth.
    import threading

    lock = threading.Lock()
    todo = iter(steps)
    failed: list[BaseException] = []

    def worker() -> None:
        while True:
            with lock:
                step = None if failed else next(todo, None)
            if step is None:
                return
            try:
                fn(step)
            except BaseException as exc:  # handed to the calling thread below
                with lock:
                    failed.append(exc)
                return
            with lock:
                crash.step()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]


def _begin(
    root: str, sdir: str, steps: list[_Step], reservation: Reservation | None = None
) -> tuple[int, list[str]]:
    """Write the journal of `steps` (see `_run`): its open descriptor, and the folders that
    will be created. With a reservation, appended to the reservation's journal as a record
    whose pre-images already written there are not written again."""
    dirs = _missing_dirs(root, steps)
    entries = []
    blob: list[bytes] = []
    reused = reservation.pre_images if reservation is not None else {}
    offset = reservation.blob_size if reservation is not None else 0
    start = offset
    for s in steps:
        pre = s.pre
        known = reused.get(s.path) if pre is not None else None
        if known is not None and known[0] is pre:
            entries.append(s.journal(known[1]))
            continue
        entries.append(s.journal(offset))
        if pre is not None:
            blob.append(pre)
            offset += len(pre)
    header = _journal_header(root, dirs, entries, offset - start)
    path = os.path.join(sdir, JOURNAL)
    try:
        if reservation is not None:
            return _append_journal(path, header, blob), dirs
        return _write_journal(path, header, blob), dirs
    except OSError as exc:
        raise _journal_error(sdir, exc) from None


def _journal_error(sdir: str, exc: OSError) -> EditError:
    # Nothing in the workspace was touched yet: a journal that could not be written is what
    # stops the apply before its first temporary file.
    return EditError(
        Code.IO_ERROR,
        f"Could not write the apply's journal in {sdir} ({exc.strerror or exc}); nothing was "
        "changed.",
        "Free disk space or fix that folder's permissions (or point AGENT_EDIT_STATE_DIR "
        "elsewhere), then apply again.",
        {"path": sdir},
    )


def _run(
    root: str,
    sdir: str,
    steps: list[_Step],
    fds: dict[str, int] | None = None,
    begun: tuple[int, list[str]] | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    # Why this order survives a SIGKILL (or a power loss) at any point:
    # 1. The journal, naming every temporary file and holding every pre-image, is complete on
    #    disk (the page cache survives a killed process) before the first temporary file is
    #    created, so recovery can always remove the temporaries and restore the pre-images.
    # 2. Between the last temporary file and the first rename, the journal, its directory
    #    entry and every temporary file's bytes and name are made durable (`_Flusher`: one
    #    syncfs per file system for many files; else an fsync per file as it is written, then
    #    one per folder). A power loss after any rename therefore finds whole new files and
    #    the journal to roll them back with; one before it finds no target changed. It is the
    #    fsync-per-file guarantee, paid once. (Before Linux 5.8 syncfs did not report write-
    #    back errors: a disk error there goes unnoticed, where an fsync would have raised.)
    # 3. After the renames and deletes, a second flush makes them durable before the journal
    #    is removed (the commit point): a journal can only disappear once every file is new.
    journal_path = os.path.join(sdir, JOURNAL)
    journal_fd, dirs = begun if begun is not None else _begin(root, sdir, steps)
    fds = fds if fds is not None else {}
    crash = _Crasher()
    writes = [s for s in steps if s.op == "write"]
    removes = [s for s in steps if s.op == "remove"]
    folders = list(dict.fromkeys(os.path.dirname(_under(root, s.path)) for s in steps))
    try:
        for d in dirs:
            os.makedirs(os.path.join(root, d), exist_ok=True)
        flusher = _Flusher([sdir, *folders], len(writes))
        per_file = flusher.per_file
        # fsync waits on the disk: with it, a few threads overlap the waits. Without it, creating
        # files is CPU work in the kernel, which threads only make contend.
        umask = os.umask(0o022)
        os.umask(umask)
        _each(
            lambda s: _write_temp(root, s, per_file, umask, fds.pop(s.tmp or "", None)),
            writes,
            crash,
            threaded=per_file,
        )
        # The journal and every temporary file are durable before anything the user can see
        # changes (2. above).
        if per_file:
            os.fsync(journal_fd)
        _flush_while(flusher, meanwhile)
        # Replacing or deleting a file frees the old one's blocks, which on some file systems
        # waits on the disk (ext4 without a journal, mounted with `discard`, discards them
        # synchronously: ~0.3 ms a file here): threads overlap those waits too. The order among
        # the renames does not matter (the journal rolls back any subset); all of them still
        # come before the first delete.
        _each(_rename_into_place(root), writes, crash, threaded=True)
        _each(lambda s: os.unlink(os.path.join(root, s.path)), removes, crash, threaded=True)
        flusher.flush()  # 3. above: the renames are durable before the journal goes
    except OSError as exc:
        try:
            report = _rollback(root, journal_path)
        except OSError as again:
            # The journal stays: the next run retries the rollback before doing anything else.
            raise EditError(
                Code.PARTIAL,
                f"Writing the patch failed ({exc.strerror or exc}) and putting the files back "
                f"failed too ({again.strerror or again}); some files may hold new content.",
                "Fix the cause (permissions, disk space), then run any agent-edit edit command "
                "in this workspace: it finishes the rollback first and reports it.",
                {"files": [s.path for s in steps]},
                committed=[{"path": s.path, "state": "unknown"} for s in steps],
            ) from None
        raise EditError(
            Code.IO_ERROR,
            f"Writing the patch failed ({exc.strerror or exc}"
            f"{': ' + str(exc.filename) if exc.filename else ''}); every file was put back as "
            "it was.",
            "Fix the cause (permissions, disk space) and apply again.",
            {"rolledBack": report},
        ) from None
    finally:
        os.close(journal_fd)
        for fd in fds.values():  # reserved files never written (an error stopped the writes)
            os.close(fd)
        fds.clear()
    os.unlink(journal_path)
    _fsync_dir(sdir)


def recover_locked(root: str, sdir: str) -> list[dict[str, Any]]:
    """`recover` for a caller that holds the workspace lock (`workspace_lock`) already."""
    journal_path = os.path.join(sdir, JOURNAL)
    if not os.path.exists(journal_path):
        # A journal that never finished being written means nothing was touched yet.
        tmp = journal_path + ".tmp"
        if os.path.exists(tmp):
            os.unlink(tmp)
        return []
    try:
        return [_rollback(root, journal_path)]
    except (ValueError, KeyError, TypeError):
        # Unreadable (written by another version?): keep it for a human, do not guess.
        kept = f"{journal_path}.unreadable-{int(time.time())}"
        os.replace(journal_path, kept)
        return [
            {
                "startedAt": None,
                "pid": None,
                "restored": [],
                "removed": [],
                "conflicts": [{"path": kept, "why": "journal unreadable; inspect it by hand"}],
            }
        ]


def _sha(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "<directory>"


def _restore(full: str, pre: bytes) -> None:
    tmp = full + ".agent-edit-restore.tmp"
    try:
        mode = os.stat(full).st_mode & 0o7777
    except OSError:
        mode = 0o666
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        _write_all(fd, pre)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, full)


def _rollback(root: str, journal_path: str) -> dict[str, Any]:
    """Put every file of the journalled apply back to its pre-image; the report of what was done."""
    journal, blob = _read_journal(journal_path)
    restored: list[str] = []
    removed: list[str] = []
    conflicts: list[dict[str, str]] = []
    for entry in journal["files"]:
        path = entry["path"]
        full = os.path.join(root, path)
        if entry.get("tmp"):
            try:
                os.unlink(os.path.join(root, entry["tmp"]))
            except FileNotFoundError:
                pass
        pre = None
        if entry.get("pre") is not None:
            start, length = entry["pre"]
            pre = blob[start : start + length]
        pre_sha = hashlib.sha256(pre).hexdigest() if pre is not None else None
        current = _sha(full)
        if current == pre_sha:
            continue  # untouched (or already back)
        if current is None or (entry["op"] == "write" and current == entry.get("newSha256")):
            if pre is not None:
                os.makedirs(os.path.dirname(full), exist_ok=True)
                _restore(full, pre)
                restored.append(path)
            elif current is not None:
                os.unlink(full)
                removed.append(path)
        else:
            conflicts.append(
                {"path": path, "why": "changed by someone else since the interrupted apply"}
            )
    for d in reversed(journal.get("dirs", [])):
        try:
            os.rmdir(os.path.join(root, d))
        except OSError:
            pass
    for d in {os.path.dirname(os.path.join(root, e["path"])) for e in journal["files"]}:
        _fsync_dir(d)
    os.unlink(journal_path)
    _fsync_dir(os.path.dirname(journal_path))
    return {
        "startedAt": journal.get("time"),
        "pid": journal.get("pid"),
        "restored": restored,
        "removed": removed,
        "conflicts": conflicts,
    }
