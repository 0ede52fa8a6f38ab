"""The one path every edit takes, whatever the front: journal -> apply -> verify -> rollback ->
record; and the one place a refused edit is recorded.

`execute` journals the plan (its pre-images on disk before any file changes), has the context's
applier apply and verify it (the editor's apply-and-verify, the atomic disk writer, or both for a
mixed edit), finishes the history entry with what happened, and refreshes the caller's read
tokens from what landed. A failure the applier could not roll back is reported as it is
(PARTIAL names what changed); an edit still unverified stays pending in the history.
"""

from __future__ import annotations

from lsp_server.actions.context import Applied, Attempt, Context
from lsp_server.actions.paths import Resolved
from lsp_server.engine import errors, recovery
from lsp_server.engine.diffing import plan_diff
from lsp_server.engine.errors import EditError
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.results import EditResult, success

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from lsp_server.engine.text import Snapshot


class Journalled(Exception):
    """An edit's failure that its history entry records already (begun, then finished or left
    pending): the refusal recorder must not record it again."""

    def __init__(self, error: EditError) -> None:
        super().__init__(error.message)
        self.error = error


async def execute(
    ctx: Context,
    action: str,
    args: dict[str, Any],
    changes: list[FileChange],
    where: dict[str, Resolved],
    dry_run: bool,
    undoes: int | None = None,
) -> EditResult:
    """Journal, apply, verify and record one plan; raises `Journalled` when it failed."""
    plan = Plan(action, tuple(changes))
    for r in list(where.values()):
        where.setdefault(r.rel, r)
    check_sizes(changes, ctx.max_file_bytes)
    attempt = ctx.applier.start(plan, where)
    if dry_run:
        attempt.check_dry_run()
        entry = ctx.history.record(action, args, plan=plan, outcome="dry-run")
        return success(entry.id, "dry-run", changes, diff=plan_diff(changes))
    # The diff is made now, from the lent line lists, before anything awaits the editor; or,
    # from the disk writer's own snapshots, while it waits on the disk (`runs_meanwhile`).
    later = attempt.runs_meanwhile
    diff = _Diff(changes, now=not later)
    try:
        try:
            done = await attempt.prepare()
        except EditError:
            raise  # the applier's own refusal (UNSUPPORTED, STALE...): nothing was begun
        except Exception as exc:  # noqa: BLE001 - any one the applier did not turn into its result
            raise unexpected(ctx, attempt, plan, exc) from None
        if done is not None:
            recovery.record(ctx.history, done)
        # The plan and its pre-images are on disk before any file changes: fsynced here, or
        # by the applier's own flush before its first change (the disk writer's syncfs).
        edit_id = ctx.history.begin(
            plan,
            args,
            undoes=undoes,
            diff=diff.made,
            sync=not attempt.flushes_state,
            diff_later=later,
        )
        try:
            applied = await attempt.apply(edit_id, diff.make if later else None)
        except EditError as err:
            # An applier that raised rather than returned its error (a rollback's re-read that
            # failed): the entry begun above records it, once, and is finished.
            applied = Applied(err)
        except Exception as exc:  # noqa: BLE001 - an OSError, a UnicodeError, a MemoryError...
            # One the applier did not turn into its result: settled now, from what the files
            # show, not left unfinished for the next start to settle.
            applied = Applied(unexpected(ctx, attempt, plan, exc))
        except KeyboardInterrupt as exc:
            # Ctrl-C in the CLI: the applier stopped (the disk writer rolled back what it left),
            # so the entry is settled from what the files show before the interrupt goes on.
            # Not a cancelled request (CancelledError): an editor may still apply what it was
            # sent, so that entry stays pending for what the files show later.
            settled = unexpected(ctx, attempt, plan, exc)
            if later:
                ctx.history.set_diff(edit_id, diff.text())
            ctx.history.finish(
                edit_id, str(settled.code), error=settled, committed=settled.committed
            )
            raise
    finally:
        attempt.abort()  # a no-op once committed
    if later:
        ctx.history.set_diff(edit_id, diff.text())
    if applied.error is not None:
        error = applied.error
        error.details["editId"] = edit_id
        if not applied.held:  # a held one is settled when the editor shows its files
            ctx.history.finish(edit_id, str(error.code), error=error, committed=recorded(error))
        raise Journalled(error)
    versions: dict[str, int | None] = {}
    for c in changes:
        if c.change == "delete":
            ctx.session.forget(c.path)
            continue
        version, opened = attempt.landed(c)
        if version is not None:
            versions[c.target_path] = version
        if c.change == "move":
            ctx.session.forget(c.path)
        ctx.session.saw(c.target_path, version, c.new_sha256, opened)
    ctx.history.finish(edit_id, "applied", versions=versions)
    return await attempt.report(success(edit_id, "applied", changes, versions, diff=diff.text()))


class _Diff:
    """A plan's whole diff (`plan_diff`), made `now` or by `make` (the applier's `meanwhile`),
    else when first asked for."""

    def __init__(self, changes: list[FileChange], now: bool) -> None:
        self.changes = changes
        self.made: str | None = plan_diff(changes) if now else None

    def make(self) -> None:
        if self.made is None:
            self.made = plan_diff(self.changes)

    def text(self) -> str:
        """The diff; asked for once the files may have changed, so never an exception (a bug
        in the diff must not turn an edit that landed into an error): a comment line then,
        as a cut diff has one."""
        try:
            self.make()
        except Exception as exc:  # noqa: BLE001 - reported in the diff itself
            self.made = f"# diff unavailable: {type(exc).__name__}: {exc}\n"
        assert self.made is not None
        return self.made


