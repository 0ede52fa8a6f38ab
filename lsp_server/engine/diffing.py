"""Git-style unified diffs built from the edits a plan already knows.

No difflib: the plan knows exactly which line ranges changed, so a hunk costs what the edit costs,
not what the file costs (difflib needs 0.5-1.9 s on a 100k-line file). Lines are printed with their
own terminators, as git does, so a CRLF file's diff shows its `\\r` and applying the diff to the old
text gives the new text byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsp_server.engine.digests import sha1
from lsp_server.engine.model import EditedLines, FileChange, LineEdit, minimal_edit
from lsp_server.engine.text import split_lines, terminator

CONTEXT = 3
NO_NEWLINE = "\\ No newline at end of file\n"


def _content_count(lines: Sequence[str]) -> int:
    # The final unterminated line counts only if it has characters.
    return len(lines) - 1 if lines and lines[-1] == "" else len(lines)


def _emit(prefix: str, line: str, out: list[str], git_lines: bool = False) -> None:
    if git_lines:
        # `\n`-split lines: a lone CR is ordinary content, as git sees it.
        out.append(prefix + line if line.endswith("\n") else prefix + line + "\n" + NO_NEWLINE)
        return
    term = terminator(line)
    if term == "":
        out.append(prefix + line + "\n")
        out.append(NO_NEWLINE)
    elif term == "\r":
        # Unreachable from `file_diff`, which diffs lone-CR texts as git lines; kept for callers
        # of `hunks` with LSP lines: each diff line stays one line (not applicable byte-exact).
        out.append(prefix + line + "\n")
    else:
        out.append(prefix + line)


def _emit_all(prefix: str, lines: Sequence[str], out: list[str], git_lines: bool) -> None:
    """`_emit` of each line; a line ending in `\n` (nearly all) is printed as it is either way."""
    for line in lines:
        if line[-1:] == "\n":
            out.append(prefix + line)
        else:
            _emit(prefix, line, out, git_lines)


def _hunk_range(start: int, length: int) -> str:
    # GNU/git convention: an empty range names the line before it.
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def hunks(
    old: Sequence[str],
    new: Sequence[str],
    edits: Iterable[LineEdit],
    context: int = CONTEXT,
    git_lines: bool = False,
) -> list[str]:
    """The `@@` hunks for `edits` (sorted, non-overlapping, old coordinates) as diff lines."""
    old_n, new_n = _content_count(old), _content_count(new)
    groups: list[list[tuple[LineEdit, int]]] = []
    delta = 0
    for e in edits:
        item = (e, delta)
        if groups and e.start - groups[-1][-1][0].end <= 2 * context:
            groups[-1].append(item)
        else:
            groups.append([item])
        delta += len(e.new_lines) - (e.end - e.start)
    out: list[str] = []
    for group in groups:
        first, first_delta = group[0]
        last, last_delta = group[-1]
        delta_after = last_delta + len(last.new_lines) - (last.end - last.start)
        o_start = max(0, first.start - context)
        o_end = min(old_n, last.end + context)
        n_start = o_start + first_delta
        n_end = min(new_n, last.end + context + delta_after)
        body: list[str] = []
        pos = o_start
        # Whether the hunk shows any removed or added line (an edit of only the final empty
        # line shows none): each such line is printed with its `-`/`+`, so this is known from
        # the slices, without reading the body's lines again (~3 ms of the 1,000-file diff).
        changed = False
        for e, d in group:
            _emit_all(" ", old[pos : min(e.start, old_n)], body, git_lines)
            removed = old[e.start : min(e.end, old_n)]
            ns = e.start + d
            added = new[ns : min(ns + len(e.new_lines), new_n)]
            if removed or added:
                changed = True
            _emit_all("-", removed, body, git_lines)
            _emit_all("+", added, body, git_lines)
            pos = e.end
        _emit_all(" ", old[pos:o_end], body, git_lines)
        o_len = max(0, o_end - o_start)
        n_len = max(0, n_end - n_start)
        if not changed:
            continue
        out.append(f"@@ -{_hunk_range(o_start, o_len)} +{_hunk_range(n_start, n_len)} @@\n")
        out.extend(body)
    return out


def blob_sha1(text: str, bom: bool = False) -> str:
    """Git's blob id for a content, for `index a..b` lines."""
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass")
    return sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _has_lone_cr(text: str) -> bool:
    return "\r" in text and text.count("\r") != text.count("\r\n")


def _adds_lone_cr(change: FileChange) -> bool:
    if change.change in ("update", "move") and change.new_text_override is None:
        # O(change): LSP lines ending in a lone CR are exactly those ending in "\r".
        return any(line.endswith("\r") for e in change.edits for line in e.new_lines)
    return change.change != "delete" and _has_lone_cr(change.new_text)


