"""The `agent-edit` command line: `serve` runs the language server; the rest run the actions
(lsp_server/actions) on the files on disk, headless.

    agent-edit serve
    agent-edit mcp [--root DIR]
    agent-edit --version
    agent-edit read [--root DIR] [--json] [--start-line N] [--end-line N] [--line-numbers] PATH
    agent-edit apply-patch [--root DIR] [--dry-run] [--json] [--expect-sha256 PATH=H] PATCH|-
    agent-edit replace [--root DIR] [--dry-run] [--json] [--replace-all] [--match exact|lenient]
                       [--expect-sha256 H] PATH OLD NEW
    agent-edit write [--root DIR] [--dry-run] [--json] [--expect-sha256 H] PATH TEXT
    agent-edit history [--root DIR] [--json] [--diff] [--edit ID] [--limit N] [--texts]
    agent-edit undo [--root DIR] [--dry-run] [--json] ID

Each command is one action, its options built from the action's argument fields
(lsp_server/arguments.py, `build_parser`), run through `actions.run` with the headless context
(actions/headless.py): the same checks, results and history as the language server's. Every
command first rolls back an apply that was interrupted in this workspace (even with --dry-run: a
half-applied tree is no base for a plan, nor for a report), says so on stderr (engine/recovery.py's
message) and records it in the history; its applies and refusals are recorded in the journal the
language server keeps (so the editor shows headless edits, and `undo` works across both).

OLD, NEW and TEXT may be `@file` to read the text from a file (`@-`: stdin; `@@x` is the literal
text `@x`). An overwrite with `write` needs `--expect-sha256` (the file's sha256 from `read`).
Output is a short summary and the diff, or with `--json` exactly the result object of product.md
2.1 (plus `recovered` when an interrupted earlier apply was rolled back first). Exit status: 0
success, 1 the edit was refused or failed (the result says what, if anything, changed), 2 usage
error (malformed arguments too); 120 the edit ran but its report could not be written (the
reader closed the pipe: `agent-edit history` shows what it did); 130 (Ctrl-C), 143 (SIGTERM),
129 (SIGHUP: the terminal closed) or 131 (SIGQUIT) when one stopped the command before the
edit's commit point (what landed was rolled back), while one that comes past it stops nothing:
the edit's own result and status, and a line on stderr. An edit sent to an editor's server is
past that point once sent: a signal then waits a few seconds more for the editor's answer, and
reports UNVERIFIED (status 1) if none comes (lsp_server/cli_signals.py). Writes go through
engine/files.py: atomic across files, journalled, rolled back after a crash. A state folder
that cannot be made or used is an IO_ERROR result, never a traceback. Environment:
AGENT_EDIT_STATE_DIR moves the journal's state directory (default: the user state dir, outside
the workspace; the start-up's code cache is kept there too, lsp_server/startup.py);
AGENT_EDIT_CRASH_AFTER=N is a test hook (engine/files.py).

Every path must resolve (symlinks followed) inside `--root` (default: the current directory);
`.git` is never edited. A Delete File, or the source of a Move, named by a symbolic link removes
the link itself, never the file it points to (actions/headless.py). The LSP layer is imported
lazily inside `serve`, so headless commands start fast and never load pygls (nor asyncio: the
headless actions are driven by `startup.run_sync`).

Why this module is over 500 lines (~800): it is the whole of the command line's surface, and
nothing else: the parser made from the actions' argument fields, the path around argparse for
the common forms (`_plain`), the way to a live editor's server (`_through_editor`), and the
printing of each result (how a signal stops a command is lsp_server/cli_signals.py's).
Every headless run needs all of it, so a split would only add modules to each start-up
(tests/cli/test_startup_imports.py counts them).
"""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    import argparse
    from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


