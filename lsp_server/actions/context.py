"""What an action needs from the front that runs it: the `Context` protocol (and its `Applier`).

The actions (read, replace, write, applyPatch, history, undo) are written once against this
protocol; each front gives them a context: the language server one over its open buffers and the
editor (lsp/server.py, lsp/editor_applier.py), the CLI and an editor-less MCP server a disk-only
one (actions/headless.py). A context belongs to one caller's `Session` (its reads): the server
makes one per session (`server.context(session)`), so an MCP client is its own agent.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, Protocol, TypeVar

    from lsp_server.actions.paths import Resolved
    from lsp_server.actions.session import Session
    from lsp_server.engine.errors import EditError
    from lsp_server.engine.history import History
    from lsp_server.engine.model import FileChange, Plan
    from lsp_server.engine.recovery import Recovery
    from lsp_server.engine.results import EditResult
    from lsp_server.engine.text import Snapshot

    T = TypeVar("T")
else:
    # The protocols below are for the type checker; at run time nothing checks against them,
    # and a CLI run does not import typing for them.
    Protocol = object


@dataclass
class Applied:
    """How an attempt ended: applied (no error), or its error, already rolled back if it can be.
    `held`: the editor has not shown every file yet; the applier settles the entry later
    (lsp/pending.py), so `execute` must not finish it now."""

    error: EditError | None = None
    held: bool = False


class Attempt(Protocol):
    """One plan on its way into the files, from the checks made before it is journalled to the
    report after it landed; `execute` calls these in order (actions/execute.py)."""

    @property
    def flushes_state(self) -> bool:
        """Whether the applier makes the state folder durable itself before it changes a file
        (the disk writer's one `syncfs`): then the history's `begin` record is not fsynced on
        its own first (execute.py)."""

    @property
    def runs_meanwhile(self) -> bool:
        """Whether `apply` calls the `meanwhile` it is given while it waits on the disk (the
        disk writer's `syncfs`), with nothing the plan's snapshots hold changing before then:
        `execute` then makes the result's diff there rather than before the history's
        `begin` (a wait the diff of a 1,000-file plan fits in)."""

    def check_dry_run(self) -> None:
        """Refuse a dry run the apply would refuse (a read-only folder), changing nothing."""

    async def prepare(self) -> Recovery | None:
        """Make ready what needs no editor (temporary files, the disk lock); what was rolled back
        of an interrupted apply on the way, for the history."""

    async def apply(self, edit_id: int, meanwhile: Callable[[], None] | None = None) -> Applied:
        """Apply and verify the plan (journalled as `edit_id`); roll back what landed of a
        failure it can roll back. `meanwhile` (only given when `runs_meanwhile`): called at
        most once, before `apply` returns, while the applier waits on the disk; it must not
        raise."""

    def abort(self) -> None:
        """Drop what `prepare` made and `apply` did not use (a no-op once committed)."""

    def landed(self, change: FileChange) -> tuple[int | None, int | None]:
        """The buffer version and open id the change's target shows now (None, None: on disk),
        once applied; the session's read token of it is refreshed from these."""

    async def report(self, result: EditResult) -> EditResult:
        """The success result completed: diagnostics, what was saved."""


class Applier(Protocol):
    def start(self, plan: Plan, where: dict[str, Resolved]) -> Attempt:
        """Check what can be checked before anything is journalled (a file whose last edit is
        unverified, an operation the editor cannot do): raises the EditError refusing it."""


class Settings(Protocol):
    @property
    def require_read(self) -> bool: ...


class Context(Protocol):
    """One caller's view of a workspace: paths, snapshots, the applier, history, lock, session."""

    @property
    def session(self) -> Session: ...
    @property
    def history(self) -> History: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def applier(self) -> Applier: ...
    @property
    def edit_lock(self) -> AbstractAsyncContextManager[Any]:
        """Held around planning and applying an edit: edits are served one at a time."""

    @property
    def max_file_bytes(self) -> int:
        """The size cap for edits (the policy's `maxFileBytes`): no file is read for an edit
        over it, nor written over it (actions/execute.py)."""

    def resolve(self, path: str, argument: str = "path") -> Resolved:
        """The path policy: the workspace file `path` names, or the EditError refusing it."""

    def snapshot(self, where: Resolved) -> Snapshot:
        """The file as the caller would see it now: the open buffer, else the disk."""

    def open_id(self, where: Resolved) -> int | None:
        """Which open of the file its buffer is (None: not open); a read token's version only
        holds within its open (actions/session.py)."""

    def read(self, where: Resolved) -> Snapshot:
        """`snapshot` for an agent's read (the editor front keeps hash marks for later edits)."""

    def plan_patch(self, patch: str, snapshot: Callable[[str], Snapshot]) -> Plan:
        """engine.patching.plan_patch over `snapshot`, with the context's own path rules (a
        Delete or Move source named by a symbolic link acts on the link: actions/links.py)."""

    def live(self, path: str) -> Snapshot | None:
        """What a history path shows now, or None when it cannot be read."""

    async def steps(self, gen: Generator[None, None, T]) -> T:
        """Run a history generator (`History.iter_*`) to its end, as the front can afford."""
