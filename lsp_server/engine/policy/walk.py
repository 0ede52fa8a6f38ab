"""The walk: a path resolved the way the kernel would, every symbolic link followed (dangling
ones too), with what is at its end and whether a link chain left the workspace on the way.

`walk_path` takes the workspace test (`inside`) from its policy; a `WalkMemo` lets one batch of
paths walk each folder once. `check_file_type` refuses what a walk may end on but an edit must not
touch: directories, FIFOs, sockets and devices (reading a FIFO would hang the server), and
hard-linked files (an in-place save would write through to the other name).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from lsp_server.engine.errors import Code
from lsp_server.engine.policy.names import refuse

MAX_SYMLINK_HOPS = 40  # Linux MAXSYMLINKS


class Walk:
    """Where a walk ended: the real path, and the lstat of what is there (None if nothing)."""

    __slots__ = ("real", "st", "followed_link", "left_workspace")

    def __init__(
        self, real: str, st: os.stat_result | None, followed_link: bool, left_workspace: bool
    ) -> None:
        self.real = real
        self.st = st
        self.followed_link = followed_link
        self.left_workspace = left_workspace

    @property
    def exists(self) -> bool:
        return self.st is not None


# The state of a walk between two components: (current real path, symlinks followed, whether the
# walk has entered the workspace, whether a link chain left it again).
WalkState = tuple[str, int, bool, bool]
# What `resolve` may remember between calls of one batch: each folder's walk state.
WalkMemo = dict[str, WalkState]


def walk_path(
    path: str, given: str, argument: str, memo: WalkMemo | None, inside: Callable[[str], bool]
) -> Walk:
    """Resolve `path` as the kernel would, following every symlink, even dangling ones.

    Missing components are taken literally (a file to be created), but the walk goes on
    checking what exists after a `..`, so `missing/../link` still follows `link`.
    """
    if os.name == "nt":
        real = os.path.realpath(path)
        st = lstat(real)
        return Walk(real, st, real != os.path.normpath(path), False)
    state: WalkState = ("/", 0, False, False)
    head, sep, name = path.rpartition("/")
    if memo is not None and sep:
        # The components are taken from a stack and a symlink's target is pushed on top, so
        # the folder's components (and every link they lead through) are done before the
        # last name is looked at: walking the folder, then the name, is the same walk.
        cached = memo.get(head)
        if cached is None:
            cached = memo[head] = walk_steps(state, head.split("/"), given, argument, inside)
        if name not in ("", ".", ".."):
            # The last step inline, when it is a plain name: its lstat is the answer.
            folder, hops, _, left = cached
            nxt = os.path.join(folder, name)
            st = lstat(nxt)
            if st is None or not stat.S_ISLNK(st.st_mode):
                return Walk(nxt, st, hops > 0, left)
        state = walk_steps(cached, [name], given, argument, inside)
    else:
        state = walk_steps(state, path.split("/"), given, argument, inside)
    cur, hops, _, left = state
    return Walk(cur, lstat(cur), hops > 0, left)


def walk_steps(
    state: WalkState,
    components: list[str],
    given: str,
    argument: str,
    inside: Callable[[str], bool],
) -> WalkState:
    """Continue a walk from `state` through `components` (see `walk_path`)."""
    cur, hops, entered, left = state
    todo = components[::-1]
    while todo:
        comp = todo.pop()
        if comp in ("", "."):
            continue
        if comp == "..":
            cur = os.path.dirname(cur)
            continue
        nxt = os.path.join(cur, comp)
        try:
            st = os.lstat(nxt)
        except (OSError, ValueError):
            cur = nxt
            continue
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise refuse(
                    Code.DENIED,
                    "symlink-loop",
                    given,
                    f"goes through more than {MAX_SYMLINK_HOPS} symbolic links (a loop)",
                    argument,
                )
            # A chain that enters the workspace, steps outside through a link and comes back
            # could be re-pointed from outside between this check and the write.
            if entered and not inside(nxt):
                left = True
            try:
                target = os.readlink(nxt)
            except OSError:
                cur = nxt
                continue
            if target.startswith("/"):
                cur = "/"
            todo.extend(reversed(target.split("/")))
            continue
        cur = nxt
        if inside(cur):
            entered = True
    return cur, hops, entered, left


def check_file_type(st: os.stat_result, given: str, argument: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise refuse(
            Code.INVALID_ARGUMENT, "directory", given, "names a directory, not a file", argument
        )
    if not stat.S_ISREG(st.st_mode):
        raise refuse(
            Code.DENIED,
            "special-file",
            given,
            "is not a regular file (a FIFO, socket or device)",
            argument,
        )
    if st.st_nlink > 1:
        raise refuse(
            Code.DENIED,
            "hard-link",
            given,
            "is a hard link shared with another name, which an edit would change too",
            argument,
        )


def lstat(path: str) -> os.stat_result | None:
    """What is at `path` (a symlink itself, not its target), or None if nothing is."""
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None
