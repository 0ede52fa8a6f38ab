"""Rolling back an interrupted disk apply wherever a workspace's state is opened, said one way.

A disk apply killed between two renames leaves a half-applied tree and its journal (files.py).
Every entry point that opens a workspace's state (the CLI's `apply-patch`, `replace`, `history`
and `undo`, and a server start) first calls `recover`, so no command ever reads, plans on or
reports on a half-applied tree: it is rolled back, or, when it cannot be (the state folder is
unusable, a rollback step fails), the reason is reported. `message` is the one text every front
end shows for it (stderr, `window/showMessage`), and `record` puts it in the edit history so that
`history` shows what happened to the files rather than "no agent edits recorded".
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from lsp_server.engine import errors, files, state
from lsp_server.engine.errors import Code, EditError

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from lsp_server.engine.history import History

ACTION = "recover"
ROLLED_BACK = "rolled-back"
NAMES_SHOWN = 10  # a 400-file rollback is listed whole in `reports`, not in the message
APPLY_LOCK = "lock"  # files.workspace_lock's file: an apply holds it from its start to its end
BUSY = (
    "agent-edit: another agent-edit process is applying a patch in this workspace (or was "
    "stopped while it did); files may change until it ends. If it was killed, the next "
    "agent-edit command rolls it back."
)


@dataclass
class Recovery:
    """What `recover` did: the rollback reports (files.recover's), or why it could not."""

    reports: list[dict[str, Any]] = field(default_factory=list)
    error: EditError | None = None
    busy: bool = False  # an apply is running (not interrupted): nothing to roll back now

    def messages(self) -> list[str]:
        out = [message(r) for r in self.reports]
        if self.busy:
            out.append(BUSY)
        if self.error is not None:
            out.append(f"agent-edit: {self.error.code}: {self.error.message} {self.error.hint}")
        return out


def recover(root: str, locked: str | None = None, wait: bool = True) -> Recovery:
    """Roll back an apply interrupted in `root`; never raises (the error is in the result).
    `locked` is the state folder when the caller holds the workspace lock already. Without
    `wait` (a server start), an apply that holds the lock is running, not interrupted: `busy`
    says so at once instead of waiting for it (for ever, if that process was stopped)."""
    try:
        if locked is not None:
            return Recovery(files.recover_locked(root, locked))
        sdir = state.state_dir(root)  # IO_ERROR when it cannot be made: said by every caller
        if not _journal_in(sdir) and not any(
            _journal_in(other)
            for group in state.related_roots(os.path.realpath(root), sdir)
            for _, other in group
        ):
            # No apply began since the last one ended, here or under a workspace folder nested
            # in or around this one (files.workspace_lock): nothing to roll back, and no need
            # to wait for the lock (a server start must not wait for a running CLI apply).
            return Recovery()
        if not wait:
            return _recover_if_idle(root, sdir)
        return Recovery(files.recover(root))
    except EditError as err:  # the state folder cannot be made or used
        return Recovery(error=err)
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError):
        # An apply journal of the wrong shape that files.py did not set aside (`[]`, a
        # `blobSize` of 1e400): whether files hold new content is unknown, so say so and keep
        # refusing rather than crash every entry point or guess.
        path = os.path.join(locked or state.workspace_state_path(root), files.JOURNAL)
        return Recovery(
            error=errors.io_error(
                f"An interrupted apply's journal {path} cannot be read; nothing was rolled "
                "back and files it touched may hold new content.",
                "Inspect that file and the workspace (git status), then move the journal away.",
                path=path,
                reason="RECOVERY_FAILED",
            )
        )
    except OSError as exc:
        return Recovery(
            error=errors.io_error(
                f"An interrupted apply in this workspace could not be rolled back "
                f"({exc.strerror or exc}); its journal is kept and files may hold new content.",
                "Fix the cause (permissions, disk space), then run any agent-edit command in "
                "this workspace: it retries the rollback first and reports it.",
                path=exc.filename,
                reason="RECOVERY_FAILED",
            )
        )


def rollback_pending(sdir: str, pid: int | None) -> bool:
    """Whether the disk apply of the process `pid` may still be waiting for its rollback: an
    interrupted apply's journal is in the state folder `sdir` (its rollback failed, or another
    process holds the lock to do it) and it is that process's (or either pid is unknown).
    An unfinished history entry of that process is then not settled from the disk, which is
    half-way and will change when the rollback runs (settled PARTIAL now, it would say so for
    ever once every file is put back)."""
    try:
        with open(os.path.join(sdir, files.JOURNAL), "rb") as f:
            head = f.readline(1 << 20)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        header = json.loads(head)
    except ValueError:
        return True
    return pid is None or not isinstance(header, dict) or header.get("pid") in (pid, None)


