"""The faster parser and planner give the answers 2a090b2's gave: a whole-plan differential.

The speed branches replaced v4a.py's token reader with a line reader (and let the normaliser skip
anchored `@@` headers) and gave patching.py a `str.find` fast path for anchors, `*** End of File`
and many chunks. Here `plan_patch` of 2a090b2 (its whole engine, taken from git at test time and
imported under another package name) and of this tree run side by side on the same patch and
files; any difference in the hunks, the plan (change kinds, edits with their offsets, new text,
its sha256, the summary) or the refusal (code, message, hint, details) fails. Inputs: the Codex
conformance corpus, hand-written hostile cases (line ends `splitlines` splits on but LSP does
not, lone CR, BOM, repeated lines, chunks at the first/last line, End of File, anchors, many
chunks past INDEX_FROM_CHUNKS, malformed sections) and generated ones.

Needs the repository's history (`git archive`); without it the test is skipped.
"""

from __future__ import annotations

import hashlib
import os
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_server.engine import errors, patching, text, v4a
from tests.engine.test_conformance import SCENARIOS
from tests.old_engine import engine_from_git

BEFORE = "2a090b2"
OLD_PACKAGE = "lsp_server_before_speed"


def _load_before(base: str) -> dict[str, ModuleType] | None:
    return engine_from_git(BEFORE, OLD_PACKAGE, ("patching", "text", "errors", "v4a"), base)


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    modules = _load_before(str(tmp_path_factory.mktemp("before")))
    if modules is None:
        # Skipped, not failed, on CI too: a shallow clone (or no git) is how CI may check out
        # the code, and then this comparison cannot be made at all, which is no fault of it.
        pytest.skip(f"commit {BEFORE} is not in this checkout's history (git archive failed)")
    return modules


NOW = {"patching": patching, "text": text, "errors": errors, "v4a": v4a}


def _hunks(patch: Any) -> list[Any]:
    out: list[Any] = []
    for h in patch:
        kind = type(h).__name__
        if kind == "UpdateFile":
            chunks = [
                (
                    c.anchor,
                    c.old_lines,
                    c.new_lines,
                    c.is_end_of_file,
                    c.ops,
                    c.patch_line,
                    c.nested_anchors,
                )
                for c in h.chunks
            ]
            out.append((kind, h.path, h.move_to, h.patch_line, chunks))
        elif kind == "AddFile":
            out.append((kind, h.path, h.lines, h.patch_line))
        else:
            out.append((kind, h.path, h.patch_line))
    return out


def outcome(m: dict[str, Any], patch: str, files: dict[str, str], bom: bool = False) -> Any:
    """Everything `plan_patch` answers for `patch` over `files`, as plain data."""

    def get(path: str) -> Any:
        if path in files:
            return m["text"].Snapshot(path=path, text=files[path], bom=bom)
        return m["text"].absent(path)

    try:
        hunks = _hunks(m["v4a"].parse_patch(patch))
        plan = m["patching"].plan_patch(patch, get)
    except m["errors"].EditError as exc:
        return ("refused", str(exc.code), exc.message, exc.hint, exc.details)
    changes = []
    for c in plan.changes:
        new = c.new_text
        edits = [(e.start, e.end, e.new_lines, e.offsets) for e in c.edits]
        sha = hashlib.sha256(new.encode("utf-8", "surrogatepass")).hexdigest()
        changes.append((c.change, c.path, c.moved_to, c.new_bom, edits, new, sha))
    return ("planned", hunks, changes, plan.summary)


def same(
    before: dict[str, ModuleType], patch: str, files: dict[str, str], bom: bool = False
) -> None:
    assert outcome(NOW, patch, files, bom) == outcome(before, patch, files, bom)


def _patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


def _update(path: str, *lines: str) -> str:
    return _patch(f"*** Update File: {path}", *lines)


NUMBERED = "".join(f"line {i} of the file\n" for i in range(60))
REPEATED = "def f():\n    return 1\n\ndef f():\n    return 1\n\nend\n"
MANY_CHUNKS = [f"@@\n-line {i} of the file\n+new {i}" for i in range(0, 60, 2)]

