"""Editor discovery: how other processes (the MCP server, the CLI, a second language server) find
the agent-edit language server that an editor runs for a workspace, and reach it.

Each language server announces itself in a per-user runtime folder: one file per server, with its
pid (and the kernel's start time of that pid, so a reused pid is told apart), its workspace
folders, the editor's name and pid, a local endpoint (a Unix socket in the same folder, or a
127.0.0.1 port where sockets cannot be used) and a random token. The folder must be ours, 0700
and not a symbolic link; each file must be ours and 0600, else it is not trusted. A file whose
server is dead is ignored and removed, unless the editor it names still runs: that editor's
buffers (maybe unsaved) are still there, its open files unknown to whoever did not reach its
server, so the file is kept and listed as an orphan (`find`'s and `servers`' `orphans`: every
front refuses disk writes in its folders, peers.py) until that editor is gone too, or runs a new
agent-edit server (restarted: the new one knows what its editor has open, the old file goes).

Where: `$AGENT_EDIT_RUNTIME_DIR` (that folder alone), else `$XDG_RUNTIME_DIR/agent-edit`, else
`agent-edit-<uid>` in the temporary folder, which another user can make first (a shared /tmp).
When that folder cannot be trusted, servers announce in the fallback, `run` in agent-edit's user
state folder (engine/state.py: under the user's home, made 0700), and every looker looks there
too: both sides choose alike, so the CLI and `agent-edit mcp` still find the editor. When no
trusted folder exists at all, looking raises `DiscoveryError` (peers.py then refuses disk edits:
an editor may hold the file open, unseen). Finding servers is a directory listing or two plus a
small read per file: cheap enough for every CLI run (no asyncio, no pygls, `socket` only when
one is found).

The wire protocol on the endpoint: one JSON object per line each way,
`{token, session, action, args}` -> the action's result object (product.md 2.1).

Why this module is over 500 lines (~590): both sides of discovery, the server announcing and the
looker finding, share the rules of which folder and which files to trust (owner, mode, no link, a
pid's start time). Kept in one module, the two sides cannot come to choose differently.
"""

from __future__ import annotations

import json
import os
import stat
import time

from lsp_server.engine import processes

# No typing or dataclasses at run time: the CLI imports this module on every edit command.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

ENV_DIR = "AGENT_EDIT_RUNTIME_DIR"
MAX_ENTRY_BYTES = 64 * 1024
# Answers carry whole files (reads of up to the 10 MiB cap, JSON-escaped) and diffs.
MAX_LINE = 256 * 1024 * 1024
PREFIX = "server-"


class Unanswered(OSError):
    """The request was sent, but no usable answer came back (the server hung up, or answered
    something that is not a JSON object): it may have acted on it."""


