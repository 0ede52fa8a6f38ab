"""The only code that writes workspace files: an atomic, journalled apply of a `Plan` on disk.

`apply_plan(root, plan)` carries out a plan so that every file ends up all-old or all-new, even if
the process is killed at any moment (`prepare_plan` then `PreparedApply.commit()` are its two
halves, for a caller that must do something in between, such as a mixed editor+disk edit):

1. every folder involved is opened once, component by component from the root, never through
   a symlink (`folders.Folders`); each target is checked against what `read_snapshot` saw
   (STALE otherwise) and its owner, group and mode taken;
2. a journal with every touched file's pre-image (and the temp names about to be used, and
   each folder's device and inode) is written to the per-workspace state directory, never
   inside the workspace; when the history stored those very pre-images already (its pack,
   `apply_plan(pack=...)`), the journal names that blob instead of holding a second copy;
3. each new content goes to a temporary file in the target's own folder, with the replaced
   file's mode, owner and group (refused DENIED if they cannot be kept);
4. the journal and every temporary file are made durable: for 16 files or more on Linux one
   `syncfs` per file system involved (one fsync per file cost half a second for 1,000 files),
   else an fsync per file (in a few threads: fsync waits on the disk) and per folder;
5. only then are they renamed over their targets (in a few threads: freeing the replaced files'
   blocks can wait on the disk); deletes and the sources of moves come last; right before each
   rename or delete, the folder is checked to be the one opened and the target to be the file
   planned against (inode, size, mtime, and its bytes when a same-size save could have kept
   those): any change stops the apply, the renames done are rolled back, STALE names the file;
   the renames are made durable the same way;
6. the journal is removed: that is the commit point.

If the journal is still there on the next run (`recover`, called by the CLI before any command
and by `apply_plan` itself), the apply was interrupted: every file is put back to its pre-image,
temporaries and created folders are removed, and the rollback is reported. A file that was
changed by someone else since the crash (neither its old nor its new content) is left alone and
reported as a conflict; one whose folder is no longer the folder the apply used (swapped for a
symlink, say) is not touched and is reported as unreached (the journal is then set aside for a
human). An apply that fails rolls back the same way at once, through the same folder checks,
and its result says only what the rollback did. A symbolic link named by a Delete File (or a
Move's source) is removed as the link (`note_link`), and put back as the link.

State directory: `$AGENT_EDIT_STATE_DIR/workspaces/<name>-<hash>/` if that variable is set
(tests use temporary folders), else the same under platformdirs' user state dir for
`agent-edit` (`~/.local/state/agent-edit` on Linux). A lock file there (`flock`) keeps two
applies in one workspace from interleaving, or a recovery from rolling back an apply that is
still running. Its holder writes its pid there. Nested workspace roots (`w` and `w/sub`) share
files: `workspace_lock` holds the locks of the roots above and below its own that have state
too, and rolls back what an apply interrupted under one of them left. A caller that gives
`workspace_lock` a `wait` waits that long at most, saying once (`notify`) which process it
waits for if that takes over LOCK_QUIET_SECONDS, then is refused (IO_ERROR, reason BUSY): a
process stopped while it held the lock (Ctrl-Z, SIGSTOP) made every later command, `history`
and `read` too, hang without a word.

Crash testing hook: `AGENT_EDIT_CRASH_AFTER=N` makes the process SIGKILL itself right after its
N-th step (a temporary file written, a rename, or a delete), so tests can interrupt an apply at
every point between the first write and the last rename. In-process races: `TEST_HOOK(point,
path)` is called at "resolved" (the apply starts), "checked" (targets checked), "written"
(temporary files durable), "renamed" (after each rename or delete), "rollback" or
"recovery" (before each file is looked at to be put back), and "putting-back" (its pre-image
written, right before the re-check and the rename).

`read_snapshot(root, rel)` is the matching reader: a workspace file's bytes decoded into a
`Snapshot` (BOM kept as a flag; binary, oversized and non-UTF-8 files refused), `absent` when it
does not exist, refused when it is a directory or one of its folders is a file.

Every OS error is an `EditError` (NOT_FOUND, DENIED, IO_ERROR, or PARTIAL when files may hold
new content) saying what happened to each file and what to do, never a traceback.

Why this module is over 500 lines (~1,950): the writer's safety is a sequence (open each folder
once, write and sync temporaries, journal, re-check each target, rename, roll back, recover)
whose steps share the per-apply folder descriptors and the journal format; it was rebuilt in one
piece for the disk-writer issue and not yet split. The split to make next, by step: reading
(`read_snapshot`, `decode_file`), temporaries, the rename/rollback loop, recovery.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

from lsp_server.engine import errors
from lsp_server.engine.blobs import BLOB_DIR, Blobs, Pack
from lsp_server.engine.digests import sha256, sha256_for
from lsp_server.engine.errors import EditError
from lsp_server.engine.folders import FolderChanged, Folders, split
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.state import ENV_STATE_DIR, register_nested, related_roots, state_dir
from lsp_server.engine.state import fsync_dir as _fsync_dir
from lsp_server.engine.state import user_state_base as user_state_base
from lsp_server.engine.text import (
    DEFAULT_MAX_BYTES,
    DiskRead,
    LinkRead,
    Snapshot,
    absent,
    decode_file,
    encode_file,
)

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, NoReturn

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


def note_link(root: str, rel: str) -> LinkRead | None:
    """The symbolic link at workspace-relative `rel` (its folder resolved, the link itself not
    followed), as it is now; None if `rel` is no link. A snapshot carrying it (its `link`) is
    removed as the link by a plan deleting or moving it, never its target, and the plan is
    refused STALE if the link changes meanwhile."""
    full = _under(root, rel)
    try:
        st = os.lstat(full)
        if not stat.S_ISLNK(st.st_mode):
            return None
        target = os.readlink(full)
    except OSError:
        return None
    return LinkRead(st.st_ino, st.st_mtime_ns, target)


# O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears, before
# `read_snapshot`'s regular-file check could refuse it (no effect on regular files).
# O_NOFOLLOW: `rel` is the file's real path, as the path policy resolved it (symbolic links
# followed, the result checked), so a link found there now was put there after the check.
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
)
# What opening with O_NOFOLLOW gives when the last name is a symbolic link (FreeBSD: EMLINK).
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})


def read_snapshot(root: str, rel: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Snapshot:
    """The disk snapshot of workspace-relative `rel` (posix separators): the file at the real
    path the path policy resolved (`root`, a real path, and `rel` below it), never what a
    symbolic link swapped in since then leads to (`_opened_at`)."""
    full = _under(root, rel)
    read_ns = time.time_ns()  # before the read: a save after it is stamped no earlier
    try:
        fd = os.open(full, _READ_FLAGS)
    except FileNotFoundError:
        return absent(rel)
    except NotADirectoryError:
        raise _parent_not_a_folder(root, rel) from None
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:
            raise _swapped_for_link(rel) from None
        raise _read_error(rel, exc) from None
    try:
        _opened_at(fd, root, rel, full)
        st = os.fstat(fd)
        size = st.st_size
        if not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                raise _is_directory(rel)
            # A FIFO or device would block or never end; only regular files are edited.
            raise errors.invalid_argument(
                f"{rel} is not a regular file.",
                "Edit regular files only.",
                argument="path",
                path=rel,
                reason="NOT_REGULAR",
            )
        if st.st_nlink > 1:
            # The path policy refuses a hard link, but one put in the file's place since its
            # check reads whatever file it shares, outside the workspace too: refused alike.
            raise errors.denied(
                f"path {rel!r} is a hard link shared with another name, which an edit would "
                "change too (path policy rule: hard-link).",
                "This file is off limits to agent edits; leave it alone.",
                path=rel,
                rule="hard-link",
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
    # What was seen goes with the snapshot (no table of every file read, which a long-lived
    # process would only grow): the apply re-checks the file against it, under the lock.
    seen = DiskRead(
        st.st_ino, size, st.st_mtime_ns, st.st_ctime_ns, read_ns, data, stat.S_IMODE(st.st_mode)
    )
    return decode_file(rel, data, max_bytes, seen)


def _opened_at(fd: int, root: str, rel: str, full: str) -> None:
    """Refuse unless `fd` is the file at `full` now, reached through no symbolic link.

    The path policy checked the path (every link on it followed, the file it reaches inside the
    workspace), then the file is opened by name: a folder on the path swapped for a link to
    elsewhere in between had `read` show the bytes of a file outside the workspace (O_NOFOLLOW
    covers the last name only). So the descriptor's own path is asked of the kernel, which
    names it by the folders it really lies in (Linux's /proc; one readlink); where that is not
    `full` (a folder swapped, the file moved or replaced since the open, no /proc), the path
    is walked again from the root without following any link (`Folders`), and what it leads to
    must be the file opened (device and inode)."""
    try:
        if os.readlink(f"/proc/self/fd/{fd}") == full:
            return
    except OSError:
        pass  # no /proc here: the walk decides
    folders = None
    try:
        folders = Folders(root)
        head, name = split(rel)
        dfd = folders.open(head)
        there = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FolderChanged:
        raise _swapped_for_link(rel) from None
    except OSError:
        there = None  # moved or removed since the open
    finally:
        if folders is not None:
            folders.close()
    if there is not None and stat.S_ISLNK(there.st_mode):
        raise _swapped_for_link(rel)
    opened = os.fstat(fd)
    if there is None or (there.st_dev, there.st_ino) != (opened.st_dev, opened.st_ino):
        # No link on the path now, but the file opened is not the one there (an editor's
        # save renamed a new file over it meanwhile, say): it may have been reached through a
        # link swapped in and back, so it is not shown.
        raise errors.io_error(
            f"{rel} changed while it was being read (it was replaced, moved or removed), so "
            "what was opened may not be the file the path policy checked; nothing was read.",
            "Read the file again.",
            path=rel,
            reason="CHANGED_WHILE_READ",
        )


def _swapped_for_link(rel: str) -> EditError:
    """The refusal of a path that met a symbolic link where the path policy found none: the
    same code as a link out of the workspace (it may well lead out of it)."""
    return errors.outside_workspace(
        f"path {rel!r} was replaced by a symbolic link (it or one of its folders) after the path "
        "policy checked it, so it may lead outside the workspace folders; nothing was read "
        "(path policy rule: symlink-swapped).",
        "Only files inside the workspace folders can be read or edited.",
        rule="symlink-swapped",
        path=rel,
    )


def _read_error(rel: str, exc: OSError) -> EditError:
    return errors.io_error(
        f"Cannot read {rel}: {exc.strerror or exc}.",
        "Check the file's permissions, then try again.",
        path=rel,
    )


def _parent_not_a_folder(root: str, rel: str) -> EditError:
    """`rel` cannot exist: one of its folders is a file. Refused when planning, so a dry run
    and the apply refuse it alike (an Add File or Move to under a regular file)."""
    # The topmost folder on the path that is not one (nothing below it can exist).
    culprit = ""
    parent = os.path.dirname(rel)
    while parent and parent != "/":  # (an absolute `rel`, the server's with several folders)
        full = _under(root, parent)
        if os.path.lexists(full) and not os.path.isdir(full):
            culprit = parent
        parent = os.path.dirname(parent)
    return errors.not_found(
        f"{rel} cannot be created or read: {culprit or 'a folder on its path'} is a file, "
        "not a folder.",
        "Choose a path whose folders are folders (or remove that file first, in a separate patch).",
        path=rel,
        parent=culprit,
        reason="PARENT_NOT_A_FOLDER",
    )


def _is_directory(rel: str) -> EditError:
    # NOT_FOUND, as the language server says it: there is no *file* of that name.
    return errors.not_found(
        f"{rel} is a directory, not a file; file operations change one file each.",
        "Name a file inside it instead (one '*** Delete File:' per file to remove a folder's "
        "files).",
        path=rel,
        reason="IS_DIRECTORY",
    )


class _Step:
    """One file's part of an apply, as the journal records it."""

    __slots__ = (
        "path",
        "op",
        "pre",
        "new_sha256",
        "tmp",
        "data",
        "st",
        "suspect",
        "link",
        "like",
        "like_path",
        "mode",
        "head",
        "name",
        "tmp_name",
        "created",
    )

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
        self.head, self.name = split(path)  # its folder and its name in it
        self.tmp_name = split(tmp)[1] if tmp else ""
        self.op = op  # "write" (content to `path`) or "remove"
        self.pre = pre  # the file's bytes before, when it existed
        self.new_sha256 = new_sha256  # of the bytes written, for "write"
        self.tmp = tmp  # temporary file name in the same folder, for "write"
        self.data = data  # the bytes to write (not journalled)
        # The file replaced or removed, as `_check_unchanged` saw it under the lock (None: the
        # path must still be absent when it is renamed onto).
        self.st: os.stat_result | None = None
        # Whether a same-size save since the read could have kept its size and mtime (see
        # `_could_hide_a_save`): its content is compared too before it is replaced.
        self.suspect = True
        # A symbolic link removed as a link (`note_link`): `pre` is its target.
        self.link = False
        # For a new file that continues another (a move's destination): the source as it was
        # seen, whose mode (and, as root, owner) the new file keeps, as a rename would.
        self.like: os.stat_result | None = None
        self.like_path = ""  # where `like` is (workspace-relative): its extended attributes
        # For a new file with no such source: the permission bits it gets (an undone delete's
        # file), None for the umask's.
        self.mode: int | None = None
        # Whether this process created its temporary file: a rollback that cannot reach the
        # folder reports only those as left behind, not every name the journal reserved.
        self.created = False

    @property
    def existed(self) -> bool:
        return self.pre is not None

    def journal(self, offset: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "op": self.op,
            "pre": None if self.pre is None else [offset, len(self.pre)],
            "newSha256": self.new_sha256,
            "tmp": self.tmp,
        }
        if self.link:
            out["link"] = True
        st = self.st
        if st is not None and not self.link:  # what a restored pre-image gets back
            out["mode"], out["uid"], out["gid"] = st.st_mode & 0o7777, st.st_uid, st.st_gid
        return out


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
            import signal  # only when the test hook is set

            os.kill(os.getpid(), signal.SIGKILL)
            os._exit(137)  # pragma: no cover - platforms without SIGKILL


# The in-process test hook: `TEST_HOOK(point, path)` is called at each point named in the
# module docstring, so a test can swap a folder or save a file at exactly that moment (no
# sleeps). While it is set, the renames run in one thread, in order.
TEST_HOOK: Callable[[str, str], None] | None = None

# Called in the applying thread right before an apply's commit point (the journal's removal):
# from there on the edit lands (or, if the journal cannot be removed, is rolled back and says
# so), whatever comes next. The CLI stops turning Ctrl-C, SIGTERM, SIGHUP and SIGQUIT into
# KeyboardInterrupt from then on (lsp_server/cli_signals.py): one raised after the commit point
# was taken for an apply it had stopped (UNVERIFIED "may have changed", exit 130/143) while the
# edit had landed.
BEFORE_COMMIT: Callable[[], None] | None = None


def _hook(point: str, path: str = "") -> None:
    hook = TEST_HOOK
    if hook is not None:
        hook(point, path)


@contextmanager
def workspace_lock(
    root: str,
    wait: float | None = None,
    notify: Callable[[str], None] | None = None,
    related: list[dict[str, Any]] | None = None,
) -> Iterator[str]:
    """Hold this workspace's apply lock; yields the state directory.

    A state folder that cannot be created or locked (a full disk, an unwritable base) is an
    `EditError(IO_ERROR)` saying which folder and what to do, before anything is touched.
    With `wait` (seconds), a lock another process holds is waited for that long at most, said
    once to `notify` first, then refused (IO_ERROR, reason BUSY); without, for as long as it
    takes (the holder is running an apply, which ends).

    Nested roots (`w` and `w/sub`) share files, so the locks of the roots above and below this
    one that have state are held too (all of them the shallowest first, state.py), and an apply
    interrupted under one of those is rolled back before anything here reads a file: its
    reports, each with its `root`, are added to `related`. One that cannot be rolled back
    refuses the command (IO_ERROR, RECOVERY_FAILED), as this root's own would.
    """
    fds: list[int] = []
    try:
        yield slept(lock_steps(root, fds, wait, notify, related))
    finally:
        unlock(fds)


def lock_steps(
    root: str,
    fds: list[int],
    wait: float | None = None,
    notify: Callable[[str], None] | None = None,
    related: list[dict[str, Any]] | None = None,
) -> Generator[float, None, str]:
    """`workspace_lock`'s taking of the locks, returning the state directory; each pause of a
    wait for a lock another process holds is yielded (seconds) rather than slept, so an event
    loop awaits it and serves the rest meanwhile (the MCP server: actions/headless.py). Every
    lock's descriptor is added to `fds` as it is opened: `unlock(fds)` lets them go, taken or
    not (a caller that stops waiting just closes them)."""
    try:
        sdir = state_dir(root)
        real = os.path.realpath(root)
        register_nested(real, sdir)
        above, below = related_roots(real, sdir)
        for _, held in [*above, (real, sdir), *below]:
            fds.append(os.open(os.path.join(held, "lock"), os.O_RDWR | os.O_CREAT, 0o600))
    except OSError as exc:
        raise _state_error(exc) from None
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory lock
        pass
    else:
        for fd in fds:
            yield from _take_lock(fcntl, fd, wait, notify)
    for other, osdir in [*above, *below]:
        reports = _recover_related(other, osdir)
        if related is not None:
            related += [{**r, "root": other} for r in reports]
    return sdir


def slept(steps: Generator[float, None, str]) -> str:
    """What `lock_steps` returns, its pauses slept in this thread."""
    try:
        while True:
            time.sleep(next(steps))
    except StopIteration as done:
        value: str = done.value
        return value


def unlock(fds: list[int]) -> None:
    """Close the lock descriptors `lock_steps` opened (which lets the locks go)."""
    for fd in reversed(fds):
        os.close(fd)
    del fds[:]


def _recover_related(root: str, sdir: str) -> list[dict[str, Any]]:
    """`recover_locked` of a root nested in or around the one locked (`workspace_lock`)."""
    if not os.path.exists(os.path.join(sdir, JOURNAL)) and not os.path.exists(
        os.path.join(sdir, JOURNAL + ".tmp")
    ):
        return []
    try:
        return recover_locked(root, sdir)
    except EditError as err:
        raise errors.io_error(
            f"An apply interrupted under the workspace folder {root}, which shares files with "
            f"this one, could not be rolled back ({err.message}); nothing was read or changed.",
            f"Run any agent-edit command with --root {root} to retry that rollback and see "
            "what it says, then try again.",
            path=root,
            reason="RECOVERY_FAILED",
        ) from None
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError):
        raise errors.io_error(
            f"An interrupted apply's journal under the workspace folder {root}, which shares "
            "files with this one, cannot be read; nothing was read or changed.",
            f"Run any agent-edit command with --root {root} to see what it says.",
            path=root,
            reason="RECOVERY_FAILED",
        ) from None


