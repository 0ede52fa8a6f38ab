"""Test helpers shared by the history, journal and undo tests: a dict file system that plans can
be applied to, and a small unified-diff applier to check diffs by what they do."""

from __future__ import annotations

import re

from lsp_server.engine.model import Plan
from lsp_server.engine.text import Snapshot, absent

FS = dict[str, str]


def snap(fs: FS, path: str) -> Snapshot:
    return Snapshot(path, fs[path]) if path in fs else absent(path)


def snaps(fs: FS, paths: list[str]) -> dict[str, Snapshot]:
    return {p: snap(fs, p) for p in paths}


def apply_plan(fs: FS, plan: Plan) -> FS:
    out = dict(fs)
    for c in plan.changes:
        if c.change == "delete":
            del out[c.path]
        elif c.change == "move":
            del out[c.path]
            out[c.target_path] = c.new_text
        else:
            out[c.target_path] = c.new_text
    return out


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_unified(old: str, diff: str) -> str:
    """Apply one file's unified diff (as `file_diff` prints it, `\\n` files) to `old`."""
    old_lines = old.split("\n") if old else []
    trailing = old.endswith("\n")
    if trailing:
        old_lines.pop()
    out: list[str] = []
    pos = 0
    lines = diff.split("\n")
    i = 0
    new_trailing = trailing
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            i += 1
            continue
        start = int(m.group(1))
        length = 1 if m.group(2) is None else int(m.group(2))
        first = start - 1 if length else start
        out.extend(old_lines[pos:first])
        pos = first
        i += 1
        last_new_marked = False
        last_kind = ""
        while i < len(lines) and lines[i] and not lines[i].startswith(("@@", "diff --git")):
            line = lines[i]
            if line.startswith("\\"):
                if last_kind in " +":
                    last_new_marked = True
                i += 1
                continue
            kind, text = line[0], line[1:]
            if kind in " -":
                assert old_lines[pos] == text, (pos, old_lines[pos], text)
                pos += 1
            if kind in " +":
                out.append(text)
                last_new_marked = False
            last_kind = kind
            i += 1
        if pos == len(old_lines):
            # The hunk reached the end: the new text ends with a newline unless marked otherwise.
            new_trailing = not last_new_marked
    out.extend(old_lines[pos:])
    if not out:
        return ""
    return "\n".join(out) + ("\n" if new_trailing else "")
