"""A disk-only `Context` (actions/context.py): the CLI's, and an MCP server's when no editor runs.

    async with headless.open(root) as ctx:
        result = await actions.run(ctx, "replace", {...})

`open` takes the workspace lock for the whole block (planning and applying are one step for any
other agent-edit process), first rolls back an apply that was interrupted in this workspace
(engine/recovery.py; it is recorded in the history, and its messages go to `notify`). The
history is the same journal the language server keeps, so the editor shows headless edits; it is
opened when an action first needs it (a read never does), and the entries a process that is gone
left unfinished are settled then. Files are read from disk and written
by the atomic disk writer (engine/files.py). A workspace that cannot be made ready (a state
folder that cannot be used, a rollback that fails) raises its `EditError`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass, replace

from lsp_server.actions.context import Applied
from lsp_server.actions.links import LinkRule
from lsp_server.actions.paths import Resolved
from lsp_server.actions.session import Session
from lsp_server.engine import files, recovery
from lsp_server.engine.errors import EditError
from lsp_server.engine.history import History, drive, open_history
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.policy import PathPolicy
from lsp_server.engine.results import EditResult
from lsp_server.engine.text import Snapshot

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


# From this size on, a context made with `fork_plans` plans a patch in two processes
# (lsp_server/split_plan.py, whose docstring has the A/B figure); below it, forking and the
# hand-over cost more than half the planning saves. Here, not there: a small patch never imports
# that module.
SPLIT_PLAN_FROM_CHARS = 256 * 1024
# How long a headless command waits for the workspace lock another process holds (an apply
# of thousands of files takes about a second), after saying so, before it is refused BUSY.
LOCK_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class HeadlessSettings:
    """The settings the actions read; headless, the defaults (there is no editor to set them)."""

    require_read: bool = True  # an overwrite needs `expect` (a read, in a session that reads)


@asynccontextmanager
async def open(  # the spelling every front calls: `headless.open(root)`
    root: str,
    session: Session | None = None,
    notify: Callable[[str], None] | None = None,
    fork_plans: bool = False,
    pause: Callable[[float], Awaitable[None]] | None = None,
) -> AsyncIterator[HeadlessContext]:
    """`fork_plans`: a large patch may be planned in a forked child (lsp_server/split_plan.py);
    only for a single-threaded process (the CLI), never one that runs threads or asyncio.
    `pause`: how a wait for the workspace lock pauses (an event loop's sleep, so the process
    answers its other requests meanwhile, and a cancelled call stops waiting with nothing
    touched); without, the wait sleeps in this thread (the CLI, which has nothing else to do)."""
    root = os.path.realpath(root)
    # A bounded wait, said at once: a process stopped while it held the lock must not hang
    # every later command without a word (engine/files.py).
    # What was rolled back under a workspace folder nested in or around this one (their
    # locks are held too: they share files), said and recorded with this one's.
    related: list[dict[str, Any]] = []
    async with _locked(root, notify, related, pause) as sdir:
        done = recovery.recover(root, sdir)
        done.reports[:0] = related
        for text in done.messages():
            if notify is not None:
                notify(text)
        if done.error is not None:
            raise done.error
        ctx = HeadlessContext(root, sdir, done, session or Session(), fork_plans)
        try:
            if done.reports:
                # Opened now, after the rollback, which it records: the history then says what
                # happened to the files before anything is planned on them (or read).
                ctx.load_history(done)
            yield ctx
        finally:
            ctx.applier.discard()
            ctx.close_history()


@asynccontextmanager
async def _locked(
    root: str,
    notify: Callable[[str], None] | None,
    related: list[dict[str, Any]],
    pause: Callable[[float], Awaitable[None]] | None,
) -> AsyncIterator[str]:
    """The workspace lock (files.workspace_lock) held for the block; each pause of its wait
    awaited with `pause` when given."""
    fds: list[int] = []
    steps = files.lock_steps(root, fds, wait=LOCK_WAIT_SECONDS, notify=notify, related=related)
    try:
        if pause is None:
            sdir = files.slept(steps)
        else:
            try:
                while True:
                    await pause(next(steps))
            except StopIteration as done:
                sdir = done.value
        yield sdir
    finally:
        steps.close()
        files.unlock(fds)


class HeadlessContext:
    """Disk snapshots through the path policy (`root` its only folder), the disk writer."""

    def __init__(
        self,
        root: str,
        sdir: str,
        done: recovery.Recovery,
        session: Session,
        fork_plans: bool = False,
    ) -> None:
        self.root = root
        self.session = session
        self.settings = HeadlessSettings()
        self.edit_lock = nullcontext()  # the workspace lock is held for the whole context
        self.recovered = done.reports  # what `open` rolled back (files.recover's reports)
        self._history: History | None = None
        self.policy = PathPolicy.from_settings([root]).compiled()
        self.applier = DiskApplier(root, sdir, self.recovered, lambda: self.history)
        # How each folder resolved (a patch names many files in few folders), for this context.
        self._walk_memo: dict[str, Any] = {}
        # Which names the patch being planned reached through a symbolic link (actions/links.py).
        self.links = LinkRule()
        self.fork_plans = fork_plans  # whether a large patch may be planned in a forked child
        self._prestage = True  # whether a snapshot for a plan starts History.prestage

    @property
    def history(self) -> History:
        """The workspace's history, opened when first asked for: what it records is in it
        then, and the entries a process that is gone left unfinished are settled.

        Not opened by a `read`, which records nothing: opening replays the whole journal, and
        a workspace whose history holds large edits made each read of a file (MCP's most
        common call, one context per call) pay for it. The CLI's `read` of a 100k-line file
        after 8 applies of 1,000 chunks to it: 0.28 s wall, json and change records ~60% of it.
        A rollback `open` made is recorded at once (`open` opens the history for it)."""
        if self._history is None:
            return self.load_history(None)
        return self._history

    def load_history(self, done: recovery.Recovery | None) -> History:
        """Open the history, record what `done` rolled back, settle what is left unfinished."""
        self._history = history = open_history(self.root)
        if done is not None:
            recovery.record(history, done)
        self._settle_unfinished(history)
        return history

    def close_history(self) -> None:
        """The history's prestaged pack and journal file let go of (if it was opened)."""
        history, self._history = self._history, None
        if history is not None:
            history.drop_prestaged()
            if history.journal is not None:
                history.journal.close()  # its held file: not left to a traceback's lifetime

    @property
    def max_file_bytes(self) -> int:
        return self.policy.max_file_bytes

    def resolve(self, path: str, argument: str = "path") -> Resolved:
        r = self.policy.resolve(path, argument=argument, memo=self._walk_memo)
        rel = self.policy.name_of(r)
        self.links.note(r, rel, several_roots=False)
        return Resolved(rel, r.abs_path)

    def snapshot(self, where: Resolved) -> Snapshot:
        snap = self.read(where)
        if self._prestage and snap.disk is not None and snap.link is None:
            # An edit is about to be planned on it: a large file's pre-image is written to
            # the history's blobs meanwhile, in a thread (History.prestage).
            self.history.prestage(where.rel, snap.disk.data)
        return snap

    def read(self, where: Resolved) -> Snapshot:
        """The file as it is on disk, for an agent's read (nothing is planned on it)."""
        return files.read_snapshot(self.root, where.rel, self.policy.max_file_bytes)

    def open_id(self, where: Resolved) -> int | None:
        return None  # nothing is open: a token is its sha256

    def plan_patch(self, patch: str, snapshot: Callable[[str], Snapshot]) -> Plan:
        """The plan of `patch`, as planned in order (a dry run's and an apply's alike)."""
        if self.fork_plans and len(patch) >= SPLIT_PLAN_FROM_CHARS:
            from lsp_server import split_plan  # a large patch's only

            return split_plan.plan_patch(self.links, patch, snapshot, self._without_prestage)
        return self.links.plan(patch, snapshot)

    @contextmanager
    def _without_prestage(self) -> Iterator[None]:
        """No pack thread started by the snapshots taken in the block: split_plan reads the
        child's files before it forks, and a fork copies only this thread (one started just
        before it is not even counted yet: it has not run). Only those reads: a patch planned
        in one process (one section: a large file's) keeps its prestaged pack."""
        self._prestage = False
        try:
            yield
        finally:
            self._prestage = True

    def live(self, path: str) -> Snapshot | None:
        try:
            return self.read(self.resolve(path))
        except EditError:
            return None

    async def steps(self, gen: Generator[None, None, T]) -> T:
        return drive(gen)  # nothing else to serve meanwhile

    def _settle_unfinished(self, history: History) -> None:
        """Entries begun by a process that died before it finished them: settled from the disk
        (after the rollback `open` made, the disk shows what landed; while a rollback is still
        pending, it does not yet: they wait for the run that completes it)."""
        for entry in history.unfinished():
            if recovery.rollback_pending(self.applier.sdir, entry.pid):
                continue
            observed = {p: s for p in entry.paths if (s := self.live(p)) is not None}
            try:
                history.recover(entry.id, observed)
            except EditError:
                continue  # left unfinished: the next opener tries again