# The command line's name for each action, and the schema fields taken as positionals.
COMMANDS = {
    "read": "read",
    "apply-patch": "applyPatch",
    "replace": "replace",
    "write": "write",
    "history": "history",
    "undo": "undo",
}
POSITIONAL = {
    "read": ("path",),
    "applyPatch": ("patch",),
    "replace": ("path", "oldText", "newText"),
    "write": ("path", "text"),
    "history": (),
    "undo": ("editId",),
}
HELP = {
    "read": "print a file (a line range, numbered); --json adds its sha256 (for --expect-sha256)",
    "applyPatch": "apply a V4A patch (*** Begin Patch ... *** End Patch), all files or none",
    "replace": "replace OLD with NEW in PATH (exactly one match)",
    "write": "create PATH with TEXT, or overwrite it (with --expect-sha256)",
    "history": "show the workspace's agent edits and the net diff",
    "undo": "revert one edit, if its lines are still as it left them",
}
METAVAR = {"path": "PATH", "oldText": "OLD", "newText": "NEW", "text": "TEXT", "patch": "PATCH"}
FIELD_HELP = {
    "oldText": "text to find, or @file",
    "newText": "replacement text, or @file",
    "text": "the whole new text, or @file",
    "patch": "patch file, or - for stdin",
    "dryRun": "show the diff, change nothing",
    "replaceAll": "replace every occurrence",
    "match": "exact (default), or lenient about whitespace",
    "lineNumbers": "number the lines (default: only for a line range)",
    "texts": "the edit's texts before and after (JSON)",
    "format": "json or diff",
}
TEXT_FIELDS = frozenset({"oldText", "newText", "text"})  # `@file` reads the text from a file
EDITS = frozenset({"replace", "write", "applyPatch", "undo"})  # checked against editors first


def build_parser() -> argparse.ArgumentParser:
    """The parser, one subcommand per action with its options from the action's fields (the
    contract's, as lsp_server/arguments.py's table holds them)."""
    import argparse

    from lsp_server.arguments import FIELDS

    parser = argparse.ArgumentParser(
        prog="agent-edit",
        description="Apply coding agents' edits safely: a language server and a headless CLI.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the language server on stdio (what editors start)")
    mp = sub.add_parser(
        "mcp",
        help="an MCP server on stdio: the edit tools, through the editor's server when one runs",
    )
    mp.add_argument("--root", default=".", help="workspace folder (default: current dir)")
    for command, action in COMMANDS.items():
        p = sub.add_parser(command, help=HELP[action])
        p.add_argument("--root", default=".", help="workspace folder (default: current dir)")
        p.add_argument("--json", action="store_true", help="print the result object as JSON")
        for field in FIELDS[action][1]:
            name = field.name
            if name in POSITIONAL[action]:
                continue
            flags = ["--" + "".join("-" + ch.lower() if ch.isupper() else ch for ch in name)]
            if name == "expect":
                one = action != "applyPatch"
                p.add_argument(
                    "--expect-sha256",
                    dest="expect",
                    metavar="H" if one else "PATH=H",
                    action="store" if one else "append",
                    help="refuse unless the file has this sha256"
                    + ("" if one else " (repeat for each path)"),
                )
            elif field.json == "boolean":
                kind = argparse.BooleanOptionalAction if name == "lineNumbers" else "store_true"
                p.add_argument(*flags, dest=name, action=kind, default=None, help=FIELD_HELP[name])
            else:
                if name == "editId":
                    flags.insert(0, "--edit")  # the historical spelling
                p.add_argument(
                    *flags,
                    dest=name,
                    type=int if field.json == "integer" else str,
                    choices=field.choices or None,
                    metavar=None if field.choices else "N",
                    help=FIELD_HELP.get(name),
                )
        if action == "history":
            p.add_argument("--diff", action="store_true", help="print the diffs")
        for name in POSITIONAL[action]:
            p.add_argument(
                name,
                metavar=METAVAR.get(name, "ID"),
                type=int if name == "editId" else str,
                help=FIELD_HELP.get(name),
            )
    return parser


