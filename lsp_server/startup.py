"""Start-up speed tricks of the headless CLI, in one place, each with the A/B figure that keeps it.

A headless `agent-edit apply-patch` is a short-lived process: what it imports before it edits
anything is most of a small apply (bench/bench_startup.py). Each trick below changes only what
gets loaded, compiled or collected, never a value the engine computes; the one that keeps state
(the code cache) keeps it in a file it checks before use and ignores when in doubt.

- `lean_dataclasses`: dataclasses imports `inspect` (with ast, dis, tokenize and
  more) for one thing, the signature it writes as the docstring of a class that has none.
  bench/bench_startup.py --rounds 15 <this tree> <the same without the call>, alternating in
  one run (2 cores, load average 5.1, so the medians are loose; the fastest runs agree):
  imports 51.9 vs 78.5 ms median, 31.4 vs 38.7 ms fastest, 63 vs 74 modules; the whole
  process 59.5 vs 66.5 ms CPU (medians). Earlier, on a quieter machine: 27.7 vs 33.2 ms.
  And `copy` (with weakref and _weakrefset), which dataclasses imports for `asdict`'s and
  `astuple`'s deep copies alone: bench/bench_startup.py --instructions --rounds 3, this tree
  with -> without the `copy` stand-in: 152.5 vs 155.8 M instructions past interpreter start
  (-2%), 3 modules fewer.
- `run_sync`: the CLI drives the async actions (lsp_server/actions) with one `send` instead of
  `asyncio.run`, which imports asyncio (selectors, sockets, ssl, concurrent.futures).
  bench/bench_startup.py, 12 rounds alternating in one run (load average 1.1), `asyncio.run`
  -> `run_sync`: imports 71.6 -> 44.8 ms (medians), 161 -> 94 modules; the whole process
  106.3 -> 71.3 ms wall, 101.6 -> 68.0 ms CPU.
- Not a function: the modules a headless edit loads name `typing` only for the type checker
  (`if TYPE_CHECKING:` with a module-level `TYPE_CHECKING = False`, aliases quoted, protocols
  plain classes at run time), and tests/cli/test_startup_imports.py keeps it so.
  bench/bench_startup.py --instructions --rounds 2, with -> without typing (6f66543 ->
  86179c5): 267.1 -> 248.5 M instructions past interpreter start (-7%), 107 -> 105 modules.
- `cache_dataclass_code`: dataclasses writes each generated method (`__init__`, `__eq__`,
  `__repr__`, a frozen class's `__setattr__`...) as source and compiles it with `exec` on every
  start: the ~36 dataclasses a headless edit imports cost a third of a small apply, most of it
  in `compile`. Their code objects are kept (marshal, keyed by the exact source text, as a .pyc
  keeps a module's) in the state base's `code/` folder; the classes are still made by
  dataclasses, from the same source, so each method is the one `exec` would have made.
  The file is trusted as a .pyc is: only the user's own, private, regular file (no link) of
  this bytecode version whose digest matches (tests/cli/test_startup_code_cache.py), and none
  in a state base inside the workspace (cli._code_cache_path: it is read before the journal's
  DENIED check); anything else is ignored and rewritten.
  bench/bench_startup.py --instructions --rounds 3 main -> this (a warm cache; the first run
  in a state base compiles and writes it): 283.6 -> 187.8 M instructions past interpreter
  start (-34%), the same 105 modules. With lean_pathlib,
  bench/bench_ab.py --instructions --rounds 3 main <this>: many 3162 -> 3056 M, big 1107 ->
  997 M (the first, cold run: 3174 and 1116 M, the compiles and the file's write).
- `lean_pathlib`: the history's journal names its files with `pathlib.Path`, and
  pathlib imports urllib.parse (with ipaddress) for `Path.as_uri` alone, which no command
  calls. bench/bench_startup.py --instructions --rounds 3, 71500ba -> this: 187.2 -> 176.3 M
  instructions past interpreter start (-6%), 3 modules fewer. And `fnmatch` (Path.glob and
  match), `ntpath` (PureWindowsPath) and `warnings` (deprecated methods), d6282cb -> 9f2c64a:
  158.1 -> 153.9 M (-3%), 3 modules fewer.
- `quick_thread_handoffs`: the CLI's IO threads (the history's pack writer above all) get
  the GIL back within 0.5 ms of each system call instead of 5 ms while the main thread plans.
  bench/bench_ab.py --rounds 11 --workload big, alternating in one run (load 0.6), 3e62629
  (the big file's pack prestaged again) -> fd0cba1 (this): 195 -> 173 ms wall, 190 -> 183 ms
  CPU (medians); the 1,000 files: per-round ratio median 0.980 (no cost).
- `without_cyclic_gc`: the collector would only rescan the containers a large apply builds
  (one file's lines, one patch's chunks; none of them cyclic garbage), ~10% of a large apply
  when it was added (bench/bench_patch.py); the language server keeps the collector.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from types import CodeType, ModuleType

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


def lean_dataclasses() -> bool:
    """Import `dataclasses` with stand-ins for `inspect` and `copy` that load the real module on
    first use; True when this call imported it (no dataclass was made before:
    `cache_dataclass_code` may follow), False when it was loaded already.

    The stand-ins are in `sys.modules` only while `dataclasses` is imported: afterwards only
    dataclasses' own `inspect` and `copy` names refer to them, and anyone's `import inspect` or
    `import copy` gets the real module. A stand-in's first attribute read (PEP 562
    `__getattr__`) imports the real module and copies it in, so dataclasses, when it needs a
    signature (`inspect.signature`) or a deep copy (`copy.deepcopy`, in `asdict`/`astuple`),
    gets the real function. (stdlib's LazyLoader does not do: a second `import inspect` reads
    `__spec__` and loads it.)
    """
    if "dataclasses" in sys.modules:
        return False
    with _standing_in_for("inspect"), _standing_in_for("copy"):
        import dataclasses  # noqa: F401 - imported for the side effect: it is loaded now
    return True


@contextmanager
def _standing_in_for(name: str) -> Iterator[None]:
    """A stand-in for the stdlib module `name` (unless it is loaded already: then the block
    imports with the real one) that loads the real module at its first attribute read."""
    if name in sys.modules:
        yield
        return
    stand_in = ModuleType(name)

    def load(attr: str) -> Any:
        if sys.modules.get(name) is stand_in:  # read inside the block: the real one from now on
            del sys.modules[name]
        real = __import__(name)
        vars(stand_in).update(vars(real))
        return getattr(real, attr)

    with _standing_in(stand_in, load):
        yield


@contextmanager
def _standing_in(stand_in: ModuleType, getattr_: Callable[[str], Any]) -> Iterator[None]:
    """`stand_in` (its attributes read through `getattr_`, PEP 562) in `sys.modules` under its
    name for the block alone: the module imported in it keeps a reference, nobody else does."""
    stand_in.__getattr__ = getattr_  # type: ignore[method-assign]
    sys.modules[stand_in.__name__] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(stand_in.__name__) is stand_in:
            del sys.modules[stand_in.__name__]


def lean_pathlib() -> None:
    """Import `pathlib` with stand-ins for what it imports but a command never uses:
    `urllib.parse` (and, through it, `ipaddress`), whose one function pathlib takes at import
    (`quote_from_bytes`, for `Path.as_uri`) imports the real module when first called and hands
    the call on; and `fnmatch` (`Path.glob`/`match`), `ntpath` (`PureWindowsPath`) and
    `warnings` (deprecated methods), which load the real module at their first attribute read,
    as `inspect` above. Each stand-in is in `sys.modules` only while pathlib is imported:
    anyone's `import urllib.parse` (or `fnmatch`...) gets the real module. (A pathlib that
    takes nothing from urllib at import, as later ones may, leaves that stand-in unused.)"""
    if "pathlib" in sys.modules:
        return
    with (
        _standing_in_for_urllib(),
        _standing_in_for("fnmatch"),
        _standing_in_for("ntpath"),
        _standing_in_for("warnings"),
    ):
        import pathlib  # noqa: F401 - imported for the side effect: it is loaded now


@contextmanager
def _standing_in_for_urllib() -> Iterator[None]:
    if "urllib.parse" in sys.modules:
        yield
        return
    stand_in = ModuleType("urllib.parse")

    def forward(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            import urllib.parse

            return getattr(urllib.parse, name)(*args, **kwargs)

        call.__name__ = call.__qualname__ = name
        return call

    with _standing_in(stand_in, forward):
        yield


# The code cache's file starts with this, then the interpreter's bytecode magic number, then the
# BLAKE2b-256 digest of the rest (a torn or altered file is ignored, never run), then marshal's
# bytes of {source text: code object}. BLAKE2b, not sha256: the ~170 KB file would be the one
# input of a one-line edit large enough to load OpenSSL (engine/digests.py), ~4 ms, while
# `_blake2` loads in ~0.3 ms and hashes it in ~0.3 ms. (Version 1 used sha256.)
_CODE_HEADER = b"agent-edit dataclass code 2\n"
# Entries kept across runs: every command's (~190 in all) and a few versions' worth; past it a
# run keeps only its own (old versions' methods do not pile up, nor the file's load time).
_CODE_LIMIT = 512


class _CodeCache:
    """What `dataclasses` execs, compiled once: its `exec` name is bound to `exec` here."""

    def __init__(self, path: str, known: dict[str, CodeType]) -> None:
        self.path = path
        self.known = known
        self.used: dict[str, CodeType] = {}
        self.compiled = 0  # sources this run compiled (the file is rewritten when any were)

    def exec(self, source: Any, globals: Any, locals: Any = None, /) -> None:
        if type(source) is str:
            code = self.known.get(source)
            if code is None:
                # As exec compiles a string: dataclasses.py has no __future__ flags to pass on,
                # and this module's (annotations) must not leak in: dont_inherit.
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.known[source] = code
                self.compiled += 1
            self.used[source] = code
            source = code
        exec(source, globals, locals)


_code_cache: _CodeCache | None = None


def _magic() -> bytes:
    # The import system's own module, always loaded (`import importlib._bootstrap_external`
    # is the same object, but imports the `importlib` package: 0.3 ms of a CLI run, and with
    # it `warnings`, bench/bench_startup.py `-X importtime`).
    import _frozen_importlib_external

    return _CODE_HEADER + _frozen_importlib_external.MAGIC_NUMBER


def _digest(body: bytes) -> bytes:
    """The code cache's digest of its table (32 bytes)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - a Python built without it: hashlib's own
        from hashlib import blake2b

    return bytes(blake2b(body, digest_size=32).digest())


