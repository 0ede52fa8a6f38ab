"""The answers of the actions that change nothing: `ReadResult` (read) and the three shapes of
history (`HistoryEntries`, `HistoryDiff`, `HistoryTexts`), declared as results.py's are (`@result`,
written by its `wire`, exported by the contract).

Apart from results.py so that an edit, the CLI's common short run, does not build them: four
frozen slotted dataclasses, ~1 ms of its start-up (bench/bench_startup.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lsp_server.engine.results import meta, result
from lsp_server.engine.values import frozen_writes_refused

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, Literal


@result
@frozen_writes_refused
@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    """A file as the caller sees it, or a line range of it."""

    ok: Literal[True] = True
    path: str
    text: str
    version: int | None = field(metadata=meta("Buffer version, null on disk."))
    sha256: str = field(metadata=meta("Of the whole file's text (UTF-8), pass as expect."))
    source: Literal["buffer", "disk"]
    eol: str
    bom: bool
    lines: int
    start_line: int
    end_line: int


@result
@frozen_writes_refused
@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEntries:
    """history `format: json`: the latest entries and the net change per file."""

    ok: Literal[True] = True
    entries: list[dict[str, Any]]
    total: int
    net: list[dict[str, Any]] | None = field(default=None, metadata=meta(omit=True))
    net_cut: bool | None = field(default=None, metadata=meta(omit=True))
    net_files: int | None = field(default=None, metadata=meta(omit=True))
    net_note: str | None = field(default=None, metadata=meta(omit=True))
    skipped: int | None = field(default=None, metadata=meta(omit=True))
    skipped_note: str | None = field(default=None, metadata=meta(omit=True))
    # Edits older than the ones the history keeps (history/compaction.py KEPT_ENTRIES) were
    # dropped: said, so that a list starting at #301 is not read as the whole story.
    dropped_note: str | None = field(default=None, metadata=meta(omit=True))
    # Why the journal could not be read (or written): the entries are then not the whole
    # history, and an empty list is no "nothing was recorded".
    journal_error: str | None = field(default=None, metadata=meta(omit=True))

    @classmethod
    def of(cls, rendered: Mapping[str, Any]) -> HistoryEntries:
        """From the history's rendering (engine/history/rendering.py `iter_json`). A key this
        does not know would vanish from the answer: it is refused instead, so a new one is
        declared here (and so in the exported schema) before any client sees it."""
        unknown = set(rendered) - _RENDERED
        if unknown:
            raise TypeError(f"history rendered undeclared fields {sorted(unknown)}")
        return cls(
            entries=rendered["entries"],
            total=rendered["total"],
            net=rendered.get("net"),
            net_cut=rendered.get("netCut"),
            net_files=rendered.get("netFiles"),
            net_note=rendered.get("netNote"),
            skipped=rendered.get("skipped"),
            skipped_note=rendered.get("skippedNote"),
            dropped_note=rendered.get("droppedNote"),
            journal_error=rendered.get("journalError"),
        )


_RENDERED = frozenset(
    {
        "ok",
        "entries",
        "total",
        "net",
        "netCut",
        "netFiles",
        "netNote",
        "skipped",
        "skippedNote",
        "droppedNote",
        "journalError",
    }
)


@result
@frozen_writes_refused
@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryDiff:
    """history `format: diff`: one unified diff."""

    ok: Literal[True] = True
    diff: str


@result
@frozen_writes_refused
@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryTexts:
    """history `texts: true`: whole texts before and after, of one edit or the net change."""

    ok: Literal[True] = True
    edit_id: int | None = field(default=None, metadata=meta(omit=True))
    files: list[dict[str, Any]]
