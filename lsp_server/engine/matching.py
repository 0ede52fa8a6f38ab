"""Finding `oldText` in a snapshot: exact by default, every match counted, and helpful misses.

Exact matching runs on the text with every line terminator seen as `\\n` (so an agent's LF text
matches a CRLF file) and maps matches back to LSP lines. An agent may opt in to `lenient`
matching: Codex's strictness ladder (exact, trailing whitespace, surrounding whitespace, Unicode
punctuation folded to ASCII) over whole lines, and still unique. When nothing matches, the nearest
candidate lines are found and the difference is named (indentation, tabs vs spaces, quotes, ...),
because "not found" alone makes agents retry blindly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsp_server.engine.text import Snapshot, content

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

# Codex's Unicode folding: dashes, quotes and odd spaces that models and editors swap for ASCII.
_FOLD = str.maketrans(
    {
        **{chr(c): "-" for c in (*range(0x2010, 0x2016), 0x2212)},
        **{chr(c): "'" for c in (0x2018, 0x2019, 0x201A, 0x201B)},
        **{chr(c): '"' for c in (0x201C, 0x201D, 0x201E, 0x201F)},
        **{chr(c): " " for c in (0x00A0, *range(0x2002, 0x200B), 0x202F, 0x205F, 0x3000)},
    }
)

MAX_LISTED_MATCHES = 200
MAX_CANDIDATES = 3
# Fuzzy candidate search is quadratic-ish; past this many lines only cheap comparisons run.
FUZZY_LINE_LIMIT = 20_000


def fold_unicode(s: str) -> str:
    return s.translate(_FOLD)


# The ladder, loosest last. Each maps a line to the form compared at that level.
LADDER: list[tuple[str, Callable[[str], str]]] = [
    ("exact", lambda s: s),
    ("trailing whitespace", lambda s: s.rstrip()),
    ("surrounding whitespace", lambda s: s.strip()),
    ("unicode punctuation", lambda s: fold_unicode(s).strip()),
]


@dataclass(frozen=True)
class Match:
    """A match of the LF-normalised text at [start, end), in normalised offsets."""

    start: int
    end: int
    line: int  # 0-based line of `start`


def normalised_text(snap: Snapshot) -> str:
    """The snapshot's text with every terminator as `\\n`; line i here is LSP line i."""
    if not snap.has_cr:
        return snap.text
    return "\n".join(content(line) for line in snap.lines)


def normalise_arg(s: str) -> str:
    # A lone CR ends an LSP line just as LF does, so an agent copying a CR-only file's text must
    # match it, and a CR in newText must become a line break, not a CR hidden inside a line.
    return s.replace("\r\n", "\n").replace("\r", "\n")


def find_exact(norm: str, needle: str, line_of: Callable[[int], int] | None = None) -> list[Match]:
    """Every non-overlapping occurrence, left to right (as `str.replace` would replace them).

    `line_of(offset)`, when the caller has a line index for `norm`, saves counting newlines from
    the top of the file (a 5 MB scan for a match in the middle of a 100k-line buffer).
    """
    out: list[Match] = []
    pos = 0
    line = 0
    counted_to = 0
    while True:
        i = norm.find(needle, pos)
        if i < 0:
            return out
        if line_of is not None and not out:
            line = line_of(i)
        else:
            line += norm.count("\n", counted_to, i)
        counted_to = i
        out.append(Match(i, i + len(needle), line))
        pos = i + len(needle)


def find_lines(contents: list[str], needle_lines: list[str]) -> tuple[str, list[int]]:
    """Windows of whole lines equal to `needle_lines` at the first ladder level that has any."""
    k = len(needle_lines)
    for level, norm in LADDER:
        want = [norm(x) for x in needle_lines]
        first = want[0]
        hits = [
            i
            for i in range(len(contents) - k + 1)
            if norm(contents[i]) == first
            and all(norm(contents[i + j]) == want[j] for j in range(1, k))
        ]
        if hits:
            return level, hits
    return "", []


def _why(want: str, have: str) -> str | None:
    """Name how a file line differs from the line the agent gave, if it is a near miss."""
    if want == have:
        return None
    if want.strip() == have.strip():
        lw, lh = want[: len(want) - len(want.lstrip())], have[: len(have) - len(have.lstrip())]
        if lw != lh:
            if ("\t" in lw) != ("\t" in lh):
                where = "the file" if "\t" in lh else "oldText"
                return f"indentation differs: tabs vs spaces (tabs in {where})"
            return f"indentation differs: file has {len(lh)} leading characters, oldText {len(lw)}"
        return "trailing whitespace differs"
    if fold_unicode(want).strip() == fold_unicode(have).strip():
        return "quotes, dashes or spaces differ (typographic vs ASCII)"
    if " ".join(want.split()) == " ".join(have.split()):
        return "whitespace inside the line differs"
    if want.lower() == have.lower():
        return "letter case differs"
    return None


def candidates(snap: Snapshot, old_text: str) -> list[dict[str, Any]]:
    """The nearest places to `old_text`, each `{line, text, why}` (1-based lines)."""
    contents = [content(line) for line in snap.lines]
    needle = normalise_arg(old_text).split("\n")
    # Anchor on the first line that says something.
    idx = next((i for i, s in enumerate(needle) if s.strip()), 0)
    anchor = needle[idx]
    found: list[dict[str, Any]] = []
    seen: set[int] = set()

    def add(line_no: int, why: str) -> None:
        if line_no not in seen and len(found) < MAX_CANDIDATES:
            seen.add(line_no)
            found.append({"line": line_no + 1, "text": contents[line_no], "why": why})

    stripped_anchor = anchor.strip()
    for i, have in enumerate(contents):
        if len(found) >= MAX_CANDIDATES:
            break
        if stripped_anchor and stripped_anchor in have:
            # The anchor line is here: explain where the rest of the block departs from the file.
            start = i - idx
            why = _block_difference(contents, start, needle)
            if why:
                add(max(start, 0), why)
            continue
        why_line = _why(anchor, have)
        if why_line:
            add(i, f"line {idx + 1} of oldText: {why_line}")
    if not found and len(contents) <= FUZZY_LINE_LIMIT and stripped_anchor:
        import difflib  # only for a miss: not worth its import on every patch

        close = difflib.get_close_matches(anchor, contents, n=MAX_CANDIDATES, cutoff=0.6)
        for text in close:
            i = contents.index(text)
            add(i, f"similar to line {idx + 1} of oldText but not equal")
    return found


def _block_difference(contents: list[str], start: int, needle: list[str]) -> str | None:
    for j, want in enumerate(needle):
        i = start + j
        if i < 0 or i >= len(contents):
            return f"oldText runs past the end of the file at its line {j + 1}"
        have = contents[i]
        if have == want:
            continue
        if j == len(needle) - 1 and have.startswith(want):
            continue
        if j == 0 and have.endswith(want):
            continue
        why = _why(want, have)
        return f"line {j + 1} of oldText differs from file line {i + 1}" + (
            f": {why}" if why else f": file has {have!r}, oldText has {want!r}"
        )
    return None
