"""The MCP tools: names, descriptions, input schemas, and how a result is shown to the model.

The tools are the actions of product.md section 2 with the LSP commands' argument names. Their
input schemas are the exported contract's (`input_schema`). A result goes back whole as
`structuredContent`, with a short text for the model: the diff (or the file's text, for read);
a refusal is an `isError` result whose text is the whole refusal (code, message, hint,
details), never the SDK's bare "Error executing tool".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# The MCP tool name of each action (the descriptions name the other tools by these).
MCP_NAMES = {
    "read": "read",
    "replace": "replace",
    "write": "write",
    "applyPatch": "apply_patch",
    "history": "history",
    "undo": "undo",
}


def input_schema(command: str) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments: the exported contract's (lsp_server.contract),
    the one source the LSP checks, VS Code's tools and the CLI's options come from too."""
    from lsp_server import contract

    return contract.schema(command.removeprefix("agentEdit."), MCP_NAMES)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    command: str
    action: str  # the endpoint's action name
    title: str
    description: str
    read_only: bool


STALE_NOTE = (
    " If the file changed since you read it (the user typed, or another edit landed), the edit "
    "is refused STALE and nothing changes: read the file again and redo the edit from what you "
    "see."
)
THROUGH = (
    " When an editor runs agent-edit for this workspace, this goes through the editor: unsaved "
    "buffers are what is read and edited, and the user sees the edit in the editor and its "
    "history; otherwise it runs on disk (atomic, journaled). The result's `via` says which."
)

TOOLS = [
    ToolSpec(
        "read",
        "agentEdit.read",
        "read",
        "Read a file",
        "Read a file as the user sees it now: the editor's buffer, unsaved changes included, if "
        "the file is open there, else the disk. Returns the text, its version and sha256 (pass "
        "as `expect` to edits) and the line-ending style. Read a file before you edit it, and "
        "again after a STALE refusal." + THROUGH,
        True,
    ),
    ToolSpec(
        "replace",
        "agentEdit.replace",
        "replace",
        "Replace text in a file",
        "Replace one exact occurrence of oldText with newText in a file. Use it for a local "
        "change in one file; use apply_patch for several changes or files at once, and write "
        "only for a new file or a complete rewrite. oldText must match exactly once: add "
        "surrounding lines to make it unique (AMBIGUOUS lists every matching line), or set "
        "replaceAll. NO_MATCH shows the closest lines and how they differ (whitespace, tabs, "
        "quotes)." + STALE_NOTE + " Returns the diff of what changed." + THROUGH,
        False,
    ),
    ToolSpec(
        "write",
        "agentEdit.write",
        "write",
        "Create or overwrite a file",
        "Create a new file, or overwrite a whole existing file. Creating needs the file to be "
        "absent (ALREADY_EXISTS otherwise); overwriting needs a read of the file in this session "
        "(or `expect`) that still holds. Prefer replace or apply_patch to change an existing "
        "file: they keep the user's other lines and cursor." + STALE_NOTE + THROUGH,
        False,
    ),
    ToolSpec(
        "apply_patch",
        "agentEdit.applyPatch",
        "applyPatch",
        "Apply a patch to one or more files",
        "Apply a V4A patch to one or more files, all files or none: '*** Begin Patch', then per "
        "file '*** Add File: path' (every line prefixed '+'), '*** Delete File: path', or "
        "'*** Update File: path' (optionally '*** Move to: new/path') with hunks that start with "
        "'@@' (optionally '@@ def name' to anchor) and lines prefixed ' ' (context, about 3 "
        "lines around each change), '-' (remove) or '+' (add); then '*** End Patch'. Every hunk "
        "is checked against the current text before anything changes; a failure says which "
        "patch line or hunk and why." + STALE_NOTE + " Returns the diff." + THROUGH,
        False,
    ),
    ToolSpec(
        "history",
        "agentEdit.history",
        "history",
        "Show the edit history",
        "List the agent edits of this workspace (id, time, action, files, outcome, diff, error) "
        "and the net diff per file. Use it to review what changed or to find the editId to "
        "undo." + THROUGH,
        True,
    ),
    ToolSpec(
        "undo",
        "agentEdit.undo",
        "undo",
        "Undo an edit",
        "Revert one earlier edit by its editId, only if the lines it changed are still as it "
        "left them; otherwise CONFLICT with the lines that differ, and nothing changes. The "
        "undo is itself recorded as an edit." + THROUGH,
        False,
    ),
]
BY_NAME = {t.name: t for t in TOOLS}


def model_text(tool: ToolSpec, result: dict[str, Any]) -> str:
    """The short text the model reads: the refusal whole; else the diff, the file, or a summary."""
    via = result.get("via")
    note = result.get("note")
    head = f"[{note}]\n" if note else ""
    if not result.get("ok"):
        lines = [f"{result.get('code')}: {result.get('message')}"]
        if result.get("hint"):
            lines.append(f"hint: {result['hint']}")
        if result.get("details"):
            lines.append("details: " + json.dumps(result["details"], ensure_ascii=False))
        if result.get("committed"):
            lines.append("committed: " + json.dumps(result["committed"], ensure_ascii=False))
        return head + "\n".join(lines)
    if tool.name == "read":
        return head + (
            f"{result.get('path')} ({result.get('source')}, version {result.get('version')}, "
            f"sha256 {result.get('sha256')}, {result.get('lines')} lines, eol "
            f"{result.get('eol')}, via {via}):\n{result.get('text', '')}"
        )
    if tool.name == "history":
        if "diff" in result and "entries" not in result:
            return head + (result.get("diff") or "no agent edits recorded")
        rows = []
        for e in result.get("entries", []):
            names = ", ".join(str(f.get("path", "?")) for f in e.get("files", [])[:5])
            rows.append(
                f"#{e.get('id')} {e.get('time')} {e.get('action')} {e.get('outcome')} {names}"
            )
        return head + ("\n".join(rows) if rows else "no agent edits recorded") + f"\n(via {via})"
    files = ", ".join(
        f"{f.get('change')} {f.get('path')}" + (f" -> {f['movedTo']}" if f.get("movedTo") else "")
        for f in result.get("files", [])
    )
    verb = "Would apply" if result.get("status") == "dry-run" else "Applied"
    text = f"{verb} edit #{result.get('editId')} via {via}: {files}\n"
    diag = result.get("diagnostics")
    if diag:
        text += "diagnostics: " + json.dumps(diag, ensure_ascii=False) + "\n"
    text += result.get("diff") or ""
    for f in result.get("files", []):
        changed = f.get("changedOnSave")
        if changed:  # the editor's save changed the edit's text: what the file holds now
            now = f" (sha256 {changed['sha256']} now)" if changed.get("sha256") else ""
            text += (
                f"The editor's save then changed {f.get('movedTo') or f.get('path')}{now}:\n"
                f"{changed.get('diff') or ''}"
            )
    return head + text
