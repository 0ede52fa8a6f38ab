"""Content-addressed blob files beside the journal: the values too large for a journal line.

`Blobs` keeps each value once as `blobs/<sha256>` (written, fsynced and renamed into place before
the record naming it is appended; a value already there is not written again), reads one back only
when it is a regular file holding what its name says, and removes the ones nothing names any more.
It counts the bytes it writes (`written`) and weighs the blobs a compaction keeps (`size_of`), so
that the journal can compact, which is the only clean-up, as the folder grows (journal.py).
Every operation goes through a descriptor of the folder opened with O_NOFOLLOW. Which values go to
blobs, and the markers that name them in a record, are the journal's business (journal.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lsp_server.engine.digests import sha256, sha256_for
from lsp_server.engine.state import fsync_dir as _fsync_dir

BLOB_DIR = "blobs"  # the folder's name, in the workspace's state folder


@dataclass(frozen=True)
class Pack:
    """Pre-images of a plan stored together in one blob (`Blobs.put_parts`): the history's
    baselines and the disk writer's rollback data are this one copy (history/recording.py
    writes it, files.py's apply journal names it). `at[path]` is where the file's bytes are;
    `data[path]` the bytes object itself, so the writer can tell by identity that its own
    pre-image is the one stored."""

    sha: str
    path: Path
    at: Mapping[str, tuple[int, int]]
    data: Mapping[str, bytes] = field(repr=False)

    def holds(self, rel: str, pre: bytes) -> bool:
        """Whether `pre` is the very bytes object stored for `rel`."""
        return self.data.get(rel) is pre


@dataclass(frozen=True)
class Staged:
    """A blob written under its temporary name (`Blobs.stage`), not named yet."""

    sha: str
    size: int
    sync: bool
    name: str  # its temporary name, this stage's own (`Blobs.stage`)


class Blobs:
    """Content-addressed files in the journal's folder (`blobs/<sha256>`) holding the values too
    large for a journal line: written once (a value already there is not written again, so a
    compaction that keeps a 50 MB baseline does not rewrite it), each fsynced and renamed into
    place before the record naming it is appended. Used under the journal's lock only.

    Every operation goes through a descriptor of the folder opened with O_NOFOLLOW: a `blobs`
    that is a symlink (into the workspace, say) is never written through, and the clean-up
    removes only names blobs write (`<sha256>`, `.<sha256>.<pid>[.<random>].tmp`), never a
    file put there by hand."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        # Bytes of blob files this object wrote (a value already there is not counted): the
        # journal tells other processes what its records added to the folder (journal.py
        # `_append`), which is what lets compaction, the only clean-up, keep up with it.
        self.written = 0

    def _open_dir(self, create: bool) -> tuple[int, bool]:
        """The folder's descriptor (ELOOP when it is a symlink), and whether it was just made."""
        created = False
        if create:
            try:
                os.mkdir(self.dir, 0o700)
                created = True
            except FileExistsError:
                pass
        if not _DIR_FD:  # pragma: no cover - Windows: by path, a symlinked folder refused
            if os.path.islink(self.dir) or not os.path.isdir(self.dir):
                raise OSError(errno.ELOOP, "not a folder of its own", str(self.dir))
            return _NO_FD, created
        return os.open(self.dir, os.O_RDONLY | _DIRECTORY | NOFOLLOW), created

    def _at(self, dfd: int, name: str) -> tuple[str, int | None]:
        """`name` and the dir_fd to use it with (a path, where there are no dir_fds)."""
        return (name, dfd) if dfd != _NO_FD else (str(self.dir / name), None)

    def _write_temp(
        self, dfd: int, sha: str, parts: Sequence[bytes], sync: bool, name: str | None = None
    ) -> tuple[str, int | None]:
        """`parts` written (fsynced with `sync`) under blob `sha`'s temporary name (or `name`),
        private to this user and never through a symlink; that name and its dir_fd. A write
        that fails removes what it wrote (a full disk is not left fuller)."""
        tmp, at = self._at(dfd, name or f".{sha}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | NOFOLLOW, 0o600, dir_fd=at)
        try:
            try:
                _write_parts(fd, parts)
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=at)
            raise
        return tmp, at

    def put(self, data: bytes) -> str:
        return self.put_parts([data])

    def put_parts(self, parts: Sequence[bytes], sync: bool = True) -> str:
        """One blob holding `parts` concatenated (a plan's pre-images: written with one
        `writev`, never joined into one more copy); its name. Without `sync` it is not fsynced
        here: the caller makes the folder's file system durable itself before anything relies
        on it (the disk writer's `syncfs`, files.py)."""
        size = sum(map(len, parts))
        digest = sha256_for(size)
        for part in parts:
            digest.update(part)
        sha = digest.hexdigest()
        dfd, created = self._open_dir(create=True)
        try:
            try:
                # Kept only when it holds these bytes (a compare, far cheaper than the write
                # and fsync it saves): one altered on disk, or a symlink or FIFO put in its
                # place, is written again rather than named by one more record replay skips.
                if _read_regular(*self._at(dfd, sha), size) == b"".join(parts):
                    return sha
            except OSError:
                pass
            tmp, at = self._write_temp(dfd, sha, parts, sync)
            os.replace(tmp, self._at(dfd, sha)[0], src_dir_fd=at, dst_dir_fd=at)
            self.written += size
            if sync and dfd != _NO_FD:
                os.fsync(dfd)
            elif sync:  # pragma: no cover - Windows
                _fsync_dir(self.dir)
        finally:
            _close(dfd)
        if created and sync:
            _fsync_dir(self.dir.parent)
        return sha

    def stage(self, parts: Sequence[bytes], sync: bool = True) -> Staged:
        """The first half of `put_parts`, which needs no lock, so that it can run in a thread
        while the caller does other work (history/recording.py `_PackWriter`): `parts`
        hashed and written (with `sync`, fsynced) under their temporary name. `commit` names
        it under the journal's lock; until then a compaction's clean-up may remove it, which
        `commit` then says (OSError). `discard` removes one that is not wanted."""
        parts = _in_groups(parts)
        digest = sha256_for(sum(map(len, parts)))
        for part in parts:
            digest.update(part)
        sha = digest.hexdigest()
        # A name of its own, not `put_parts`' `.<sha>.<pid>.tmp`: the same bytes put meanwhile
        # by this process (a dry run's record holding a deleted file's text: the very sha of
        # its prestaged pack) would be written to the same file, and this thread's O_TRUNC
        # would empty the blob that `put_parts` is about to name in a record.
        name = f".{sha}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        dfd, created = self._open_dir(create=True)
        try:
            self._write_temp(dfd, sha, parts, sync, name)
        finally:
            _close(dfd)
        if created and sync:
            _fsync_dir(self.dir.parent)
        return Staged(sha, sum(map(len, parts)), sync, name)

    def commit(self, staged: Staged) -> str:
        """Name a `stage`d blob (under the journal's lock): renamed into place, its folder
        fsynced when it was staged with `sync`; OSError when its temporary file is gone or
        is not the one staged (then nothing is named: the caller writes it with `put_parts`)."""
        dfd, _ = self._open_dir(create=False)
        try:
            tmp, at = self._at(dfd, staged.name)
            fd = os.open(tmp, os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=at)
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != staged.size:
                raise OSError(errno.EINVAL, "not the staged blob", tmp)
            os.replace(tmp, self._at(dfd, staged.sha)[0], src_dir_fd=at, dst_dir_fd=at)
            self.written += staged.size
            if staged.sync and dfd != _NO_FD:
                os.fsync(dfd)
            elif staged.sync:  # pragma: no cover - Windows
                _fsync_dir(self.dir)
        finally:
            _close(dfd)
        return staged.sha

    def discard(self, staged: Staged) -> None:
        """Remove a `stage`d blob's temporary file (gone already: nothing to do)."""
        with contextlib.suppress(OSError):
            os.unlink(self.dir / staged.name)

    def path(self, sha: str) -> Path:
        """Where the blob `sha` lives (for a reader outside the journal: files.py's recovery)."""
        return self.dir / sha

    def get(self, sha: str) -> bytes:
        """The blob's bytes; ValueError when it is missing or not what its name says."""
        if not isinstance(sha, str) or not re.fullmatch(_BLOB_NAME, sha):
            raise ValueError("not a blob name")
        try:
            dfd, _ = self._open_dir(create=False)
            try:
                data = _read_regular(*self._at(dfd, sha))
            finally:
                _close(dfd)
        except OSError as exc:
            raise ValueError(f"blob {sha[:12]} cannot be read: {exc.strerror}") from None
        if sha256(data).hexdigest() != sha:
            raise ValueError(f"blob {sha[:12]} does not hold what its name says")
        return data

    def size_of(self, names: set[str]) -> int:
        """The bytes of the blob files `names` (one stat each; a missing one is 0)."""
        total = 0
        try:
            dfd, _ = self._open_dir(create=False)
        except OSError:
            return 0
        try:
            for name in names:
                if not re.fullmatch(_BLOB_NAME, name):
                    continue
                with contextlib.suppress(OSError):
                    path, at = self._at(dfd, name)
                    st = os.stat(path, dir_fd=at, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        total += st.st_size
        finally:
            _close(dfd)
        return total

    def collect(self, keep: set[str]) -> int:
        """Remove every blob not in `keep` (and temporaries a crash left); how many went."""
        removed = 0
        try:
            dfd, _ = self._open_dir(create=False)
        except OSError:
            return 0
        try:
            for name in os.listdir(dfd if dfd != _NO_FD else self.dir):
                if name not in keep and (
                    re.fullmatch(_BLOB_NAME, name) or re.fullmatch(_BLOB_TMP, name)
                ):
                    with contextlib.suppress(OSError):
                        path, at = self._at(dfd, name)
                        os.unlink(path, dir_fd=at)
                        removed += 1
        finally:
            _close(dfd)
        return removed


_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FD = {os.open, os.unlink, os.rename} <= os.supports_dir_fd and os.listdir in os.supports_fd
_NO_FD = -1  # `_open_dir` where a folder cannot be opened (Windows): paths are used instead
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# Patterns, compiled by their first use through `re`'s own cache, not at import: only reading
# a blob back and the collection use them, not an apply (0.15 ms of a CLI run's imports;
# with journal's `_NAMED`, bench/bench_startup.py --instructions --rounds 3, 6fd0e34 ->
# 6c73ea5: 152.2 -> 151.0 M instructions past interpreter start).
_BLOB_NAME = r"[0-9a-f]{64}"
_BLOB_TMP = r"\.[0-9a-f]+\.[0-9]+(?:\.[0-9a-f]+)?\.tmp"  # `put_parts`' and `stage`'s


def _close(dfd: int) -> None:
    if dfd != _NO_FD:
        os.close(dfd)


def _read_regular(name: str, dfd: int | None, size: int | None = None) -> bytes:
    """A blob file's bytes, refusing anything but a regular file (of `size` bytes, when given):
    a blob replaced by a FIFO would block every server start on open(), a symlink to /dev/zero
    would read for ever."""
    fd = os.open(name, os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (size is not None and st.st_size != size):
            raise OSError(errno.EINVAL, "not the blob file", name)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


_IOV_MAX = 1024  # Linux and macOS; what one writev may take


# `stage` runs in a thread (history/recording.py `_PackWriter`) while the calling thread runs
# Python: each hash update of a part (and each write) lets go of the GIL and needs it back,
# which the thread gets only once the switch interval has passed. A pack's many small parts
# (1,000 pre-images of a few KB) are joined into groups of about _GROUP_BYTES first: a few
# such waits instead of one a part. Only parts under _JOINED_UNDER are copied so (at most
# that much a part of extra memory); a larger one stays as it is, its hash long enough that
# one wait is a small share of it.
_GROUP_BYTES = 1 << 20
_JOINED_UNDER = 64 * 1024


def _in_groups(parts: Sequence[bytes]) -> list[bytes]:
    """`parts` with consecutive small parts (under _JOINED_UNDER) joined into groups of about
    _GROUP_BYTES: the same bytes, in the same order, in fewer pieces."""
    out: list[bytes] = []
    run: list[bytes] = []
    size = 0
    for part in parts:
        if len(part) >= _JOINED_UNDER:
            if run:
                out.append(b"".join(run))
                run, size = [], 0
            out.append(part)
            continue
        run.append(part)
        size += len(part)
        if size >= _GROUP_BYTES:
            out.append(b"".join(run))
            run, size = [], 0
    if run:
        out.append(run[0] if len(run) == 1 else b"".join(run))
    return out


def _write_parts(fd: int, parts: Sequence[bytes]) -> None:
    if len(parts) == 1 or not hasattr(os, "writev"):
        _write_all(fd, b"".join(parts))
        return
    for i in range(0, len(parts), _IOV_MAX):
        group = parts[i : i + _IOV_MAX]
        done = os.writev(fd, group)
        if done < sum(map(len, group)):  # a short write: finish plainly
            _write_all(fd, b"".join(group)[done:])
