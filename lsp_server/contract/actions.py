"""The six actions' arguments, declared once: names, types, defaults, descriptions, constraints.

Every front reads these classes: the LSP server's argument checks, the VS Code Language Model
Tools, the Neovim and README docs, and the MCP tools. Descriptions are written for a model that
has only the schema to go on: when to use which action, what STALE means, that it should read
first. `{@read}` in a description is the read action's tool name in whichever front shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from lsp_server.contract.spec import Nested, doc

PATH_DOC = "Workspace-relative path, absolute path or file:// URI."
DRY_RUN_DOC = "Only check the edit and show its diff; change nothing."
EXPECT_DOC = (
    "Precondition: the buffer version or the sha256 of the whole file's text, as {@read} "
    "returned them, that the edit was computed from; the edit is refused as STALE if the file "
    "shows anything else now. Omit to use this session's last read of the file."
)


@dataclass(frozen=True)
class Expect(Nested):
    """What the agent saw of one file: its buffer version, or the sha256 of its text."""

    NEEDS_ONE_OF: ClassVar[str] = "version (a buffer version) or sha256 (from agentEdit.read)"
    DOC: ClassVar[str] = EXPECT_DOC

    version: int | None = field(default=None, metadata=doc("Buffer version returned by {@read}."))
    sha256: str | None = field(default=None, metadata=doc("sha256 returned by {@read}."))


@dataclass(frozen=True)
class ReadArgs:
    """agentEdit.read's arguments (a docstring keeps dataclasses from loading inspect)."""

    path: str = field(metadata=doc(PATH_DOC))
    start_line: int | None = field(
        default=None, metadata=doc("First line to return (1-based); omit for the whole file.")
    )
    end_line: int | None = field(
        default=None,
        metadata=doc("Last line to return (1-based, inclusive); omit for the rest of the file."),
    )
    line_numbers: bool | None = field(
        default=None,
        metadata=doc(
            "Prefix each line with its number and a tab, like `cat -n`. Default: true when "
            "startLine or endLine is given, else false. Never copy these prefixes into oldText."
        ),
    )


@dataclass(frozen=True)
class ReplaceArgs:
    """agentEdit.replace's arguments (a docstring keeps dataclasses from loading inspect)."""

    path: str = field(metadata=doc(PATH_DOC))
    old_text: str = field(
        metadata=doc(
            "The exact text to replace, copied from the file without line-number prefixes; it "
            "must match exactly once, so include enough surrounding lines to make it unique.",
            content=True,
        )
    )
    new_text: str = field(metadata=doc("The replacement text.", content=True))
    replace_all: bool = field(
        default=False,
        metadata=doc("Replace every occurrence instead of requiring exactly one."),
    )
    expect: Expect | None = field(default=None, metadata=doc(EXPECT_DOC))
    dry_run: bool = field(default=False, metadata=doc(DRY_RUN_DOC))
    match: Literal["exact", "lenient"] = field(
        default="exact",
        metadata=doc(
            "exact: byte for byte (line endings aside). lenient also accepts differences in "
            "trailing or surrounding whitespace and Unicode quotes, dashes and spaces; the match "
            "must still be unique. Use lenient only after a NO_MATCH that shows such a "
            "difference."
        ),
    )


@dataclass(frozen=True)
class WriteArgs:
    """agentEdit.write's arguments (a docstring keeps dataclasses from loading inspect)."""

    path: str = field(metadata=doc(PATH_DOC))
    text: str = field(metadata=doc("The complete new content of the file.", content=True))
    expect: Expect | None = field(default=None, metadata=doc(EXPECT_DOC))
    dry_run: bool = field(default=False, metadata=doc(DRY_RUN_DOC))


@dataclass(frozen=True)
class ApplyPatchArgs:
    """agentEdit.applyPatch's arguments (a docstring keeps dataclasses from loading inspect)."""

    patch: str = field(
        metadata=doc(
            "The whole patch text, from '*** Begin Patch' to '*** End Patch'.", content=True
        )
    )
    expect: Mapping[str, Expect] | None = field(
        default=None,
        metadata=doc(
            'Optional preconditions per path: {"path": {"version": N}} or '
            '{"path": {"sha256": "..."}}. A path not listed is checked against this '
            "session's last read of it, and every hunk against the file as it is now."
        ),
    )
    dry_run: bool = field(default=False, metadata=doc(DRY_RUN_DOC))


@dataclass(frozen=True)
class HistoryArgs:
    """agentEdit.history's arguments (a docstring keeps dataclasses from loading inspect)."""

    format: Literal["json", "diff"] = field(
        default="json",
        metadata=doc(
            "json: the entries and the net change per file; diff: one unified diff (of "
            "editId if given, else of the session's net change)."
        ),
    )
    edit_id: int | None = field(default=None, metadata=doc("Only this edit."))
    limit: int = field(default=200, metadata=doc("At most this many entries, the latest ones."))
    texts: bool = field(
        default=False,
        metadata=doc(
            "Return the whole before and after texts (of editId, else of the session's net "
            "change) instead of diffs, for a diff editor."
        ),
    )
    net_limit: int = field(
        default=200,
        metadata=doc(
            "At most this many files in the net diff; netCut and netNote say when it was cut."
        ),
    )


