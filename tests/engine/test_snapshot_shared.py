"""Two plans made from one snapshot share nothing that either changes: the snapshot's lines and
text, and each plan's new text, stay as they were whatever the other plan does (lent lines,
given lines and lines split on demand alike)."""

from __future__ import annotations

import pytest

from lsp_server.engine.patching import plan_patch
from lsp_server.engine.planner import plan_replace, plan_write
from lsp_server.engine.text import LentLines, Snapshot, split_lines

TEXT = "head\n" + "a\r\nb\nc\rd\n" * 40 + "tail"


def _snapshots() -> dict[str, Snapshot]:
    return {
        "split": Snapshot("f.txt", TEXT, "disk"),
        "given": Snapshot("f.txt", TEXT, "disk", given_lines=split_lines(TEXT)),
        "lent": Snapshot("f.txt", TEXT, "buffer", 3, lent=LentLines(split_lines(TEXT), None)),
    }


PATCHES = [
    "*** Begin Patch\n*** Update File: f.txt\n@@\n head\n a\n-b\n+B1\n+B2\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: f.txt\n@@\n-tail\n+end\n*** End of File\n*** End Patch\n",
    "*** Begin Patch\n*** Delete File: f.txt\n*** End Patch\n",
]


@pytest.mark.parametrize("kind", ["split", "given", "lent"])
def test_plans_of_one_snapshot_do_not_touch_each_other(kind: str) -> None:
    snap = _snapshots()[kind]
    lines_before = list(snap.lines)
    plans = [plan_patch(p, lambda _path: snap) for p in PATCHES]
    changes = [c for plan in plans for c in plan.changes]
    changes.append(plan_replace(snap, "d\n", "D\n", replace_all=True))
    changes.append(plan_write(snap, "whole new\n"))
    texts = [c.new_text for c in changes]
    lines = [list(c.new_lines) for c in changes]
    shas = [c.new_sha256 for c in changes]
    # Done again, in the other order: every value is what it was.
    assert [c.new_text for c in reversed(changes)] == texts[::-1]
    assert [list(c.new_lines) for c in changes] == lines
    assert [c.new_sha256 for c in changes] == shas
    assert snap.text == TEXT and snap.lines == lines_before
    assert texts[0].startswith("head\na\r\nB1\nB2\nc\r")
    assert texts[2] == ""
    assert texts[-1] == "whole new\n"