def check_sizes(changes: list[FileChange], cap: int) -> None:
    """Refuse (TOO_LARGE) a change whose new content would be over the size cap for edits.

    The cap refused reading such a file for an edit, but not writing one: an Add File or a
    `write` of 20 MB landed, and then its own undo (a delete: the file read first) and every
    later edit of it were refused TOO_LARGE, while the history called it undoable. The bound
    is cheap for the usual change (the file's size plus 4 bytes for each character the edits
    add, against the cap); only a change near the cap has its new text encoded to count."""
    for c in changes:
        if c.change == "delete":
            continue
        if c.new_text_override is None:
            before = c.before
            base = before.disk.size if before.disk is not None else _utf8_bound(before.text)
            added = sum(len(s) for e in c.edits for s in e.new_lines)
            if base + 4 * added <= cap:
                continue
        elif _utf8_bound(c.new_text_override) <= cap:
            continue
        size = len(c.new_text.encode("utf-8", "surrogatepass")) + (3 if c.bom else 0)
        if size > cap:
            raise errors.too_large(
                f"{c.target_path} would be {size:,} bytes after this edit, over the "
                f"{cap:,}-byte cap for edits (a file over it could not be edited, nor this "
                "edit undone, through agent-edit).",
                "Keep files edited through agent-edit under the cap: split the content into "
                "smaller files, or raise the agentEdit.maxFileBytes setting if this is "
                "intended.",
                path=c.target_path,
                size=size,
                cap=cap,
            )


def _utf8_bound(text: str) -> int:
    """At least the UTF-8 size of `text` with a BOM, in O(1): an ASCII text (CPython keeps
    that as a flag: no scan) is as long in UTF-8, another at most 4 bytes a character. A
    100k-line buffer (4.5 MB) is then no longer joined and encoded at every replace to be
    measured (issue 18: an O(edit) replace path)."""
    return (len(text) if text.isascii() else 4 * len(text)) + 3


def recorded(error: EditError) -> list[dict[str, Any]]:
    """The committed list the history keeps for a refused edit: what landed, the files that
    may be changed ("unknown": a rollback or the edit itself the editor has not answered yet),
    so undo is offered for them and checks what they show, never "changed nothing", and those
    that did not change ("not-applied"), which undo leaves alone."""
    committed = list(error.committed or [])
    listed = {c.get("path") for c in committed}
    files = error.details.get("files") or []
    known = [
        f for f in files if isinstance(f, dict) and f.get("state") in ("unknown", "not-applied")
    ]
    return committed + [f for f in known if f.get("path") not in listed]


def unexpected(ctx: Context, attempt: Attempt, plan: Plan, exc: BaseException) -> EditError:
    """The refusal of an attempt an exception stopped (an OSError, or any other that is not an
    EditError): what it made is rolled back where it can be (`abort`), then every file of the
    plan is looked at; "nothing was changed" only if each one shows its old content, else
    UNVERIFIED naming the files that may have changed (one that cannot be read among them)."""
    from lsp_server.engine.undo import plan_rollback  # only on this path: not a CLI's import

    try:
        attempt.abort()
    except (EditError, OSError):
        pass  # what is left shows in the files looked at below
    observed: dict[str, Snapshot] = {}
    for c in plan.changes:
        for p in dict.fromkeys((c.path, c.target_path)):
            try:
                seen = ctx.live(p)
            except (EditError, OSError):
                continue  # not seen: never counted as unchanged
            if seen is not None:
                observed[p] = seen
    states, _ = plan_rollback(plan, observed)
    if isinstance(exc, OSError):
        why = f"{exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}"
        stopped = "The operating system refused a step of the edit"
        fix = "Fix the cause (disk space, permissions, the device), then send the edit again."
    elif isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or a signal the CLI takes so
        why = str(exc) or "Ctrl-C"  # (the CLI names the signal: lsp_server/cli_signals.py)
        stopped = "The edit was stopped"
        fix = "Send the edit again if it is still wanted."
    else:
        why = f"{type(exc).__name__}{': ' + str(exc) if str(exc) else ''}"
        stopped = "An unexpected error stopped a step of the edit"
        fix = "Send the edit again; if it fails the same way, report this message."
    changed = [c["path"] for c in states if c["state"] != "not-applied"]
    if not changed:
        return errors.io_error(
            f"{stopped} ({why}); every file was seen as it was afterwards: nothing was changed.",
            fix,
            files=states,
        )
    return errors.unverified(
        f"{stopped} ({why}) after it began; these files may have changed: "
        f"{', '.join(changed)} (details.files says what each shows).",
        "Read those files and agentEdit.history for this editId, then undo it or finish it "
        "by hand; do not resend the whole edit.",
        files=states,
        unconfirmed=changed,
        committed=[c for c in states if c["state"] != "not-applied"],
    )


def refused(ctx: Context, action: str, raw: Any, err: EditError) -> None:
    """Record a refused edit (the agent's attempt is part of the record), once, here."""
    try:
        entry = ctx.history.record(action, raw if isinstance(raw, dict) else {}, error=err)
        err.details.setdefault("editId", entry.id)
    except Exception:  # noqa: BLE001 - a record failure must not hide the refusal
        import logging  # here: logging is a tenth of a headless command's imports

        logging.getLogger(__name__).exception("could not record a refused %s", action)
