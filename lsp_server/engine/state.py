"""The per-workspace state folder: where it is, that it is outside the workspace, and making it.

One folder per workspace, shared by the disk writer (files.py: the apply journal and lock) and
the edit history (journal.py: the JSON-lines journal and its blobs), so both keep their state
for a workspace in one place: `<base>/workspaces/<name>-<sha256 of the real path>`, where
`<base>` is `$AGENT_EDIT_STATE_DIR` (tests use temporary folders) or platformdirs' user state
directory for agent-edit (`~/.local/state/agent-edit` on Linux).

Roots nested in one another share files, so each root with a state folder is listed under
the folders above it (`register_nested`), and a command finds the roots above and below its
own (`related_roots`) to take their locks too (files.workspace_lock).

The folder is never inside the workspace (it would be edited, committed and watched by the
editor): every way of naming it goes through `check_outside`. A folder that cannot be made or
written (full disk, unwritable base, a file where the folder should be) is an
`EditError(IO_ERROR)` that says which folder and what to do, never an `OSError` traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from lsp_server.engine import errors
from lsp_server.engine.digests import sha256
from lsp_server.engine.errors import EditError

ENV_STATE_DIR = "AGENT_EDIT_STATE_DIR"
APP_NAME = "agent-edit"


def user_state_base(env: Mapping[str, str] | None = None) -> str:
    """platformdirs' user state directory for agent-edit.

    On Linux this is platformdirs' XDG rule computed directly: importing platformdirs pulls in
    pathlib and urllib (~12 ms, a tenth of a small CLI run). Elsewhere platformdirs decides.
    """
    environ = os.environ if env is None else env
    if sys.platform.startswith("linux"):
        xdg = environ.get("XDG_STATE_HOME", "").strip()
        return os.path.join(xdg or os.path.expanduser("~/.local/state"), APP_NAME)
    from platformdirs import user_state_dir

    return user_state_dir(APP_NAME)


def state_base(env: Mapping[str, str] | None = None) -> str:
    """The base state directory: `$AGENT_EDIT_STATE_DIR`, else the user state directory."""
    environ = os.environ if env is None else env
    override = environ.get(ENV_STATE_DIR)
    if override:
        return os.path.expanduser(override)
    return user_state_base(environ)


def _is_within(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def check_outside(directory: str | os.PathLike[str], workspace: str | os.PathLike[str]) -> None:
    """Refuse (DENIED) a state folder that is, or would be once symlinks resolve, inside the
    workspace."""
    resolved = os.path.realpath(directory)
    root = os.path.realpath(workspace)
    if _is_within(resolved, root):
        raise errors.denied(
            f"The agent-edit state folder {resolved} would be inside the workspace {root}.",
            f"Point {ENV_STATE_DIR} (or the user state directory) outside the workspace.",
            rule="journal outside the workspace",
            path=resolved,
        )


def _digest(real: str) -> str:
    return sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def workspace_state_path(workspace: str | os.PathLike[str], base: str | None = None) -> str:
    """The workspace's state folder (not created), checked to be outside the workspace."""
    real = os.path.realpath(workspace)
    directory = _state_path(real, base or state_base())
    check_outside(directory, real)
    return directory


def _state_path(real: str, base: str) -> str:
    """`workspace_state_path` of a real path, unchecked (a folder above a root may well hold
    the state base: `/`, the home folder)."""
    name = _short(os.path.basename(real) or "root")
    return os.path.join(base, "workspaces", f"{name}-{_digest(real)}")


# The longest workspace name kept whole in its state folder's name: with "-" and the 16-digit
# hash that is 255 bytes, the longest file name Linux and macOS allow. A longer one (a folder
# named up to 255 bytes itself) made the state folder impossible to create: every command in
# that workspace, `read` too, was refused IO_ERROR with a hint about disk space.
_NAME_BYTES = 255 - 17


def _short(name: str) -> str:
    """`name` as it is, or cut (whole characters) to `_NAME_BYTES` bytes; the hash next to it
    tells workspaces apart. Names that fit keep their folder (an existing history)."""
    while len(name.encode("utf-8", "surrogateescape")) > _NAME_BYTES:
        name = name[:-1]
    return name


