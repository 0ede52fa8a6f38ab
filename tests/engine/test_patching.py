"""Planning V4A patches over snapshots: seeking, refusals, line endings, minimal edits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine import patching
from lsp_server.engine.diffing import file_diff
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import Plan, apply_line_edits
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.text import Snapshot, absent


def snaps(files: dict[str, str]):  # type: ignore[no-untyped-def]
    def get(path: str) -> Snapshot:
        if path in files:
            return Snapshot(path, files[path], "disk")
        return absent(path)

    return get


def plan(files: dict[str, str], body: str) -> Plan:
    return plan_patch(f"*** Begin Patch\n{body}*** End Patch\n", snaps(files))


def new_texts(p: Plan) -> dict[str, str | None]:
    return {c.target_path: (None if c.change == "delete" else c.new_text) for c in p.changes} | {
        c.path: None for c in p.changes if c.change == "move"
    }


def spans(c: object) -> list[tuple[int, int, tuple[str, ...]]]:
    return [(e.start, e.end, e.new_lines) for e in c.edits]  # type: ignore[attr-defined]


def refused(files: dict[str, str], body: str) -> EditError:
    with pytest.raises(EditError) as info:
        plan(files, body)
    return info.value


def test_update_with_context() -> None:
    p = plan({"a": "one\ntwo\nthree\n"}, "*** Update File: a\n@@\n one\n-two\n+TWO\n three\n")
    (c,) = p.changes
    assert c.change == "update"
    assert c.new_text == "one\nTWO\nthree\n"
    assert spans(c) == [(1, 2, ("TWO\n",))]


def test_edits_are_minimal_runs_and_context_is_not_rewritten() -> None:
    text = "".join(f"l{i}\n" for i in range(10))
    body = "*** Update File: a\n@@\n l1\n-l2\n+L2\n l3\n l4\n-l5\n+L5\n+L5b\n l6\n"
    (c,) = plan({"a": text}, body).changes
    assert spans(c) == [(2, 3, ("L2\n",)), (5, 6, ("L5\n", "L5b\n"))]
    # A -x/+x pair that puts the same line back is not an edit.
    (c,) = plan({"a": text}, "*** Update File: a\n@@\n-l1\n+l1\n-l2\n+X\n").changes
    assert spans(c) == [(2, 3, ("X\n",))]


def test_diff_from_plan() -> None:
    (c,) = plan({"a": "a\nb\nc\n"}, "*** Update File: a\n@@\n a\n-b\n+B\n").changes
    d = file_diff(c)
    assert "--- a/a\n+++ b/a\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n" in d


def test_ambiguous_chunk_lists_every_line() -> None:
    text = "x\nfoo\ny\nfoo\nz\nfoo\n"
    err = refused({"a": text}, "*** Update File: a\n@@\n-foo\n+bar\n")
    assert err.code == Code.AMBIGUOUS
    assert err.details["lines"] == [2, 4, 6]
    assert err.details["path"] == "a"
    assert err.details["patchLine"] == 3
    assert "2, 4, 6" in err.message


def test_anchor_narrows_an_otherwise_ambiguous_chunk() -> None:
    text = "def f():\n    return 1\ndef g():\n    return 1\n"
    body = "*** Update File: a\n@@ def g():\n-    return 1\n+    return 2\n"
    (c,) = plan({"a": text}, body).changes
    assert c.new_text == "def f():\n    return 1\ndef g():\n    return 2\n"


def test_ambiguity_is_counted_only_after_the_cursor() -> None:
    text = "a\nx\nb\nx\n"
    body = "*** Update File: a\n@@\n a\n-x\n+1\n@@\n-x\n+2\n"
    (c,) = plan({"a": text}, body).changes
    assert c.new_text == "a\n1\nb\n2\n"


def test_anchor_not_found() -> None:
    err = refused({"a": "a\nb\n"}, "*** Update File: a\n@@ def nope():\n-a\n+b\n")
    assert err.code == Code.NO_MATCH
    assert err.details["oldLines"] == ["def nope():"]


def test_no_match_names_the_lines_and_candidates() -> None:
    err = refused({"a": "    value = 1\n"}, "*** Update File: a\n@@\n-\tvalue = 2\n+x\n")
    assert err.code == Code.NO_MATCH
    assert err.details["patchLine"] == 3
    assert "\tvalue = 2" in err.message
    assert isinstance(err.details["candidates"], list)


def test_chunks_out_of_order_say_so() -> None:
    err = refused({"a": "a\nb\nc\n"}, "*** Update File: a\n@@\n-c\n+C\n@@\n-a\n+A\n")
    assert err.code == Code.NO_MATCH
    cands = err.details["candidates"]
    assert cands and cands[0]["line"] == 1 and "file order" in cands[0]["why"]


@pytest.mark.parametrize(
    ("file_line", "patch_line", "level"),
    [
        ("x = 1   ", "x = 1", "trailing whitespace"),
        ("    x = 1", "x = 1", "surrounding whitespace"),
        ("say(\u201chi\u201d) \u2014 ok", 'say("hi") - ok', "unicode punctuation"),
    ],
)
def test_lenient_passes_keep_context_as_the_file_has_it(
    file_line: str, patch_line: str, level: str
) -> None:
    text = f"{file_line}\nold\n"
    p = plan({"a": text}, f"*** Update File: a\n@@\n {patch_line}\n-old\n+new\n")
    (c,) = p.changes
    assert c.new_text == f"{file_line}\nnew\n"
    assert p.summary["lenient"] == [{"path": "a", "patchLine": 3, "match": level}]


def test_exact_beats_lenient_without_ambiguity() -> None:
    text = "x \nx\n"
    (c,) = plan({"a": text}, "*** Update File: a\n@@\n-x\n+y\n").changes
    assert c.new_text == "x \ny\n"


def test_end_of_file_matches_only_at_the_end() -> None:
    text = "a\nb\na\nb\n"
    body = "*** Update File: a\n@@\n a\n-b\n+B\n*** End of File\n"
    (c,) = plan({"a": text}, body).changes
    assert c.new_text == "a\nb\na\nB\n"
    err = refused({"a": "a\nb\nc\n"}, "*** Update File: a\n@@\n-a\n+A\n*** End of File\n")
    assert err.code == Code.NO_MATCH


def test_pure_addition_goes_to_the_end() -> None:
    (c,) = plan({"a": "a\nb\n"}, "*** Update File: a\n@@ a\n+new\n").changes
    assert c.new_text == "a\nb\nnew\n"
    # Codex (0.169.0) appends at the very end, after a trailing blank line too.
    (c,) = plan({"a": "a\n\n"}, "*** Update File: a\n@@\n+new\n").changes
    assert c.new_text == "a\n\nnew\n"
    (c,) = plan({"a": "a\n\n\n"}, "*** Update File: a\n@@\n+new\n").changes
    assert c.new_text == "a\n\n\nnew\n"
    (c,) = plan({"a": "a\r\n\r\n"}, "*** Update File: a\n@@\n+new\n").changes
    assert c.new_text == "a\r\n\r\nnew\r\n"
    # An anchor moves the cursor, but a pure addition still goes at the end.
    (c,) = plan({"a": "a\nb\nc\n\n"}, "*** Update File: a\n@@ a\n+x\n").changes
    assert c.new_text == "a\nb\nc\n\nx\n"
    # A pure addition before a change, and after one: both at the end, in patch order.
    (c,) = plan({"a": "a\nb\nc\n"}, "*** Update File: a\n@@\n+x\n@@\n-b\n+B\n@@\n+y\n").changes
    assert c.new_text == "a\nB\nc\nx\ny\n"
    (c,) = plan({"a": "a"}, "*** Update File: a\n@@\n+b\n").changes
    assert c.new_text == "a\nb\n"
    (c,) = plan({"a": ""}, "*** Update File: a\n@@\n+first\n").changes
    assert c.new_text == "first\n"


def test_trailing_empty_context_may_stand_for_the_final_newline() -> None:
    (c,) = plan({"a": "a\nb\n"}, "*** Update File: a\n@@\n a\n-b\n+B\n\n").changes
    assert c.new_text == "a\nB\n"


def test_line_endings_crlf_and_mixed() -> None:
    (c,) = plan(
        {"a": "one\r\ntwo\r\nthree\r\n"},
        "*** Update File: a\n@@\n-one\n+ONE\n two\n+between\n three\n",
    ).changes
    assert c.new_text == "ONE\r\ntwo\r\nbetween\r\nthree\r\n"
    (c,) = plan(
        {"a": "one\r\ntwo\rthree\nfour\r\n"},
        "*** Update File: a\n@@\n one\n two\n-three\n+THREE\n four\n",
    ).changes
    assert c.new_text == "one\r\ntwo\rTHREE\r\nfour\r\n"


def test_updated_file_ends_with_a_newline() -> None:
    (c,) = plan({"a": "a\nb"}, "*** Update File: a\n@@\n-a\n+A\n").changes
    assert c.new_text == "A\nb\n"
    (c,) = plan({"a": "a\nb"}, "*** Update File: a\n@@\n b\n+c\n").changes
    assert c.new_text == "a\nb\nc\n"
    (c,) = plan({"a": "a\nb"}, "*** Update File: a\n@@\n+c\n").changes
    assert c.new_text == "a\nb\nc\n"


def test_add_delete_move() -> None:
    files = {"keep": "k\n", "gone": "g\n", "old/name": "from\n"}
    body = (
        "*** Add File: new/file.txt\n+hello\n+\n"
        "*** Delete File: gone\n"
        "*** Update File: old/name\n*** Move to: renamed/name\n@@\n-from\n+to\n"
    )
    p = plan(files, body)
    kinds = [(c.change, c.path, c.moved_to) for c in p.changes]
    assert kinds == [
        ("add", "new/file.txt", None),
        ("delete", "gone", None),
        ("move", "old/name", "renamed/name"),
    ]
    assert new_texts(p) == {
        "new/file.txt": "hello\n\n",
        "gone": None,
        "renamed/name": "to\n",
        "old/name": None,
    }


@pytest.mark.parametrize(
    ("files", "body", "code", "path"),
    [
        ({"a": "x\n"}, "*** Add File: a\n+y\n", Code.ALREADY_EXISTS, "a"),
        (
            {"a": "x\n", "b": "y\n"},
            "*** Update File: a\n*** Move to: b\n@@\n-x\n+z\n",
            Code.ALREADY_EXISTS,
            "b",
        ),
        ({}, "*** Update File: a\n@@\n-x\n+z\n", Code.NOT_FOUND, "a"),
        ({}, "*** Delete File: a\n", Code.NOT_FOUND, "a"),
        (
            {"a": "x\n"},
            "*** Update File: a\n@@\n-x\n+y\n*** Delete File: a\n",
            Code.INVALID_ARGUMENT,
            "a",
        ),
    ],
    ids=["add-existing", "move-onto-existing", "update-missing", "delete-missing", "twice"],
)
def test_refusals(files: dict[str, str], body: str, code: Code, path: str) -> None:
    err = refused(files, body)
    assert err.code == code
    assert err.details["path"] == path
    assert err.hint


def test_second_file_failure_plans_nothing() -> None:
    files = {"a": "a\n", "b": "b\n"}
    body = "*** Update File: a\n@@\n-a\n+A\n*** Update File: b\n@@\n-nope\n+B\n"
    err = refused(files, body)
    assert err.code == Code.NO_MATCH and err.details["path"] == "b"


def test_move_to_same_path_is_an_update() -> None:
    (c,) = plan({"a": "x\n"}, "*** Update File: a\n*** Move to: a\n@@\n-x\n+y\n").changes
    assert c.change == "update" and c.new_text == "y\n"


def test_snapshot_errors_propagate() -> None:
    def get(path: str) -> Snapshot:
        raise EditError(Code.DENIED, "no", "", {"path": path, "rule": "x"})

    with pytest.raises(EditError) as info:
        plan_patch("*** Begin Patch\n*** Delete File: a\n*** End Patch\n", get)
    assert info.value.code == Code.DENIED


def test_many_chunks_use_the_index_and_still_find_ambiguity() -> None:
    n = patching.INDEX_FROM_CHUNKS + 6
    lines = [f"line {i}" for i in range(n * 10)] + ["dup", "x", "dup"]
    text = "\n".join(lines) + "\n"
    chunks = "".join(f"@@\n-line {i * 10}\n+LINE {i * 10}\n" for i in range(n))
    (c,) = plan({"a": text}, f"*** Update File: a\n{chunks}").changes
    assert c.new_text.count("LINE ") == n
    err = refused({"a": text}, f"*** Update File: a\n{chunks}@@\n-dup\n+DUP\n")
    assert err.code == Code.AMBIGUOUS
    assert err.details["lines"] == [n * 10 + 1, n * 10 + 3]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "", "  d", "e "]), min_size=1, max_size=30),
    st.data(),
)
def test_indexed_and_scanning_seekers_agree(lines: list[str], data: st.DataObject) -> None:
    text = "\n".join(lines) + "\n"
    k = data.draw(st.integers(1, min(3, len(lines))))
    start = data.draw(st.integers(0, len(lines) - k))
    body = "".join(f"-{x}\n" for x in lines[start : start + k]) + "+NEW\n"
    patch = f"*** Begin Patch\n*** Update File: f\n@@\n{body}*** End Patch\n"

    def outcome() -> object:
        try:
            (c,) = plan_patch(patch, snaps({"f": text})).changes
            return c.new_text
        except EditError as err:
            return (err.code, err.details.get("lines"))

    scanning = outcome()
    if isinstance(scanning, str):
        # The new text built by slicing (edit offsets) is the text the line edits describe.
        (c,) = plan_patch(patch, snaps({"f": text})).changes
        assert scanning == "".join(apply_line_edits(c.before.lines, list(c.edits)))
    old = patching.INDEX_FROM_CHUNKS
    patching.INDEX_FROM_CHUNKS = 1
    try:
        indexed = outcome()
    finally:
        patching.INDEX_FROM_CHUNKS = old
    assert scanning == indexed
    if isinstance(scanning, str):
        expected = lines[:start] + ["NEW"] + lines[start + k :]
        # A unique match replaces exactly that window (possibly found by a lenient pass).
        assert scanning.count("NEW") == 1
        assert len(scanning.split("\n")) - 1 == len(expected)


@st.composite
def edit_scripts(draw: st.DrawFn) -> tuple[list[str], str, list[str]]:
    """A file of unique lines, a patch of ordered chunks, and the text the patch must produce."""
    n = draw(st.integers(1, 40))
    lines = [f"line {i}" for i in range(n)]
    out: list[str] = []
    body: list[str] = []
    pos = 0
    while pos < n and draw(st.booleans()):
        start = draw(st.integers(pos, n - 1))
        removed = draw(st.integers(0, min(3, n - start)))
        added = [f"new {start}.{j}" for j in range(draw(st.integers(0, 3)))]
        if removed == 0 and not added:
            continue
        ctx_before = lines[max(pos, start - draw(st.integers(0, 2))) : start]
        after_end = start + removed
        ctx_after = lines[after_end : min(n, after_end + draw(st.integers(0, 2)))]
        if not ctx_before and not ctx_after and removed == 0:
            ctx_after = lines[after_end : after_end + 1]
            if not ctx_after:
                continue  # a pure addition would go to the end of the file instead
        out.extend(lines[pos : start - len(ctx_before)])
        out.extend(ctx_before + added + ctx_after)
        body.append("@@\n")
        body.extend(f" {x}\n" for x in ctx_before)
        body.extend(f"-{x}\n" for x in lines[start:after_end])
        body.extend(f"+{x}\n" for x in added)
        body.extend(f" {x}\n" for x in ctx_after)
        pos = after_end + len(ctx_after)
    out.extend(lines[pos:])
    return lines, "".join(body), out


@settings(max_examples=300, deadline=None)
@given(edit_scripts(), st.sampled_from(["\n", "\r\n"]), st.booleans(), st.booleans())
def test_generated_patches_produce_the_expected_text(
    script: tuple[list[str], str, list[str]], eol: str, final_newline: bool, indexed: bool
) -> None:
    lines, body, expected = script
    if not body:
        return
    text = eol.join(lines) + (eol if final_newline else "")
    patch = f"*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n"
    old = patching.INDEX_FROM_CHUNKS
    patching.INDEX_FROM_CHUNKS = 1 if indexed else 10**9
    try:
        (c,) = plan_patch(patch, snaps({"f": text})).changes
    finally:
        patching.INDEX_FROM_CHUNKS = old
    # Codex ends an updated file with a newline; every new line takes the file's terminator
    # (`\n` when the file has none at all).
    if len(lines) == 1 and not final_newline:
        eol = "\n"
    assert c.new_text == "".join(x + eol for x in expected)
    assert c.new_text == "".join(apply_line_edits(c.before.lines, list(c.edits)))
    for e in c.edits:  # minimal: no edit starts or ends with a line it leaves unchanged
        old_lines, new_lines = c.before.lines[e.start : e.end], list(e.new_lines)
        if old_lines and new_lines:
            assert old_lines[0] != new_lines[0] and old_lines[-1] != new_lines[-1]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "", "d d", " a"]), min_size=1, max_size=25),
    st.data(),
)
def test_exact_fast_path_makes_the_seekers_edits(lines: list[str], data: st.DataObject) -> None:
    """`_exact_edits` (the text searched with str.find) gives exactly `_FileSeeker`'s edits
    whenever it takes a file, with duplicate lines, touching chunks and `-x`/`+x` pairs."""
    from lsp_server.engine.v4a import UpdateFile, parse_patch

    text = "\n".join(lines) + "\n"
    body: list[str] = []
    pos = 0
    while pos < len(lines) and data.draw(st.booleans()):
        start = data.draw(st.integers(pos, len(lines) - 1))
        k = data.draw(st.integers(1, min(4, len(lines) - start)))
        body.append("@@\n")
        for x in lines[start : start + k]:
            op = data.draw(st.sampled_from([" ", "-", "=", "+"]))
            if op == "+":
                body.append(f"+{data.draw(st.sampled_from(['a', 'n', '']))}\n")
                op = " "
            body.append(f"-{x}\n+{x}\n" if op == "=" else f"{op}{x}\n")
        if data.draw(st.booleans()):
            body.append("+added\n")
        pos = start + k
    if not body:
        return
    (hunk,) = parse_patch(f"*** Begin Patch\n*** Update File: f\n{''.join(body)}*** End Patch\n")
    assert isinstance(hunk, UpdateFile)
    fast = patching._exact_edits(text, hunk.chunks)
    try:
        general = patching._FileSeeker(Snapshot("f", text), [], hunk.chunks).edits(hunk.chunks)
    except EditError:
        general = None
    if fast is not None:
        assert fast == general


@pytest.mark.parametrize(
    ("text", "body", "expected"),
    [
        # What Codex 0.169.0 wrote for each (its binary, patch on stdin).
        ("a\nb\nc\n", "@@\r\r\n a\r\r\n-b\r\r\n+B\r\r\n c\r\r\n", "a\nB\nc\n"),
        ("a\r\nb\r\nc\r\n", "@@\r\r\n a\r\r\n-b\r\r\n+B\r\r\n c\r\r\n", "a\r\nB\r\nc\r\n"),
        ("a\nb\nc\n", "@@\n a\n-b\n+B\r\r\n c\n", "a\nB\nc\n"),
        # A third CR stays (Codex: `a\nB\r\nc\n`), and so does one inside the line.
        ("a\nb\nc\n", "@@\n a\n-b\n+B\r\r\r\n c\n", "a\nB\r\nc\n"),
        ("a\nb\nc\n", "@@\n a\n-b\n+B\r\rX\n c\n", "a\nB\r\rX\nc\n"),
        ("a\nb\nc\n", "@@\n a\n-b\n+B\r \n c\n", "a\nB\r \nc\n"),
        # Anchors and removed lines lose them too (the match is exact, not lenient).
        ("x\na\ny\na\n", "@@ y\r\r\n-a\r\r\n+A\n", "x\na\ny\nA\n"),
    ],
    ids=["lf", "crlf", "added-only", "third-cr", "cr-inside", "cr-space", "anchor"],
)
def test_lines_ending_in_cr_cr_lf_end_cleanly(text: str, body: str, expected: str) -> None:
    """A patch converted to CRLF twice: each line ends in `\\r\\r\\n`; Codex strips both CRs."""
    p = plan({"a": text}, f"*** Update File: a\n{body}")
    (c,) = p.changes
    assert c.new_text == expected
    assert "lenient" not in p.summary


def test_cr_cr_lf_in_add_file_and_paths() -> None:
    body = (
        "*** Add File: g\r\r\n+x\ry\r\r\n+z\r\n"
        "*** Update File: a\r\r\n*** Move to: b\r\r\n@@\n-a\n+A\n"
    )
    p = plan({"a": "a\n"}, body)
    assert [(c.change, c.target_path) for c in p.changes] == [("add", "g"), ("move", "b")]
    assert p.changes[0].new_text == "x\ry\nz\n"
    assert p.changes[1].new_text == "A\n"


NESTED = (
    "class Base:\n"
    "    def run(self):\n"
    "        return 1\n"
    "class Child(Base):\n"
    "    def run(self):\n"
    "        return 1\n"
    "    def stop(self):\n"
    "        return 0\n"
)
RUN_CHILD = (
    "*** Update File: a\n@@ class Child(Base):\n@@     def run(self):\n"
    "-        return 1\n+        return 2\n"
)


def test_several_anchor_lines_narrow_step_by_step() -> None:
    """`@@ class Child(Base):` then `@@ def run(self):`: the chunk is sought after both, in
    order; one `@@ def run(self):` alone would stop at Base.run."""
    (c,) = plan({"a": NESTED}, RUN_CHILD).changes
    assert spans(c) == [(5, 6, ("        return 2\n",))]
    # Bare `@@` lines among them add nothing.
    body = (
        "*** Update File: a\n@@\n@@ class Child(Base):\n@@\n@@     def stop(self):\n"
        "-        return 0\n+        return 3\n"
    )
    (c,) = plan({"a": NESTED}, body).changes
    assert spans(c) == [(7, 8, ("        return 3\n",))]


def test_narrowed_chunk_matching_twice_is_ambiguous() -> None:
    # After `class Child` and its `def run`, `return 1` is at lines 6 and 8.
    err = refused({"a": NESTED.replace("return 0", "return 1")}, RUN_CHILD)
    assert err.code == Code.AMBIGUOUS
    assert err.details["lines"] == [6, 8]


def test_nested_anchor_that_never_matches_names_it() -> None:
    body = RUN_CHILD.replace("    def run(self)", "def nowhere()")
    err = refused({"a": NESTED}, body)
    assert err.code == Code.NO_MATCH
    assert err.details["oldLines"] == ["def nowhere():"]
    assert "anchor line 2 of 2" in err.message and "after '@@ class Child(Base):'" in err.message
    # In order: the second anchor exists, but only before the first.
    body = (
        "*** Update File: a\n@@     def stop(self):\n@@ class Child(Base):\n"
        "-        return 1\n+        return 2\n"
    )
    err = refused({"a": NESTED}, body)
    assert err.code == Code.NO_MATCH and err.details["oldLines"] == ["class Child(Base):"]
    assert err.details["candidates"][0]["line"] == 4


def test_delete_then_add_is_a_rewrite() -> None:
    """The rewrite idiom: Codex deletes, then writes the new text. The plan is one update of the
    file to exactly that text (no BOM, LF as the Add File has it)."""
    body = "*** Delete File: a\n*** Add File: a\n+x\n+y\n"
    p = plan({"a": "one\r\ntwo\r\n", "b": "b\n"}, body)
    (c,) = p.changes
    assert (c.change, c.path, c.new_text, c.bom) == ("update", "a", "x\ny\n", False)
    assert p.summary["combined"] == [
        {
            "path": "a",
            "patchLines": [2, 3],
            "sections": ["delete", "add"],
            "planned": [{"path": "a", "change": "update"}],
        }
    ]
    assert file_diff(c) == (
        "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n-one\r\n-two\r\n+x\n+y\n"
    )
    # The same text again: an update with nothing to do.
    (c,) = plan({"a": "x\n"}, "*** Delete File: a\n*** Add File: a\n+x\n").changes
    assert (c.change, c.edits, c.new_text) == ("update", (), "x\n")
    # An empty Add File empties it.
    (c,) = plan({"a": "x\n"}, "*** Delete File: a\n*** Add File: a\n").changes
    assert (c.change, c.new_text) == ("update", "")


def test_move_then_add_of_the_old_name() -> None:
    body = "*** Update File: a\n*** Move to: g\n@@\n-a\n+A\n*** Add File: a\n+new\n"
    p = plan({"a": "a\nb\n"}, body)
    assert [(c.change, c.path, c.new_text) for c in p.changes] == [
        ("add", "g", "A\nb\n"),
        ("update", "a", "new\n"),
    ]
    assert p.summary["combined"][0]["sections"] == ["move", "add"]
    assert p.summary["combined"][0]["planned"] == [
        {"path": "g", "change": "add"},
        {"path": "a", "change": "update"},
    ]


@pytest.mark.parametrize(
    ("files", "body", "code", "path", "phrase"),
    [
        (
            {"a": "a\n"},
            "*** Delete File: a\n*** Add File: a\n+x\n+y\n*** Update File: a\n@@\n-x\n+X\n",
            Code.INVALID_ARGUMENT,
            "a",
            "Add File section at patch line 3 writes it anew",
        ),
        (
            {"a": "a\n"},
            "*** Update File: a\n*** Move to: b\n@@\n-a\n+A\n*** Add File: b\n+new\n",
            Code.ALREADY_EXISTS,
            "b",
            "section at patch line 2 leaves there",
        ),
        (
            {"a": "a\n"},
            "*** Update File: a\n*** Move to: b\n@@\n-a\n+A\n*** Add File: a\n+n\n"
            "*** Delete File: a\n",
            Code.INVALID_ARGUMENT,
            "a",
            "deleting it here undoes that",
        ),
        (
            {"a": "a\nb\n"},
            "*** Update File: a\n@@\n-a\n+A\n*** Update File: a\n@@\n-b\n+B\n",
            Code.INVALID_ARGUMENT,
            "a",
            "already changes it",
        ),
        ({}, "*** Add File: a\n+x\n*** Delete File: a\n", Code.INVALID_ARGUMENT, "a", "creates"),
        ({}, "*** Add File: a\n+x\n*** Add File: a\n+y\n", Code.ALREADY_EXISTS, "a", "(added)"),
        ({"a": "a\n"}, "*** Delete File: a\n*** Delete File: a\n", Code.NOT_FOUND, "a", "already"),
        (
            {"a": "a\n"},
            "*** Delete File: a\n*** Update File: a\n@@\n-a\n+b\n",
            Code.NOT_FOUND,
            "a",
            "already deleted it",
        ),
        (
            {"a": "a\n"},
            "*** Update File: a\n@@\n-a\n+b\n*** Add File: a\n+c\n",
            Code.ALREADY_EXISTS,
            "a",
            "(updated)",
        ),
        (
            {"a": "a\n", "b": "b\n"},
            "*** Delete File: b\n*** Update File: a\n*** Move to: b\n@@\n-a\n+A\n",
            Code.INVALID_ARGUMENT,
            "b",
            "the same patch frees",
        ),
        (
            {"a": "a\n"},
            "*** Update File: a\n*** Move to: b\n@@\n-a\n+A\n*** Update File: b\n@@\n-A\n+B\n",
            Code.INVALID_ARGUMENT,
            "b",
            "Merge",
        ),
        (
            {"a": "a\n"},
            "*** Update File: a\n*** Move to: b\n@@\n-a\n+A\n*** Update File: a\n@@\n-a\n+B\n",
            Code.NOT_FOUND,
            "a",
            "moved away",
        ),
        (
            {"a": "a\n"},
            "*** Delete File: a\n*** Add File: a\n+x\n*** Delete File: a\n",
            Code.INVALID_ARGUMENT,
            "a",
            "undoes that",
        ),
    ],
    ids=[
        "delete-add-update",
        "move-then-add-destination",
        "move-add-delete",
        "two-updates",
        "add-then-delete",
        "add-twice",
        "delete-twice",
        "delete-then-update",
        "update-then-add",
        "delete-then-move-onto",
        "move-then-update-destination",
        "move-then-update-source",
        "delete-add-delete",
    ],
)
def test_sections_of_one_path_refused_in_order(
    files: dict[str, str], body: str, code: Code, path: str, phrase: str
) -> None:
    """Repeats other than Delete/Move then Add: refused, saying which section came first."""
    err = refused(files, body)
    assert (err.code, err.details["path"]) == (code, path), err.message
    assert phrase in err.message + err.hint, err.message
    assert err.details["earlierPatchLine"] < err.details["patchLine"]
    assert err.hint


def test_nested_anchors_in_a_file_with_many_chunks() -> None:
    """Past INDEX_FROM_CHUNKS a file's pivot lines and anchors are indexed: the same answers."""
    n = patching.INDEX_FROM_CHUNKS + 16
    cls = "class C{k}:\n    def run(self):\n        return {r}\n# end C{k}\n"
    text = "".join(cls.format(k=k, r=0) for k in range(n))
    body = "*** Update File: a\n" + "".join(
        f"@@ class C{k}:\n@@     def run(self):\n-        return 0\n+        return {k}\n"
        f" # end C{k}\n"
        for k in range(n)
    )
    (c,) = plan({"a": text}, body).changes
    assert c.new_text == "".join(cls.format(k=k, r=k) for k in range(n))
    # The last chunk matches twice after its anchors: AMBIGUOUS, indexed or not.
    text += f"        return 0\n# end C{n - 1}\n"
    err = refused({"a": text}, body)
    assert err.code == Code.AMBIGUOUS and err.details["lines"] == [4 * n - 1, 4 * n + 1]


