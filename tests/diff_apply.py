"""A small unified-diff applier for tests: applying our diff to the old text must give the new text.

Independent of the engine's diff code on purpose (it parses the printed diff, as `git apply`
would), so a diff that only looks right fails here.
"""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_unified_diff(old: str, diff: str) -> str:
    """Apply a one-file diff (lines with their own terminators, git's no-newline marker)."""
    src = re.findall(r"[^\n]*\n|[^\n]+$", old)
    out: list[str] = []
    pos = 0
    lines = re.findall(r"[^\n]*\n|[^\n]+$", diff)
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        i += 1
    while i < len(lines):
        m = _HUNK.match(lines[i])
        assert m, f"bad hunk header {lines[i]!r}"
        start = int(m.group(1))
        count = int(m.group(2)) if m.group(2) is not None else 1
        first = start - 1 if count else start
        out.extend(src[pos:first])
        pos = first
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            body = line[1:]
            if nxt.startswith("\\ No newline"):
                body = body[:-1]
                i += 1
            if line[0] == " ":
                assert src[pos] == body, f"context mismatch at {pos + 1}: {src[pos]!r} != {body!r}"
                out.append(body)
                pos += 1
            elif line[0] == "-":
                assert src[pos] == body, f"removed line mismatch at {pos + 1}"
                pos += 1
            elif line[0] == "+":
                out.append(body)
            i += 1
    out.extend(src[pos:])
    return "".join(out)