@dataclass
class DiskApplier:
    """The `Applier` of a disk-only context: the atomic disk writer (engine/files.py)."""

    root: str
    sdir: str  # the state folder, its lock held by `open`
    recovered: list[dict[str, Any]]  # the context's: what was rolled back on the way
    # The context's history (opened when first asked for), whose begun entry holds the
    # plan's pre-images (`apply`).
    history: Callable[[], History]

    def start(self, plan: Plan, where: dict[str, Resolved]) -> DiskAttempt:
        return DiskAttempt(self.root, self.sdir, plan, self.recovered, self.history())

    def discard(self) -> None:
        """Nothing is made ahead of an apply (the writer cleans up after itself)."""


@dataclass
class DiskAttempt:
    """One plan through the disk writer, under the workspace lock the context holds."""

    root: str
    sdir: str
    plan: Plan
    recovered: list[dict[str, Any]]
    history: History

    @property
    def flushes_state(self) -> bool:
        """Whether the writer makes the state folder durable before it changes a file (one
        `syncfs`): the history's `begin` record then is not fsynced on its own (execute.py)."""
        return files.flushes_state(self.plan)

    @property
    def runs_meanwhile(self) -> bool:
        """With a `syncfs` to wait for (`flushes_state`): the writer runs `meanwhile` in this
        thread while another waits on the disk (files.apply_plan). The snapshots are the
        plan's own disk reads: nothing changes them."""
        return self.flushes_state

    def check_dry_run(self) -> None:
        # The folders' writability, as the apply checks it: a dry run and the apply refuse
        # alike (a read-only mount, an immutable folder).
        files.check_writable(self.root, self.plan)

    async def prepare(self) -> recovery.Recovery | None:
        return None  # `open` rolled back what was interrupted, under the lock still held

    async def apply(self, edit_id: int, meanwhile: Callable[[], None] | None = None) -> Applied:
        try:
            # The history stored the pre-images already (`begin`): the writer's apply journal
            # names that blob instead of holding a second copy.
            pack = self.history.pack_of(edit_id)
            self.recovered += files.apply_plan(
                self.root, self.plan, locked=self.sdir, meanwhile=meanwhile, pack=pack
            )
        except EditError as err:  # rolled back by the writer itself, or PARTIAL saying what
            return Applied(err)
        except BaseException:
            # One the writer did not turn into its result (an OSError, a UnicodeError, Ctrl-C):
            # what it left (temporary files, its journal, a file already renamed into place) is
            # rolled back now, under the lock still held, not at the next start; `execute` then
            # reports from what the files show.
            self.recovered += files.recover_locked(self.root, self.sdir)
            raise
        return Applied()

    def abort(self) -> None:
        pass  # the writer cleans up after itself

    def landed(self, change: FileChange) -> tuple[int | None, int | None]:
        return None, None  # on disk: no buffer, no version

    async def report(self, result: EditResult) -> EditResult:
        return replace(result, saved=True)  # on disk, an applied edit is saved by definition