def _take_lock(
    fcntl: Any, fd: int, wait: float | None, notify: Callable[[str], None] | None
) -> Generator[float, None, None]:
    """`flock` the workspace lock `fd` (see `workspace_lock`), then write this pid in it."""
    if wait is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield from _wait_for_lock(fcntl, fd, wait, notify)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    except OSError:
        pass  # (only a waiting process's message names the holder by it)


# A wait for the lock this short is not said: two commands that overlap (an agent's parallel
# calls) wait for each other for milliseconds, and a line on stderr each time is noise.
LOCK_QUIET_SECONDS = 1.0


def _wait_for_lock(
    fcntl: Any, fd: int, wait: float, notify: Callable[[str], None] | None
) -> Generator[float, None, None]:
    start = time.monotonic()
    said = notify is None
    pause = 0.002
    while True:
        yield pause
        pause = min(pause * 2, 0.05)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited = time.monotonic() - start
        if not said and waited >= LOCK_QUIET_SECONDS:
            said = True
            assert notify is not None
            notify(
                f"agent-edit: waiting (up to {wait:g} s) for another agent-edit process"
                f"{_lock_holder(fd)} that is editing this workspace"
            )
        if waited >= wait:
            raise errors.io_error(
                f"Another agent-edit process{_lock_holder(fd)} has held this workspace's lock "
                f"for over {wait:g} s (an edit under way, or a process stopped while it "
                "edited: Ctrl-Z, SIGSTOP); nothing was read or changed.",
                "Wait for it to end and retry; if it was stopped, resume it (`fg`, "
                "`kill -CONT <pid>`) or end it: the next command rolls back what it left.",
                reason="BUSY",
                pid=_lock_pid(fd),
            )


