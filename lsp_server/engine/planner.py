"""Planning `replace` and `write` over snapshots, and the precondition check every edit passes.

Pure functions: snapshot and arguments in, a `FileChange` (minimal line edits) or an `EditError`
out. Nothing here reads a disk or talks to an editor.
"""

from __future__ import annotations

from dataclasses import replace

from lsp_server.engine import errors
from lsp_server.engine.eol_views import lf_view_sha256
from lsp_server.engine.matching import (
    MAX_LISTED_MATCHES,
    Match,
    candidates,
    find_exact,
    find_lines,
    normalise_arg,
    normalised_text,
)
from lsp_server.engine.model import FileChange, LineEdit, minimal_edit
from lsp_server.engine.text import (
    Snapshot,
    content,
    encode_file,
    keep_line_breaks,
    split_lines,
    terminator,
)

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

MatchMode: TypeAlias = "Literal['exact', 'lenient']"  # quoted: no typing at run time


def check_precondition(
    snap: Snapshot,
    expect: dict[str, Any] | None,
    last_read: dict[str, Any] | None,
    *,
    required: bool,
) -> None:
    """Refuse with `STALE` unless the content is the one the agent saw.

    `expect` wins over the session's last read. A version only proves anything for an open buffer;
    a sha256 proves it anywhere. When the versions differ but the content is the same (the user
    typed and undid), the edit is still safe, so the hash decides.
    """
    token = expect if expect else last_read
    if not token:
        if required:
            raise errors.stale(
                f"{snap.path} has not been read in this session and no `expect` was given, "
                "so the edit could be based on text you have not seen.",
                "Call agentEdit.read on the file first, or pass expect: {sha256} from a read.",
                expected=None,
                current=snap.token(),
                path=snap.path,
            )
        return
    version = token.get("version")
    sha = token.get("sha256")
    if version is None and sha is None and expect:
        raise errors.invalid_argument(
            "`expect` must have `version` (a buffer version) or `sha256` (from agentEdit.read).",
            "Pass expect: {version: N} or expect: {sha256: '...'}.",
            argument="expect",
        )
    if sha is not None and not _is_sha256(sha):
        # A token that cannot be any file's sha256 (a 12-digit prefix copied from a STALE
        # message, a misquoted value) was refused STALE, "changed since it was read", over a
        # file nobody had touched, again on every retry after a fresh read.
        shown = repr(sha) if len(str(sha)) <= 80 else f"{str(sha)[:77]!r}..."
        raise errors.invalid_argument(
            f"`expect.sha256` for {snap.path} is not a sha256: {shown} "
            f"({len(str(sha))} characters); a sha256 is 64 hexadecimal digits.",
            "Pass the whole `sha256` a read returned (agentEdit.read, or `agent-edit read "
            "--json`), or `sha256sum`'s first field.",
            argument="expect",
            path=snap.path,
        )
    if version is not None and snap.source == "buffer" and snap.version == version:
        return
    if sha is not None and sha == snap.sha256:
        return
    # The same hash in capitals (hex has no case), or the file's bytes' where they differ from
    # its text's: the content the agent saw, not STALE.
    if isinstance(sha, str) and sha.lower() in (snap.sha256, _file_sha256(snap)):
        return
    # Read from Emacs's buffer of this CRLF file, which shows it with LF: the same content
    # (lsp_server/engine/eol_views.py).
    if isinstance(sha, str) and sha.lower() == lf_view_sha256(snap):
        return
    raise errors.stale(
        f"{snap.path} changed since it was read "
        f"(expected {_describe(token)}, now {_describe(snap.token())}); "
        "the edit was computed from text the editor no longer shows.",
        "Read the file again with agentEdit.read and recompute the edit from what it shows now.",
        expected={"version": version, "sha256": sha},
        current=snap.token(),
        path=snap.path,
    )


def _is_sha256(token: object) -> bool:
    """Whether `token` is written as a sha256 is: 64 hexadecimal digits, in either case."""
    return isinstance(token, str) and len(token) == 64 and not token.strip(_HEX_DIGITS)


_HEX_DIGITS = "0123456789abcdefABCDEF"


def _file_sha256(snap: Snapshot) -> str | None:
    """The sha256 of a disk file's bytes, where it is not its text's: a file with a BOM.

    A read's token is the sha256 of the text (the BOM is a flag), but the CLI's
    `--expect-sha256` says "refuse unless the file has this sha256", and `sha256sum` gives the
    bytes': for a file with a BOM that was refused STALE, "changed since it was read", over a
    file nobody had touched (tests/engine/test_expect_file_sha256.py). The bytes prove the
    same content, BOM included. (Only hashed once the text's token did not match.)

    A buffer's: the bytes its editor saves it as, where its text does not show them (a BOM,
    or, in Emacs, CRLF shown as LF): `sha256sum` of the file the buffer shows unchanged."""
    from lsp_server.engine.digests import sha256

    if snap.source == "buffer":
        text = snap.text
        crlf = snap.declared_eol in ("crlf", "cr") and "\r" not in text
        if not (snap.bom or crlf):
            return None
        if crlf:
            text = text.replace("\n", "\r\n" if snap.declared_eol == "crlf" else "\r")
        return str(sha256(encode_file(text, snap.bom)).hexdigest())
    disk = snap.disk
    if disk is None or not snap.bom:
        return None
    return str(sha256(disk.data).hexdigest())