@dataclass(frozen=True)
class UndoArgs:
    """agentEdit.undo's arguments (a docstring keeps dataclasses from loading inspect)."""

    edit_id: int = field(
        metadata=doc("The id of the edit to revert (from {@history} or the edit's result).")
    )
    dry_run: bool = field(default=False, metadata=doc(DRY_RUN_DOC))


@dataclass(frozen=True)
class Action:
    """One action: its arguments class and the words every front shows for it."""

    name: str  # "applyPatch": the LSP command is agentEdit.<name>
    arguments: type
    title: str
    summary: str  # one line for a table of the actions (README)
    description: str  # for a model (VS Code modelDescription, MCP tool description)

    @property
    def command(self) -> str:
        return f"agentEdit.{self.name}"


READ = Action(
    "read",
    ReadArgs,
    "Read File",
    "the file as the editor shows it (open buffer, else disk) → `text`, `version`, `sha256`, "
    "`source` (`buffer`/`disk`), `eol`, `lines`",
    "Read a file exactly as the editor shows it: the open buffer (including unsaved changes) if "
    "the file is open, else the file on disk. Returns the text (a line range with line numbers "
    "if asked), the buffer version and the sha256 of the whole text, and the line-ending style. "
    "Read a file before you edit it: the edit is checked against what you read, so it can never "
    "land on text you did not see. Read it again after any STALE refusal.",
)
REPLACE = Action(
    "replace",
    ReplaceArgs,
    "Replace Text",
    "replace one exact occurrence (or all) of `oldText` with `newText`",
    "Replace one exact occurrence of oldText with newText in one file, applied to the editor "
    "buffer (unsaved changes are kept and checked). Use it for a small change in one place; "
    "use {@applyPatch} for changes in several places or files. oldText must match exactly once: "
    "include enough surrounding lines to make it unique, or set replaceAll. Refused without "
    "changing anything if the file changed since you read it (STALE: read it again, then "
    "retry), if oldText matches nowhere (NO_MATCH, with the closest candidate lines and how "
    "they differ) or more than once (AMBIGUOUS, with every matching line). Returns the diff of "
    "what changed and the diagnostics of the file.",
)
WRITE = Action(
    "write",
    WriteArgs,
    "Write File",
    "create a file, or overwrite one whole (create needs the file absent; overwrite needs a "
    "read or `expect`)",
    "Create a new file, or overwrite a whole existing file, through the editor. Creating "
    "requires that the file does not exist (ALREADY_EXISTS otherwise). Overwriting requires "
    "that you read the file in this session and it has not changed since, or an `expect` "
    "precondition (STALE otherwise: read it again). Prefer {@replace} or {@applyPatch} for "
    "changes to existing files: they keep the rest of the file as the editor has it.",
)
APPLY_PATCH = Action(
    "applyPatch",
    ApplyPatchArgs,
    "Apply Patch",
    "a V4A patch (`*** Begin Patch` … `*** End Patch`): all files or none",
    "Apply a V4A patch touching one or more files, all files or none: '*** Begin Patch', then "
    "per file '*** Add File: path' (lines prefixed '+'), '*** Delete File: path', or '*** "
    "Update File: path' (optionally followed by '*** Move to: new/path') with hunks introduced "
    "by '@@' (optionally '@@ def name' as an anchor) and lines prefixed ' ' (context), '-' "
    "(remove), '+' (add), optionally '*** End of File'; then '*** End Patch'. Use it for "
    "changes in several places or files, adding, deleting or moving files. Every hunk is "
    "verified against the current editor buffers before anything changes; a hunk that matches "
    "nowhere (NO_MATCH) or at several places (AMBIGUOUS), or a file changed since you read it "
    "(STALE), refuses the whole patch and says which patch line failed and why. Returns the "
    "diff and the diagnostics of the touched files.",
)
HISTORY = Action(
    "history",
    HistoryArgs,
    "History",
    "every edit of the session (id, time, action, files, outcome, diff, error) and the net "
    "diff per file; with `texts: true` the whole before/after texts of one edit (`editId`) or "
    "of the net change, for a diff editor",
    "List the edits made in this session (id, time, action, files, outcome, diff, error) and "
    "the net diff per file since the session first touched it. Use it to review what you "
    "changed, or to find the editId to undo.",
)
UNDO = Action(
    "undo",
    UndoArgs,
    "Undo Edit",
    "revert one edit if its lines are still as it left them, else `CONFLICT`",
    "Revert one earlier edit by its editId (from {@history} or the edit's result), only if the "
    "lines it changed are still as it left them; otherwise CONFLICT with the lines that differ, "
    "and nothing changes. The undo is itself recorded as an edit, which can be undone.",
)

ACTIONS: dict[str, Action] = {a.name: a for a in (READ, REPLACE, APPLY_PATCH, WRITE, HISTORY, UNDO)}