def _lock_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and len(text) < 20 else None


def _lock_holder(fd: int) -> str:
    pid = _lock_pid(fd)
    return f" (pid {pid})" if pid is not None else ""


def _state_error(exc: OSError) -> EditError:
    where = exc.filename or os.environ.get(STATE_DIR_ENV) or "the state folder"
    return errors.io_error(
        f"Cannot use agent-edit's state folder {where} ({exc.strerror or exc}); nothing was "
        "changed.",
        "Free disk space or fix that folder's permissions, or set AGENT_EDIT_STATE_DIR to a "
        "writable folder outside the workspace, then try again.",
        path=str(where),
        reason="STATE_DIR",
    )


def _tmp_name(target: str, token: str) -> str:
    head, name = os.path.split(target)
    return os.path.join(head, _aside(name, f"agent-edit-{token}"))


_NAME_MAX = 255  # bytes: the longest file name Linux and macOS allow


def _aside(name: str, tag: str) -> str:
    """The name of a temporary file next to `name`: `.<name>.<tag>.tmp`, or, where that would
    be over `_NAME_MAX` bytes (a name the path policy allows, up to 255 bytes), the start of
    `name` and a hash of it. A target with a long name could otherwise never be written nor
    put back (ENAMETOOLONG on its temporary file)."""
    out = f".{name}.{tag}.tmp"
    if len(os.fsencode(out)) <= _NAME_MAX:
        return out
    digest = sha256(os.fsencode(name)).hexdigest()[:16]
    keep = name
    while len(os.fsencode(f".{keep}~{digest}.{tag}.tmp")) > _NAME_MAX:
        keep = keep[:-1]
    return f".{keep}~{digest}.{tag}.tmp"


# Where a rollback writes a pre-image before renaming it over its file: one fixed name per file,
# so that a rollback killed before that rename leaves nothing the next one cannot find (a random
# name was left in the workspace for good, with the old content).
_RESTORE_TAG = "agent-edit-restore"


def _journal_header(
    root: str,
    dirs: list[str],
    entries: list[dict[str, Any]],
    blob_size: int,
    folders: Folders | None = None,
) -> dict[str, Any]:
    return {
        "version": 2,
        "root": os.path.realpath(root),
        "pid": os.getpid(),
        "time": time.time(),
        "dirs": dirs,
        "files": entries,
        "blobSize": blob_size,
        # Each folder's (st_dev, st_ino) as the apply opened it: recovery touches a folder
        # only if it is still that one (a folder swapped for a symlink meanwhile is not).
        "folders": {} if folders is None else {k: list(v) for k, v in folders.ids.items()},
    }


def apply_plan(
    root: str,
    plan: Plan,
    *,
    locked: str | None = None,
    meanwhile: Callable[[], None] | None = None,
    pack: Pack | None = None,
) -> list[dict[str, Any]]:
    """Carry out `plan` on disk under `root`, atomically; returns the recovery report, if any.

    `pack`: the blob of the state folder that holds these very pre-images already (the
    history's baselines, `History.pack_of`): the apply journal then names it rather than
    holding a second copy (see `_begin`).

    `locked` is the state directory when the caller holds the workspace lock already (and has
    recovered under it).
    `meanwhile`, if given, is called while the disk flushes the new files (for the caller's
    own work, such as the result's diff, which a `syncfs` of many files would only wait
    for); it must not raise (an exception from it is ignored) and runs whether or not the
    apply then succeeds. Raises `EditError` (STALE, DENIED, NOT_FOUND, IO_ERROR or PARTIAL,
    after rolling back, saying what the rollback did) when a file changed or the disk
    refuses a step.
    """
    if locked is not None:
        _apply_locked(root, locked, plan, meanwhile, pack)
        return []
    recovered: list[dict[str, Any]] = []
    with workspace_lock(root, related=recovered) as sdir:
        recovered += recover_locked(root, sdir)
        _apply_locked(root, sdir, plan, meanwhile, pack)
    return recovered


def flushes_state(plan: Plan) -> bool:
    """Whether applying `plan` makes the state folder's whole file system durable (one
    `syncfs`, `_Flusher`) before it changes any file: a record the caller wrote there just
    before (the history's `begin`) then needs no fsync of its own."""
    writes = sum(1 for c in plan.changes if c.change != "delete")
    return writes >= _SYNCFS_FROM and _syncfs_function() is not None


def prepare_plan(
    root: str, sdir: str, plan: Plan, *, meanwhile: Callable[[], None] | None = None
) -> PreparedApply:
    """The first half of `apply_plan`: every file checked, every new content written to its
    temporary file and made durable with the journal; nothing the user sees has changed yet.

    Call with `workspace_lock(root)` held (it yields `sdir`) until the result's `commit()`
    (the identity re-checks and the renames) or `abort()` (removes the temporary files and
    the journal). A mixed edit prepares the disk side, applies the editor's buffers, then
    commits, or aborts if the buffers failed. Raises `EditError` as `apply_plan` does.
    """
    folders = _open_root(root)
    try:
        return _prepare_locked(root, sdir, plan, folders, meanwhile)
    except BaseException:
        folders.close()
        raise


def _open_root(root: str) -> Folders:
    try:
        return Folders(root)
    except OSError as exc:
        raise errors.from_os_error(
            exc,
            f"Cannot open the workspace folder {root} ({exc.strerror or exc}); nothing was "
            "changed.",
            "Check that the folder exists and is readable, then try again.",
            path=root,
        ) from None


def _apply_locked(
    root: str,
    sdir: str,
    plan: Plan,
    meanwhile: Callable[[], None] | None = None,
    pack: Pack | None = None,
) -> None:
    folders = _open_root(root)
    try:
        _prepare_locked(root, sdir, plan, folders, meanwhile, pack).commit()
    finally:
        folders.close()


def _prepare_locked(
    root: str,
    sdir: str,
    plan: Plan,
    folders: Folders,
    meanwhile: Callable[[], None] | None,
    pack: Pack | None = None,
) -> PreparedApply:
    _hook("resolved")
    stats = _check_unchanged(root, folders, plan)
    steps = _steps(root, plan, stats)
    dirs = _missing_dirs(folders, steps)
    _check_writable(root, folders, steps, dirs)
    _hook("checked")
    return _prepare(root, sdir, steps, folders, dirs, meanwhile, pack)


def _check_unchanged(root: str, folders: Folders, plan: Plan) -> dict[str, os.stat_result]:
    """Refuse (STALE) if a planned file changed on disk since `read_snapshot` read it.

    Opens every folder involved (`Folders`: no symlink followed) and returns each existing
    target's stat by workspace-relative path (taken now, under the lock), for its replacement
    to keep its owner and mode and for the re-check right before its rename.
    """
    out: dict[str, os.stat_result] = {}
    try:
        folders.check_all()  # those opened already are still the same
    except FolderChanged as exc:
        raise _folder_stale(exc, exc.folder or ".", "nothing was written") from None
    for change in plan.changes:
        paths: list[tuple[Snapshot | None, str]] = [(change.before, change.path)]
        if change.change == "move" and change.moved_to:
            paths.append((None, change.moved_to))
        for before, rel in paths:
            head, name = split(rel)
            try:
                st: os.stat_result | None = os.stat(
                    name, dir_fd=folders.open(head), follow_symlinks=False
                )
            except FileNotFoundError:
                st = None
            except FolderChanged as exc:
                raise _folder_stale(exc, rel, "nothing was written") from None
            except OSError as exc:
                raise _refusal(exc, rel, "nothing was written") from None
            if st is not None:
                out[rel] = st
                now: tuple[int, ...] | None = (
                    st.st_ino,
                    st.st_size,
                    st.st_mtime_ns,
                    st.st_ctime_ns,
                )
            else:
                now = None
            if before is not None and before.exists:
                link = before.link
                if link is not None:
                    if st is not None and stat.S_ISLNK(st.st_mode):
                        # Its target too: a link put in its place can reuse the inode number,
                        # and `touch -h` sets a link's mtime back.
                        if (st.st_ino, st.st_mtime_ns) == (link.ino, link.mtime_ns) and (
                            _link_target(folders.open(head), name) == link.target
                        ):
                            continue  # the link removed as a link, unchanged
                else:
                    seen = before.disk
                    if seen is None or now == (seen.ino, seen.size, seen.mtime_ns, seen.ctime_ns):
                        continue  # not read from disk (a buffer snapshot), or unchanged
            elif now is None:
                continue  # still absent, as planned
            raise errors.stale(
                f"{rel} changed on disk while the patch was being planned; nothing was written.",
                "Apply the patch again: it will be checked against the file as it is now.",
                path=rel,
                reason="CHANGED_ON_DISK",
            )
    return out


def _link_target(fd: int, name: str) -> str | None:
    """Where the symbolic link `name` in folder `fd` points now, or None if it cannot be read."""
    try:
        return os.readlink(name, dir_fd=fd)
    except OSError:
        return None


def check_writable(root: str, plan: Plan) -> None:
    """Refuse (DENIED) a plan whose files sit in a folder this process may not write (a
    read-only mount, an immutable folder, permissions), as the apply would: what a dry run
    calls, so that it and the apply agree. Nothing is written."""
    folders = _open_root(root)
    try:
        stats = _check_unchanged(root, folders, plan)
        steps = _steps(root, plan, stats, "0")
        _check_writable(root, folders, steps, _missing_dirs(folders, steps))
    finally:
        folders.close()