# The usual command lines of the common commands, read by `_plain`: each one's flags that take
# no value (besides --json), its positionals, and its options that take one (the field, and how
# argparse stores it: as it is, an int, one of the field's choices, appended to a list).
PLAIN = {
    "apply-patch": (
        {"--dry-run": "dryRun"},
        POSITIONAL["applyPatch"],
        {"--expect-sha256": ("expect", "append")},
    ),
    "replace": (
        {"--dry-run": "dryRun", "--replace-all": "replaceAll"},
        POSITIONAL["replace"],
        {"--expect-sha256": ("expect", "str"), "--match": ("match", "choice")},
    ),
    "write": ({"--dry-run": "dryRun"}, POSITIONAL["write"], {"--expect-sha256": ("expect", "str")}),
    "read": (
        {"--line-numbers": "lineNumbers"},
        POSITIONAL["read"],
        {"--start-line": ("startLine", "int"), "--end-line": ("endLine", "int")},
    ),
}


def _plain(argv: list[str]) -> Any:
    """The arguments of a plain command line, or None: `apply-patch`, `replace`, `write` or
    `read` with only --root DIR, --json, the command's flags (--dry-run, --replace-all,
    --line-numbers) and its options as `--option VALUE` (--expect-sha256, --match,
    --start-line, --end-line: a value argparse would take as it is, an int of ASCII digits, one
    of the field's choices) besides its positionals, none of which starts with `-` (but `-`).

    argparse (with the gettext, locale and shutil it imports to build a parser) is a tenth of
    a small apply's run; the usual command line is read here into the namespace argparse would
    give (tests/cli/test_cli_atomic.py compares them). A one-line `replace` on a 2-line file,
    argparse -> this, valgrind's instruction count of the whole process (2 runs each): 284-289
    -> 256-257 M (the interpreter's start alone: 39 M). And `read PATH`, argparse -> this
    (bench_startup.py's file, 11 rounds alternating): imports 63.7 -> 54.0 ms median, 96 -> 83
    modules; 204.3 -> 170.6 M instructions. And options with a value: `replace --expect-sha256
    H` (9 rounds, load 3.6): imports 73.9 -> 58.3 ms median, 213.1 -> 179.8 M instructions;
    `read --start-line 5 --end-line 9`: 96 -> 83 modules, 204.8 -> 170.8 M. Anything else
    (help, `--opt=value`, abbreviations, a text that starts with `-`, errors) goes to argparse.
    """
    if not argv or argv[0] not in PLAIN:
        return None
    from lsp_server.arguments import FIELDS

    flags, positional, valued = PLAIN[argv[0]]
    fields = FIELDS[COMMANDS[argv[0]]][1]
    given: dict[str, Any] = {"command": argv[0], "root": ".", "json": False}
    given |= {f.name: None for f in fields}
    names = iter(positional)
    rest = iter(argv[1:])
    for arg in rest:
        if arg in flags:
            given[flags[arg]] = True
        elif arg == "--json":
            given["json"] = True
        elif arg == "--root" or arg in valued:
            value = next(rest, None)
            if value is None or value.startswith("-"):
                return None
            name, how = valued.get(arg, ("root", "str"))
            if how == "int":
                if not (value.isascii() and value.isdigit()):
                    return None
                given[name] = int(value)
            elif how == "append":
                given[name] = [*(given[name] or ()), value]
            elif how == "choice" and value not in next(f for f in fields if f.name == name).choices:
                return None
            else:
                given[name] = value
        elif arg == "-" or not arg.startswith("-"):
            name = next(names, None)
            if name is None:
                return None
            given[name] = arg
        else:
            return None
    if next(names, None) is not None:
        return None
    return SimpleNamespace(**given)


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given == ["--version"]:
        from lsp_server.version import main as version

        return version()
    from lsp_server import startup

    if given[:1] not in (["serve"], ["mcp"]):  # the servers load inspect anyway (pygls, mcp)
        # Before the parser: its table (lsp_server/arguments.py) is made of dataclasses.
        if startup.lean_dataclasses():
            cache = _code_cache_path(given)
            if cache is not None:
                startup.cache_dataclass_code(cache)
        startup.lean_pathlib()  # the history's journal names its files with Path
    args = _plain(given)
    if args is None:
        args = build_parser().parse_args(argv)
    if args.command == "serve":
        # Starting the server is the one thing the CLI asks of the LSP front: no logic shared.
        from lsp_server.lsp.server import serve  # noqa: TID251

        serve()
        return EXIT_OK
    if args.command == "mcp":
        if not args.root or not os.path.isdir(args.root):
            said = "is empty" if not args.root else f"{args.root} is not a directory"
            sys.stderr.write(f"agent-edit: error: --root {said}\n")
            return EXIT_USAGE
        from lsp_server.mcp.handshake import main as mcp_main

        return mcp_main(args.root)
    try:
        with startup.without_cyclic_gc(), startup.quick_thread_handoffs():
            return _run(args)
    except UsageError as exc:
        sys.stderr.write(f"agent-edit: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        # A stopping signal (lsp_server/cli_signals.py): an edit under way was settled (rolled
        # back, its entry finished) on the way out (actions/execute.py); a line that says so,
        # not a traceback.
        from lsp_server import cli_signals

        return cli_signals.stopped()
    finally:
        startup.save_dataclass_code(args.root)


def _code_cache_path(given: list[str]) -> str | None:
    """startup.cache_dataclass_code's file: in the state base (where the journals are, outside
    every workspace), one per interpreter version; None (no cache) when the state base is
    inside the workspace: a folder `--root` names, else the current one. The cache is read
    before the arguments are parsed, so before the journal's own DENIED check: a workspace
    must never supply the code objects this process runs (a cloned repository's files are
    the user's own), tests/cli/test_startup_code_cache_workspace.py."""
    from lsp_server.engine import state
    from lsp_server.engine.errors import EditError

    path = os.path.join(
        state.state_base(), "code", f"dataclasses-{sys.implementation.cache_tag}.bin"
    )
    roots = []
    for i, arg in enumerate(given):
        name, eq, value = arg.partition("=")
        # `--root DIR`, `--root=DIR`, and the prefixes argparse takes for it (`--ro DIR`).
        if len(name) >= 3 and "--root".startswith(name):
            if eq:
                roots.append(value)
            elif i + 1 < len(given):
                roots.append(given[i + 1])
    try:
        for root in roots or ["."]:  # (every one named: which one argparse keeps is its business)
            state.check_outside(os.path.dirname(path), root)
    except (EditError, OSError, ValueError):
        return None
    return path


def _action_args(action: str, ns: Any) -> dict[str, Any]:
    """The action's argument object from the command line (texts read from their files)."""
    out: dict[str, Any] = {}
    stdin = [n for n, v in vars(ns).items() if n in TEXT_FIELDS and v == "@-"]
    if len(stdin) > 1:
        # Standard input is read once: the second text would silently be empty (a replace
        # then deletes OLD).
        raise UsageError(
            f"{' and '.join(METAVAR[n] for n in stdin)} both read standard input (@-); "
            "it can be read once: give the other text as @file or literally"
        )
    for name, value in vars(ns).items():
        if value is None or name in ("command", "root", "json", "diff"):
            continue
        if name in TEXT_FIELDS:
            value = _arg_text(value, METAVAR[name])
        elif name == "patch":
            value = _read_text(value, "PATCH")
            if value[:1] == "\ufeff":
                # A patch file saved with a byte order mark (Notepad, PowerShell 5): the mark
                # is the file's encoding, not a character of the patch; left in, the first
                # line was refused as not '*** Begin Patch' while it showed exactly that.
                value = value[1:]
        elif name == "expect" and action == "applyPatch":
            value = dict(_path_token(v) for v in value)
        elif name == "expect":
            value = {"sha256": value}
        out[name] = value
    if action == "history" and getattr(ns, "diff", False) and not ns.json:
        out.setdefault("format", "diff")
    return out


def _path_token(given: str) -> tuple[str, dict[str, str]]:
    path, sep, sha = given.rpartition("=")
    if not sep or not path:
        raise UsageError(f"--expect-sha256 {given!r} must be PATH=SHA256 for apply-patch")
    return path, {"sha256": sha}


def _run(ns: Any) -> int:
    from lsp_server import cli_signals, startup

    if not ns.root:
        # realpath("") is the current folder: an unset variable (`--root "$WS"`) would have
        # edited wherever the command happened to run.
        raise UsageError(
            "--root is empty; give the workspace folder, or leave --root out for the current one"
        )
    root = os.path.realpath(ns.root)
    if not os.path.isdir(root):
        raise UsageError(f"--root {ns.root} is not a directory")
    action = COMMANDS[ns.command]
    args = _action_args(action, ns)
    cli_signals.reset()  # (this run's: `main` may be called more than once in a process)
    guard = None
    if action in EDITS:
        # An editor's agent-edit server on this workspace: its buffers, not the disk, are what
        # the user sees in the files it has open (issue 14 item 5).
        routed, guard = _through_editor(root, action, args, ns.json)
        if routed is not None:
            return routed
    try:
        result = startup.run_sync(_headless(root, action, args, guard))
    except _Malformed as exc:
        raise UsageError(str(exc)) from None
    failed = EXIT_OK
    try:
        if action == "history" and result.get("ok", True) is not False:
            _print_history(result, ns.json, args.get("format") == "diff")
        elif result.get("ok"):
            _print_success(result, ns.json)
        else:
            failed = EXIT_FAILED
            _print_failure(result, ns.json)
            return EXIT_FAILED
    except BrokenPipeError:
        raise  # `program` says the reader left
    except OSError as exc:
        # The terminal went away (EIO after a hang-up), the disk holding a redirected report is
        # full (ENOSPC): the command ran to its end, only its report was lost. A traceback and
        # exit 1 there read as a failed edit, one an agent would send again.
        raise ReportLost(exc.strerror or str(exc), failed) from None
    return EXIT_OK


class ReportLost(Exception):
    """The command's report could not be written to standard output (`program` says so);
    `status`: the exit status it had already (a refusal keeps its 1), or 0."""

    def __init__(self, why: str, status: int) -> None:
        super().__init__(why)
        self.status = status


class _Malformed(Exception):
    pass


async def _headless(
    root: str, action: str, args: dict[str, Any], guard: Any = None
) -> dict[str, Any]:
    """The action's result in a headless context (the workspace made ready first); `guard`
    may refuse a plan before anything is written (peers.GuardedApplier)."""
    from lsp_server import actions, cli_signals
    from lsp_server.actions import headless
    from lsp_server.engine import files
    from lsp_server.engine.errors import EditError
    from lsp_server.engine.results import wire

    files.BEFORE_COMMIT = cli_signals.hold

    def say(text: str) -> None:
        # A note whose reader left (`2>&1 | head -1`) is dropped: its BrokenPipeError ended the
        # command before its edit, with a rollback said but not recorded (tests/cli/
        # test_cli_reader_gone.py). The result on stdout carries it (`recovered`).
        try:
            print(text, file=sys.stderr)
        except (OSError, ValueError):
            pass

    try:
        # fork_plans: the CLI is single-threaded and short-lived (split_plan.py).
        async with headless.open(root, notify=say, fork_plans=True) as ctx:
            if guard is not None:
                from lsp_server.peers import GuardedApplier

                ctx.applier = GuardedApplier(ctx.applier, guard)
            if action == "history":
                for note in (ctx.history.skipped_note(), ctx.history.journal_error):
                    if note:
                        say(note if note.startswith("agent-edit:") else f"agent-edit: {note}")
            try:
                result = wire(await actions.run(ctx, action, args))
            except actions.InvalidArguments as exc:
                raise _Malformed(exc.message) from None
            if ctx.recovered:
                result["recovered"] = ctx.recovered
            return result
    except EditError as err:  # the workspace could not be made ready (state folder, rollback)
        return err.to_result()


def _through_editor(
    root: str, action: str, args: dict[str, Any], as_json: bool
) -> tuple[int | None, Any]:
    """Route an edit to the editor's agent-edit server whose history is `root`'s (the folder it
    started with) and which still serves it: (exit status, None). Other live servers whose
    workspace overlaps `root`: (None, a guard refusing a plan that touches a file one of their
    editors has open, or one in the folders of an editor whose server died (an orphan: which
    files it has open is unknown), before anything is written). None running: (None, None),
    after one directory listing (lsp_server/discovery.py: no asyncio, no socket unless one is
    found)."""
    from lsp_server import discovery

    orphans: list[Any] = []  # dead servers whose editors still run (discovery.py)
    try:
        entries = [e for e in discovery.servers(orphans) if e.overlaps(root)]
    except discovery.DiscoveryError as exc:
        from lsp_server import peers

        refusal = peers.untrusted(exc)

        def refuse(plan: Any, where: dict[str, Any]) -> None:
            raise refusal  # an editor may hold the file open, unseen: not written on disk

        return None, refuse
    orphans = [o for o in orphans if o.overlaps(root)]
    if not entries and not orphans:
        return None, None
    entry = next((e for e in entries if e.history_root == root and e.holds(root)), None)
    if entry is None:
        from lsp_server import peers

        def guard(plan: Any, where: dict[str, Any]) -> None:
            changes = list(plan.changes)

            def abs_of(p: str) -> str | None:
                return where[p].abs_path if p in where else None

            peers.refuse_if_orphaned(orphans, changes, abs_of)
            peers.refuse_if_held_sync(entries, changes, abs_of)

        return None, guard
    from lsp_server import cli_signals

    payload = {"session": f"cli-{os.getpid()}", "action": action, "args": args}
    try:
        result = discovery.request(
            entry,
            payload,
            timeout=300,
            on_send=cli_signals.sent_to(entry.describe()),
            cut=cli_signals.cut,
        )
        cli_signals.answered()
    except discovery.Stopped:
        from lsp_server.engine.results import refusal

        # A signal cannot call back an edit sent: "interrupted" alone had the agent resend it.
        result = refusal(
            "UNVERIFIED",
            f"{cli_signals.gave_up(entry.describe())}: the edit may or may not have landed "
            "in the editor (a signal cannot call it back); nothing was written on disk here.",
            "See `agent-edit history` (or read the files) for whether it landed before "
            "sending it again.",
            editor=entry.editor,
            pid=entry.editor_pid or entry.pid,
        )
    except discovery.Unanswered as exc:
        from lsp_server.engine.results import refusal

        result = refusal(
            "UNVERIFIED",
            f"The editor's agent-edit server ({entry.describe()}) went away before it answered "
            f"({exc}): the edit may or may not have landed in the editor; nothing was written "
            "on disk here.",
            "Check the files (and agent-edit history) before trying again.",
            editor=entry.editor,
            pid=entry.editor_pid or entry.pid,
        )
    except (OSError, ValueError) as exc:
        from lsp_server.engine.results import refusal

        result = refusal(
            "CONFLICT",
            f"{entry.describe()} runs agent-edit for this workspace, but its server cannot be "
            f"reached ({exc}); its open buffers may differ from the disk, so nothing was written.",
            "Make the edit from that editor, or restart agent-edit there, then retry.",
            reason="PEER_UNREACHABLE",
            editor=entry.editor,
            pid=entry.editor_pid or entry.pid,
        )
    result["via"] = "editor"
    if result.get("ok"):
        _print_success(result, as_json, through=entry.describe())
        return EXIT_OK, None
    _print_failure(result, as_json)
    return EXIT_FAILED, None


def _read_text(name: str, what: str) -> str:
    """The text of file `name` (`-`: standard input), read no further than a text may be
    long: an endless input (`yes | agent-edit apply-patch -`) was read until memory ran out
    (a MemoryError traceback, or the OOM killer), the size check coming only after."""
    from lsp_server.arguments import MAX_STRING

    cap = 4 * MAX_STRING  # bytes: no UTF-8 character takes more than 4
    try:
        if name == "-":
            if sys.stdin is None:  # started with it closed (`<&-`): not an empty text
                raise UsageError(
                    f"{what} is to be read from standard input, but standard input is closed; "
                    f"pipe the text in, or give {what} as a file"
                )
            data = sys.stdin.buffer.read(cap + 1)
        else:
            with open(name, "rb") as f:
                data = f.read(cap + 1)
        if len(data) > cap:
            raise UsageError(
                f"{what} {name} is over {cap:,} bytes, so over the {MAX_STRING:,}-character "
                "limit for a text; nothing more of it was read"
            )
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


def _write_json(result: dict[str, Any], indent: int | None = None) -> None:
    """`result` as one JSON document on stdout, always valid UTF-8: text no file can hold (a
    lone surrogate an agent sent, kept in the history's record of its refused request) is
    written escaped (`\\udcff`), as a JSON-RPC client receives it, never as a raw byte."""
    text = json.dumps(result, ensure_ascii=False, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(result, indent=indent)
    sys.stdout.write(text + "\n")


_LETTER = {"add": "A", "update": "M", "delete": "D", "move": "R"}


def _print_success(result: dict[str, Any], as_json: bool, through: str = "") -> None:
    out = sys.stdout
    if as_json:
        _write_json(result)
        return
    if "text" in result:  # a read: the text itself, as `cat` (or `cat -n`) would print it
        out.write(result["text"])
        return
    verb = "Would change" if result["status"] == "dry-run" else "Changed"
    via = f" through {through}" if through else ""
    lines = [f"{verb} {len(result['files'])} file(s){via}:"]
    for f in result["files"]:
        name = f"{f['path']} -> {f['movedTo']}" if f.get("movedTo") else f["path"]
        lines.append(f"{_LETTER[f['change']]} {name}")
    out.write("\n".join(lines) + "\n")
    if result["diff"]:
        out.write("\n" + result["diff"])


def _print_history(result: dict[str, Any], as_json: bool, as_diff: bool) -> None:
    if as_json or "entries" not in result and not as_diff:
        _write_json(result, indent=2)
    elif as_diff:
        sys.stdout.write(result["diff"])
    else:
        entries = result["entries"]
        for e in entries:
            names = [str(f.get("path", "?")) for f in e.get("files", [])]
            files = ", ".join(names[:5]) + (f" and {len(names) - 5} more" * (len(names) > 5))
            print(f"#{e['id']}  {e['time']}  {e['action']:<10} {e['outcome']:<20} {files}")
        total = result.get("total") or 0
        if not entries and total:  # (--limit 0): recorded, only not shown
            print(f"{total} agent edit(s) recorded in this workspace, none shown (--limit)")
        elif not entries and result.get("journalError"):  # (said on stderr first)
            print("no agent edits could be read: the journal is unreadable (see above)")
        elif not entries:
            print("no agent edits recorded in this workspace")
        if entries and result.get("droppedNote"):
            print(f"({result['droppedNote']})")


def _print_failure(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _write_json(result)
        return
    msg = [f"agent-edit: {result['code']}: {result['message']}"]
    if result.get("hint"):
        msg.append(f"hint: {result['hint']}")
    details = result.get("details") or {}
    for cand in details.get("candidates", []) or []:
        msg.append(f"  near line {cand['line']}: {cand['text']!r} ({cand['why']})")
    msg += _lines_said(details.get("lines"))
    from lsp_server.engine.errors import NOTHING_CHANGED

    # Only after a code that means it: UNVERIFIED, TIMEOUT, PARTIAL, IO_ERROR may follow a
    # change that landed (their message says what is known), and "No files were changed." after
    # "the edit may or may not have landed" had an agent resend it.
    if result.get("code") in NOTHING_CHANGED and not result.get("committed"):
        msg.append("No files were changed.")
    sys.stderr.write("\n".join(msg) + "\n")


def _lines_said(lines: Any) -> list[str]:
    """`details.lines` for a person: an AMBIGUOUS result's matching line numbers, or a
    CONFLICT's differing lines (`{path, line, expected, current}`, as undo reports them).
    Another code's `lines` (a read's refused range: the file's line count, an int) is said by
    its message: printing it as a list raised TypeError, a traceback instead of the refusal."""
    if not isinstance(lines, list) or not lines:
        return []
    if all(isinstance(n, int) for n in lines):
        return ["  matching lines: " + ", ".join(map(str, lines))]
    out = []
    for d in lines:
        if not isinstance(d, dict):
            continue
        expected, current = d.get("expected"), d.get("current")
        out.append(
            f"  {d.get('path')} line {d.get('line')}: "
            + ("expected " + repr(expected) if expected is not None else "expected no line")
            + (", now " + repr(current) if current is not None else ", now no line")
        )
    return out


def program() -> None:
    """The `agent-edit` program (its console script, and `python -m lsp_server`): `main`, then
    out without the interpreter's teardown for a headless command.

    The teardown frees every object one by one and runs a last garbage collection, over what a
    large apply holds (the patch, every file's text and lines, the plan): nothing a finished
    command needs. So once `main` has returned (its files closed, its journal records written
    with `os.write`, nothing buffered but the standard streams), the exit handlers run, the
    streams are flushed, and the process leaves by `os._exit`. The servers (`serve`, `mcp`)
    and an exception leave the usual way. bench/bench_ab.py --instructions --rounds 1, main
    (2a090b2) -> this: 1,000 files 3160.2 -> 3140.2 M instructions, one 100k-line file 1108.5
    -> 1089.0 M (the teardown measured from outside: 15-20 ms of the 1,000-file run).
    """
    given = sys.argv[1:]
    if given[:1] in (["serve"], ["mcp"]):
        sys.exit(main())
    _stand_in_streams()
    from lsp_server import cli_signals

    saved = cli_signals.install()
    try:
        code = main()
    except BrokenPipeError:  # `agent-edit history | head`: the reader left mid-report
        code = _reader_gone()
    except ReportLost as exc:  # standard output failed otherwise (a hung-up terminal: EIO)
        code = exc.status or _reader_gone(f"writing it failed: {exc}")
    finally:
        cli_signals.restore(saved)  # the exit below, as usual
    cli_signals.held_note()
    threading = sys.modules.get("threading")
    if threading is not None:  # the interpreter waits for these first (none on the usual path)
        for thread in threading.enumerate():
            if not thread.daemon and thread is not threading.main_thread():
                thread.join()
    import atexit

    atexit._run_exitfuncs()  # what the teardown would run next (none on the usual path)
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with it closed (`>&-`): nothing to flush, as at a usual exit
            continue
        try:
            stream.flush()
        except BrokenPipeError:
            if stream is sys.stdout:
                code = code or _reader_gone()
            else:
                code = code or 120
        except (OSError, ValueError):  # what Python's own exit reports as 120
            code = code or 120
    os._exit(code)


def _stand_in_streams() -> None:
    """/dev/null on each standard descriptor the process started without (`<&-`, `>&-`,
    `2>&-`: Python then has the stream as None), as if the caller had redirected it there.

    A closed standard output is a caller that wants no report: the command runs and exits with
    its own status. Without a stand-in, the report of an edit that landed raised
    AttributeError on None (a traceback and exit 1: a landed edit read as failed), a note for
    stderr went to stdout (`print(file=None)`) into the JSON, and the next file the command
    opened (the journal, a target's temporary file) took the free descriptor 0, 1 or 2, where
    a stray write meant for the stream would land in it. Standard input stays None (its
    descriptor held by /dev/null), so `-` and `@-` say it is closed (`_read_text`) rather than
    read an empty text. tests/cli/test_cli_exit_closed_stream.py."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        except OSError:
            continue
        if fd:
            setattr(
                sys, name, open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
            )


def _reader_gone(why: str = "its reader closed the pipe") -> int:
    """Exit status 120 (Python's own for output it could not flush) once standard output's
    reader has closed the pipe (or writing to it failed otherwise: `why`), with a line on
    stderr that says so: the command itself ran to its end (an edit was applied and
    recorded, or refused), only its report was cut, and a traceback there read as if the
    edit had failed. Standard output then points at /dev/null, so what is still buffered for
    it cannot fail the exit again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass
    if sys.stderr is not None:
        try:
            sys.stderr.write(
                f"agent-edit: the report was cut short ({why}); "
                "`agent-edit history` shows what this command did\n"
            )
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    return 120


if __name__ == "__main__":
    program()