def _load_code(path: str) -> dict[str, CodeType]:
    """The cache file's table, or {} when there is none or it is not one to trust: only a
    regular file (not a link) owned by this user and private to it (0600, as written), made by
    this bytecode version, whose digest matches."""
    # O_NONBLOCK: a FIFO put there would otherwise block the open (and every command's start)
    # until a writer came; opened, it is not a regular file, and ignored (as journal.py's).
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        getuid = getattr(os, "getuid", None)
        # As private as `save_dataclass_code` makes it (0600): a file others can read was not
        # written by it (a cloned repository's are 0644; tests/cli/test_startup_code_cache_
        # workspace.py).
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077:
            return {}
        if getuid is not None and st.st_uid != getuid():
            return {}
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return {}
    finally:
        os.close(fd)
    data = b"".join(chunks)
    magic = _magic()
    digest, body = data[len(magic) : len(magic) + 32], data[len(magic) + 32 :]
    if not data.startswith(magic) or _digest(body) != digest:
        return {}
    try:
        table = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return {}
    if type(table) is not dict:
        return {}
    return {k: v for k, v in table.items() if type(k) is str and type(v) is CodeType}


def cache_dataclass_code(path: str) -> None:
    """From now on, the dataclasses made in this process compile their methods at most once per
    `path` (the cache file; read now, written by `save_dataclass_code`). Only when
    `lean_dataclasses` said it imported dataclasses: a process that made some
    already (a test runner calling the CLI's `main`) keeps dataclasses as it is."""
    global _code_cache
    dataclasses = sys.modules["dataclasses"]
    if _code_cache is not None or "exec" in vars(dataclasses):
        return
    _code_cache = _CodeCache(path, _load_code(path))
    vars(dataclasses)["exec"] = _code_cache.exec