def _check_writable(root: str, folders: Folders, steps: list[_Step], dirs: list[str]) -> None:
    """The dry run's and the apply's one check of the folders the plan writes in (see
    `check_writable`): the nearest existing folder of each, asked once."""
    made = set(dirs)
    asked: set[str] = set()
    for s in steps:
        head = s.head
        while head in made:
            head = split(head)[0]
        if head in asked:
            continue
        asked.add(head)
        full = _under(root, head) if head else root
        if not os.access(full, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
            raise errors.denied(
                f"Cannot write in folder {head or '.'} (for {s.path}): it is read-only for "
                "agent-edit (a read-only mount, an immutable folder, or its permissions); "
                "nothing was changed.",
                "Make the folder writable for this user (or edit elsewhere), then apply again.",
                path=s.path,
                folder=head or ".",
                reason="READ_ONLY",
            )
    for s in steps:
        st = s.st
        if st is not None and not s.link and s.op == "write":
            if not _owner_kept(st, folders.stats[s.head]):
                raise _owner_refusal(s.path, st, "; nothing was changed.")


def recover(root: str) -> list[dict[str, Any]]:
    """Roll back an apply that was interrupted in this workspace; [] when there was none."""
    related: list[dict[str, Any]] = []
    with workspace_lock(root, related=related) as sdir:
        return related + recover_locked(root, sdir)


def _steps(
    root: str, plan: Plan, stats: dict[str, os.stat_result], token: str | None = None
) -> list[_Step]:
    token = token or os.urandom(4).hex()
    writes: list[_Step] = []
    removes: list[_Step] = []
    for change in plan.changes:
        before = change.before
        pre = _pre_image(before)
        if change.change == "delete":
            removes.append(_removal(before, pre, stats))
            continue
        data = _new_bytes(change)
        sha = sha256(data).hexdigest()
        if not change.bom and change.digest.sha256 is None:
            # Without a BOM the bytes are the UTF-8 text: fill the change's digest (what the
            # result reports) instead of encoding and hashing megabytes a second time.
            change.digest.sha256 = sha
        target = change.target_path
        tmp = _tmp_name(target, token)
        if change.change == "move":
            moved = _Step(target, "write", None, sha, tmp, data)
            if before.link is None:
                # A private file stays private where it moves to (not 0644 by the umask).
                moved.like, moved.like_path = stats.get(change.path), change.path
            writes.append(moved)
            removes.append(_removal(before, pre, stats))
        else:
            step = _Step(target, "write", pre, sha, tmp, data)
            _seen(step, stats, before.disk)
            if change.mode_of is not None and step.st is None:
                # A move's text landing as a new file (Move A to B, then Add A): as private
                # as the file it came from, as a plain move's destination is.
                step.like, step.like_path = stats.get(change.mode_of), change.mode_of
            elif change.new_mode is not None and step.st is None:
                # A file put back by an undo: as private as it was (the set-id bits aside).
                step.mode = change.new_mode & 0o777
            writes.append(step)
    return writes + removes


def _new_bytes(change: FileChange) -> bytes:
    """The bytes `change` writes: its new text encoded, or, for an update of an ASCII file
    read from disk whose edits know their offsets (nearly every patch), the bytes read with
    the edits' new lines spliced in: no new text built as a string (nothing else on the
    CLI's path reads it) and one copy of the file, not three (old text sliced, joined,
    encoded), nor the fresh memory each copy faults in. ASCII: a character offset in the
    text is then a byte offset in what was read (after a BOM), and `decode_file` keeps only
    bytes whose text encodes back to them exactly. A/B against encoding the new text
    (bench/bench_ab.py --instructions --rounds 1): 1,000 files 3141.2 -> 3124.5 M
    instructions, one 100k-line file 1088.9 -> 1088.2 M; the page faults of the whole run
    (/usr/bin/time, the same for every run): 25,714 -> 23,750 and 13,037 -> 10,625."""
    before = change.before
    seen = before.disk
    edits = change.edits
    if (
        change.change != "update"
        or change.new_text_override is not None
        or seen is None
        or change.bom != before.bom
        or "new_text" in change.__dict__  # built already (`cached_property`): encode that
        or not edits
        or not before.text.isascii()  # (a flag of the string: no scan)
    ):
        return encode_file(change.new_text, change.bom)
    view = memoryview(seen.data)
    skip = 3 if before.bom else 0
    pieces: list[bytes | memoryview] = [view[:skip]]
    pos = skip
    for e in edits:
        span = e.offsets
        if span is None:
            return encode_file(change.new_text, change.bom)
        pieces.append(view[pos : span[0] + skip])
        pieces.append("".join(e.new_lines).encode("utf-8"))
        pos = span[1] + skip
    pieces.append(view[pos:])
    return b"".join(pieces)


def _removal(before: Snapshot, pre: bytes | None, stats: dict[str, os.stat_result]) -> _Step:
    rel, link = before.path, before.link
    if link is not None:
        # The link itself goes (unlink never follows it); what rollback puts back is the link.
        step = _Step(rel, "remove", os.fsencode(link.target), None, None)
        step.link, step.st, step.suspect = True, stats.get(rel), False
        return step
    step = _Step(rel, "remove", pre, None, None)
    _seen(step, stats, before.disk)
    return step


def _seen(step: _Step, stats: dict[str, os.stat_result], seen: DiskRead | None) -> None:
    """Fill `step.st` and `step.suspect` for a file that exists (`seen`: what its reader saw,
    None for a buffer's snapshot)."""
    st = step.st = stats.get(step.path) if step.pre is not None else None
    if st is None:
        return
    # A save that puts the mtime back moves the ctime (compared before the rename), unless it
    # falls within the tick of the last ctime change: then only the bytes tell. (A window of
    # one tick, not the mtime's: a tree copied with its mtimes a moment ago is not all read
    # again.)
    step.suspect = (
        seen is None
        or _could_hide_a_save(seen.mtime_ns, seen.read_ns)
        or _could_hide_a_save(seen.ctime_ns, seen.read_ns, _CTIME_WINDOW_NS)
    )


# How long after a file's last change a save by another program can leave its mtime as it
# was: the kernel stamps files from a coarse clock (one tick: 1-10 ms on Linux); a file system
# that keeps whole seconds (or two: FAT) is recognised by an mtime without milliseconds.
_FINE_WINDOW_NS = 50_000_000
_COARSE_WINDOW_NS = 2_000_000_000


_CTIME_WINDOW_NS = 10_000_000  # the coarse clock's longest tick on Linux


def _could_hide_a_save(mtime_ns: int, read_ns: int, fine: int | None = None) -> bool:
    """Whether a same-size save after the read could have kept the size and mtime that were
    read: only if the file had changed within one timestamp tick before the read. Then its
    content is compared before the rename (most files were last changed long before)."""
    fine = _FINE_WINDOW_NS if fine is None else fine
    window = _COARSE_WINDOW_NS if mtime_ns % 1_000_000 == 0 else fine
    return read_ns - mtime_ns < window


def _pre_image(before: Snapshot) -> bytes | None:
    """The file's bytes as planned against: those `read_snapshot` decoded it from (UTF-8 and
    the BOM flag round-trip exactly), else the snapshot's text encoded."""
    if not before.exists:
        return None
    if before.disk is not None:
        return before.disk.data
    return encode_file(before.text, before.bom)


def _missing_dirs(folders: Folders, steps: list[_Step]) -> list[str]:
    """The folders the writes need that do not exist yet, parents first."""
    out: list[str] = []
    seen: set[str] = set()
    for s in steps:
        if s.op != "write":
            continue
        head = s.head
        chain: list[str] = []
        while head and head not in seen:
            seen.add(head)
            try:
                folders.open(head)
                break
            except FileNotFoundError:
                pass
            except FolderChanged as exc:
                raise _folder_stale(exc, s.path, "nothing was written") from None
            except OSError as exc:
                raise _refusal(exc, s.path, "nothing was written") from None
            chain.append(head)
            head = split(head)[0]
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
    so far, concatenated (earlier versions appended the full plan's record to a first one
    written while a child process created the temporary files; a journal they left behind is
    still read). A partial last record (a run killed while appending it) is ignored. A
    version 1 journal is one record whose blob is the rest of the file.
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
        size = record.get("blobSize") if isinstance(record, dict) else None
        if size is not None and (type(size) is not int or size < 0):
            # A negative size would move `pos` back onto this record: read forever.
            if header is None:
                raise ValueError("bad blobSize")
            break
        end = len(data) if size is None else nl + 1 + size
        if end > len(data):
            if header is None:
                raise ValueError("journal truncated")
            break
        header = record
        blobs.append(data[nl + 1 : end])
        pos = end
    if header is None:
        raise ValueError("empty journal")
    pack = header.get("pack")
    if pack is not None:
        # Version 3: the pre-images are the state folder's blob `pack` (`_begin`); one missing
        # or altered makes the journal unreadable (set aside, never acted on half-way).
        if not isinstance(pack, str):
            raise ValueError("bad pack")
        return header, Blobs(Path(os.path.dirname(path)) / BLOB_DIR).get(pack)
    return header, blobs[0] if len(blobs) == 1 else b"".join(blobs)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_fd(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the files themselves were synced


class _Refused(Exception):
    """A step that must not be done as asked (an owner that cannot be kept): its result."""

    def __init__(self, error: EditError) -> None:
        super().__init__(error.message)
        self.error = error


class _Changed(Exception):
    """A target changed (saved, replaced, created, removed) by someone else during the apply."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path} {why}")
        self.path = path
        self.why = why


def _write_temp(
    folders: Folders, step: _Step, sync: bool, umask: int, ids: tuple[int, int]
) -> None:
    """Create and write `step`'s temporary file, with the replaced file's mode, owner and
    group."""
    assert step.tmp is not None and step.data is not None
    head = step.head
    st = step.st
    like = step.like if st is None else None
    mode = st.st_mode & 0o7777 if st is not None else 0o666
    if like is not None:
        mode = like.st_mode & 0o7777
    elif st is None and step.mode is not None:
        mode = step.mode
    fd = os.open(
        step.tmp_name,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC,
        mode,
        dir_fd=folders.fds[head],
    )
    step.created = True
    narrowed = (st is not None or like is not None or step.mode is not None) and mode & umask
    try:
        if st is not None and _keep_owner(fd, step, st, folders.stats[head], ids):
            narrowed = True  # chown clears setuid/setgid bits: set the mode after it
        elif like is not None and ids[0] == 0:
            # As root the moved file keeps its owner (root may always give it); another user
            # gets the file as its own, as `cp` and an editor's save-as do.
            if _keep_owner(fd, step, like, folders.stats[head], ids):
                narrowed = True
        if st is not None and _XATTRS:
            # After the chown (which clears security.capability), before the chmod (an ACL
            # sets the group bits to its mask: the chmod then puts the exact mode back).
            narrowed = _keep_xattrs(fd, folders.fds[head], step.name, step.path) or narrowed
            narrowed = _drop_inherited_acl(fd, folders.fds[head], step.name) or narrowed
        elif like is not None and _XATTRS:
            # A moved file keeps its ACL too, as a rename would: without it, the group bits
            # (its mask) become the group's own permissions. Where one cannot be given (not
            # root), the file moves as before, without it, rather than not at all.
            like_head, like_name = split(step.like_path)
            try:
                got = _keep_xattrs(fd, folders.fds[like_head], like_name, step.path)
            except _Refused:
                got = True  # some were set before the refusal: the mode again
            narrowed = got or narrowed
            narrowed = _drop_inherited_acl(fd, folders.fds[like_head], like_name) or narrowed
        if narrowed:
            os.fchmod(fd, mode)  # the umask must not narrow an existing file's permissions
        _write_all(fd, step.data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


_XATTRS = hasattr(os, "listxattr")
_PROC_FD = os.path.isdir("/proc/self/fd")


def _keep_xattrs(fd: int, dir_fd: int, name: str, path: str) -> bool:
    """Give the temporary file `fd` the extended attributes (POSIX ACLs, user.* and security.*
    attributes) of file `name` in folder `dir_fd` (workspace-relative `path`, for the message):
    the file it replaces, which a rename would otherwise drop; whether it set any. Refused
    (DENIED) when one differs and cannot be set: replacing the file would change who may read
    or write it."""
    if _PROC_FD:
        # One system call for the usual file without any (no open and close), through the
        # folder's descriptor (a magic link to it: no path looked up again), the name itself
        # not followed.
        try:
            if not os.listxattr(f"/proc/self/fd/{dir_fd}/{name}", follow_symlinks=False):
                return False
        except OSError:
            return False
    try:
        src = os.open(name, _READ_ANY, dir_fd=dir_fd)
    except OSError:
        return False  # gone or not a regular file: the re-check before the rename refuses it
    try:
        try:
            names = os.listxattr(src)
        except OSError:
            return False  # no extended attributes on this file system
        changed = False
        for key in names:
            try:
                value = os.getxattr(src, key)
            except OSError:
                continue
            try:
                if os.getxattr(fd, key) == value:
                    continue  # the new file has it already (a default ACL, a label)
            except OSError:
                pass
            try:
                os.setxattr(fd, key, value)
            except OSError as exc:
                raise _Refused(
                    errors.denied(
                        f"{path} has the extended attribute {key}, which its replacement "
                        f"cannot be given ({exc.strerror or exc}); replacing it would drop it",
                        "Apply as a user who may set it (or as root), or remove the attribute, "
                        "then apply again.",
                        path=path,
                        reason="XATTR",
                        attribute=key,
                    )
                ) from None
            changed = True
        return changed
    finally:
        os.close(src)


_ACL = "system.posix_acl_access"


def _drop_inherited_acl(fd: int, dir_fd: int, name: str) -> bool:
    """Remove the ACL the temporary file `fd` inherited from its folder's default ACL when
    file `name` in folder `dir_fd`, which it replaces (or was moved from), has none; whether
    it did. The inherited ACL's named users and groups could read (or write) a file they
    could not read before: a 0640 file gained `user:nobody:rw-` (mask r--) from an edit."""
    try:
        if _ACL not in os.listxattr(fd):
            return False
    except OSError:
        return False  # no extended attributes on this file system
    try:
        src = os.open(name, _READ_ANY, dir_fd=dir_fd)
    except OSError:
        return False  # gone or not a regular file: the re-check before the rename refuses it
    try:
        if _ACL in os.listxattr(src):
            return False  # its own, given by `_keep_xattrs`
    finally:
        os.close(src)
    os.removexattr(fd, _ACL)
    return True  # the mode was narrowed by the ACL's mask: set again


def _keep_owner(
    fd: int, step: _Step, st: os.stat_result, folder: os.stat_result, ids: tuple[int, int]
) -> bool:
    """Give the temporary file `fd` the owner and group of the file it replaces, when a new
    file would not get them anyway; whether it changed them. Refused (DENIED) when this
    process may not (not root, or a group it is not in): replacing the file would change
    who owns it."""
    new_gid = _new_file_gid(folder, ids[1])
    if st.st_uid == ids[0] and st.st_gid == new_gid:
        return False
    try:
        uid = -1 if st.st_uid == ids[0] else st.st_uid
        os.fchown(fd, uid, -1 if st.st_gid == new_gid else st.st_gid)
    except PermissionError:
        raise _Refused(_owner_refusal(step.path, st, "")) from None
    return True


def _new_file_gid(folder: os.stat_result, egid: int) -> int:
    # A new file gets this process's group, or the folder's when the folder has the setgid bit.
    return folder.st_gid if folder.st_mode & stat.S_ISGID else egid


def _owner_refusal(path: str, st: os.stat_result, changed: str) -> EditError:
    return errors.denied(
        f"{path} is owned by user {st.st_uid}, group {st.st_gid}; replacing it would give it "
        f"another owner or group, which this process may not keep{changed}",
        "Apply as the file's owner (or as root), or change the file's owner, then apply again.",
        path=path,
        reason="OWNER",
        uid=st.st_uid,
        gid=st.st_gid,
    )


def _owner_kept(st: os.stat_result, folder: os.stat_result) -> bool:
    """Whether this process may give a replacement of `st` its owner and group (as fchown
    would allow: root may; anyone else only keeps their own files, in a group they are in)."""
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return True
    egid = os.getegid()
    if st.st_uid != os.geteuid():
        return False
    return st.st_gid == _new_file_gid(folder, egid) or st.st_gid in (egid, *os.getgroups())


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_READ_ANY = os.O_RDONLY | _CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


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

    def __init__(self, sdir: str, dir_fds: list[int], files: int) -> None:
        self.syncfs = _syncfs_function() if files >= _SYNCFS_FROM else None
        self.sdir = sdir
        self.dir_fds = dir_fds  # the workspace folders written in (open `Folders`)
        # One folder per file system (st_dev) among them, for syncfs.
        self.per_device: dict[int, int] = {}
        if self.syncfs is not None:
            for fd in dir_fds:
                self.per_device.setdefault(os.fstat(fd).st_dev, fd)

    @property
    def per_file(self) -> bool:
        """Whether each temporary file must be fsynced itself (no syncfs here)."""
        return self.syncfs is None

    def flush(self, state: bool = True) -> None:
        """`state=False`: only the workspace folders, for the renames' flush. The state folder
        has not changed since the first flush (the journal in it is only removed after this
        one), so flushing it again was a disk wait for nothing: one fsync of the state folder
        less for every apply of fewer than 16 files (its own syncfs when the state folder is
        on another file system). strace -c -f of bench_patch's 100k-line apply: 13 -> 12
        fsyncs."""
        if self.syncfs is None:
            if state:
                _fsync_dir(self.sdir)
            for fd in self.dir_fds:
                _fsync_fd(fd)
            return
        if state:
            fd = os.open(self.sdir, os.O_RDONLY | _CLOEXEC)
            try:
                dev = os.fstat(fd).st_dev
                if dev not in self.per_device:
                    self.syncfs(fd)
            finally:
                os.close(fd)
        for dfd in self.per_device.values():
            self.syncfs(dfd)


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


def _each(
    fn: Callable[[_Step], None],
    steps: list[_Step],
    crash: _Crasher,
    *,
    threaded: bool,
    point: str = "",
) -> None:
    """`fn(step)` for every step, in a few threads when asked and worth it; one crash-hook
    step (and test-hook call at `point`) per finished call. After a failure no further call
    starts, and the first exception propagates once every started call is done."""
    if not threaded or len(steps) < _THREADED_FROM or TEST_HOOK is not None:
        for s in steps:
            fn(s)
            crash.step()
            if point:
                _hook(point, s.path)
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
    root: str,
    sdir: str,
    steps: list[_Step],
    dirs: list[str],
    folders: Folders,
    pack: Pack | None = None,
) -> int:
    """Write the journal of `steps` (see `_prepare`): its open descriptor.

    When `pack` holds every step's pre-image (the very bytes objects: the history stored them
    in that blob, unsynced, just before), the journal is its header alone, naming the blob
    (version 3): one copy of the pre-images, made durable by the same flush as the journal.
    Otherwise (or for any step it does not hold) they follow the header, as in version 2.
    """
    entries = []
    blob: list[bytes] = []
    offset = 0
    if pack is not None and all(s.pre is None or pack.holds(s.path, s.pre) for s in steps):
        entries = [s.journal(pack.at[s.path][0] if s.pre is not None else 0) for s in steps]
        header = _journal_header(root, dirs, entries, 0, folders)
        header["version"], header["pack"] = 3, pack.sha
    else:
        for s in steps:
            pre = s.pre
            entries.append(s.journal(offset))
            if pre is not None:
                blob.append(pre)
                offset += len(pre)
        header = _journal_header(root, dirs, entries, offset, folders)
    path = os.path.join(sdir, JOURNAL)
    if os.path.lexists(path):
        raise _pending_error(path)
    try:
        return _write_journal(path, header, blob)
    except OSError as exc:
        raise _journal_error(sdir, exc) from None


def _pending_error(path: str) -> EditError:
    """An earlier apply's journal is still there (its recovery failed for some files): a new
    journal would replace it, and those files could never be rolled back."""
    return errors.io_error(
        f"An earlier interrupted apply is not rolled back yet (its journal is {path}); "
        "nothing was changed.",
        "Fix what stopped its rollback (see the recovery message: permissions, disk space), "
        "then run any agent-edit edit command in this workspace: it retries the rollback first.",
        path=path,
        reason="RECOVERY_PENDING",
    )


def _journal_error(sdir: str, exc: OSError) -> EditError:
    # Nothing in the workspace was touched yet: a journal that could not be written is what
    # stops the apply before its first temporary file.
    return errors.io_error(
        f"Could not write the apply's journal in {sdir} ({exc.strerror or exc}); nothing was "
        "changed.",
        "Free disk space or fix that folder's permissions (or point AGENT_EDIT_STATE_DIR "
        "elsewhere), then apply again.",
        path=sdir,
    )


def _prepare(
    root: str,
    sdir: str,
    steps: list[_Step],
    folders: Folders,
    dirs: list[str],
    meanwhile: Callable[[], None] | None,
    pack: Pack | None = None,
) -> PreparedApply:
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
    # 3. After the renames and deletes (`PreparedApply.commit`), a second flush makes them
    #    durable before the journal is removed (the commit point): a journal can only
    #    disappear once every file is new.
    if not steps:
        return PreparedApply(root, sdir, [], folders, [])
    journal_fd = _begin(root, sdir, steps, dirs, folders, pack)
    prepared = PreparedApply(root, sdir, steps, folders, dirs)
    writes = [s for s in steps if s.op == "write"]
    try:
        for d in dirs:
            folders.make(d)
        # Every folder is still the one opened, before anything is written in it.
        folders.check_all()
        heads = list(dict.fromkeys(s.head for s in steps))
        flusher = prepared.flusher = _Flusher(sdir, [folders.fds[h] for h in heads], len(writes))
        per_file = flusher.per_file
        # fsync waits on the disk: with it, a few threads overlap the waits. Without it, creating
        # files is CPU work in the kernel, which threads only make contend.
        umask = os.umask(0o022)
        os.umask(umask)
        ids = (os.geteuid(), os.getegid()) if hasattr(os, "geteuid") else (-1, -1)
        _each(
            lambda s: _write_temp(folders, s, per_file, umask, ids),
            writes,
            prepared.crash,
            threaded=per_file,
        )
        # The journal and every temporary file are durable before anything the user can see
        # changes (2. above).
        if per_file:
            os.fsync(journal_fd)
        _flush_while(flusher, meanwhile)
    except (OSError, _Refused, _Changed) as exc:
        failure: BaseException | None = exc
    else:
        failure = None
    finally:
        # Closed before any rollback: out of descriptors (EMFILE), the rollback needs these
        # to read the journal and look at the files.
        os.close(journal_fd)
    if failure is not None:
        prepared.fail(failure)
    _hook("written")
    return prepared


class PreparedApply:
    """An apply whose temporary files are written and durable (`prepare_plan`): `commit()`
    puts them in place, `abort()` removes them. Holds the workspace's folders open."""

    def __init__(
        self, root: str, sdir: str, steps: list[_Step], folders: Folders, dirs: list[str]
    ) -> None:
        self.root = root
        self.sdir = sdir
        self.steps = steps
        self.folders = folders
        self.dirs = dirs
        self.crash = _Crasher()
        self.flusher: _Flusher | None = None
        self.done = not steps
        # The files renamed into place or removed so far (what a failed rollback may leave new).
        self.applied: set[str] = set()

    def commit(self) -> None:
        """Re-check and rename every file into place (deletes last), make it durable, and
        remove the journal. A file or folder that changed meanwhile stops it: the renames
        done are rolled back and `EditError` (STALE, ...) says what the rollback did."""
        if self.done:
            self.folders.close()
            return
        try:
            self._commit()
        finally:
            self.folders.close()

    def _commit(self) -> None:
        writes = [s for s in self.steps if s.op == "write"]
        removes = [s for s in self.steps if s.op == "remove"]
        try:
            self.folders.check_all()
            # Replacing or deleting a file frees the old one's blocks, which on some file
            # systems waits on the disk (ext4 without a journal, mounted with `discard`,
            # discards them synchronously: ~0.3 ms a file here): threads overlap those waits
            # too. The order among the renames does not matter (the journal rolls back any
            # subset); all of them still come before the first delete.
            _each(self._replace, writes, self.crash, threaded=True, point="renamed")
            _each(self._remove, removes, self.crash, threaded=True, point="renamed")
            assert self.flusher is not None
            # 3. in `_prepare`: the renames are durable before the journal goes.
            self.flusher.flush(state=False)
            if BEFORE_COMMIT is not None:
                BEFORE_COMMIT()
            # The commit point. A journal that cannot be removed would have the next run roll
            # this apply back: it is rolled back now instead, and the result says so.
            os.unlink(os.path.join(self.sdir, JOURNAL))
        except (OSError, _Refused, _Changed) as exc:
            self.fail(exc)
        self.done = True
        _fsync_dir(self.sdir)

    def abort(self) -> dict[str, Any]:
        """Undo `prepare_plan`: the temporary files, created folders and journal removed;
        the rollback report."""
        if self.done:
            self.folders.close()
            return _report(None, [], [], [], [], [])
        self.done = True
        try:
            return _rollback(
                self.root,
                os.path.join(self.sdir, JOURNAL),
                self.folders,
                "rollback",
                self.applied,
                self._created(),
            )
        finally:
            self.folders.close()

    def _created(self) -> set[str]:
        return {s.tmp for s in self.steps if s.created and s.tmp}

    def _replace(self, step: _Step) -> None:
        assert step.tmp is not None
        fd = self.folders.check(step.head)
        _confirm(fd, step.name, step)
        # Nothing between the check above and this rename but this call.
        os.replace(step.tmp_name, step.name, src_dir_fd=fd, dst_dir_fd=fd)
        self.applied.add(step.path)

    def _remove(self, step: _Step) -> None:
        fd = self.folders.check(step.head)
        _confirm(fd, step.name, step)
        os.unlink(step.name, dir_fd=fd)
        self.applied.add(step.path)

    def fail(self, exc: BaseException) -> NoReturn:
        """Roll back after `exc` stopped the apply, and raise the result saying what happened
        and what the rollback did."""
        self.done = True
        journal_path = os.path.join(self.sdir, JOURNAL)
        failure: BaseException | None = None
        try:
            report: dict[str, Any] | None = _rollback(
                self.root, journal_path, self.folders, "rollback", self.applied, self._created()
            )
        except (OSError, ValueError, KeyError, TypeError) as again:
            report = None
            failure = again
        paths = [s.path for s in self.steps]
        if report is None and not self.applied:
            # The rollback could not even start (no descriptor to read the journal with, say),
            # but nothing was renamed or removed yet: every file is as it was; only temporary
            # files may remain, which the next run's recovery removes (the journal stays).
            raise errors.from_os_error(
                exc,
                f"{_cause(exc)}; no file was changed, but its temporary files could not be "
                f"removed ({_strerror(failure)}).",
                "Fix the cause, then run any agent-edit edit command in this workspace: it "
                "removes them first and reports it.",
                files=[],
                rolledBack=None,
            ) from None
        if report is None or report["failed"] or report["unreached"]:
            # Some files could not be put back: the journal stays (or was set aside) for the
            # next run (or a human), and the result says which files may hold new content.
            unknown = (
                [p for p in paths if p in self.applied]
                if report is None
                else [f["path"] for f in (*report["failed"], *report["unreached"])]
            )
            why = (
                f"putting the files back failed too ({_strerror(failure)})"
                if report is None
                else "these files could not be put back: "
                + "; ".join(
                    f"{f['path']} ({f['why']})" for f in (*report["failed"], *report["unreached"])
                )
            )
            raise errors.partial(
                f"{_cause(exc)}, and {why}; they may hold the new content." + _leftovers(report),
                "Fix the cause (permissions, disk space, the replaced folder), then run any "
                "agent-edit edit command in this workspace: it retries the rollback first and "
                "reports it.",
                files=unknown,
                rolledBack=report,
                committed=[{"path": p, "state": "unknown"} for p in unknown],
            ) from None
        said = _rollback_said(report, exc.path if isinstance(exc, _Changed) else "")
        if isinstance(exc, _Refused):
            err = exc.error
            err.message += f"; {said}"
            err.details["rolledBack"] = report
            raise err from None
        if isinstance(exc, _Changed):
            raise errors.stale(
                f"{exc.path} {exc.why} during the apply (its content is kept); {said}",
                "Look at that file as it is now, then apply again: the patch will be checked "
                "against it.",
                path=exc.path,
                reason="CHANGED_ON_DISK",
                rolledBack=report,
            ) from None
        if isinstance(exc, FolderChanged):
            raise errors.stale(
                f"{exc.why} during the apply; nothing was written through it, {said}",
                "Check that folder (something replaced it), then apply again.",
                path=exc.folder or ".",
                reason="FOLDER_REPLACED",
                rolledBack=report,
            ) from None
        assert isinstance(exc, OSError)
        raise errors.from_os_error(
            exc,
            f"Writing the patch failed ({exc.strerror or exc}"
            f"{': ' + str(exc.filename) if exc.filename else ''}); {said}",
            _errno_hint(exc),
            rolledBack=report,
        ) from None


def _strerror(exc: BaseException | None) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def _cause(exc: BaseException) -> str:
    if isinstance(exc, _Changed):
        return f"{exc.path} {exc.why} during the apply"
    if isinstance(exc, FolderChanged):
        return f"{exc.why} during the apply"
    if isinstance(exc, _Refused):
        return exc.error.message
    return f"Writing the patch failed ({_strerror(exc)})"


def _rollback_said(report: dict[str, Any], stale: str = "") -> str:
    """What the rollback did, for the result's message: only what it did. `stale` is the file
    the message already names as changed by someone else."""
    if not report["restored"] and not report["removed"]:
        said = "nothing was changed"
    else:
        said = "every file was put back as it was"
    kept = [c["path"] for c in report["conflicts"] if c["path"] != stale]
    if kept:
        said += ", except what another program saved meanwhile: " + ", ".join(kept)
    return said + "." + _leftovers(report)


def _leftovers(report: dict[str, Any] | None) -> str:
    if not report or not report["leftBehind"]:
        return ""
    return " Temporary files that could not be removed: " + ", ".join(report["leftBehind"]) + "."


def _errno_hint(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "Free disk space (or raise the quota), then apply again."
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (
            "Make the files and folders writable for this user (a read-only mount, an "
            "immutable file or its permissions refused it), then apply again."
        )
    return "Fix the cause (permissions, disk space, the disk itself), then apply again."


def _refusal(exc: OSError, rel: str, changed: str) -> EditError:
    """An OS error met while checking `rel` before anything was written."""
    return errors.from_os_error(
        exc, f"Cannot check {rel} ({exc.strerror or exc}); {changed}.", _errno_hint(exc), path=rel
    )


def _folder_stale(exc: FolderChanged, rel: str, changed: str) -> EditError:
    return errors.stale(
        f"{exc.why} (for {rel}) since the patch was planned; {changed}.",
        "Check that folder (something replaced it), then apply again.",
        path=rel,
        folder=exc.folder or ".",
        reason="FOLDER_REPLACED",
    )


def _confirm(fd: int, name: str, step: _Step) -> None:
    """Raise `_Changed` unless `name` in folder `fd` is still what the plan replaces: the same
    file (inode, size, mtime) with the same bytes when a save could hide (`step.suspect`), or
    still nothing for a new file. The caller renames right after: the window is one call."""
    st = step.st
    if st is None:
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        raise _Changed(step.path, "was created by another program")
    if step.suspect and not _holds(fd, name, step.pre):
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            raise _Changed(step.path, "was removed by another program") from None
        raise _Changed(step.path, "was saved by another program")
    try:
        now = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        raise _Changed(step.path, "was removed by another program") from None
    if (now.st_ino, now.st_size, now.st_mtime_ns, now.st_ctime_ns, now.st_dev) != (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_dev,
    ):
        raise _Changed(step.path, "was saved or replaced by another program")


def _holds(fd: int, name: str, want: bytes | None) -> bool:
    """Whether `name` in folder `fd` is a regular file holding exactly `want`."""
    try:
        f = os.open(name, _READ_ANY, dir_fd=fd)
    except OSError:
        return False
    try:
        st = os.fstat(f)
        if want is None or not stat.S_ISREG(st.st_mode) or st.st_size != len(want):
            return False
        got = os.read(f, len(want) + 1)
        while len(got) < len(want) + 1:
            more = os.read(f, len(want) + 1 - len(got))
            if not more:
                break
            got += more
        return got == want
    finally:
        os.close(f)


def recover_locked(root: str, sdir: str) -> list[dict[str, Any]]:
    """`recover` for a caller that holds the workspace lock (`workspace_lock`) already.

    Goes through the same folder checks as the apply (`Folders`, against the folders the
    journal recorded) and reports exactly what it did; a journal it cannot use is set aside
    for a human, never acted on half-way. An OS error is `EditError(IO_ERROR)`.
    """
    journal_path = os.path.join(sdir, JOURNAL)
    try:
        return _recover(root, journal_path)
    except OSError as exc:
        raise _recovery_error(journal_path, exc) from None


def _recover(root: str, journal_path: str) -> list[dict[str, Any]]:
    if not os.path.exists(journal_path):
        # A journal that never finished being written means nothing was touched yet.
        tmp = journal_path + ".tmp"
        if os.path.exists(tmp):
            os.unlink(tmp)
        return []
    try:
        journal, blob = _read_journal(journal_path)
        _check_journal(journal, len(blob))
    except (ValueError, KeyError, TypeError, OverflowError):
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
                "failed": [],
                "unreached": [],
                "leftBehind": [],
            }
        ]
    expect = {k: (int(v[0]), int(v[1])) for k, v in journal.get("folders", {}).items()}
    try:
        folders = Folders(root, expect=expect)
    except FolderChanged:
        # The workspace folder itself is another one now (removed and made again, restored
        # from a backup): none of the journal's files are reachable as the apply left them.
        kept = f"{journal_path}.unreached-{int(time.time())}"
        os.replace(journal_path, kept)
        return [
            _report(
                journal,
                [],
                [],
                [],
                [],
                [],
                [
                    {
                        "path": kept,
                        "why": "the workspace folder is not the one the interrupted "
                        "apply used; nothing was put back, its journal is kept for a human",
                    }
                ],
            )
        ]
    try:
        return [_rollback(root, journal_path, folders, "recovery")]
    finally:
        folders.close()


