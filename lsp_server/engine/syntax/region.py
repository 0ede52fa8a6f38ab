"""Region checks: whether edits of a clean document keep it clean, parsing only the edited part.

An incremental reparse is not cheap on a clean file (tree-sitter re-lexes the top-level repeat
statement by statement: ~264 ms for a one-line edit of 100k Python lines). So after edits of a
document known to be clean, only the top-level nodes the edits touched, one neighbour on each
side, parse alone, as whole rows. The region is clean when its parse has no error and its first
and last node come out as the same nodes as in the document's tree (the parse started and ended
in step with the document's); then the document is clean. When the region has errors they are
reported at the document's positions (line `first_row` on), but only a whole-document parse can
say which errors the document has.

The document's tree here may be stale: edits are recorded on it (`tree.edit`) but it is not
reparsed after a clean region check. Its top-level nodes are still where edits left them, and the
boundary comparison above is what catches a boundary the edits moved.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node, Parser

from lsp_server.engine.syntax.problems import SyntaxProblem, extract_problems
from lsp_server.engine.syntax.rows import Rows

# A region larger than this is not worth it (a whole-document parse off the request path is):
# it means a huge top-level node (one JSON object, a YAML document, an <html> element).
MAX_REGION_BYTES = 256 * 1024


@dataclass(frozen=True)
class Region:
    first_row: int
    end_row: int  # exclusive
    start_byte: int
    end_byte: int
    # The document tree's nodes the region's parse must reproduce at its ends (None: the region
    # reaches the document's start / end, nothing to keep in step with there).
    first: tuple[str, int, int] | None
    last: tuple[str, int, int] | None


def _child_index(root: Node, byte: int, by_end: bool) -> int:
    """Children are sorted: the first index whose end (by_end) / start is >= `byte`."""
    lo, hi = 0, root.child_count
    while lo < hi:
        mid = (lo + hi) // 2
        child = root.child(mid)
        assert child is not None
        if (child.end_byte if by_end else child.start_byte) < byte:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _shape(node: Node) -> tuple[str, int, int]:
    return (node.type, node.start_byte, node.end_byte)


def find_region(
    root: Node, rows: Rows, lo: int, hi: int, max_bytes: int = MAX_REGION_BYTES
) -> Region | None:
    """The rows to parse for edits spanning bytes [lo, hi] of the (edited) tree, or None."""
    n = root.child_count
    if n == 0:
        return Region(0, len(rows), 0, rows.size, None, None)
    i = _child_index(root, lo, by_end=True)  # first child ending at or after lo
    j = _child_index(root, hi + 1, by_end=False) - 1  # last child starting at or before hi
    a = max(0, min(i, j) - 1)
    b = min(n - 1, max(i, j) + 1)

    def child(k: int) -> Node:
        node = root.child(k)
        assert node is not None
        return node

    # Start at a row start, end at a row end: rows map to lines one to one.
    while a > 0 and child(a).start_point[1] != 0:
        a -= 1

    def last_row(node: Node) -> int:
        row, col = node.end_point
        return row if col > 0 or row == 0 else row - 1

    while b < n - 1 and child(b + 1).start_point[0] <= last_row(child(b)):
        b += 1
    first_row = 0 if a == 0 else child(a).start_point[0]
    end_row = len(rows) if b == n - 1 else last_row(child(b)) + 1
    start_byte = rows.offset_of_row(first_row)
    end_byte = rows.offset_of_row(end_row)
    if end_byte - start_byte > max_bytes:
        return None
    return Region(
        first_row,
        end_row,
        start_byte,
        end_byte,
        None if a == 0 else _shape(child(a)),
        None if b == n - 1 else _shape(child(b)),
    )


def check_region(
    parser: Parser, rows: Rows, region: Region, max_problems: int
) -> list[SyntaxProblem] | None:
    """The region's problems at the document's positions ([] when clean), or None when its parse
    did not keep in step with the document at its ends (then nothing is known)."""
    source = b"".join(rows.rows(region.first_row, region.end_row))
    tree = parser.parse(source)
    root = tree.root_node
    if root.has_error:
        return extract_problems(tree, source, max_problems, line_base=region.first_row)
    base = region.start_byte
    n = root.child_count  # child(i) raises on a bad index instead of giving None
    for want, got in (
        (region.first, root.child(0) if n else None),
        (region.last, root.child(n - 1) if n else None),
    ):
        if want is None:
            continue
        if got is None or (got.type, got.start_byte + base, got.end_byte + base) != want:
            return None
    return []
