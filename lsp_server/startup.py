"""Start-up speed tricks of the headless CLI, in one place, each with the A/B figure that keeps it.

A headless `agent-edit apply-patch` is a short-lived process: what it imports before it edits
anything is most of a small apply (bench/bench_startup.py). Each trick below changes only what
gets loaded or collected, never a value the engine computes, and holds no state of its own.

- `dataclasses_without_inspect`: dataclasses imports `inspect` (with ast, dis, tokenize and
  more) for one thing, the signature it writes as the docstring of a class that has none.
  bench/bench_startup.py --rounds 15 <this tree> <the same without the call>, alternating in
  one run (2 cores, load average 5.1, so the medians are loose; the fastest runs agree):
  imports 51.9 vs 78.5 ms median, 31.4 vs 38.7 ms fastest, 63 vs 74 modules; the whole
  process 59.5 vs 66.5 ms CPU (medians). Earlier, on a quieter machine: 27.7 vs 33.2 ms.
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
- `without_cyclic_gc`: the collector would only rescan the containers a large apply builds
  (one file's lines, one patch's chunks; none of them cyclic garbage), ~10% of a large apply
  when it was added (bench/bench_patch.py); the language server keeps the collector.
"""

from __future__ import annotations

import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from types import ModuleType

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


def dataclasses_without_inspect() -> None:
    """Import `dataclasses` with a stand-in for `inspect` that loads the real module on first use.

    The stand-in is in `sys.modules` only while `dataclasses` is imported: afterwards only
    dataclasses' own `inspect` name refers to it, and anyone's `import inspect` gets the real
    module. The stand-in's first attribute read (PEP 562 `__getattr__`) imports the real module
    and copies it in, so dataclasses, when it needs a signature, gets the real function.
    (stdlib's LazyLoader does not do: a second `import inspect` reads `__spec__` and loads it.)
    """
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        return
    stand_in = ModuleType("inspect")

    def load(name: str) -> Any:
        import inspect

        vars(stand_in).update(vars(inspect))
        return getattr(inspect, name)

    stand_in.__getattr__ = load  # type: ignore[method-assign]
    sys.modules["inspect"] = stand_in
    try:
        import dataclasses  # noqa: F401 - imported for the side effect: it is loaded now
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]


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
