"""The answers of product.md 2.1 as typed frozen classes, and `wire`, the one way to their JSON.

Every action answers with one of these: `EditResult` (replace, write, applyPatch, undo, a dry
run included), `ReadResult`, the three shapes of history (`HistoryEntries`, `HistoryDiff`,
`HistoryTexts`; these four are declared in read_results.py, which an edit does not import), or
a `Refusal` (any action; `EditError.refusal()` builds it). Each front turns
the instance into its JSON object with `wire(result)` (the LSP response, the CLI's --json, MCP's
structuredContent, the editor endpoint's answer) and may add its own fields to that object
(`via`, `recovered`, ...). The contract exports their JSON Schemas from these same classes
(lsp_server/contract/results.py), so the answer and its schema cannot drift apart.

Field names are the Python names in camelCase (`edit_id` is `editId`), written in declaration
order (the key order on the wire). A field declared with `OMIT` is left out of the JSON when it
is None (`movedTo` of a file that did not move); any other None is written as null (`editId` of
a refused write is never None, `sha256` of a deleted file is). How each class is written is read
from its fields once, when the class is declared: `wire` only walks that plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lsp_server.engine.errors import Code
from lsp_server.engine.model import FileChange
from lsp_server.engine.values import frozen_writes_refused

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias, TypeVar

    from lsp_server.engine.read_results import HistoryDiff, HistoryEntries, HistoryTexts, ReadResult

    R = TypeVar("R")

# Field metadata: `doc` is the description the exported schema gives the field; `omit` leaves
# the field out of the JSON when it is None; `choices` the strings a `str` field takes (codes).
OMIT = "omit"


def meta(doc: str = "", *, omit: bool = False, choices: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"doc": doc, OMIT: omit, "choices": choices}


def camel(name: str) -> str:
    """The JSON name of a field: `edit_id` -> `editId` (the one mapping of names)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# How a field's value is written: as it is, as a result object, or as a list of them.
_AS_IS, _ONE, _MANY = 0, 1, 2
# Per class: (attribute, JSON name, omitted when None, how it is written), in order.
_Plan = tuple[tuple[str, str, bool, int], ...]
_PLANS: dict[type, _Plan] = {}


def result(cls: type[R]) -> type[R]:
    """Declare a result class: record how `wire` writes it (a field holding result objects
    says so with `nested` in its metadata: "one" or "many")."""
    _PLANS[cls] = tuple(
        (
            f.name,
            camel(f.name),
            bool(f.metadata.get(OMIT)),
            {"one": _ONE, "many": _MANY}.get(f.metadata.get("nested", ""), _AS_IS),
        )
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
    )
    return cls


def wire(obj: Any) -> dict[str, Any]:
    """The JSON object of a result (a fresh dict: a front may add its fields to it)."""
    out: dict[str, Any] = {}
    for attr, name, omit, how in _PLANS[type(obj)]:
        value = getattr(obj, attr)
        if value is None:
            if omit:
                continue
        elif how == _ONE:
            value = wire(value)
        elif how == _MANY:
            value = [wire(v) for v in value]
        out[name] = value
    return out


def declared(cls: type) -> bool:
    """Whether `cls` is a result class (`@result`)."""
    return cls in _PLANS


# -- the results -------------------------------------------------------------------------------


@result
@frozen_writes_refused
@dataclass(frozen=True, slots=True, kw_only=True)
class ChangedOnSave:
    """The editor said it saved a file the edit changed, and the disk then held other text than
    the edit's: its save changed it first (format on save, trimmed trailing whitespace, a final
    newline inserted or trimmed, a before-save hook), or another program wrote it meanwhile."""

    sha256: str | None = field(
        metadata=meta(
            "The sha256 of the text on disk after the save (an `expect` of it holds while the "
            "buffer shows that text); null: the file could not be read back as UTF-8 text."
        )
    )
    diff: str = field(
        metadata=meta(
            "Unified diff from the edit's text to the text on disk (or a `#` line saying why "
            "it could not be read)."
        )
    )