def _answer(data: bytes) -> dict[str, Any]:
    """The answer line as an object. Called only after the request was sent: anything else is
    Unanswered, so a caller never takes an edit that may have landed for one that did not (and
    redoes it on disk, or says nothing was written)."""
    try:
        answer = json.loads(data)
    except ValueError:
        raise Unanswered("the server's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise Unanswered("the server's answer is not a JSON object")
    return answer


class DiscoveryError(Exception):
    """The runtime folder cannot be trusted (a symbolic link, another user's, too open)."""


class Entry:
    """One live server's announcement."""

    __slots__ = (
        "pid",
        "folders",
        "token",
        "endpoint",
        "editor",
        "editor_pid",
        "name",
        "folder",
        "started",
        "extra",
    )

    def __init__(
        self,
        pid: int,
        folders: tuple[str, ...],
        token: str,
        endpoint: dict[str, Any],
        editor: str = "",
        editor_pid: int | None = None,
        name: str = "",  # the announcement file's name in the runtime folder
        folder: str = "",  # the runtime folder
        started: float = 0.0,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.pid = pid
        self.folders = folders
        self.token = token
        self.endpoint = endpoint
        self.editor = editor
        self.editor_pid = editor_pid
        self.name = name
        self.folder = folder
        self.started = started
        self.extra: dict[str, Any] = extra or {}

    def __repr__(self) -> str:
        return f"Entry(pid={self.pid}, folders={self.folders}, editor={self.editor!r})"

    def describe(self) -> str:
        """The editor, as a person would recognise it: 'Neovim (pid 123)'."""
        who = self.editor or "an editor"
        pid = self.editor_pid if self.editor_pid else self.pid
        return f"{who} (pid {pid})"

    @property
    def history_root(self) -> str | None:
        """The workspace folder whose journal this server's history is."""
        h = self.extra.get("historyRoot")
        return h if isinstance(h, str) else None

    def holds(self, root: str) -> str | None:
        """The workspace folder of this server that holds `root` (real path), or None."""
        best = None
        for f in self.folders:
            if (root == f or root.startswith(f.rstrip("/") + "/")) and (
                best is None or len(f) > len(best)
            ):
                best = f
        return best

    def overlaps(self, root: str) -> bool:
        """A folder of this server holds `root`, or lies inside it."""
        return self.holds(root) is not None or any(
            f.startswith(root.rstrip("/") + "/") for f in self.folders
        )


def runtime_dir() -> str:
    """Where announcements live first: $AGENT_EDIT_RUNTIME_DIR, else $XDG_RUNTIME_DIR/agent-edit,
    else a per-user folder in the temporary directory (see `fallback_dir`)."""
    env = os.environ.get(ENV_DIR)
    if env:
        return env
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg):
        return os.path.join(xdg, "agent-edit")
    # tempfile.gettempdir's choice without importing tempfile (the CLI looks on every run).
    tmp = next(
        (d for k in ("TMPDIR", "TEMP", "TMP") if (d := os.environ.get(k)) and os.path.isdir(d)),
        "/tmp",
    )
    return os.path.join(tmp, f"agent-edit-{os.geteuid()}")


def fallback_dir() -> str | None:
    """Where announcements live when `runtime_dir` cannot be trusted: `run` in agent-edit's user
    state folder (private to the user, under the home); None when the runtime folder was set
    explicitly ($AGENT_EDIT_RUNTIME_DIR is used alone)."""
    if os.environ.get(ENV_DIR):
        return None
    from lsp_server.engine.state import state_base  # only here: not on every CLI run's path

    return os.path.join(state_base(), "run")


def _open_fallback(first: DiscoveryError, create: bool) -> tuple[str, int | None]:
    """The fallback folder (made, with its parents, when `create`) and its descriptor, after
    `first` refused the runtime folder; DiscoveryError naming both when it cannot be used."""
    fallback = fallback_dir()
    if fallback is None:
        raise first
    try:
        if create:
            try:
                os.makedirs(os.path.dirname(fallback), 0o700, exist_ok=True)
            except OSError as exc:
                raise DiscoveryError(f"cannot make {fallback}: {exc.strerror}") from None
        return fallback, open_dir(fallback, create)
    except DiscoveryError as exc:
        raise DiscoveryError(f"{first}; and the fallback: {exc}") from None


def announce_dir() -> str:
    """The folder this process announces in (made if needed, checked): the runtime folder, or
    the fallback when that cannot be trusted; DiscoveryError when neither can be."""
    path = runtime_dir()
    try:
        fd = open_dir(path, create=True)
    except DiscoveryError as exc:
        path, fd = _open_fallback(exc, create=True)
    assert fd is not None
    os.close(fd)
    return path


def open_dir(path: str, create: bool) -> int | None:
    """A descriptor of the runtime folder after checking it is ours, 0700 and not a link; None if
    it does not exist (and `create` is false)."""
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise DiscoveryError(f"cannot make the runtime folder {path}: {exc.strerror}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        # ELOOP / ENOTDIR: a symbolic link or not a folder.
        raise DiscoveryError(
            f"the runtime folder {path} is not a plain folder ({exc.strerror}); "
            "remove it so agent-edit can make its own"
        ) from None
    st = os.fstat(fd)
    problem = None
    if st.st_uid != os.geteuid():
        problem = f"it belongs to uid {st.st_uid}, not to you"
    elif st.st_mode & 0o077:
        problem = f"its mode is {stat.S_IMODE(st.st_mode):o}, open to other users (want 700)"
    if problem:
        os.close(fd)
        raise DiscoveryError(f"the runtime folder {path} is not trusted: {problem}")
    return fd


def _start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (Linux /proc), which tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # Field 22; the command name (field 2) is in parentheses and may contain anything.
    rest = data[data.rfind(b")") + 2 :].split()
    return rest[19].decode() if len(rest) > 19 else None


def _alive(pid: int, start: str | None) -> bool:
    if processes.probe(pid) != processes.OURS:
        return False  # gone, or another user's process: our server's pid was reused
    now = _start_time(pid)
    return start is None or now is None or now == start


def announce(
    folders: list[str],
    endpoint: dict[str, Any],
    token: str,
    editor: str = "",
    editor_pid: int | None = None,
    name: str | None = None,
    history_root: str | None = None,
    folder: str | None = None,
) -> tuple[str, str]:
    """Write this process's announcement atomically (0600) in `folder` (by default
    `announce_dir()`); its (runtime folder, file name). A `name` given again replaces that
    announcement (the workspace folders changed)."""
    path = folder or announce_dir()
    fd = open_dir(path, create=True)
    assert fd is not None
    pid = os.getpid()
    name = name or f"{PREFIX}{pid}-{os.urandom(4).hex()}.json"
    body = json.dumps(
        {
            "pid": pid,
            "start": _start_time(pid),
            "folders": [os.path.realpath(f) for f in folders],
            # The folder whose journal the server's history is (its first folder at start).
            "historyRoot": os.path.realpath(history_root or folders[0]) if folders else None,
            "endpoint": endpoint,
            "token": token,
            "editor": editor,
            "editorPid": editor_pid,
            "started": time.time(),
        }
    ).encode()
    tmp = f".{name}.{os.urandom(4).hex()}.tmp"
    try:
        out = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=fd,
        )
        try:
            os.write(out, body)
        finally:
            os.close(out)
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        raise
    finally:
        os.close(fd)
    return path, name


def remove(folder: str, name: str) -> None:
    """Remove an announcement and its socket (names inside `folder` only, never a path read
    from a file)."""
    try:
        fd = open_dir(folder, create=False)
    except DiscoveryError:
        return
    if fd is None:
        return
    try:
        for n in (name, name[: -len(".json")] + ".sock" if name.endswith(".json") else None):
            if n:
                try:
                    os.unlink(n, dir_fd=fd)
                except OSError:
                    pass
    finally:
        os.close(fd)


def alive(entry: Entry) -> bool:
    """The entry's server still runs (its pid, with the start time it announced)."""
    return _alive(entry.pid, entry.extra.get("start"))


def _read_entry(
    fd: int, name: str, folder: str, orphans: list[Entry] | None = None
) -> Entry | None:
    """The announcement `name` if it is ours, 0600, well formed and its server lives; None
    otherwise. A dead or reused pid's file is removed, but while the editor it names runs (an
    orphan: added to `orphans`)."""
    try:
        f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fd)
    except OSError:
        return None
    try:
        st = os.fstat(f)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & 0o077
            or st.st_size > MAX_ENTRY_BYTES
        ):
            return None
        data = os.read(f, MAX_ENTRY_BYTES + 1)
    finally:
        os.close(f)
    try:
        raw = json.loads(data)
        pid = raw["pid"]
        folders = raw["folders"]
        token = raw["token"]
        endpoint = raw["endpoint"]
        if (
            not isinstance(pid, int)
            or isinstance(pid, bool)
            or pid <= 0
            or not isinstance(token, str)
            or len(token) < 32
            or not isinstance(folders, list)
            or not all(isinstance(x, str) and os.path.isabs(x) for x in folders)
            or not isinstance(endpoint, dict)
        ):
            return None
    except (ValueError, KeyError, TypeError):
        return None
    start = raw.get("start") if isinstance(raw.get("start"), str) else None
    editor_pid = raw.get("editorPid")
    entry = Entry(
        pid=pid,
        folders=tuple(folders),
        token=token,
        endpoint=endpoint,
        editor=str(raw.get("editor") or ""),
        editor_pid=editor_pid if isinstance(editor_pid, int) and editor_pid > 0 else None,
        name=name,
        folder=folder,
        started=float(raw.get("started") or 0),
        extra={
            "start": start,
            "historyRoot": raw.get("historyRoot")
            if isinstance(raw.get("historyRoot"), str)
            else (folders[0] if folders else None),
        },
    )
    if _alive(pid, start):
        return entry
    if entry.editor_pid is not None and processes.probe(entry.editor_pid) != processes.NONE:
        if orphans is not None:  # its server is gone, its editor (and buffers) not: kept
            orphans.append(entry)
    else:
        remove(folder, name)
    return None


