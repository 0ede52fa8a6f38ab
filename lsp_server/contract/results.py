"""The shapes of the answers (product.md 2.1) as JSON Schema: a success per action, one refusal.

These are what a client may rely on (the MCP server gives them as each tool's `outputSchema`),
so they name the fields every answer has and leave room for more: an answer may carry further
fields (`diagnosticsPending`, `netCut`, ...), and a front may add its own, without breaking a
client that validates. Codes are the enum of engine/errors.py's `Code`, defined there once.
"""

from __future__ import annotations

from typing import Any

from lsp_server.engine.errors import Code

_STR = {"type": "string"}
_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}
_OBJ = {"type": "object"}


def _shape(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
    }


REFUSAL: dict[str, Any] = _shape(
    {
        "ok": {"const": False},
        "code": {
            "type": "string",
            "enum": [str(c) for c in Code],
            "description": "What went wrong, stable: branch on it.",
        },
        "message": {**_STR, "description": "Why, in a sentence."},
        "hint": {**_STR, "description": "What to do next."},
        "details": {
            **_OBJ,
            "description": "Stable fields per code: lines (AMBIGUOUS), candidates (NO_MATCH), "
            "expected and current (STALE), patchLine (PARSE_ERROR), rule (path policy), files "
            "(NOT_APPLIED, PARTIAL*), argument (INVALID_ARGUMENT).",
        },
        "committed": {
            "type": "array",
            "items": _OBJ,
            "description": "What the server saw land (empty unless PARTIAL or UNVERIFIED).",
        },
    }
)

READ_OK: dict[str, Any] = _shape(
    {
        "ok": {"const": True},
        "path": _STR,
        "text": _STR,
        "version": {"type": ["integer", "null"], "description": "Buffer version, null on disk."},
        "sha256": {**_STR, "description": "Of the whole file's text (UTF-8), pass as expect."},
        "source": {"type": "string", "enum": ["buffer", "disk"]},
        "eol": _STR,
        "lines": _INT,
        "startLine": _INT,
        "endLine": _INT,
    },
    {"bom": _BOOL},
)

_FILE = _shape(
    {
        "path": _STR,
        "change": {"type": "string", "enum": ["add", "update", "delete", "move"]},
        "sha256": {"type": ["string", "null"], "description": "New text's; null if deleted."},
    },
    {"movedTo": _STR, "version": _INT, "saved": _BOOL},
)

EDIT_OK: dict[str, Any] = _shape(
    {
        "ok": {"const": True},
        "editId": {"type": ["integer", "null"], "description": "Null for a dry run."},
        "status": {"type": "string", "enum": ["applied", "dry-run"]},
        "files": {"type": "array", "items": _FILE},
        "diff": {**_STR, "description": "Git-style unified diff of what changed."},
        "diagnostics": {
            "type": "array",
            "items": _OBJ,
            "description": "Syntax errors the edit introduced in the touched files.",
        },
        "saved": {"type": ["boolean", "null"]},
    },
    {"diagnosticsPending": {"type": "array", "items": _STR}},
)

HISTORY_OK: dict[str, Any] = {
    "anyOf": [
        _shape(
            {"ok": {"const": True}, "entries": {"type": "array", "items": _OBJ}, "total": _INT},
            {"net": {"type": "array", "items": _OBJ}},
        ),
        _shape({"ok": {"const": True}, "diff": _STR}),
        _shape(
            {"ok": {"const": True}, "files": {"type": "array", "items": _OBJ}},
            {"editId": _INT},
        ),
    ]
}

SUCCESS: dict[str, dict[str, Any]] = {
    "read": READ_OK,
    "replace": EDIT_OK,
    "write": EDIT_OK,
    "applyPatch": EDIT_OK,
    "undo": EDIT_OK,
    "history": HISTORY_OK,
}