def _recovery_error(journal_path: str, exc: OSError) -> EditError:
    return errors.io_error(
        f"An interrupted apply could not be rolled back ({exc.strerror or exc}); its journal "
        f"stays in {journal_path} and nothing else was done.",
        "Fix the cause (permissions, disk space), then run any agent-edit edit command in "
        "this workspace: it retries the rollback first.",
        path=journal_path,
    )


def _check_journal(journal: dict[str, Any], blob_size: int) -> None:
    """Raise ValueError/TypeError unless every entry of `journal` is usable: rollback acts on
    none of it otherwise, and no path in it leaves the workspace (no `..`, no absolute), no
    pre-image lies outside the `blob_size` bytes there are (a cut one would be "put back"
    truncated), and no mode or owner is one the system calls refuse or widen."""
    if not isinstance(journal, dict) or not isinstance(journal.get("files"), list):
        raise ValueError("no files")
    if not isinstance(journal.get("dirs", []), list):
        raise ValueError("bad dirs")
    if not isinstance(journal.get("folders", {}), dict):
        raise ValueError("bad folders")
    for entry in journal["files"]:
        if not isinstance(entry, dict):
            raise ValueError("bad entry")
        _safe_rel(entry["path"])
        if entry.get("newSha256") is not None and not isinstance(entry["newSha256"], str):
            raise ValueError("bad newSha256")
        if entry.get("tmp") is not None:
            _safe_rel(entry["tmp"])
        pre = entry.get("pre")
        if pre is not None and not (
            isinstance(pre, list)
            and len(pre) == 2
            and all(type(x) is int and x >= 0 for x in pre)
            and pre[0] + pre[1] <= blob_size
        ):
            raise ValueError("bad pre")
        for key, top in (("mode", 0o7777), ("uid", _MAX_ID), ("gid", _MAX_ID)):
            if key in entry and not (type(entry[key]) is int and 0 <= entry[key] <= top):
                raise ValueError(f"bad {key}")
        if type(entry.get("link", False)) is not bool:
            raise ValueError("bad link")
        if entry["op"] not in ("write", "remove"):
            raise ValueError("bad op")
    for d in journal.get("dirs", []):
        _safe_rel(d)
    for k, v in journal.get("folders", {}).items():
        if k:
            _safe_rel(k)
        if not (isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v)):
            raise ValueError("bad folder identity")