def save_dataclass_code(workspace: str) -> None:
    """Write the cache file if this run compiled anything: atomically (a temporary file, then
    a rename), private to the user, never inside `workspace`, and only in a state base that
    exists (the command made it; a usage error makes none). A cache that cannot be written
    costs the next run its compiles, nothing else: every error is ignored."""
    from lsp_server.engine import state
    from lsp_server.engine.errors import EditError

    cache = _code_cache
    if cache is None or not cache.compiled:
        return
    folder = os.path.dirname(cache.path)
    try:
        if not os.path.isdir(os.path.dirname(folder)):
            return
        state.check_outside(folder, workspace)
    except (EditError, OSError, ValueError):  # DENIED: the base is inside the workspace
        return
    table = cache.known if len(cache.known) <= _CODE_LIMIT else cache.used
    tmp = f"{cache.path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        body = marshal.dumps(table)  # ValueError: a constant marshal cannot write
        data = _magic() + _digest(body) + body
        state.make_dir(folder)
        fd = os.open(tmp, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, cache.path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    cache.compiled = 0


@contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the block (and back on after, if it was on: the
    CLI's `main` may be called in-process)."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def quick_thread_handoffs(interval_s: float = 0.0005) -> Iterator[None]:
    """The interpreter's switch interval at `interval_s` for the block (and back after: the
    CLI's `main` may be called in-process): how long a thread that wants the GIL waits before
    the running one is asked to let go of it.

    The CLI's threads are IO threads (the history's pack writer, the disk writer's few): each
    lets go of the GIL for a system call and needs it back for the few Python lines to the
    next one. With the default 5 ms, while the main thread plans, each of those steps waits
    up to 5 ms: the big file's prestaged pack (`History.prestage`: open, hash, write, fsync,
    rename, the folder's fsync) started ~14 ms after it was asked for and was still not done
    when `begin` needed it (a 3-6 ms wait there). A shorter interval costs the main thread
    nothing while no other thread waits (the request is only made by a waiting thread)."""
    was = sys.getswitchinterval()
    sys.setswitchinterval(interval_s)
    try:
        yield
    finally:
        # Kept in whole microseconds: one set under 1 us reads back as 0.0, which the setter
        # refuses; any positive value under 1 us puts back the same (0 us).
        sys.setswitchinterval(was or 1e-9)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Drive `coro` to its end without an event loop: a headless action (actions/headless.py)
    only ever awaits coroutines that return without suspending (disk IO is synchronous there),
    so one `send` runs it whole; one that does suspend is a bug, said as such.

    The CLI must drive the async actions, and `asyncio` (with its selectors, sockets, ssl
    checks and concurrent.futures) is a large share of what a short headless command imports.
    """
    try:
        coro.send(None)
    except StopIteration as stop:
        result: T = stop.value
        return result
    coro.close()
    raise RuntimeError("a headless action waited for an event loop; it must not")
