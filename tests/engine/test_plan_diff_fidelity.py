"""A patch's whole answer, plan and printed diffs, byte for byte as 03eec8d's (the commit before
this session's planning speed work: values.slot_setters, split_lines' fast path, diffing.hunks'
`changed`, patching._exact_edits' pivot offset, digests' sha1 in the `index` lines).

test_speed_fidelity.py compares plans with an older commit and test_diff_fast.py compares
`hunks` alone; here 03eec8d's whole engine (from git, under another package name) and this
tree's take the same random file and patch, and `plan_patch`'s refusal or plan, `plan_diff`
and each `file_diff` with its `index` line must be the same. The files hold every line end
(LF, CRLF, lone CR, none) and the characters str.splitlines splits on but LSP does not, lone
surrogates and a BOM character; the patches keep, remove and replace their lines, add lines,
come in one to three chunks, and may end at `*** End of File`. Seeded `random`: the same cases
on every run. (A wrong pivot offset in _exact_edits cannot show here: its `_seek` then finds
nothing and the general way answers the same; about one file in eight takes the fast path.)

Needs the repository's history (`git archive`); without it the test is skipped.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import pytest

from lsp_server.engine import diffing, errors, patching, text
from tests.old_engine import engine_from_git

BEFORE = "03eec8d"
OLD_PACKAGE = "lsp_server_before_rlean"  # its own name: test_speed_fidelity loads another commit


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    modules = engine_from_git(
        BEFORE,
        OLD_PACKAGE,
        ("patching", "text", "errors", "diffing"),
        str(tmp_path_factory.mktemp("before_rlean")),
    )
    if modules is None:
        pytest.skip(f"commit {BEFORE} is not in this checkout's history (git archive failed)")
    return modules


NOW = {"patching": patching, "text": text, "errors": errors, "diffing": diffing}
CHARS = ["a", "b", " ", "\t", "é", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85"]
CHARS += ["\u2028", "\u2029", "\ud800", "\udfff", "\ufeff", "\U0001f600"]
BODIES = ["one", "two", "a b", "", "dup", "dup", "x\r", "é\u2028", "\x0c", "\ud800", "\x85"]
BODIES += ["b\x1e"]
# Lines of 8 characters and more: patching._seek looks for a chunk by its longest line then.
BODIES += ["    return value", "a longer line", "    return value", "é long line ±"]
ENDS = ["\n", "\n", "\n", "\r\n", "\r", ""]


def answer(m: dict[str, Any], patch: str, files: dict[str, str]) -> Any:
    """Everything the engine `m` says of `patch` over `files`, as plain data and printed text."""

    def get(path: str) -> Any:
        if path in files:
            return m["text"].Snapshot(path=path, text=files[path])
        return m["text"].absent(path)

    try:
        plan = m["patching"].plan_patch(patch, get)
    except m["errors"].EditError as exc:
        return ("refused", str(exc.code), exc.message, exc.hint, exc.details)
    changes = [
        (c.change, c.path, c.new_text, [(e.start, e.end, e.new_lines, e.offsets) for e in c.edits])
        for c in plan.changes
    ]
    diffs = [m["diffing"].file_diff(c, with_index=True) for c in plan.changes]
    return ("planned", changes, m["diffing"].plan_diff(plan.changes), diffs, plan.summary)


def case(r: random.Random) -> tuple[str, dict[str, str]]:
    # Half the files are LF only, ending with one (patching._exact_edits' fast path).
    ends = ENDS if r.random() < 0.5 else ["\n"]
    body = "".join(r.choice(BODIES) + r.choice(ends) for _ in range(r.randrange(1, 16)))
    if ends == ["\n"]:
        body = body.replace("\r", "")
    lines = body.split("\n")
    patch = ["*** Begin Patch", "*** Update File: f.txt"]
    k = 0
    for _ in range(r.randrange(1, 4)):  # chunks in file order
        if k >= len(lines):
            break
        k = r.randrange(k, len(lines))
        n = r.randrange(1, 4)
        patch.append("@@")
        for line in lines[k : k + n]:
            for op in r.choice([" ", "-", "-+", " "]):
                new = "".join(r.choice(CHARS) for _ in range(r.randrange(5)))
                patch.append(op + (new if op == "+" else line))
        if r.random() < 0.3:
            patch.append("+" + "".join(r.choice(CHARS) for _ in range(r.randrange(5))))
        k += n
    if r.random() < 0.2:
        patch.append("*** End of File")
    return "\n".join([*patch, "*** End Patch"]) + "\n", {"f.txt": body}


@pytest.mark.parametrize("seed", range(4))
def test_plans_and_diffs_as_before(before: dict[str, ModuleType], seed: int) -> None:
    r = random.Random(seed)
    planned = 0
    for _ in range(400):
        patch, files = case(r)
        now = answer(NOW, patch, files)
        assert now == answer(before, patch, files), (patch, files)
        planned += now[0] == "planned"
    assert planned > 100  # the cases mostly apply: the diffs were compared, not only refusals