_MAX_ID = 2**32 - 2  # the largest uid/gid (2**32 - 1 is -1: "leave it as it is")


def _safe_rel(rel: object) -> None:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\0" in rel:
        raise ValueError(f"bad path {rel!r}")
    if any(part in ("", ".", "..") for part in rel.split("/")):
        raise ValueError(f"bad path {rel!r}")


_Ident = tuple[int, int, int, int, int]  # (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)


def _sha_at(fd: int, name: str) -> tuple[str | None, _Ident | None]:
    """The sha256 of regular file `name` in folder `fd` (None when absent, a marker for what
    is not a regular file: never followed if a symlink), and the identity of what was read,
    for `_unchanged_since` right before the rollback replaces or removes it."""
    try:
        f = os.open(name, _READ_ANY, dir_fd=fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "<symlink>", None
        raise
    try:
        st = os.fstat(f)
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if not stat.S_ISREG(st.st_mode):
            return ("<directory>" if stat.S_ISDIR(st.st_mode) else "<special>"), ident
        h = sha256_for(st.st_size)
        while chunk := os.read(f, 1 << 20):
            h.update(chunk)
        return h.hexdigest(), ident
    finally:
        os.close(f)


def _unchanged_since(fd: int, name: str, ident: _Ident | None, sha: str | None) -> bool:
    """Whether `name` in folder `fd` is still what `_sha_at` read (or still absent): the
    rollback's re-check right before it replaces or removes a file, as the apply's is (its
    bytes again when a same-size save could have kept the mtime: a file the apply just wrote
    always could)."""
    if ident is not None and _could_hide_a_save(max(ident[3], ident[4]), time.time_ns()):
        if _sha_at(fd, name)[0] != sha:
            return False
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return ident is None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == ident


def _restore_at(
    folders: Folders,
    head: str,
    name: str,
    pre: bytes,
    entry: dict[str, Any],
    seen: tuple[str | None, _Ident | None],
) -> bool:
    """Put `pre` back as `name` in folder `head`, with the owner and mode the journal recorded
    (else the current file's): a temporary file renamed over it, never through a symlink.
    False (nothing replaced) if `name` changed since `_sha_at` read it (`ident`)."""
    fd = folders.check(head)
    mode, uid, gid = entry.get("mode"), entry.get("uid"), entry.get("gid")
    if mode is None:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            mode, uid, gid = st.st_mode & 0o7777, st.st_uid, st.st_gid
        except OSError:
            umask = os.umask(0o022)
            os.umask(umask)
            mode = 0o666 & ~umask
    tmp = _aside(name, _RESTORE_TAG)
    _drop_restore_tmp(fd, name)  # one a killed rollback left
    f = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o600, dir_fd=fd)
    try:
        try:
            if uid is not None and gid is not None and (uid, gid) != (os.geteuid(), os.getegid()):
                os.fchown(f, uid, gid)
        except PermissionError:
            pass  # not root: the content matters more than who owns it (see the report)
        if _XATTRS:
            # The file replaced is the apply's, given the original's extended attributes (its
            # POSIX ACL, labels): the pre-image gets them back (a rollback that said "put back
            # as it was" dropped them). After the chown, before the chmod, as in `_write_temp`.
            try:
                _keep_xattrs(f, fd, name, f"{head}/{name}" if head else name)
                _drop_inherited_acl(f, fd, name)
            except (_Refused, OSError):
                pass  # as for the owner: the content first
        os.fchmod(f, mode)
        _write_all(f, pre)
        os.fsync(f)
    except BaseException:
        os.close(f)
        os.unlink(tmp, dir_fd=fd)
        raise
    os.close(f)
    try:
        _hook("putting-back", f"{head}/{name}" if head else name)
        folders.check(head)
        if not _unchanged_since(fd, name, seen[1], seen[0]):
            os.unlink(tmp, dir_fd=fd)
            return False
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        return True
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass  # the folder is not ours any more, or the disk refuses: the report says why
        raise