def servers(orphans: list[Entry] | None = None) -> list[Entry]:
    """Every live server announced in the runtime folder and the fallback (none where they do
    not exist), but this process. A runtime folder that cannot be trusted is not read (its
    files could point anywhere); when the fallback cannot be used either, DiscoveryError: no
    trusted folder. `orphans` gets the orphans (see the module docstring) that no live server
    of the same editor process has taken over (a restarted server knows what its editor has
    open: the old file is removed then)."""
    out: list[Entry] = []
    seen: list[Entry] = []
    first = runtime_dir()
    fd: int | None
    try:
        fd = open_dir(first, create=False)
    except DiscoveryError as exc:
        # Made now if missing: a private folder a server could have announced in exists.
        made, fd = _open_fallback(exc, create=True)
        out = _listed(fd, made, seen)
    else:
        if fd is not None:
            out = _listed(fd, first, seen)
        # A server that saw the runtime folder untrusted when it started announced here.
        fallback = fallback_dir()
        if fallback is not None and fallback != first:
            try:
                fd = open_dir(fallback, create=False)
            except DiscoveryError:
                fd = None  # the runtime folder is trusted: no server of ours chose this one
            out += _listed(fd, fallback, seen)
    editors = {e.editor_pid for e in out if e.editor_pid is not None}
    for orphan in seen:
        if orphan.editor_pid in editors:
            remove(orphan.folder, orphan.name)
        elif orphans is not None:
            orphans.append(orphan)
    me = os.getpid()
    return [e for e in out if e.pid != me]


