r"""A small, strict unified-diff applier for tests: does a `diffing` diff give the new text?

Deliberately independent of the engine (no shared code) and as plain as `patch`: lines are split
on `\n` only (a `\r` is content, as in git), ` `/`-`/`+` lines carry their own terminators and
`\ No newline at end of file` marks a last line without one. Context and removed lines must
equal the old text exactly; hunk counts must equal their header. Anything else is refused.
"""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n$")
_NO_NEWLINE = "\\ No newline at end of file\n"


class DiffError(AssertionError):
    pass


def _lines(text: str) -> list[str]:
    """Lines split on `\\n` only, terminators kept, no trailing empty element."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def apply_unified_diff(old: str, diff: str) -> str:
    """Apply one file's git-style unified diff to `old` and return the new text."""
    if diff == "":
        return old
    lines = _lines(diff)
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        if lines[i].startswith(
            ("--- ", "+++ ", "diff --git", "index ", "new file", "deleted file")
        ):
            i += 1
            continue
        if lines[i].startswith(("rename from", "rename to")):
            i += 1
            continue
        raise DiffError(f"unexpected header line {lines[i]!r}")
    src = _lines(old)
    out: list[str] = []
    pos = 0  # next unconsumed line of src
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            raise DiffError(f"expected a hunk header, got {lines[i]!r}")
        o_start, o_len = int(m.group(1)), int(m.group(2) or "1")
        n_len = int(m.group(4) or "1")
        first = o_start - 1 if o_len else o_start
        if first < pos:
            raise DiffError("hunks overlap or go backwards")
        out.extend(src[pos:first])
        pos = first
        i += 1
        seen_old = seen_new = 0
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, body = lines[i][0], lines[i][1:]
            i += 1
            if i < len(lines) and lines[i] == _NO_NEWLINE:
                if not body.endswith("\n"):
                    raise DiffError("no-newline marker after a line without its newline")
                body = body[:-1]
                i += 1
            if tag in " -":
                if pos >= len(src):
                    raise DiffError(f"diff runs past the end of the old text at {body!r}")
                if src[pos] != body:
                    raise DiffError(f"context/removed line {body!r} != old line {src[pos]!r}")
                pos += 1
                seen_old += 1
                if tag == " ":
                    out.append(body)
                    seen_new += 1
            elif tag == "+":
                out.append(body)
                seen_new += 1
            else:
                raise DiffError(f"bad diff line {lines[i - 1]!r}")
        if (seen_old, seen_new) != (o_len, n_len):
            raise DiffError(f"hunk counts {seen_old},{seen_new} != header {o_len},{n_len}")
    out.extend(src[pos:])
    return "".join(out)
