"""The `agent-edit` command line: `serve` runs the language server; the rest edit files on disk.

    agent-edit serve
    agent-edit --version
    agent-edit apply-patch [--root DIR] [--dry-run] [--json] PATCH|-
    agent-edit replace [--root DIR] [--dry-run] [--json] [--replace-all] [--expect-sha256 H]
                       PATH OLD NEW
    agent-edit history [--root DIR] [--json] [--diff] [--edit ID]
    agent-edit undo [--root DIR] [--dry-run] [--json] ID

`history` and `undo` read the workspace's edit history, the journal the language server keeps
(an undo is recorded there too); headless applies are not recorded, to keep them fast.

OLD and NEW may be `@file` to read the text from a file (`@@x` is the literal text `@x`).
Output is a short summary and the diff, or with `--json` exactly the result object of product.md
2.1 (plus `recovered` when an interrupted earlier apply was rolled back first). Exit status: 0
success, 1 the edit was refused or failed (the result says what, if anything, changed), 2 usage
error. Writes go through engine/files.py: atomic across files, journalled, rolled back after a
crash. Every command (`history` too) first rolls back an apply that was interrupted in this
workspace (even with --dry-run: a half-applied tree is no base for a plan, nor for a report),
says so on stderr (engine/recovery.py's message) and, for `history` and `undo`, records it in the
history. A state folder that cannot be made or used is an IO_ERROR result, never a traceback.
Environment: AGENT_EDIT_STATE_DIR moves the journal's state directory (default: the user state
dir, outside the workspace); AGENT_EDIT_CRASH_AFTER=N is a test hook (engine/files.py).

Every path must resolve (symlinks followed) inside `--root` (default: the current directory);
`.git` is never edited. A Delete File, or the source of a Move, named by a symbolic link removes
the link itself, never the file it points to (`_on_links`). The LSP layer is imported lazily
inside `serve`, so headless commands start fast and never load pygls.
"""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from lsp_server.engine.model import Plan
    from lsp_server.engine.text import LinkRead, Snapshot

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="agent-edit",
        description="Apply coding agents' edits safely: a language server and a headless CLI.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the language server on stdio (what editors start)")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--root", default=".", help="workspace folder (default: current dir)")
        p.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
        p.add_argument("--json", action="store_true", help="print the result object as JSON")

    ap = sub.add_parser(
        "apply-patch",
        help="apply a V4A patch (*** Begin Patch ... *** End Patch), all files or none",
    )
    common(ap)
    ap.add_argument("patch", metavar="PATCH", help="patch file, or - for stdin")

    rp = sub.add_parser("replace", help="replace OLD with NEW in PATH (exactly one match)")
    common(rp)
    rp.add_argument("--replace-all", action="store_true", help="replace every occurrence")
    rp.add_argument("--expect-sha256", metavar="H", help="refuse unless the file has this sha256")
    rp.add_argument("path", metavar="PATH")
    rp.add_argument("old", metavar="OLD", help="text to find, or @file")
    rp.add_argument("new", metavar="NEW", help="replacement text, or @file")

    hp = sub.add_parser("history", help="show the workspace's agent edits and the net diff")
    hp.add_argument("--root", default=".", help="workspace folder (default: current dir)")
    hp.add_argument("--json", action="store_true", help="print the history object as JSON")
    hp.add_argument("--diff", action="store_true", help="print the diffs")
    hp.add_argument("--edit", type=int, metavar="ID", help="only this edit")

    up = sub.add_parser("undo", help="revert one edit, if its lines are still as it left them")
    common(up)
    up.add_argument("edit_id", metavar="ID", type=int)
    return parser


def _plain_apply_patch(argv: list[str]) -> Any:
    """The arguments of a plain `apply-patch [--root DIR] [--dry-run] [--json] PATCH`, or None.

    argparse (with the gettext, locale and shutil it imports to build a parser) is a tenth of
    a small apply's run; the usual command line is read here, exactly as argparse would read
    it. Anything else (help, `--opt=value`, abbreviations, errors) goes to argparse.
    """
    if not argv or argv[0] != "apply-patch":
        return None
    args = SimpleNamespace(command="apply-patch", root=".", dry_run=False, json=False, patch=None)
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "--dry-run":
            args.dry_run = True
        elif arg == "--json":
            args.json = True
        elif arg == "--root":
            value = next(rest, None)
            if value is None or value.startswith("-"):
                return None
            args.root = value
        elif (arg == "-" or not arg.startswith("-")) and args.patch is None:
            args.patch = arg
        else:
            return None
    return args if args.patch is not None else None