def _journal_in(sdir: str) -> bool:
    journal = os.path.join(sdir, files.JOURNAL)
    return os.path.exists(journal) or os.path.exists(journal + ".tmp")


def _recover_if_idle(root: str, sdir: str) -> Recovery:
    """`files.recover` when no apply holds the workspace lock (nor that of a workspace folder
    nested in or around this one); `busy` when one does."""
    related: list[dict[str, Any]] = []
    try:
        with files.workspace_lock(root, wait=0.0, related=related) as held:
            return Recovery(related + files.recover_locked(root, held))
    except EditError as err:
        if err.details.get("reason") == "BUSY":
            return Recovery(related, busy=True)
        raise


def _names(paths: list[str]) -> str:
    shown = ", ".join(paths[:NAMES_SHOWN])
    more = len(paths) - NAMES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _unreadable(conflict: dict[str, Any]) -> bool:
    # files.recover's report for a journal it could not read and set aside by hand: nothing
    # was rolled back, and its path is the kept journal, not a workspace file.
    return "unreadable" in str(conflict.get("why", ""))


def message(report: dict[str, Any]) -> str:
    """The one-line text for a rollback report, as every front end shows it."""
    kept = [str(c.get("path")) for c in report.get("conflicts", []) if _unreadable(c)]
    if kept and not report.get("restored") and not report.get("removed"):
        return (
            f"agent-edit: could not roll back an interrupted apply: its journal is unreadable "
            f"(kept as {_names(kept)}); files it touched may hold new content: check them "
            "(git status)."
        )
    parts = []
    if report.get("restored"):
        parts.append(f"restored {len(report['restored'])} file(s): {_names(report['restored'])}")
    if report.get("removed"):
        parts.append(f"removed {len(report['removed'])} file(s): {_names(report['removed'])}")
    if report.get("conflicts"):
        left = [str(c.get("path")) for c in report["conflicts"]]
        parts.append(f"left alone (changed since): {_names(left)}")
    # The disk writer's report says what it could NOT do, too: never claim those were put back.
    if report.get("unreached"):
        gone = [f"{u.get('path')} ({u.get('why')})" for u in report["unreached"]]
        parts.append(
            f"NOT put back (their folder was replaced; the journal is kept): {_names(gone)}"
        )
    if report.get("failed"):
        failed = [f"{f.get('path')} ({f.get('why')})" for f in report["failed"]]
        parts.append(f"NOT put back yet (retried on the next run): {_names(failed)}")
    if report.get("leftBehind"):
        parts.append(f"temporary files left: {_names([str(p) for p in report['leftBehind']])}")
    incomplete = report.get("unreached") or report.get("failed")
    verb = "could not fully roll back" if incomplete else "rolled back"
    # One under a workspace folder nested in or around this one (files.workspace_lock): its
    # paths are relative to that folder.
    where = f" under the workspace folder {report['root']}" if report.get("root") else ""
    return (
        f"agent-edit: {verb} an interrupted apply{where} (pid {report.get('pid')}): "
        + ("; ".join(parts) or "nothing had changed yet")
        + "."
    )


def record(history: History, recovery: Recovery) -> None:
    """Put what `recover` did into the edit history (one entry per rollback or failure)."""
    for r in recovery.reports:
        paths = [*r.get("restored", []), *r.get("removed", [])]
        paths += [str(c.get("path")) for c in r.get("conflicts", []) if not _unreadable(c)]
        paths += [str(u.get("path")) for u in [*r.get("unreached", []), *r.get("failed", [])]]
        if r.get("root"):
            # Another workspace folder's files (nested in or around this one), relative to
            # it: said in the message, not listed as this workspace's files.
            paths = []
        history.record(
            ACTION,
            {
                "message": message(r),
                "pid": r.get("pid"),
                "startedAt": r.get("startedAt"),
                "restored": len(r.get("restored", [])),
                "removed": len(r.get("removed", [])),
                "conflicts": r.get("conflicts", []),
                "unreached": r.get("unreached", []),
                "failed": r.get("failed", []),
            },
            outcome=ROLLED_BACK
            if not (r.get("conflicts") or r.get("unreached") or r.get("failed"))
            else str(Code.PARTIAL),
            files=paths,
        )
    if recovery.error is not None:
        history.record(ACTION, {}, error=recovery.error)
