"""The success result object of product.md 2.1, built from a plan and what verification found."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lsp_server.engine.diffing import plan_diff
from lsp_server.engine.model import FileChange

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


def file_entry(change: FileChange, version: int | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": change.path, "change": change.change}
    if change.moved_to:
        entry["movedTo"] = change.moved_to
    if version is not None:
        entry["version"] = version
    entry["sha256"] = None if change.change == "delete" else change.new_sha256
    return entry


def success(
    edit_id: int | None,
    status: str,
    changes: Iterable[FileChange],
    versions: Mapping[str, int | None] | None = None,
    diagnostics: list[dict[str, Any]] | None = None,
    saved: bool | None = False,
    diff: str | None = None,
) -> dict[str, Any]:
    changes = list(changes)
    versions = versions or {}
    return {
        "ok": True,
        "editId": edit_id,
        "status": status,
        "files": [file_entry(c, versions.get(c.target_path)) for c in changes],
        "diff": plan_diff(changes) if diff is None else diff,
        "diagnostics": diagnostics or [],
        "saved": saved,
    }