def main(argv: list[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        from lsp_server.version import main as version

        return version()
    args = _plain_apply_patch(sys.argv[1:] if argv is None else argv)
    if args is None:
        args = build_parser().parse_args(argv)
    if args.command == "serve":
        from lsp_server.lsp.server import serve

        serve()
        return EXIT_OK
    from lsp_server import startup

    startup.dataclasses_without_inspect()
    try:
        with startup.without_cyclic_gc():
            return _run_edit(args)
    except UsageError as exc:
        sys.stderr.write(f"agent-edit: error: {exc}\n")
        return EXIT_USAGE


def _run_edit(args: argparse.Namespace) -> int:
    from lsp_server.engine import files
    from lsp_server.engine.errors import EditError

    _WALK_MEMO.clear()
    _VIA_LINK.clear()
    root = os.path.realpath(args.root)
    if not os.path.isdir(root):
        raise UsageError(f"--root {args.root} is not a directory")
    if args.command == "history":
        return _run_history(root, args)
    summary: dict[str, Any]
    if args.command == "apply-patch":
        patch_text = _read_text(args.patch, "PATCH")
        summary = {"patch": patch_text}
    elif args.command == "replace":
        old, new = _arg_text(args.old, "OLD"), _arg_text(args.new, "NEW")
        summary = {"path": args.path, "oldText": old, "newText": new}
    else:
        summary = {"editId": args.edit_id}
    action = {"apply-patch": "applyPatch", "replace": "replace", "undo": "undo"}[args.command]
    # Only `undo` loads the workspace history: replaying a long journal on every headless apply
    # cost seconds per run (bench/bench_patch.py), and the history is the editor session's.
    history = None
    recovered: list[dict[str, Any]] = []
    edit_id: int | None = None
    try:
        if args.command == "apply-patch" and not args.dry_run:
            plan, diff = _apply_patch(root, patch_text, recovered)
            return _succeed(plan, edit_id, args, recovered, diff)
        recovered = _recover(root)
        if args.command == "undo":
            from lsp_server.engine.history import open_history

            # Opened after the rollback, which it records: the history then says what
            # happened to the files before the undo is planned.
            history = open_history(root)
            _record_recovery(history, recovered)
        if args.command == "apply-patch":
            from lsp_server.engine.patching import plan_patch

            plan = _on_links(plan_patch(patch_text, lambda p: _snapshot(root, p)))
        elif args.command == "replace":
            plan = _plan_replace(root, args, old, new)
        else:
            assert history is not None
            current = {p: _snapshot(root, p) for p in history.undo_paths(args.edit_id)}
            plan = history.plan_undo(args.edit_id, current)
        if args.dry_run:
            # The folders' writability, as the apply checks it: a dry run and the apply refuse
            # alike (a read-only mount, an immutable folder).
            files.check_writable(root, plan)
        if history is not None and args.dry_run:
            edit_id = history.record(action, summary, plan=plan, outcome="dry-run").id
        elif history is not None:
            edit_id = history.begin(plan, summary, undoes=summary.get("editId"))
            recovered += files.apply_plan(root, plan)
            history.finish(edit_id, "applied")
        elif not args.dry_run:
            recovered += files.apply_plan(root, plan)
    except EditError as err:
        if history is not None:
            if edit_id is None:
                edit_id = history.record(action, summary, error=err).id
            else:
                history.finish(edit_id, str(err.code), error=err, committed=err.committed)
            err.details.setdefault("editId", edit_id)
        result = err.to_result()
        if recovered:
            result["recovered"] = recovered
        _print_failure(result, args.json)
        return EXIT_FAILED
    return _succeed(plan, edit_id, args, recovered)


def _succeed(
    plan: Plan,
    edit_id: int | None,
    args: argparse.Namespace,
    recovered: list[dict[str, Any]],
    diff: str | None = None,
) -> int:
    from lsp_server.engine.results import success

    # On disk, an applied edit is saved by definition.
    status = "dry-run" if args.dry_run else "applied"
    result = success(edit_id, status, plan.changes, saved=not args.dry_run, diff=diff)
    if recovered:
        result["recovered"] = recovered
    _print_success(result, plan, args.json)
    return EXIT_OK


def _apply_patch(
    root: str, patch_text: str, recovered: list[dict[str, Any]]
) -> tuple[Plan, str | None]:
    """Plan and apply a patch on disk, holding the workspace lock throughout; the plan, and
    its diff if it was made while the disk flushed the new files (`apply_plan`'s `meanwhile`)."""
    from lsp_server.engine import files
    from lsp_server.engine.diffing import plan_diff
    from lsp_server.engine.patching import plan_patch

    with files.workspace_lock(root) as sdir:
        recovered += _recover(root, sdir)
        plan = _on_links(plan_patch(patch_text, lambda p: _snapshot(root, p)))
        diffs: list[str] = []
        files.apply_plan(
            root, plan, locked=sdir, meanwhile=lambda: diffs.append(plan_diff(plan.changes))
        )
    return plan, diffs[0] if diffs else None


def _run_history(root: str, args: argparse.Namespace) -> int:
    from lsp_server.engine.errors import EditError
    from lsp_server.engine.history import open_history

    try:
        # A half-applied tree is rolled back (and the history says so) before it is reported on.
        recovered = _recover(root)
    except EditError as err:
        _print_failure(err.to_result(), args.json)
        return EXIT_FAILED
    history = open_history(root)
    _record_recovery(history, recovered)
    for note in (history.skipped_note(), history.journal_error):
        if note:
            print(
                note if note.startswith("agent-edit:") else f"agent-edit: {note}", file=sys.stderr
            )

    def live(path: str) -> Snapshot | None:
        try:
            return _snapshot(root, path)
        except EditError:
            return None

    try:
        if args.json:
            out = history.to_json(live=live, edit_id=args.edit, diffs=args.diff)
            if recovered:
                out["recovered"] = recovered
            print(json.dumps(out, indent=2, ensure_ascii=False))
        elif args.diff:
            sys.stdout.write(history.to_diff_text(live, args.edit))
        else:
            entries = history.to_json(live=live, edit_id=args.edit, diffs=False)["entries"]
            for e in entries:
                names = [str(f.get("path", "?")) for f in e.get("files", [])]
                files = ", ".join(names[:5]) + (f" and {len(names) - 5} more" * (len(names) > 5))
                print(f"#{e['id']}  {e['time']}  {e['action']:<10} {e['outcome']:<20} {files}")
            if not entries:
                print("no agent edits recorded in this workspace")
    except EditError as err:
        _print_failure(err.to_result(), args.json)
        return EXIT_FAILED
    return EXIT_OK


def _plan_replace(root: str, args: argparse.Namespace, old: str, new: str) -> Plan:
    from lsp_server.engine.model import Plan
    from lsp_server.engine.planner import check_precondition, plan_replace

    snap = _snapshot(root, args.path)
    if args.expect_sha256:
        check_precondition(snap, {"sha256": args.expect_sha256}, None, required=True)
    change = plan_replace(snap, old, new, replace_all=args.replace_all)
    return Plan("replace", (change,))


def _snapshot(root: str, path: str) -> Snapshot:
    """The disk snapshot of `path`, or the path policy's `EditError` refusing it.

    The policy (`lsp_server.engine.policy`) resolves URIs, `~`, `..` and symlinks and applies the
    default deny globs; `--root` is its only workspace folder.
    """
    from lsp_server.engine.files import read_snapshot

    policy = _policy(root)
    resolved = policy.resolve(path, memo=_WALK_MEMO)
    snap = read_snapshot(root, resolved.rel_path, policy.max_file_bytes)
    if resolved.named_path != resolved.abs_path and snap.exists:
        # Reached through a symbolic link: if the name itself is one, a Delete File (or the
        # source of a Move) removes the link, never the file it points to.
        link = _link_itself(root, resolved.named_path)
        if link is not None:
            _VIA_LINK[id(snap)] = (snap, link)
    return snap


def _link_itself(root: str, named: str) -> tuple[str, LinkRead] | None:
    """The workspace-relative path of the symbolic link `named` is (its folder resolved) and
    the link as seen now, or None if it is not one or that folder is outside the workspace."""
    import stat

    from lsp_server.engine.files import note_link

    try:
        if not stat.S_ISLNK(os.lstat(named).st_mode):
            return None
    except OSError:
        return None
    folder = os.path.realpath(os.path.dirname(named))
    rel = os.path.relpath(os.path.join(folder, os.path.basename(named)), root)
    if rel == "." or rel.startswith("../") or rel == ".." or os.path.isabs(rel):
        return None
    seen = note_link(root, rel)
    return (rel, seen) if seen is not None else None


def _on_links(plan: Plan) -> Plan:
    """`plan` with each Delete and Move source that was named by a symbolic link acting on
    that link (its path), not on the file it points to."""
    if not _VIA_LINK:
        return plan
    import dataclasses

    changes = []
    for c in plan.changes:
        via = _VIA_LINK.get(id(c.before))
        if via is not None and via[0] is c.before and c.change in ("delete", "move"):
            link_rel, seen = via[1]
            before = dataclasses.replace(c.before, path=link_rel, link=seen)
            c = dataclasses.replace(c, before=before)
        changes.append(c)
    return dataclasses.replace(plan, changes=tuple(changes))


_POLICIES: dict[str, Any] = {}
# Snapshots read through a symbolic link named by the patch: id -> (the snapshot, the link's
# own workspace-relative path); emptied with _WALK_MEMO.
_VIA_LINK: dict[int, tuple[Snapshot, tuple[str, LinkRead]]] = {}
# How each folder resolved, for the paths of one command (a patch names many files in few
# folders); emptied at the start of every command, so in-process callers see fresh folders.
_WALK_MEMO: dict[str, Any] = {}


def _policy(root: str) -> Any:
    policy = _POLICIES.get(root)
    if policy is None:
        from lsp_server.engine.policy import PathPolicy

        policy = _POLICIES[root] = PathPolicy.from_settings([root]).compiled()
    return policy


def _read_text(name: str, what: str) -> str:
    try:
        if name == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as f:
                data = f.read()
        return data.decode("utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {what} {name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {name} is not UTF-8 (byte {exc.start})") from None


def _arg_text(value: str, what: str) -> str:
    if value.startswith("@@"):
        return value[1:]
    if value.startswith("@"):
        return _read_text(value[1:], what)
    return value


def _recover(root: str, locked: str | None = None) -> list[dict[str, Any]]:
    """Roll back an apply interrupted in this workspace and say so on stderr (the message every
    front end shows, engine/recovery.py); its reports. Raises the `EditError` when it cannot:
    an edit must not be planned on a half-applied tree, nor a history shown as if it were not."""
    from lsp_server.engine import recovery

    done = recovery.recover(root, locked)
    for text in done.messages():
        print(text, file=sys.stderr)
    if done.error is not None:
        raise done.error
    return done.reports


def _record_recovery(history: Any, recovered: list[dict[str, Any]]) -> None:
    if recovered:
        from lsp_server.engine import recovery

        recovery.record(history, recovery.Recovery(recovered))


_LETTER = {"add": "A", "update": "M", "delete": "D", "move": "R"}


def _print_success(result: dict[str, Any], plan: Plan, as_json: bool) -> None:
    out = sys.stdout
    if as_json:
        out.write(json.dumps(result, ensure_ascii=False))
        out.write("\n")
        return
    verb = "Would change" if result["status"] == "dry-run" else "Changed"
    lines = [f"{verb} {len(plan.changes)} file(s):"]
    for c in plan.changes:
        name = f"{c.path} -> {c.moved_to}" if c.moved_to else c.path
        lines.append(f"{_LETTER[c.change]} {name}")
    out.write("\n".join(lines) + "\n")
    if result["diff"]:
        out.write("\n" + result["diff"])


def _print_failure(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        return
    msg = [f"agent-edit: {result['code']}: {result['message']}"]
    if result.get("hint"):
        msg.append(f"hint: {result['hint']}")
    details = result.get("details") or {}
    for cand in details.get("candidates", []) or []:
        msg.append(f"  near line {cand['line']}: {cand['text']!r} ({cand['why']})")
    if details.get("lines"):
        msg.append("  matching lines: " + ", ".join(map(str, details["lines"])))
    if result.get("code") != "PARTIAL" and not result.get("committed"):
        msg.append("No files were changed.")  # (a PARTIAL result says which may have)
    sys.stderr.write("\n".join(msg) + "\n")


if __name__ == "__main__":
    sys.exit(main())