def _drop_restore_tmp(fd: int, name: str) -> None:
    """Remove the pre-image a killed rollback left next to `name` (see `_RESTORE_TAG`)."""
    try:
        os.unlink(_aside(name, _RESTORE_TAG), dir_fd=fd)
    except FileNotFoundError:
        pass


_REMOVED_MEANWHILE = "removed by someone else since the apply began; left removed"
_SAVED_MEANWHILE = "saved by someone else while it was being put back; left as they saved it"


def _put_link_back(
    folders: Folders,
    fd: int,
    head: str,
    name: str,
    path: str,
    target: bytes,
    restored: list[str],
    conflicts: list[dict[str, str]],
    failed: list[dict[str, str]],
) -> None:
    """Rollback of a removed symbolic link: made again, pointing where it pointed."""
    try:
        if fd < 0:
            fd = _reach(folders, head, create=True)
        try:
            now: str | None = os.readlink(name, dir_fd=fd)
        except FileNotFoundError:
            now = None
        except OSError:
            now = "\0"  # not a link any more
        if now == os.fsdecode(target):
            return  # untouched
        if now is not None:
            conflicts.append({"path": path, "why": "changed by someone else since the apply"})
            return
        folders.check(head)
        os.symlink(os.fsdecode(target), name, dir_fd=fd)
        restored.append(path)
    except FolderChanged as exc:
        failed.append({"path": path, "why": exc.why})
    except OSError as exc:
        failed.append({"path": path, "why": exc.strerror or str(exc)})