def _listed(fd: int | None, folder: str, orphans: list[Entry]) -> list[Entry]:
    """The live servers announced in the open folder `fd` (closed here), this one's too."""
    if fd is None:
        return []
    try:
        names = [n for n in os.listdir(fd) if n.startswith(PREFIX) and n.endswith(".json")]
        return [e for n in names if (e := _read_entry(fd, n, folder, orphans)) is not None]
    finally:
        os.close(fd)


def find(root: str, orphans: list[Entry] | None = None) -> Entry | None:
    """The live server whose workspace holds `root` (the innermost folder; the newest server on
    a tie), or None. `orphans` gets the announcements whose server is dead while their editor
    runs and whose workspace holds `root` or lies in it."""
    real = os.path.realpath(root)
    best: tuple[int, float, Entry] | None = None
    seen: list[Entry] | None = [] if orphans is not None else None
    live = servers(seen)
    if orphans is not None and seen:
        orphans += [e for e in seen if e.overlaps(real)]
    for e in live:
        f = e.holds(real)
        if f is not None and (best is None or (len(f), e.started) > best[:2]):
            best = (len(f), e.started, e)
    return best[2] if best else None


def socket_path(entry: Entry) -> str | None:
    """The Unix socket of an entry: a bare name inside the runtime folder, nothing else."""
    name = entry.endpoint.get("unix")
    if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
        return None
    return os.path.join(entry.folder, name)