@pytest.mark.parametrize(
    "text, body",
    [
        # The first chunk replaced `b`; the End of File chunk names the old `b` as context.
        ("a\nb\n", "*** Update File: a\n@@\n-b\n+B\n@@\n b\n+C\n*** End of File\n"),
        # Its lines overlap the first chunk's (b), which already consumed them.
        ("a\nb\nc\n", "*** Update File: a\n@@\n a\n b\n@@\n b\n c\n+d\n*** End of File\n"),
        # A nested anchor moved the cursor past the last line: the chunk is out of order.
        ("a\nb\n", "*** Update File: a\n@@ b\n@@\n-b\n+B\n*** End of File\n"),
        # An anchor line then an End of File chunk on that same line (Codex: not found).
        ("c\n", "*** Update File: a\n@@ c\n+a\n@@\n-c\n*** End of File\n"),
    ],
)
def test_end_of_file_chunk_never_matches_before_the_cursor(text: str, body: str) -> None:
    # Found by a random differential run against Codex 0.169.0, which refuses each of these:
    # `*** End of File` tried the last position even where earlier chunks or anchors had moved
    # the forward cursor past it, so a chunk matched lines already consumed (or replaced).
    err = refused({"a": text}, body)
    assert err.code == Code.NO_MATCH
    assert "file order" in str(err.details["candidates"])


@pytest.mark.parametrize(
    "tail, code, phrase",
    [
        ("*** Update File: b\n@@\n-y\n+w\n", Code.INVALID_ARGUMENT, "Merge the two sections"),
        ("*** Delete File: b\n", Code.INVALID_ARGUMENT, "Update File section at patch line 2"),
        ("*** Add File: b\n+q\n", Code.ALREADY_EXISTS, "(moved here)"),
    ],
)
def test_move_then_add_then_the_destination_names_the_move(
    tail: str, code: Code, phrase: str
) -> None:
    # After Move a -> b then Add a, a section naming b was told "the Add File section at patch
    # line 2 creates it" (and to put its change into that section's '+' lines): line 2 is the
    # Update File that moves a there, and the patch has no Add File of b.
    body = "*** Update File: a\n*** Move to: b\n@@\n-x\n+y\n*** Add File: a\n+z\n" + tail
    err = refused({"a": "x\n"}, body)
    assert (err.code, err.details["path"], err.details["earlierPatchLine"]) == (code, "b", 2)
    assert phrase in err.message + err.hint, err.message
    assert "Add File section" not in err.message + err.hint