def make_dir(directory: str | os.PathLike[str]) -> str:
    """Create `directory` (private to the user) if needed; `OSError` when it cannot be made or
    written (for callers that have their own fallback, as the history's in-memory one)."""
    path = os.fspath(directory)
    if not os.path.isdir(path):
        os.makedirs(path, exist_ok=True)
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
        fsync_dir(os.path.dirname(path))
    if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(13, "Permission denied", path)
    return path


def ensure_dir(directory: str | os.PathLike[str]) -> str:
    """`make_dir`, with an IO_ERROR result that says what to do instead of the `OSError`."""
    try:
        return make_dir(directory)
    except OSError as exc:
        raise state_error(os.fspath(directory), exc) from None


def state_dir(root: str | os.PathLike[str]) -> str:
    """This workspace's state directory, created on demand, outside the workspace."""
    return ensure_dir(workspace_state_path(root))


def state_error(path: str, exc: OSError) -> EditError:
    """The result for a state folder (or a file in it) that cannot be made, read or written."""
    return errors.io_error(
        f"The agent-edit state folder {path} cannot be used ({exc.strerror or exc}).",
        "Free disk space or fix that folder's permissions (a file in its place must go), or "
        f"point {ENV_STATE_DIR} to a writable folder outside the workspace; then try again.",
        path=path,
        reason="STATE_DIR",
    )


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a new or renamed entry in `path` durable; not possible on every platform."""
    try:
        fd = os.open(os.fspath(path) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- nested workspace roots ------------------------------------------------------------------
# The lock and the apply journal are per root, and a file of `w/sub` is a file of `w` too: a
# command under `--root w` read (and edited) what an apply under `--root w/sub` had left
# half-done when it was killed, and applies under both could run at once. So each root with a
# state folder is listed under every folder above it (`<base>/nested/<hash of that folder>`,
# one JSON string a line, written once: `nested-registered` in its state folder says so), and a
# command takes the locks of the roots above and below its own that have a state folder, in
# one order (the shallowest first: no two commands wait for each other), and rolls back what
# an apply interrupted under those left (files.workspace_lock).

NESTED = "nested"
_REGISTERED = "nested-registered"


def _above(real: str) -> list[str]:
    """The folders that contain `real`, the shallowest (`/`) first."""
    out = []
    cur = real
    while (up := os.path.dirname(cur)) != cur:
        out.append(up)
        cur = up
    out.reverse()
    return out


def register_nested(real: str, sdir: str) -> None:
    """List root `real` (whose state folder `sdir` exists) under every folder above it, once.
    Before its locks are taken (`related_roots` after): a command on a root above it that has
    not seen it listed yet took its own lock first, which this root's command then waits for."""
    if os.path.exists(os.path.join(sdir, _REGISTERED)):
        return
    import json  # (once per root: the usual command finds the marker above)

    folder = os.path.join(os.path.dirname(os.path.dirname(sdir)), NESTED)
    make_dir(folder)
    line = (json.dumps(real) + "\n").encode("utf-8", "surrogateescape")
    for up in _above(real):
        fd = os.open(
            os.path.join(folder, _digest(up)), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600
        )
        try:
            os.write(fd, line)  # one write of one short line: never interleaved with another
            os.fsync(fd)
        finally:
            os.close(fd)
    fd = os.open(os.path.join(sdir, _REGISTERED), os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)


def related_roots(real: str, sdir: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The other roots above and below root `real` (state folder `sdir`) that have a state
    folder, with it: (above, below), each the shallowest first (the order their locks are
    taken in, with `real`'s own between them)."""
    base = os.path.dirname(os.path.dirname(sdir))
    above = []
    for up in _above(real):
        there = _state_path(up, base)
        if os.path.isdir(there):
            above.append((up, there))
    below: dict[str, str] = {}
    try:
        with open(os.path.join(base, NESTED, _digest(real)), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = b""
    if data:
        import json

        prefix = real.rstrip(os.sep) + os.sep
        for raw in data.splitlines():
            try:
                name = json.loads(raw.decode("utf-8", "surrogateescape"))
            except ValueError:
                continue  # a line cut short by a crash: its root lists itself again
            if not isinstance(name, str) or not name.startswith(prefix) or name in below:
                continue
            there = _state_path(name, base)
            if os.path.isdir(there):
                below[name] = there
    deeper = sorted(below.items(), key=lambda kv: (kv[0].count(os.sep), kv[0]))
    return above, deeper