def _describe(token: dict[str, Any]) -> str:
    parts = []
    if token.get("version") is not None:
        parts.append(f"version {token['version']}")
    if token.get("sha256"):
        parts.append(f"sha256 {str(token['sha256'])[:12]}")
    return ", ".join(parts) or "nothing"


def require_exists(snap: Snapshot) -> None:
    if not snap.exists:
        raise errors.not_found(
            f"{snap.path} does not exist.",
            # (agentEdit.read reads one file; it lists no folder: a hint saying it did sent
            # agents to read a directory, refused INVALID_ARGUMENT)
            "Check the path (spelling, folder, relative to the workspace root), or create the "
            "file with agentEdit.write.",
            path=snap.path,
        )


def plan_replace(
    snap: Snapshot,
    old_text: str,
    new_text: str,
    *,
    replace_all: bool = False,
    match: MatchMode = "exact",
) -> FileChange:
    """The minimal edit that replaces `old_text` with `new_text`, or the reason it cannot."""
    if old_text == "":
        raise errors.invalid_argument(
            "oldText is empty, so there is nothing to find.",
            "Give the exact text to replace; to create or overwrite a whole file use "
            "agentEdit.write.",
            argument="oldText",
        )
    if old_text == new_text:
        raise errors.invalid_argument(
            "NO_CHANGE: newText is the same as oldText, so the edit would change nothing.",
            "Send the text you want instead in newText.",
            argument="newText",
            reason="NO_CHANGE",
        )
    require_exists(snap)
    old = normalise_arg(old_text)
    new = normalise_arg(new_text)
    norm = normalised_text(snap)
    matches = find_exact(norm, old, snap.line_of if norm is snap.text else None)
    if not matches and match == "lenient":
        return _plan_lenient(snap, old, new, replace_all)
    if not matches:
        raise errors.no_match(
            f"oldText was not found in {snap.path}.",
            "Compare oldText with the candidates (read the file again if unsure) and resend it "
            "exactly as the file has it, including indentation.",
            path=snap.path,
            candidates=candidates(snap, old),
        )
    if len(matches) > 1 and not replace_all:
        _raise_ambiguous(snap.path, [m.line + 1 for m in matches])
    return FileChange("update", snap, _edits_for_matches(snap, norm, matches, new))


def _line_after(lines: list[str], last: int) -> str | None:
    return lines[last + 1] if last + 1 < len(lines) else None


def _raise_ambiguous(path: str, lines: list[int]) -> None:
    listed = lines[:MAX_LISTED_MATCHES]
    raise errors.ambiguous(
        f"oldText matches {len(lines)} places in {path} (lines {', '.join(map(str, listed))}); "
        "the edit would have to guess which one.",
        "Add surrounding lines to oldText so it matches exactly once, or set replaceAll: true "
        "to change every occurrence.",
        path=path,
        lines=listed,
        count=len(lines),
    )


def _edits_for_matches(
    snap: Snapshot, norm: str, matches: list[Match], new: str
) -> tuple[LineEdit, ...]:
    lines = snap.lines
    eol = snap.eol
    # Group matches whose line spans touch, so each group becomes one region rewrite. Spans are
    # offsets from the start of the group's first line in `norm`, whose lines are the LSP lines.
    groups: list[tuple[int, int, int, list[tuple[int, int]]]] = []
    for m in matches:
        end_line = m.line + norm.count("\n", m.start, m.end)
        # Adjacent groups merge too, so each group's neighbour lines are lines no edit changes.
        if groups and m.line <= groups[-1][1] + 1:
            first, last, base, spans = groups[-1]
            spans.append((m.start - base, m.end - base))
            groups[-1] = (first, max(end_line, last), base, spans)
        else:
            base = norm.rfind("\n", 0, m.start) + 1
            groups.append((m.line, end_line, base, [(m.start - base, m.end - base)]))
    # Offsets in `norm` are offsets in the text only when no terminator was rewritten.
    same = norm is snap.text
    edits: list[LineEdit] = []
    for first, last, base, spans in groups:
        region = lines[first : last + 1]
        text = "\n".join(content(x) for x in region)
        pieces = []
        pos = 0
        for s, e in spans:
            pieces.append(text[pos:s])
            pieces.append(new)
            pos = e
        pieces.append(text[pos:])
        new_contents = "".join(pieces).split("\n")
        new_region = []
        for i, c in enumerate(new_contents):
            if i == len(new_contents) - 1:
                term = terminator(region[-1])
            elif i < len(region) - 1:
                term = terminator(region[i]) or eol
            else:
                term = eol
            new_region.append(c + term)
        new_region = keep_line_breaks(
            new_region, lines[first - 1] if first else None, _line_after(lines, last)
        )
        edit = minimal_edit(region, new_region, first)
        if edit is not None:
            if same:
                start = base + sum(len(x) for x in region[: edit.start - first])
                end = start + sum(len(x) for x in region[edit.start - first : edit.end - first])
                edit = replace(edit, offsets=(start, end))
            edits.append(edit)
    return tuple(edits)


