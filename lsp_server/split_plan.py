"""Planning a large headless patch on two cores: the last file sections in a forked child.

Planning a patch of tens of thousands of lines is pure Python work, most of a large headless
apply, and one core does it while the other idles. `plan_patch` is `LinkRule.plan` with its
hunk planner swapped for `_Split.plan`: the patch is parsed once, in the parent, as always; then
the parent resolves and reads every file of the last `CHILD_SHARE` of the sections (through the
caller's snapshot callback, so the path policy and the link rule see each path exactly as in
order), forks, and plans the first sections while the child plans the rest over the snapshots
it inherited. The child sends back its edits (plain tuples, marshalled through a pipe); the
parent joins them to its own plan. The child reads no file (the snapshots are the parent's, so
the two halves cannot have read a file differently), writes nothing (no file, no journal; its
standard streams are /dev/null) and leaves with `os._exit`.

The result is always the one planning in order gives, because only this is joined:

- the patch has no CR, and every section after the cut is a plain Update File (no Add, Delete or
  Move to), named by its canonical workspace path (not `./a`, not through a symbolic link, not a
  path the policy refuses, not a missing file);
- no canonical path is named by both halves (the first half's move destinations included) or
  twice in the child's;
- neither half was refused, and the child answered in time with well-formed data.

Anything else (an error in either half, a child that died, timed out or answered garbage) is
`_InOrder`, and `plan_patch` plans the whole patch again in order, so every refusal is the one
sequential planning gives, with the same patch line. The child is killed and reaped on every
way out of `_Split.plan` (Ctrl-C and exceptions too), before the parent goes on.

Only the CLI's headless context uses it (`headless.open(..., fork_plans=True)`), for a patch of
at least `headless.SPLIT_PLAN_FROM_CHARS`: a short-lived single-threaded process. Never the
language server, nor an MCP server's disk context: forking a process that runs threads (or an
asyncio loop with a thread pool) is unsafe. Issue 15 keeps such process tricks out of engine/.

A/B on the 2-core bench machine, shared with other jobs (load average 2.2-2.6), 1,000 files x 5
chunks (46k patch lines):

- `bench/bench_ab.py --rounds 9 main WORKTREE`: 1021 -> 1010 ms wall (medians), per-round ratio
  median 0.993 (0.85-1.16); CPU 833 -> 867 ms (the child's included). `--workload big` (one
  section: never forks): ratio 1.049, where an A/A run of one revision gives 0.96-1.00. (Part
  of that was real: the context suspended `History.prestage` for the whole of this module's
  planning, so the big file's pack was no longer written while it was planned. Only the reads
  before the fork suspend it now, `before_fork`: `bench_ab.py --rounds 11 --workload big`
  94433f1 -> 3e62629, 200 -> 195 ms wall, and 173 ms once the pack's thread gets the GIL
  back sooner, startup.quick_thread_handoffs.)
- The planning alone (`HeadlessContext.plan_patch` timed in the CLI process, split against in
  order, same code, 9 alternating runs): 253 -> 216 ms (ratio 0.84); the whole process 1.00.
  Two reasons the gain does not reach the wall: other jobs leave little of a second core, and
  after the fork the parent pays copy-on-write for every old page it writes (minor faults
  30.3k -> 39.3k, medians of 7).
- Instructions (callgrind, fresh state each): in order 2,268 M; split, parent 2,126 M (-6.3%)
  and child ~180 M of its own (795 M counted, 615 M of them from before the fork): +1.7% in all.
  `bench_ab.py --instructions --rounds 1 main WORKTREE` counts the parent only: 2,244 -> 1,991 M
  (2,154 -> 2,103 M run in the other order: the first run of a state folder costs ~110 M more).

With the second core free (the other jobs done, load average 1.0), `bench/bench_ab.py --rounds
11 3b8bbcd WORKTREE` (3b8bbcd: main before it): 878 -> 836 ms wall (medians), per-round ratio
median 0.944 (0.83-1.01); CPU 797 -> 821 ms. So it earns its place on wall time where the second
core is free, at ~3% more CPU, and costs nothing measurable where it is not. Isolated at the
end of the session (a913a90 against the same tree with SPLIT_PLAN_FROM_CHARS = 1 << 62, load
1.1, `bench/bench_ab.py --rounds 11 /tmp/nosplit WORKTREE`): per-round wall ratio median
0.972 (0.80-1.05), CPU 1133 -> 1206 ms (+6%). Forking before the
parse (each process parsing and reading for itself, the parent comparing sha256) was tried and
was slower: 243 -> 396 ms for the planning (2f74dd1).
"""