@result
@frozen_writes_refused
@dataclass(frozen=True, slots=True, kw_only=True)
class FileResult:
    """One file an edit changed (or would change)."""

    path: str
    change: Literal["add", "update", "delete", "move"]
    moved_to: str | None = field(default=None, metadata=meta(omit=True))
    version: int | None = field(
        default=None, metadata=meta("The buffer's version after the edit.", omit=True)
    )
    sha256: str | None = field(metadata=meta("New text's; null if deleted."))
    saved: bool | None = field(
        default=None, metadata=meta("Whether the file is on disk as the edit left it.", omit=True)
    )
    changed_on_save: ChangedOnSave | None = field(
        default=None,
        metadata={
            **meta(
                "The editor saved the file but the disk holds other text than the edit's "
                "(`saved` is then false): what its save changed.",
                omit=True,
            ),
            "nested": "one",
        },
    )


@result
@frozen_writes_refused
@dataclass(frozen=True, slots=True, kw_only=True)
class EditResult:
    """The success of replace, write, applyPatch and undo, applied or a dry run."""

    ok: Literal[True] = True
    edit_id: int | None = field(metadata=meta("The history entry (a dry run's too)."))
    status: Literal["applied", "dry-run"]
    files: tuple[FileResult, ...] = field(metadata={**meta(), "nested": "many"})
    diff: str = field(metadata=meta("Git-style unified diff of what changed."))
    diagnostics: list[dict[str, Any]] = field(
        metadata=meta("Syntax errors the edit introduced in the touched files.")
    )
    saved: bool | None
    diagnostics_pending: list[str] | None = field(
        default=None,
        metadata=meta("Files still being checked: publishDiagnostics follows.", omit=True),
    )


CODES = tuple(str(c) for c in Code)


@result
@frozen_writes_refused
@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """Any action's failure: nothing changed, unless `committed` says what did."""

    ok: Literal[False] = False
    code: str = field(metadata=meta("What went wrong, stable: branch on it.", choices=CODES))
    message: str = field(metadata=meta("Why, in a sentence."))
    hint: str = field(metadata=meta("What to do next."))
    details: dict[str, Any] = field(
        metadata=meta(
            "Stable fields per code: lines (AMBIGUOUS), candidates (NO_MATCH), expected and "
            "current (STALE), patchLine (PARSE_ERROR), rule (path policy), files (NOT_APPLIED, "
            "PARTIAL*), argument (INVALID_ARGUMENT)."
        )
    )
    committed: list[dict[str, Any]] = field(
        metadata=meta("What the server saw land (empty unless PARTIAL or UNVERIFIED).")
    )


if TYPE_CHECKING:  # every answer (read's and history's are read_results.py's: not at run time)
    Result: TypeAlias = (
        EditResult | ReadResult | HistoryEntries | HistoryDiff | HistoryTexts | Refusal
    )


def refusal(code: str, message: str, hint: str = "", **details: Any) -> dict[str, Any]:
    """A front's own refusal (no such action, a server that went away), as its JSON object."""
    return wire(Refusal(code=code, message=message, hint=hint, details=details, committed=[]))


# -- building the success of an edit -----------------------------------------------------------


def file_entry(change: FileChange, version: int | None = None) -> FileResult:
    return FileResult(
        path=change.path,
        change=change.change,
        moved_to=change.moved_to or None,
        version=version,
        sha256=None if change.change == "delete" else change.new_sha256,
    )


def changed_on_save(path: str, text: str, disk: str | None, why: str = "") -> ChangedOnSave | None:
    """What an editor's save changed: None when the disk holds the edit's `text` (`disk`: the
    file's text, BOM excluded, as the save left it; None: it could not be read, `why`)."""
    if disk == text:
        return None
    if disk is None:
        return ChangedOnSave(sha256=None, diff=f"# {path} could not be read back: {why}\n")
    from lsp_server.engine.diffing import text_diff
    from lsp_server.engine.text import sha256_text

    return ChangedOnSave(sha256=sha256_text(disk), diff=text_diff(path, text, disk))


def success(
    edit_id: int | None,
    status: Literal["applied", "dry-run"],
    changes: Iterable[FileChange],
    versions: Mapping[str, int | None] | None = None,
    diagnostics: list[dict[str, Any]] | None = None,
    saved: bool | None = False,
    diff: str | None = None,
) -> EditResult:
    changes = list(changes)
    versions = versions or {}
    if diff is None:
        from lsp_server.engine.diffing import plan_diff  # the callers pass the diff they made

        diff = plan_diff(changes)
    return EditResult(
        edit_id=edit_id,
        status=status,
        files=tuple(file_entry(c, versions.get(c.target_path)) for c in changes),
        diff=diff,
        diagnostics=diagnostics or [],
        saved=saved,
    )