def _plan_lenient(snap: Snapshot, old: str, new: str, replace_all: bool) -> FileChange:
    contents = [content(x) for x in snap.lines]
    needle = old.split("\n")
    if len(needle) > 1 and needle[-1] == "":
        needle.pop()
    _level, hits = find_lines(contents, needle)
    if not hits:
        raise errors.no_match(
            f"oldText was not found in {snap.path}, even ignoring whitespace and typographic "
            "punctuation.",
            "Read the file again and resend oldText as the file has it.",
            path=snap.path,
            candidates=candidates(snap, old),
            match="lenient",
        )
    if len(hits) > 1 and not replace_all:
        _raise_ambiguous(snap.path, [h + 1 for h in hits])
    new_lines = new.split("\n")
    if len(new_lines) > 1 and new_lines[-1] == "":
        new_lines.pop()
    pieces: list[tuple[int, list[str], list[str]]] = []
    last_end = -1
    for h in hits:
        if h < last_end:
            continue  # overlapping windows: like str.replace, the first one wins
        region = snap.lines[h : h + len(needle)]
        repl = [
            # The region's last line may be the file's unterminated one: never leave a middle
            # line without a terminator.
            c + ((terminator(region[i]) if i < len(region) else "") or snap.eol)
            for i, c in enumerate(new_lines)
        ]
        if repl and region:
            repl[-1] = content(repl[-1]) + terminator(region[-1])
        pieces.append((h, region, repl))
        last_end = h + len(needle)
    edits: list[LineEdit] = []
    for k, (h, region, repl) in enumerate(pieces):
        # Windows can touch: the neighbour line is then the other window's new line.
        end = h + len(region)
        prev_new = pieces[k - 1][2] if k and pieces[k - 1][0] + len(pieces[k - 1][1]) == h else []
        next_new = pieces[k + 1][2] if k + 1 < len(pieces) and pieces[k + 1][0] == end else []
        before = prev_new[-1] if prev_new else (snap.lines[h - 1] if h else None)
        after = next_new[0] if next_new else _line_after(snap.lines, end - 1)
        repl[:] = keep_line_breaks(repl, before, after)
        edit = minimal_edit(region, repl, h)
        if edit is not None:
            edits.append(edit)
    return FileChange("update", snap, tuple(edits))


def _keep_line_endings(old: list[str], new_contents: list[str], eol: str) -> list[str]:
    """LSP lines for `new_contents`: lines the agent left alone keep their own terminators.

    Those are the common prefix and suffix (by content) of the old and new lines; every other
    line is new and takes the file's first terminator, as new lines do in every other edit.
    """
    old_contents = [content(x) for x in old]
    n, m = len(old), len(new_contents)
    p = 0
    while p < n - 1 and p < m - 1 and old_contents[p] == new_contents[p]:
        p += 1
    s = 0
    while s < n - 1 - p and s < m - 1 - p and old_contents[n - 2 - s] == new_contents[m - 2 - s]:
        s += 1
    lines = []
    for i, c in enumerate(new_contents[:-1]):
        if i < p:
            term = terminator(old[i])
        elif i >= m - 1 - s:
            term = terminator(old[i - m + n])
        else:
            term = ""
        lines.append(c + (term or eol))
    lines.append(new_contents[-1])
    return keep_line_breaks(lines, None, None)


def plan_write(snap: Snapshot, text: str) -> FileChange:
    """Create (the file must be absent) or overwrite (as minimal line edits, line endings kept)."""
    if not snap.exists:
        return FileChange("add", snap, new_text_override=text)
    if text.startswith("\ufeff"):
        text = text[1:]
    if snap.source == "buffer" and "\r\n" in text and not snap.has_cr and snap.eol == "\n":
        # An open buffer's line endings are the editor's, and one without a CR is shown with
        # `\n` whatever the file has (Emacs shows a CRLF file so and writes CRLF on save; VS
        # Code turns inserted CRLF into its document's EOL). A CR put into it is no line end
        # there: Emacs saved the agent's CRLF as CR CR LF. Written as the buffer's `\n`.
        text = text.replace("\r\n", "\n")
    # An agent writes `\n`; lines it left alone keep their own terminators (CRLF, CR, or a mix).
    if "\r" not in text and ("\r" in snap.text or snap.eol != "\n"):
        # (A buffer showing no break yet whose text shows the file's CRLF: `shown_eol`.)
        new_lines = _keep_line_endings(snap.lines, text.split("\n"), snap.eol)
    else:
        new_lines = split_lines(text)
    edit = minimal_edit(snap.lines, new_lines)
    return FileChange("update", snap, (edit,) if edit else ())