from __future__ import annotations

import _thread
import marshal
import os
import time
from contextlib import nullcontext
from itertools import starmap

from lsp_server.engine.errors import EditError
from lsp_server.engine.model import FileChange, LineEdit, Plan
from lsp_server.engine.patching import plan_hunks
from lsp_server.engine.v4a import UpdateFile

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Any

    from lsp_server.actions.links import LinkRule
    from lsp_server.engine.text import Snapshot
    from lsp_server.engine.v4a import Patch

# The share of the sections (by patch line) the child plans: a little over half, as the parent
# also resolves and reads the child's files before the fork.
CHILD_SHARE = 0.55
# How long the parent waits for the child's answer once its own half is planned, beyond twice
# what its own half took: a child that takes longer is stuck or starved, and planning its half
# in order costs about what waiting would.
PATIENCE_S = 1.0
# The test hook: `TEST_HOOK(point, detail)` at "forked" (parent, the child's pid), "child" (in the
# child, before it plans), "joined" and "in order" (parent, why), so a test orders a race (a
# child killed, a Ctrl-C) without sleeps and sees what was decided.
TEST_HOOK: Callable[[str, Any], None] | None = None


class _InOrder(Exception):
    """The two halves cannot be joined exactly as planning in order would plan them."""


def plan_patch(
    rule: LinkRule,
    patch: str,
    snapshot: Callable[[str], Snapshot],
    before_fork: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> Plan:
    """`rule.plan(patch, snapshot)`, its last sections planned in a forked child when that
    gives the same plan; otherwise planned in order. The child's files are read inside
    `before_fork()`: there `snapshot` must start no thread (the headless context's prestaged
    pack); every other read is an in-order one."""
    if "\r" in patch or not hasattr(os, "fork") or _threads_running():
        return rule.plan(patch, snapshot)
    try:
        return rule.plan(patch, snapshot, _Split(rule, patch.count("\n"), before_fork).plan)
    except _InOrder as why:
        _hook("in order", str(why))
    return rule.plan(patch, snapshot)


def _threads_running() -> bool:
    """Whether another thread runs: a fork copies only the calling thread, and a lock another
    one holds (the allocator's, a C library's) would stay held in the child for ever. Counted
    by `_thread`, which also sees threads started without `threading` (the history's pack
    writer, `History.prestage`, starts one as a large file is read)."""
    return bool(_thread._count())


def _hook(point: str, detail: Any) -> None:
    hook = TEST_HOOK
    if hook is not None:
        hook(point, detail)


def _cut(hunks: Patch, lines: int) -> int | None:
    """The index of the first section the child plans, or None when there is no such cut."""
    at = int(lines * (1 - CHILD_SHARE))
    k = next((i for i, h in enumerate(hunks) if h.patch_line >= at), len(hunks))
    if k == 0 or k == len(hunks):
        return None
    return k


class _Split:
    """A hunk planner (`engine.patching.plan_hunks`'s signature) planning on two cores."""

    def __init__(
        self, rule: LinkRule, lines: int, before_fork: Callable[[], AbstractContextManager[None]]
    ) -> None:
        self.rule = rule
        self.lines = lines  # the patch's, to place the cut
        self.before_fork = before_fork  # around the reads made before the fork

    def plan(self, hunks: Patch, snap: Callable[[str], Snapshot]) -> Plan:
        k = _cut(hunks, self.lines)
        if k is None:
            return plan_hunks(hunks, snap)  # one process: exactly planning in order
        theirs = hunks[k:]
        if any(not isinstance(h, UpdateFile) or h.move_to is not None for h in theirs):
            _hook("in order", "an Add, Delete or Move after the cut")
            return plan_hunks(hunks, snap)  # nothing resolved yet: this is planning in order
        # Resolved and read here, before the fork: the path policy and the link rule see every
        # path in the parent (the order of these calls changes nothing they record), and the
        # child plans over the very snapshots the joined plan holds.
        try:
            with self.before_fork():
                snaps = [snap(h.path) for h in theirs]
        except EditError:
            raise _InOrder("a path after the cut was refused") from None
        for h, s in zip(theirs, snaps, strict=True):
            if s.path != h.path or not s.exists or self.rule.by_link(s.path):
                raise _InOrder(f"{h.path}: not a plain file named by its canonical path")
        if len({s.path for s in snaps}) != len(snaps):
            raise _InOrder("a path named twice after the cut")
        if _threads_running():  # started by these reads (a large file's prestaged pack)
            raise _InOrder("a thread runs: no fork")
        started = time.monotonic()
        child = _Child()
        try:
            child.start(theirs, snaps)
            _hook("forked", child.pid)
            named: set[str] = set()

            def mine(path: str) -> Snapshot:
                seen = snap(path)
                named.add(seen.path)
                return seen

            try:
                first = plan_hunks(hunks[:k], mine)
            except EditError:
                raise _InOrder("the first half was refused") from None
            if not named.isdisjoint(s.path for s in snaps):
                raise _InOrder("a path named on both sides of the cut")
            answer = child.answer(PATIENCE_S + 2 * (time.monotonic() - started))
        finally:
            child.close()
        plan = _join(first, hunks, snaps, answer)
        _hook("joined", k)
        return plan


class _Child:
    """A forked child planning the last sections: its pid and the read end of its pipe. Made
    before the fork, so the `finally` that closes it covers the fork itself."""

    def __init__(self) -> None:
        self.pid = 0  # not forked (yet)
        self.read_end = -1
        self.reaped = False

    def start(self, hunks: Patch, snaps: list[Snapshot]) -> None:
        """Fork the child planning `hunks` over `snaps`; `_InOrder` if no pipe or no process
        is to be had (EMFILE, EAGAIN under a pids limit, ENOMEM): planning in order needs
        neither.

        The signals the CLI stops on (`_stops`: Ctrl-C, SIGTERM, SIGHUP, SIGQUIT; a closing
        terminal and GNU `timeout` signal the whole process group, the child too) are blocked
        from before the fork until the pid is stored (the parent) or they are back to their
        default action (the child). Otherwise one during the fork (Linux restarts it, Python's
        handler has run) raises KeyboardInterrupt as `os.fork()` returns: in the parent
        before the pid is stored (the child then is neither killed nor reaped), in the child
        before its `try` (the parent's stack then unwinds in the child: the CLI's stop path
        writes to the shared stderr). Held back, the signal is delivered as the mask is
        restored: the parent's KeyboardInterrupt then finds the pid, and the child just ends."""
        import signal

        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _stops(signal))
        try:
            try:
                self.read_end, write_end = os.pipe()
            except OSError as exc:
                raise _InOrder(f"no pipe for a child: {exc.strerror or exc}") from None
            try:
                self.pid = os.fork()
            except BaseException as exc:
                os.close(write_end)
                if isinstance(exc, OSError):
                    raise _InOrder(f"no child: {exc.strerror or exc}") from None
                raise
            if self.pid == 0:  # pragma: no cover - the child (coverage does not follow forks)
                try:
                    os.close(self.read_end)
                    _quiet(mask)
                    _hook("child", "")
                    data = marshal.dumps(_child_answer(hunks, snaps))
                    view = memoryview(data)
                    while view:
                        view = view[os.write(write_end, view) :]
                    # The parent reads to the end of the pipe: closed now, not after the
                    # kernel has taken down this process's memory (exit frees it first).
                    os.close(write_end)
                finally:
                    # Whatever happened: no flush of inherited buffers, no exit handlers.
                    os._exit(0)
            os.close(write_end)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # the parent's; a Ctrl-C held lands

    def answer(self, patience: float) -> Any:
        """What the child sent, once it has exited; `_InOrder` if it sent nothing whole."""
        import select  # a large patch's only: a small CLI run never loads it

        # poll, not select: select refuses a descriptor numbered past FD_SETSIZE (1023), which
        # the pipe's is in a process that inherited a thousand.
        poller = select.poll()
        poller.register(self.read_end, select.POLLIN)
        parts = []
        deadline = time.monotonic() + patience
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(int(left * 1000) + 1):
                raise _InOrder("the child did not answer in time")
            part = os.read(self.read_end, 1 << 20)
            if not part:
                break
            parts.append(part)
        self.close()
        try:
            return marshal.loads(b"".join(parts))
        except (EOFError, ValueError, TypeError):
            raise _InOrder("the child answered nothing whole (killed?)") from None

    def close(self) -> None:
        """Kill the child (if it has not exited) and reap it: no zombie, no orphan."""
        if self.reaped:
            return
        self.reaped = True
        if self.read_end >= 0:
            os.close(self.read_end)
        if self.pid <= 0:
            return  # the fork failed (or was never reached)
        try:
            os.kill(self.pid, 9)  # SIGKILL (its number: no `signal` import for it)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _stops(signal: Any) -> set[int]:
    """The signals the CLI stops on (lsp_server/cli_signals.py), that this platform has."""
    names = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
    return {getattr(signal, n) for n in names if hasattr(signal, n)}


