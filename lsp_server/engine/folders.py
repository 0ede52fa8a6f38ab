"""Directory descriptors for the disk writer: every write goes through a folder opened once,
component by component from the workspace root, never through a symbolic link.

Why: the path policy resolves a patch's paths (symlinks followed) before anything is written,
and a name that is looked up again later can lead somewhere else. A folder renamed away and
replaced by a symlink to `/elsewhere` between resolution and the write made every write
(and every rollback) land in `/elsewhere`. Here each folder is opened with `O_NOFOLLOW |
O_DIRECTORY` relative to its already-open parent, so a symlink in the way is refused by the
kernel (ELOOP/ENOTDIR) instead of followed; the files are then created, renamed, stat'ed and
removed with `dir_fd=` relative to those descriptors.

A held descriptor keeps pointing at the folder it opened even if that folder is moved; so
before each write and each rename `check` confirms that the folder's name, looked up in its
parent (and the parent's in its parent, up to the root), still leads to the same (st_dev,
st_ino) as when it was opened (or as a crashed apply's journal recorded it). A folder that
moved or was swapped is `FolderChanged`, never written through.

One `Folders` per apply: one `open` per folder, not per file (a 1,000-file patch in 20
folders opens 20). Not thread-safe while opening; open every folder first (`open`), then
threads may `check` and use the descriptors.
"""

from __future__ import annotations

import errno
import os
import stat

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | _CLOEXEC | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)

_ROOT_FLAGS = os.O_RDONLY | _CLOEXEC | getattr(os, "O_DIRECTORY", 0)

Identity = tuple[int, int]  # (st_dev, st_ino)


class FolderChanged(OSError):
    """A folder is no longer the one resolved (moved, replaced, now a symlink or a file)."""

    def __init__(self, folder: str, why: str) -> None:
        super().__init__(errno.ESTALE, why, folder or ".")
        self.folder = folder  # workspace-relative, "" for the root
        self.why = why


def split(rel: str) -> tuple[str, str]:
    """A workspace-relative path as (its folder, its name); the folder is "" at the root."""
    head, _, name = rel.rpartition("/")
    return head, name


class Folders:
    """The open folders of one apply, by workspace-relative path ("" is the root)."""

    def __init__(self, root: str, expect: dict[str, Identity] | None = None) -> None:
        self.root = root
        # What each folder must be: what it was when first opened here, or what a crashed
        # apply's journal recorded (`expect`), checked when it is opened.
        self.expect: dict[str, Identity] = dict(expect or {})
        self.fds: dict[str, int] = {}
        self.ids: dict[str, Identity] = {}
        self.stats: dict[str, os.stat_result] = {}  # as opened (owner, group, setgid bit)
        # For `check`, per folder: (parent's descriptor, name, identity, path) up to the root.
        self._chains: dict[str, list[tuple[int, str, Identity, str]]] = {}
        # The root itself may be reached through a symlink: the caller resolved it; only what
        # is below it is opened without following any.
        fd = os.open(root, _ROOT_FLAGS)
        self._keep("", fd)

    def _keep(self, rel: str, fd: int) -> None:
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        want = self.expect.get(rel)
        if want is not None and tuple(want) != ident:
            os.close(fd)
            raise FolderChanged(rel, f"folder {rel or '.'} is not the one the apply used")
        self.fds[rel] = fd
        self.ids[rel] = ident
        self.stats[rel] = st

    def open(self, rel: str) -> int:
        """The descriptor of folder `rel`, opened now if it is not yet (one open per folder).

        Raises FileNotFoundError when it does not exist, `FolderChanged` when a component is
        a symlink or not a folder, other OSErrors as the kernel gives them.
        """
        fd = self.fds.get(rel)
        if fd is not None:
            return fd
        parent, name = split(rel)
        pfd = self.open(parent)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise FolderChanged(rel, _what_is(pfd, name, rel)) from None
            raise
        self._keep(rel, fd)
        return fd

    def make(self, rel: str) -> int:
        """Create folder `rel` (its parent must exist here) and open it."""
        parent, name = split(rel)
        pfd = self.open(parent)
        try:
            os.mkdir(name, 0o777, dir_fd=pfd)
        except FileExistsError:
            pass  # made meanwhile: used if it is a folder (`open` refuses anything else)
        return self.open(rel)

    def check(self, rel: str) -> int:
        """The descriptor of folder `rel` after confirming that its name (and each parent's)
        still leads to the folder opened; `FolderChanged` if not."""
        fd = self.fds[rel]
        chain = self._chains.get(rel)
        if chain is None:
            chain = self._chains[rel] = []
            cur = rel
            while cur:
                parent, name = split(cur)
                chain.append((self.fds[parent], name, self.ids[cur], cur))
                cur = parent
        for pfd, name, ident, cur in chain:
            try:
                st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
            except FileNotFoundError:
                raise FolderChanged(cur, f"folder {cur} was moved or removed") from None
            if (st.st_dev, st.st_ino) != ident:
                raise FolderChanged(cur, _changed_why(cur, st))
        return fd

    def check_all(self) -> None:
        for rel in list(self.fds):
            self.check(rel)
        try:
            st = os.stat(self.root)
        except OSError:
            raise FolderChanged("", "the workspace folder was moved or removed") from None
        if (st.st_dev, st.st_ino) != self.ids[""]:
            raise FolderChanged("", "the workspace folder was replaced")

    def forget(self, rel: str) -> None:
        """Close and drop folder `rel` (it was removed)."""
        self._chains.clear()
        fd = self.fds.pop(rel, None)
        self.ids.pop(rel, None)
        self.stats.pop(rel, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        self.ids.clear()
        self._chains.clear()
        self.stats.clear()


def _changed_why(rel: str, st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return f"folder {rel} was replaced by a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return f"folder {rel} was replaced by a file"
    return f"folder {rel} was replaced by another folder"


def _what_is(pfd: int, name: str, rel: str) -> str:
    try:
        st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
    except OSError:
        return f"{rel} is not a folder"
    if stat.S_ISLNK(st.st_mode):
        return f"{rel} is a symbolic link, not a folder"
    return f"{rel} is a file, not a folder"