def _reach(folders: Folders, head: str, create: bool) -> int:
    """Folder `head`'s descriptor, checked; created (with its missing parents) if asked."""
    try:
        folders.open(head)
    except FileNotFoundError:
        if not create:
            raise
        parent = split(head)[0]
        if parent:
            _reach(folders, parent, True)
        folders.make(head)
    return folders.check(head)


def _report(
    journal: dict[str, Any] | None,
    restored: list[str],
    removed: list[str],
    conflicts: list[dict[str, str]],
    failed: list[dict[str, str]],
    left: list[str],
    unreached: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "startedAt": None if journal is None else journal.get("time"),
        "pid": None if journal is None else journal.get("pid"),
        "restored": restored,
        "removed": removed,
        # Left alone: changed by someone else since (their content is kept).
        "conflicts": conflicts,
        # Could not be put back (an OS error): they may hold the new content; retried next run.
        "failed": failed,
        # Not reached: their folder is no longer the one the apply used (replaced, a symlink);
        # nothing was done in it. The journal is set aside for a human.
        "unreached": unreached or [],
        # Temporary files that could not be removed.
        "leftBehind": left,
    }


def _drop_tmp(fd: int, tmp: str, left: list[str]) -> bool:
    """Remove temporary file `tmp` from folder `fd`; whether it was there (a rename consumes
    it: a write whose temporary file remains never reached its target)."""
    name = split(tmp)[1]
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        return False
    except OSError:
        # A read-only file system refuses the unlink before it looks the name up (EROFS for a
        # name that is not there): only a lookup tells. Taken for "still there", a temporary
        # file already renamed over its target made that target look untouched: the rollback
        # skipped it, said "nothing was changed" and dropped the journal.
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        except OSError:
            pass
        left.append(tmp)
    return True


def _rollback(
    root: str,
    journal_path: str,
    folders: Folders,
    point: str,
    applied: set[str] | None = None,
    created: set[str] | None = None,
) -> dict[str, Any]:
    """Put every file of the journalled apply back to its pre-image, through `folders` and its
    checks; the report of exactly what was done (see `_report`). `applied`, in the process
    that was applying, names the files it had renamed or removed: any other is as it was,
    even in a folder that cannot be reached any more (only its temporary file is left, if
    it is among `created`, the temporary files that process made)."""
    made = (lambda tmp: True) if created is None else created.__contains__
    journal, blob = _read_journal(journal_path)
    _check_journal(journal, len(blob))
    restored: list[str] = []
    removed: list[str] = []
    conflicts: list[dict[str, str]] = []
    failed: list[dict[str, str]] = []
    unreached: list[dict[str, str]] = []
    left: list[str] = []
    touched: set[str] = set()
    # Whether a write was found never renamed: the deletes, which come after every rename
    # (and after the writes in the journal), were then never reached either.
    unrenamed = False
    for entry in journal["files"]:
        path = entry["path"]
        head, name = split(path)
        tmp = entry.get("tmp")
        pre = None
        if entry.get("pre") is not None:
            start, length = entry["pre"]
            pre = blob[start : start + length]
        _hook(point, path)
        try:
            fd = _reach(folders, head, create=False)
        except FileNotFoundError:
            if pre is None:
                continue  # a file this apply added, in a folder that is gone: nothing to undo
            fd = -1
        except FolderChanged as exc:
            if applied is None or path in applied:
                unreached.append({"path": path, "why": f"not put back: {exc.why}"})
            if tmp and (applied is None or path not in applied) and made(tmp):
                left.append(tmp)  # (a temporary file renamed into place is gone)
            continue
        except OSError as exc:
            if applied is not None and path not in applied:
                # Never reached by this apply: the file is as it was; only its temporary
                # file may remain, in a folder that cannot be opened now.
                if tmp and made(tmp):
                    left.append(tmp)
                continue
            failed.append({"path": path, "why": exc.strerror or str(exc)})
            continue
        if applied is not None and path not in applied:
            # Never renamed or removed by this apply: as it is now is someone else's doing (a
            # file or folder they deleted or saved meanwhile must not be "put back"). Only
            # its temporary file is ours (if it was made: one never made is not "left").
            if tmp and fd >= 0 and made(tmp):
                _drop_tmp(fd, tmp, left)
            continue
        if applied is None and fd >= 0 and not entry.get("link"):
            # A rollback of this apply killed before its rename left its pre-image aside.
            try:
                _drop_restore_tmp(fd, name)
            except OSError:
                pass  # (put back below, or reported with the file)
        if entry.get("link") and pre is not None:
            _put_link_back(folders, fd, head, name, path, pre, restored, conflicts, failed)
            touched.add(head)
            continue
        try:
            if tmp and fd >= 0 and _drop_tmp(fd, tmp, left) and entry["op"] == "write":
                # Its temporary file was still there: never renamed over the target, which is
                # as the apply found it or as someone else left it since (deleted, say): not
                # the apply's to put back.
                unrenamed = True
                continue
            pre_sha = sha256(pre).hexdigest() if pre is not None else None
            current, ident = _sha_at(fd, name) if fd >= 0 else (None, None)
            if current == pre_sha:
                continue  # untouched (or already back)
            if current is None and pre is not None and (entry["op"] == "write" or unrenamed):
                # A write replaces its file in one rename, never leaves it absent, and a delete
                # after a write never renamed was not reached: gone now (or its folder), someone
                # else removed it since, which is not the apply's to undo (it was put back, and
                # reported "restored", even when the apply had never reached it).
                conflicts.append({"path": path, "why": _REMOVED_MEANWHILE})
                continue
            if current is None or (entry["op"] == "write" and current == entry.get("newSha256")):
                if pre is not None:
                    if fd < 0:
                        fd = _reach(folders, head, create=True)
                    if not _restore_at(folders, head, name, pre, entry, (current, ident)):
                        conflicts.append({"path": path, "why": _SAVED_MEANWHILE})
                        continue
                    restored.append(path)
                    touched.add(head)
                elif current is not None:
                    folders.check(head)
                    if not _unchanged_since(fd, name, ident, current):
                        conflicts.append({"path": path, "why": _SAVED_MEANWHILE})
                        continue
                    os.unlink(name, dir_fd=fd)
                    removed.append(path)
                    touched.add(head)
            else:
                conflicts.append(
                    {"path": path, "why": "changed by someone else since the interrupted apply"}
                )
        except FolderChanged as exc:
            unreached.append({"path": path, "why": f"not put back: {exc.why}"})
        except OSError as exc:
            failed.append({"path": path, "why": exc.strerror or str(exc)})
    for d in reversed(journal.get("dirs", [])):
        parent, name = split(d)
        try:
            pfd = _reach(folders, parent, False)
            folders.forget(d)
            os.rmdir(name, dir_fd=pfd)
            touched.add(parent)
        except OSError:
            pass  # not empty (someone else's files), gone, or replaced: left as it is
    for head in touched:
        held = folders.fds.get(head)
        if held is not None:
            _fsync_fd(held)
    if failed:
        pass  # the journal stays: the next run retries
    elif unreached:
        os.replace(journal_path, f"{journal_path}.unreached-{int(time.time())}")
        _fsync_dir(os.path.dirname(journal_path))
    else:
        os.unlink(journal_path)
        _fsync_dir(os.path.dirname(journal_path))
    return _report(journal, restored, removed, conflicts, failed, left, unreached)