class Stopped(Unanswered):
    """The caller gave up waiting for the answer (`request`'s `cut`) after the request had gone
    out: the server may have acted on it."""


# How often `request` asks its `cut` while it waits for an answer.
CUT_POLL_S = 0.1


def request(
    entry: Entry,
    payload: dict[str, Any],
    timeout: float = 60.0,
    on_send: Callable[[], None] | None = None,
    cut: Callable[[], float | None] | None = None,
) -> dict[str, Any]:
    """Send one request to a server's endpoint and return its answer (blocking; the CLI's way).

    Raises OSError when the server cannot be reached or hangs up without an answer.

    `on_send()` is called right before the request begins to go out: from there the server may
    have it whole and act on it, whatever becomes of this process. `cut()`, asked every
    CUT_POLL_S while the answer is awaited, is the time (`time.monotonic`) by which the caller
    gives up waiting (a signal came: cli_signals.py), or None: past it, `Stopped`."""
    import socket

    sock_path = socket_path(entry)
    if sock_path is not None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address: Any = sock_path
    else:
        port = entry.endpoint.get("port")
        if not isinstance(port, int):
            raise OSError("the announcement names no endpoint")
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        address = ("127.0.0.1", port)
    data = json.dumps({"token": entry.token, **payload}).encode() + b"\n"
    with s:
        s.settimeout(timeout)
        s.connect(address)
        if on_send is not None:
            on_send()
        s.sendall(data)
        end = time.monotonic() + timeout
        chunks = []
        size = 0
        try:
            while True:
                given_up = cut() if cut is not None else None
                left = (end if given_up is None else min(end, given_up)) - time.monotonic()
                if left <= 0 and given_up is not None and given_up <= end:
                    raise Stopped("the caller stopped waiting for its answer")
                if left <= 0:
                    raise TimeoutError("timed out")
                s.settimeout(min(left, CUT_POLL_S) if cut is not None else left)
                try:
                    chunk = s.recv(1 << 20)
                except TimeoutError:
                    if cut is not None:
                        continue  # (ask `cut` again)
                    raise
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if chunk.endswith(b"\n") or size > MAX_LINE:
                    break
        except Stopped:
            raise
        except OSError as exc:
            raise Unanswered(f"the server hung up without an answer ({exc})") from None
    data = b"".join(chunks)
    if not data.endswith(b"\n"):
        raise Unanswered("the server hung up without an answer")
    return _answer(data)


async def arequest(
    entry: Entry, payload: dict[str, Any], timeout: float | None = None
) -> dict[str, Any]:
    """`request` for asyncio callers (the MCP front, a language server asking another)."""
    import asyncio

    async def go() -> dict[str, Any]:
        sock_path = socket_path(entry)
        if sock_path is not None:
            reader, writer = await asyncio.open_unix_connection(sock_path, limit=MAX_LINE)
        else:
            port = entry.endpoint.get("port")
            if not isinstance(port, int):
                raise OSError("the announcement names no endpoint")
            reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=MAX_LINE)
        try:
            writer.write(json.dumps({"token": entry.token, **payload}).encode() + b"\n")
            await writer.drain()
            try:
                line = await reader.readline()
            except (OSError, ValueError) as exc:  # ValueError: longer than MAX_LINE
                raise Unanswered(f"the server hung up without an answer ({exc})") from None
        finally:
            writer.close()
        if not line.endswith(b"\n"):
            raise Unanswered("the server hung up without an answer")
        return _answer(line)

    if timeout is None:
        return await go()
    return await asyncio.wait_for(go(), timeout)