def _quiet(mask: Any) -> None:  # pragma: no cover - the child's
    """The child's standard streams on /dev/null (nothing it does can print), and a Ctrl-C at
    the terminal (or another stopping signal) ends it at once (the parent plans in order, or
    leaves): each to its default action (one the command was started with ignored stays
    ignored), then unblocked (`mask`: the signal mask from before the fork), so one that came
    since the fork ends it here."""
    import signal

    for sig in _stops(signal):
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


# What the child sends, as `marshal` data (exact str, int, tuple, list, dict and None; a str
# subclass, such as lark's tokens, is refused and the parent then plans in order): per section,
# its canonical path and its edits as (start, end, new_lines, offsets); then the lenient
# matches. None: its half was refused. marshal rather than pickle: built in, and it reads back
# only what our own child wrote.
def _child_answer(hunks: Patch, snaps: list[Snapshot]) -> Any:  # pragma: no cover - the child's
    by_path = {s.path: s for s in snaps}
    try:
        plan = plan_hunks(hunks, by_path.__getitem__)
    except EditError:
        return None  # the parent plans in order, to give the refusal in order planning gives
    files = [
        (c.path, [(e.start, e.end, e.new_lines, e.offsets) for e in c.edits]) for c in plan.changes
    ]
    return files, plan.summary.get("lenient", [])