def _split_git(text: str) -> list[str]:
    """Lines split on `\n` only, in the engine's shape (the last element unterminated)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + [parts[-1]]


def file_diff(change: FileChange, with_index: bool = False) -> str:
    """The git-style diff of one file change."""
    old_path = change.path
    new_path = change.target_path
    head = [f"diff --git a/{old_path} b/{new_path}\n"]
    old_lines = change.before.lines if change.before.exists else [""]
    new_lines: Sequence[str]
    if change.change in ("update", "move") and change.new_text_override is None:
        # Only the lines around the edits are printed: do not rebuild the whole file for them.
        new_lines = EditedLines(old_lines, change.edits)
    else:
        new_lines = change.new_lines
    if change.change == "add":
        edits: list[LineEdit] = [LineEdit(0, 1, tuple(new_lines))]
        head.append("new file mode 100644\n")
    elif change.change == "delete":
        edits = [LineEdit(0, len(old_lines), ("",))]
        head.append("deleted file mode 100644\n")
    else:
        edits = list(change.edits)
        if change.change == "move":
            head.append(f"rename from {old_path}\nrename to {new_path}\n")
    git_lines = _has_lone_cr(change.before.text) or _adds_lone_cr(change)
    if git_lines:
        # A lone CR is an LSP line break but not a diff one: printed as a line end it would read
        # as CRLF, and applying the diff would change bytes. Diff such files on `\n` lines as git
        # does (one trim pass; such files are rare).
        old_lines = _split_git(change.before.text) if change.before.exists else [""]
        new_lines = _split_git(change.new_text) if change.change != "delete" else [""]
        if change.change == "add":
            edits = [LineEdit(0, 1, tuple(new_lines))]
        elif change.change == "delete":
            edits = [LineEdit(0, len(old_lines), ("",))]
        else:
            edit = minimal_edit(old_lines, new_lines)
            edits = [edit] if edit else []
    if with_index:
        a = "0" * 40 if change.change == "add" else blob_sha1(change.before.text, change.before.bom)
        b = "0" * 40 if change.change == "delete" else blob_sha1(change.new_text, change.bom)
        head.append(f"index {a[:12]}..{b[:12]}\n")
    body = hunks(old_lines, new_lines, edits, git_lines=git_lines)
    if not body:
        return "".join(head) if change.change in ("move", "add", "delete") else ""
    a_name = "/dev/null" if change.change == "add" else f"a/{old_path}"
    b_name = "/dev/null" if change.change == "delete" else f"b/{new_path}"
    head.append(f"--- {a_name}\n+++ {b_name}\n")
    return "".join(head) + "".join(body)


def text_diff(path: str, old: str, new: str) -> str:
    """The git-style diff of `path` from whole text `old` to whole text `new` (what an editor's
    save changed: engine/results.py `changed_on_save`)."""
    from lsp_server.engine.undo.changes import line_diff

    git_lines = _has_lone_cr(old) or _has_lone_cr(new)
    split = _split_git if git_lines else split_lines
    a, b = split(old), split(new)
    body = hunks(a, b, line_diff(a, b), git_lines=git_lines)
    if not body:
        return ""
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + "".join(body)


def plan_diff(changes: Iterable[FileChange], cap: int = 256 * 1024) -> str:
    """All files' diffs; past `cap` characters each further file is summarised in one line."""
    parts: list[str] = []
    size = 0
    for change in changes:
        if size >= cap or _min_diff_size(change, cap - size) > cap - size:
            # Past the cap only counts are shown: take them from the edits, skip the diff.
            plus, minus = _edit_counts(change)
            d = (
                f"diff --git a/{change.path} b/{change.target_path}\n"
                f"# diff cut: +{plus} -{minus} lines\n"
            )
            size += len(d)
            parts.append(d)
            continue
        d = file_diff(change)
        if size + len(d) > cap:
            plus = sum(
                1 for line in d.splitlines() if line.startswith("+") and not line.startswith("+++")
            )
            minus = sum(
                1 for line in d.splitlines() if line.startswith("-") and not line.startswith("---")
            )
            d = (
                f"diff --git a/{change.path} b/{change.target_path}\n"
                f"# diff cut: +{plus} -{minus} lines\n"
            )
        size += len(d)
        parts.append(d)
    return "".join(parts)


def _edit_counts(change: FileChange) -> tuple[int, int]:
    if change.change == "add":
        return _content_count(change.new_lines), 0
    if change.change == "delete":
        return 0, _content_count(change.before.lines)
    plus = sum(len(e.new_lines) for e in change.edits)
    return plus, sum(e.end - e.start for e in change.edits)


def _min_diff_size(change: FileChange, limit: int) -> int:
    """A lower bound of the file's diff size (its hunks' lines), counted until past `limit`.

    Cheap (only the lines around the edits are measured), so a file whose diff cannot fit is
    summarised without building the diff.
    """
    if change.change not in ("update", "move"):
        return 0
    old = change.before.lines
    n = len(old)
    size = 0
    covered = 0  # old lines before this index are counted already
    for e in change.edits:
        lo = max(e.start - CONTEXT, covered)
        hi = min(e.end + CONTEXT, n)
        if hi > lo:
            size += sum(map(len, old[lo:hi])) + (hi - lo)
        size += sum(map(len, e.new_lines)) + len(e.new_lines)
        covered = max(covered, hi)
        if size > limit:
            break  # enough to know it cannot fit
    return size