HOSTILE: dict[str, tuple[str, dict[str, str]]] = {
    "anchor": (_update("f", "@@ line 3 of the file", "-line 4 of the file", "+x"), {"f": NUMBERED}),
    "nested anchors": (
        _update("f", "@@ def f():", "@@     return 1", "-", "+x"),
        {"f": REPEATED},
    ),
    "anchor only before the cursor": (
        _update(
            "f", "@@", "-line 9 of the file", "+x", "@@ line 3 of the file", "-line 20 of the file"
        ),
        {"f": NUMBERED},
    ),
    "anchor repeated, chunk after the second": (
        _update("f", "@@ def f():", "@@ def f():", "-    return 1", "+    return 2"),
        {"f": REPEATED},
    ),
    "ambiguous without anchor": (_update("f", "@@", "-    return 1", "+x"), {"f": REPEATED}),
    "overlapping repeats": (_update("f", "@@", " a", "-a", "+b"), {"f": "a\na\na\n"}),
    "end of file": (_update("f", "@@", "-end", "+fin", "*** End of File"), {"f": REPEATED}),
    "end of file, only match earlier": (
        _update("f", "@@", "-def f():", "+g", "*** End of File"),
        {"f": REPEATED},
    ),
    "end of file then another chunk": (
        _update("f", "@@", "-end", "+fin", "*** End of File", "@@", " def f():"),
        {"f": REPEATED},
    ),
    "end of file, empty last old line": (
        _update("f", "@@", " end", "-", "*** End of File"),
        {"f": "a\nend\n\n"},
    ),
    "first line": (_update("f", "-line 0 of the file", "+first"), {"f": NUMBERED}),
    "last line, no final newline": (_update("f", "@@", "-c", "+d"), {"f": "a\nb\nc"}),
    "empty file": (_update("f", "@@", "-x", "+y"), {"f": ""}),
    "pure addition": (_update("f", "@@ line 2 of the file", "+added"), {"f": NUMBERED}),
    "touching chunks": (
        _update("f", "@@", "-line 1 of the file", "+a", "@@", "-line 2 of the file", "+b"),
        {"f": NUMBERED},
    ),
    "replaced line comes back": (
        _update(
            "f", "@@", "-line 1 of the file", "-line 2 of the file", "+line 1 of the file", "+z"
        ),
        {"f": NUMBERED},
    ),
    "form feed, U+2028, U+0085 inside lines": (
        _update("f", "@@ b\x0cc", "-d\u2028e", "+x", " f\x85g"),
        {"f": "a\nb\x0cc\nd\u2028e\nf\x85g\nh\n"},
    ),
    "splitlines separators, end of file": (
        _update("f", "@@", "-f\x85g", "+y", "*** End of File"),
        {"f": "a\x1c\nf\x85g\n"},
    ),
    "lone CR file": (_update("f", "@@ a", "-b", "+c"), {"f": "a\rb\rc\r"}),
    "CRLF file": (_update("f", "@@ a", "-b", "+c"), {"f": "a\r\nb\r\nc\r\n"}),
    "CRLF patch over LF file": (
        _update("f", "@@ line 3 of the file", "-line 4 of the file", "+x").replace("\n", "\r\n"),
        {"f": NUMBERED},
    ),
    "trailing whitespace (lenient)": (_update("f", "@@", "-end  ", "+x"), {"f": REPEATED}),
    "tab vs spaces (lenient)": (_update("f", "@@", "-\treturn 1", "+x"), {"f": REPEATED}),
    "confusable quotes (lenient)": (_update("f", "@@", '-say "hi"', "+x"), {"f": "say “hi”\n"}),
    "anchor with a suffix match": (_update("f", "@@ f", "-g", "+h"), {"f": "xf\nf\ng\n"}),
    "pivot inside a longer line": (
        _update("f", "@@", " a", "-a long pivot line", "+x"),
        {"f": "b\nxa long pivot line\na\na long pivot line\n"},
    ),
    "many chunks (index)": (_update("f", *MANY_CHUNKS), {"f": NUMBERED}),
    "many chunks, one ambiguous": (
        _update("f", *MANY_CHUNKS[:-1], "@@", "-dup", "+x"),
        {"f": NUMBERED + "dup\n" + "dup\n"},
    ),
    "many chunks, anchors and end of file": (
        _update(
            "f",
            *[
                f"@@ line {i} of the file\n-line {i + 1} of the file\n+n{i}"
                for i in range(0, 56, 2)
            ],
            "@@",
            "-line 59 of the file",
            "+last",
            "*** End of File",
        ),
        {"f": NUMBERED},
    ),
    "many chunks of several lines (index)": (
        _update(
            "f",
            *[
                f"@@\n line {i} of the file\n-line {i + 1} of the file\n+n{i}"
                for i in range(0, 57, 2)
            ],
            "@@ line 57 of the file",
            " line 58 of the file",
            "-line 59 of the file",
            "*** End of File",
        ),
        {"f": NUMBERED},
    ),
    "many functions, anchored, repeated pivots (index)": (
        _update(
            "f",
            *[f"@@ def f{i}():\n x{i}\n-    return the_value\n+    return {i}" for i in range(30)],
        ),
        {"f": "".join(f"def f{i}():\nx{i}\n    return the_value\n" for i in range(30))},
    ),
    "end of file, suffix of the last line": (
        _update("f", "@@", "-end", "+fin", "*** End of File"),
        {"f": "a\nxend\n"},
    ),
    "end of file before the cursor": (
        _update("f", "@@", "-b", "+c", "@@", " b", "*** End of File"),
        {"f": "a\nb\n"},
    ),
    "many chunks, repeated pivots": (
        _update("f", *[f"@@\n x{i}\n-    common pivot line\n+p{i}" for i in range(30)]),
        {
            "f": "".join(f"x{i}\n    common pivot line\n" for i in range(30))
            + "    common pivot line\n"
        },
    ),
    "move with edits": (
        _patch("*** Update File: f", "*** Move to: g", "@@", "-end", "+fin"),
        {"f": REPEATED},
    ),
    "add, delete, update": (
        _patch(
            "*** Add File: n",
            "+x",
            "",
            "+y",
            "*** Delete File: d",
            "*** Update File: f",
            "-end",
            "+e",
        ),
        {"f": REPEATED, "d": "gone\n"},
    ),
    "duplicate update": (
        _patch("*** Update File: f", "-end", "+e", "*** Update File: f", "-end", "+e"),
        {"f": REPEATED},
    ),
    "delete then add": (_patch("*** Delete File: f", "*** Add File: f", "+new"), {"f": REPEATED}),
    "empty paths": (_patch("*** Update File: ", "*** Move to: ", "@@", " x"), {}),
    "missing End Patch": ("*** Begin Patch\n*** Update File: f\n-end\n+e\n", {"f": REPEATED}),
    "malformed header": (_patch("*** Updat File: f", "-end"), {"f": REPEATED}),
    "headers without body": (_update("f", "@@ end", "@@"), {"f": REPEATED}),
    "text after End of File": (_update("f", "-end", "*** End of File", " x"), {"f": REPEATED}),
    "anchor padded, unified, closed": (
        _update("f", "@@  def f():  ", "@@ -1,2 +1,2 @@     return 1", "@@ end @@", " end"),
        {"f": REPEATED},
    ),
    "heredoc and blank lines": (
        "<<'EOF'\n\n" + _update("f", "", "@@ def f():", "", "-    return 1", "+x") + "\nEOF\n",
        {"f": REPEATED},
    ),
    "huge line": (_update("f", "-" + "y" * 100_000, "+z"), {"f": "a\n" + "y" * 100_000 + "\n"}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_cases_answer_as_before(before: dict[str, ModuleType], name: str) -> None:
    patch, files = HOSTILE[name]
    same(before, patch, files)
    same(before, patch, files, bom=True)


@pytest.mark.parametrize(
    "scenario", sorted(p.name for p in SCENARIOS.iterdir() if (p / "patch.txt").is_file())
)
def test_conformance_corpus_answers_as_before(before: dict[str, ModuleType], scenario: str) -> None:
    folder = str(SCENARIOS / scenario)
    with open(os.path.join(folder, "patch.txt"), encoding="utf-8", newline="") as f:
        patch = f.read()
    files: dict[str, str] = {}
    inputs = os.path.join(folder, "input")
    for dirpath, _, names in os.walk(inputs):
        for name in names:
            full = os.path.join(dirpath, name)
            with open(full, encoding="utf-8", newline="") as f:
                files[os.path.relpath(full, inputs).replace(os.sep, "/")] = f.read()
    same(before, patch, files)


# Generated cases: a file of numbered lines and a few repeated ones, and a patch whose chunks
# are windows of it (in order, so most match), ops, anchors and End of File drawn.
_REPEATS = [
    "}",
    "",
    "    pass",
    "        self.value = value  # a long line",
    "a\x0cb",
    "u\u2028v",
    "“q”",
]


@st.composite
def plans(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    n = draw(st.integers(1, 80))
    rate = draw(st.sampled_from([0.0, 0.2, 0.6]))
    pick = draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
    lines = [
        _REPEATS[int(p * 1000) % len(_REPEATS)] if p < rate else f"line {i} {'y' * (i % 11)}"
        for i, p in enumerate(pick)
    ]
    end = draw(st.sampled_from(["\n", "\n", "\n", ""]))
    body = "\n".join(lines) + end
    out: list[str] = []
    cursor = 0
    for c in range(draw(st.sampled_from([1, 2, 3, 24, 30]))):
        start = min(n - 1, cursor + draw(st.integers(0, 3)))
        size = draw(st.integers(1, max(1, min(3, n - start))))
        window = lines[start : start + size]
        if c or draw(st.booleans()):
            if start > cursor and draw(st.integers(0, 3)) == 0:
                anchor = lines[draw(st.integers(cursor, start - 1))].rstrip()
                out.append(f"@@ {anchor}" if anchor else "@@")
            else:
                out.append("@@")
        for line in window:
            op = draw(st.sampled_from(" --"))
            out.append(op + line)
            if op == "-" and draw(st.booleans()):
                out.append("+" + draw(st.sampled_from([line, "new " + line, ""])))
        if draw(st.integers(0, 4)) == 0:
            out.append("+added")
        if start + size == n and draw(st.booleans()):
            out.append("*** End of File")
        cursor = start + size
    return _update("f", *out), {"f": body}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_generated_plans_answer_as_before(
    before: dict[str, ModuleType], case: tuple[str, dict[str, str]]
) -> None:
    same(before, *case)


_PATCH_LINES = [
    "*** Begin Patch",
    "*** End Patch",
    " *** End Patch",
    "*** Add File: a",
    "*** Add File:b",
    "*** Delete File: c",
    "*** Update File: a",
    "*** Move to: d",
    "*** Move to: ",
    "*** Update File: ",
    "@@",
    "@@ ",
    "@@ x",
    "@@ x ",
    "@@ -1,2 +1,2 @@ f",
    "@@ x @@",
    "@@  x",
    "@@ -x",
    "@@x",
    "@@@",
    "@@ x\x0b",
    "@@ x\u2028",
    "@@ x\x85",
    "*** End of File",
    "",
    " ",
    "\t",
    "\x0c",
    "+a",
    "-a",
    " a",
    "a",
    "+",
    "-",
    " \x0c",
    "  *** Update File: a",
    "é",
    "<<EOF",
    "EOF",
    "*** Bad",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_PATCH_LINES), max_size=14),
    st.lists(st.sampled_from(["\n", "\n", "\n", "\r\n", "\r\r\n"]), min_size=16, max_size=16),
)
def test_generated_patch_texts_parse_as_before(
    before: dict[str, ModuleType], body: list[str], ends: list[str]
) -> None:
    lines = ["*** Begin Patch", *body, "*** End Patch"]
    patch = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    same(before, patch, {"a": "a\nx\n", "c": "c\n"})