def _join(first: Plan, hunks: Patch, snaps: list[Snapshot], answer: Any) -> Plan:
    """The plan of the whole patch: the parent's, then the child's sections over `snaps`, with
    the summary `plan_hunks` makes; `_InOrder` for an answer that does not fit."""
    if answer is None:
        raise _InOrder("the child's half was refused")
    try:
        files, lenient = answer
        if len(files) != len(snaps):
            raise _InOrder("the child planned another number of sections")
        changes = list(first.changes)
        for s, (path, edits) in zip(snaps, files, strict=True):
            if path != s.path:
                raise _InOrder("the child planned another file")
            # marshal gives back tuples as tuples: each item is LineEdit's own arguments.
            changes.append(FileChange("update", s, tuple(starmap(LineEdit, edits))))
        mine: Any = first.summary.get("lenient", ())
        lenient = [*mine, *lenient]
    except (TypeError, ValueError):
        raise _InOrder("the child's answer is malformed") from None
    summary: dict[str, object] = {
        "files": len(changes),
        "chunks": sum(len(h.chunks) for h in hunks if isinstance(h, UpdateFile)),
    }
    if lenient:
        summary["lenient"] = lenient
    if "combined" in first.summary:
        summary["combined"] = first.summary["combined"]
    return Plan(first.action, tuple(changes), summary)
