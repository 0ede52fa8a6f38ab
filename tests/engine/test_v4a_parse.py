"""The V4A parser: what the normalising pre-pass accepts, what it refuses; it never crashes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.v4a import (
    AddFile,
    Chunk,
    DeleteFile,
    NormalisedPatch,
    UpdateFile,
    normalise_patch,
    parse_patch,
)


def upd(path: str, *chunks: Chunk, move_to: str | None = None) -> UpdateFile:
    return UpdateFile(path, move_to, chunks)


def ch(
    old: tuple[str, ...],
    new: tuple[str, ...],
    ops: str,
    anchor: str | None = None,
    eof: bool = False,
) -> Chunk:
    return Chunk(anchor, old, new, eof, ops)


def strip_lines(patch: tuple[object, ...]) -> tuple[object, ...]:
    """The hunks without their patch line numbers, to compare shapes."""
    out: list[object] = []
    for h in patch:
        if isinstance(h, UpdateFile):
            chunks = tuple(
                Chunk(c.anchor, c.old_lines, c.new_lines, c.is_end_of_file, c.ops) for c in h.chunks
            )
            out.append(UpdateFile(h.path, h.move_to, chunks))
        elif isinstance(h, AddFile):
            out.append(AddFile(h.path, h.lines))
        elif isinstance(h, DeleteFile):
            out.append(DeleteFile(h.path))
    return tuple(out)


BASIC = upd("a.py", ch(("x", "y"), ("x", "z"), " -+"))

LENIENT = [
    (
        "canonical",
        "*** Begin Patch\n*** Update File: a.py\n@@\n x\n-y\n+z\n*** End Patch\n",
        (BASIC,),
    ),
    (
        "no final newline",
        "*** Begin Patch\n*** Update File: a.py\n@@\n x\n-y\n+z\n*** End Patch",
        (BASIC,),
    ),
    (
        "trimmed input",
        "\n\n   *** Begin Patch\n*** Update File: a.py\n@@\n x\n-y\n+z\n*** End Patch\n\n  \n",
        (BASIC,),
    ),
    (
        "padded begin/end markers",
        " *** Begin Patch  \n*** Update File: a.py\n@@\n x\n-y\n+z\n  *** End Patch \n",
        (BASIC,),
    ),
    (
        "padded file header",
        "*** Begin Patch\n  *** Update File: a.py  \n@@\n x\n-y\n+z\n*** End Patch\n",
        (BASIC,),
    ),
    (
        "no space after the colon",
        "*** Begin Patch\n*** Update File:a.py\n@@\n x\n-y\n+z\n*** End Patch\n",
        (BASIC,),
    ),
    (
        "heredoc <<EOF",
        "<<EOF\n*** Begin Patch\n*** Update File: a.py\n@@\n x\n-y\n+z\n*** End Patch\nEOF\n",
        (BASIC,),
    ),
    (
        "heredoc <<'EOF'",
        "<<'EOF'\n*** Begin Patch\n*** Update File: a.py\n@@\n x\n-y\n+z\n*** End Patch\nEOF",
        (BASIC,),
    ),
    (
        'heredoc <<"EOF" after apply_patch',
        'apply_patch <<"EOF"\n*** Begin Patch\n*** Update File: a.py\n@@\n x\n-y\n+z\n'
        "*** End Patch\nEOF\n",
        (BASIC,),
    ),
    (
        "CRLF patch body",
        "*** Begin Patch\r\n*** Update File: a.py\r\n@@\r\n x\r\n-y\r\n+z\r\n*** End Patch\r\n",
        (BASIC,),
    ),
    (
        "first chunk without @@",
        "*** Begin Patch\n*** Update File: a.py\n x\n-y\n+z\n*** End Patch\n",
        (BASIC,),
    ),
    (
        "empty line inside a chunk is empty context",
        "*** Begin Patch\n*** Update File: a.py\n@@\n x\n\n-y\n+z\n*** End Patch\n",
        (upd("a.py", ch(("x", "", "y"), ("x", "", "z"), "  -+")),),
    ),
    (
        "tab-only line inside a chunk is empty context",
        "*** Begin Patch\n*** Update File: a.py\n@@\n x\n\t\n-y\n+z\n*** End Patch\n",
        (upd("a.py", ch(("x", "", "y"), ("x", "", "z"), "  -+")),),
    ),
    (
        "blank lines between sections and before the first chunk",
        "*** Begin Patch\n\n*** Delete File: d\n\n*** Update File: a.py\n\n\n@@\n x\n-y\n+z\n"
        "*** End Patch\n",
        (DeleteFile("d"), BASIC),
    ),
    (
        "anchor, trailing space on @@",
        "*** Begin Patch\n*** Update File: a.py\n@@ def f():\n x\n-y\n+z\n@@  \n-q\n"
        "*** End Patch\n",
        (upd("a.py", ch(("x", "y"), ("x", "z"), " -+", "def f():"), ch(("q",), (), "-")),),
    ),
    (
        "unified-diff style header",
        "*** Begin Patch\n*** Update File: a.py\n@@ -10,3 +10,3 @@ def f():\n x\n-y\n+z\n"
        "@@ -20 +20 @@\n-q\n*** End Patch\n",
        (upd("a.py", ch(("x", "y"), ("x", "z"), " -+", "def f():"), ch(("q",), (), "-")),),
    ),
    (
        "closed @@ anchor @@",
        "*** Begin Patch\n*** Update File: a.py\n@@ class A @@\n x\n-y\n+z\n*** End Patch\n",
        (upd("a.py", ch(("x", "y"), ("x", "z"), " -+", "class A")),),
    ),
    (
        "end of file marker",
        "*** Begin Patch\n*** Update File: a.py\n@@\n x\n-y\n+z\n*** End of File\n*** End Patch\n",
        (upd("a.py", ch(("x", "y"), ("x", "z"), " -+", eof=True)),),
    ),
    (
        "move to",
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: b/c.py\n@@\n x\n-y\n+z\n"
        "*** End Patch\n",
        (upd("a.py", ch(("x", "y"), ("x", "z"), " -+"), move_to="b/c.py"),),
    ),
    (
        "add file with a blank line inside and after",
        "*** Begin Patch\n*** Add File: n.txt\n+one\n\n+three\n\n*** Delete File: d\n"
        "*** End Patch\n",
        (AddFile("n.txt", ("one", "", "three")), DeleteFile("d")),
    ),
    (
        "empty body lines of every kind",
        "*** Begin Patch\n*** Update File: a.py\n@@\n \n-\n+\n*** Add File: e\n+\n*** End Patch\n",
        (upd("a.py", ch(("", ""), ("", ""), " -+")), AddFile("e", ("",))),
    ),
    (
        "context lines whose text is patch markers (a file containing a patch)",
        "*** Begin Patch\n*** Update File: t.py\n@@\n *** Update File: b.py\n *** End of File\n"
        "-@@\n+@@ x\n *** End Patch\n *** End Patch\n",
        (
            upd(
                "t.py",
                ch(
                    ("*** Update File: b.py", "*** End of File", "@@", "*** End Patch"),
                    ("*** Update File: b.py", "*** End of File", "@@ x", "*** End Patch"),
                    "  -+ ",
                ),
            ),
        ),
    ),
    (
        "padded headers between sections",
        "*** Begin Patch\n*** Add File: n\n+x\n  *** Delete File: d\n\t*** Update File: a.py\n"
        "@@\n x\n-y\n+z\n*** End Patch\n",
        (AddFile("n", ("x",)), DeleteFile("d"), BASIC),
    ),
    (
        "a context line that looks like a marker but is indented content",
        "*** Begin Patch\n*** Update File: a.py\n@@\n  *** not a marker\n-y\n+z\n*** End Patch\n",
        (upd("a.py", ch((" *** not a marker", "y"), (" *** not a marker", "z"), " -+")),),
    ),
]


@pytest.mark.parametrize(("name", "text", "expected"), LENIENT, ids=[c[0] for c in LENIENT])
def test_lenient_inputs(name: str, text: str, expected: tuple[object, ...]) -> None:
    assert strip_lines(parse_patch(text)) == expected


def test_add_file_text_ends_every_line() -> None:
    (add,) = parse_patch("*** Begin Patch\n*** Add File: n\n+a\n+\n+b\n*** End Patch\n")
    assert isinstance(add, AddFile)
    assert add.text == "a\n\nb\n"


def test_patch_lines_are_original_line_numbers() -> None:
    text = (
        "\n\n<<'EOF'\n*** Begin Patch\n\n\n*** Update File: a\n\n@@ x\n-y\n@@\n-z\n"
        "*** End Patch\nEOF\n"
    )
    (hunk,) = parse_patch(text)
    assert isinstance(hunk, UpdateFile)
    assert hunk.patch_line == 7
    assert [c.patch_line for c in hunk.chunks] == [9, 11]


ERRORS = [
    # (name, text, patchLine, offending line, a phrase of the message)
    ("empty", "", 1, "", "first line"),
    ("no begin", "hello\n*** End Patch\n", 1, "hello", "first line"),
    ("no end", "*** Begin Patch\n*** Delete File: a\n", 2, "*** Delete File: a", "last line"),
    ("no file sections", "*** Begin Patch\n*** End Patch\n", 2, "*** End Patch", "no file"),
    (
        "invalid hunk header",
        "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch\n",
        2,
        "*** Frobnicate File: foo",
        "not a valid file header",
    ),
    (
        "update without chunks",
        "*** Begin Patch\n*** Update File: foo.txt\n*** End Patch\n",
        2,
        "*** Update File: foo.txt",
        "has no chunk",
    ),
    (
        "move without chunks",
        "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch\n",
        3,
        "*** Move to: b",
        "has no chunk",
    ),
    (
        "line without a prefix in a chunk",
        "*** Begin Patch\n*** Update File: a\n@@\n x\nfoo\n-y\n*** End Patch\n",
        5,
        "foo",
        "not a chunk line",
    ),
    (
        "line without a prefix right after @@",
        "*** Begin Patch\n*** Update File: a\n@@\nfoo\n*** End Patch\n",
        4,
        "foo",
        "not a chunk line",
    ),
    (
        "empty chunk",
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n@@ a\n@@ b\n*** End Patch\n",
        7,
        "*** End Patch",
        "follows the '@@' line 6 with no chunk lines",
    ),
    (
        "nested headers then a bad line",
        "*** Begin Patch\n*** Update File: a\n@@ class A\n@@ def f\nx\n*** End Patch\n",
        5,
        "x",
        "is not a chunk line",
    ),
    (
        "add body line without +",
        "*** Begin Patch\n*** Add File: n\n+a\nb\n*** End Patch\n",
        4,
        "b",
        "Add File",
    ),
    (
        "delete with a body",
        "*** Begin Patch\n*** Delete File: a\n+x\n*** End Patch\n",
        3,
        "+x",
        "Delete File",
    ),
    (
        "lines after end of file",
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End of File\n y\n*** End Patch\n",
        6,
        " y",
        "End of File",
    ),
    (
        "empty path",
        "*** Begin Patch\n*** Add File: \n+x\n*** End Patch\n",
        2,
        "*** Add File: ",
        "names no file",
    ),
    (
        "text after end patch",
        "*** Begin Patch\n*** Delete File: a\n*** End Patch\nthanks!\n",
        4,
        "thanks!",
        "last line",
    ),
    (
        "error line counted in the original text (heredoc, blank lines)",
        "\n<<EOF\n*** Begin Patch\n\n*** Update File: a\n@@\n x\nbad\n*** End Patch\nEOF\n",
        8,
        "bad",
        "not a chunk line",
    ),
    (
        "CRLF error line",
        "*** Begin Patch\r\n*** Update File: a\r\n@@\r\n x\r\nbad\r\n*** End Patch\r\n",
        5,
        "bad",
        "not a chunk line",
    ),
]


@pytest.mark.parametrize(
    ("name", "text", "patch_line", "line", "phrase"), ERRORS, ids=[e[0] for e in ERRORS]
)
def test_parse_errors(name: str, text: str, patch_line: int, line: str, phrase: str) -> None:
    with pytest.raises(EditError) as info:
        parse_patch(text)
    err = info.value
    assert err.code == Code.PARSE_ERROR
    assert err.details["patchLine"] == patch_line
    assert err.details["line"] == line
    assert phrase in err.message
    assert err.details["expected"], "says what was expected"
    assert isinstance(err.details["expected"], list)
    assert err.hint


def test_normalise_is_identity_on_canonical_patches() -> None:
    text = "*** Begin Patch\n*** Update File: a\n@@\n x\n-y\n+z\n*** End Patch\n"
    norm = normalise_patch(text)
    assert norm.text == text
    assert norm.dropped == ()
    assert [norm.original_line(i) for i in (1, 4, 7)] == [1, 4, 7]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 4),
    st.sets(st.integers(0, 30)),
    st.lists(st.integers(0, 40), max_size=12),
    st.booleans(),
)
def test_original_lines_is_original_line_of_each(
    first_line: int, dropped: set[int], lines: list[int], in_order: bool
) -> None:
    norm = NormalisedPatch("", first_line, tuple(sorted(d + first_line for d in dropped)), "")
    if in_order:
        lines.sort()
    assert norm.original_lines(lines) == [norm.original_line(n) for n in lines]


# Lines a model might emit: markers (some padded), headers, body lines, garbage.
PATCHY_LINES = st.one_of(
    st.sampled_from(
        [
            "*** Begin Patch",
            "*** End Patch",
            " *** End Patch ",
            "*** Update File: a.txt",
            "*** Add File: b.txt",
            "*** Delete File: c.txt",
            "*** Move to: d/e.txt",
            "*** End of File",
            "*** Frobnicate",
            "@@",
            "@@ def f():",
            "@@ -1,2 +1,3 @@",
            "<<'EOF'",
            "EOF",
            "",
            " ",
            "\t",
            "\r",
        ]
    ),
    st.text(alphabet=" +-@*abc\t\u2028\x0c", max_size=8),
    st.text(max_size=6).map(lambda s: "+" + s),
    st.text(max_size=6).map(lambda s: "-" + s),
    st.text(max_size=6).map(lambda s: " " + s),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(PATCHY_LINES, max_size=14), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_parser_returns_hunks_or_parse_error(lines: list[str], eol: str, framed: bool) -> None:
    body = eol.join(lines)
    text = f"*** Begin Patch{eol}{body}{eol}*** End Patch{eol}" if framed else body
    try:
        patch = parse_patch(text)
    except EditError as err:
        assert err.code == Code.PARSE_ERROR
        n = err.details["patchLine"]
        assert 1 <= n <= text.count("\n") + 2
        return
    assert isinstance(patch, tuple) and patch
    for hunk in patch:
        assert isinstance(hunk, AddFile | DeleteFile | UpdateFile)
        if isinstance(hunk, UpdateFile):
            assert hunk.chunks
            for c in hunk.chunks:
                assert len(c.ops) == c.ops.count(" ") + c.ops.count("-") + c.ops.count("+")
                assert len(c.old_lines) == c.ops.count(" ") + c.ops.count("-")
                assert len(c.new_lines) == c.ops.count(" ") + c.ops.count("+")


@settings(max_examples=400, deadline=None)
@given(st.lists(PATCHY_LINES, max_size=14), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_normalise_skips_bare_headers_as_if_it_looked(
    lines: list[str], eol: str, framed: bool
) -> None:
    """A bare '@@' line is not looked at (`_INTERESTING`): the chunk it starts is seen at the
    next line looked at. That changes nothing against looking at it, as before."""
    import re

    from lsp_server.engine import v4a

    body = eol.join(lines)
    text = f"*** Begin Patch{eol}{body}{eol}*** End Patch{eol}" if framed else body
    fast = normalise_patch(text)
    with_headers = re.compile(r"\n(?=[^+\- \n]|[ ][ *\t\n]|\n)")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(v4a, "_INTERESTING", with_headers)
        slow = normalise_patch(text)
    assert (fast.text, fast.first_line, fast.dropped) == (slow.text, slow.first_line, slow.dropped)


SAFE_TEXT = st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=10)


@st.composite
def models(draw: st.DrawFn) -> tuple[object, ...]:
    hunks: list[object] = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["add", "delete", "update"]))
        path = f"p{i}.txt"
        if kind == "add":
            hunks.append(AddFile(path, tuple(draw(st.lists(SAFE_TEXT, max_size=4)))))
        elif kind == "delete":
            hunks.append(DeleteFile(path))
        else:
            chunks = []
            for _ in range(draw(st.integers(1, 3))):
                ops = draw(st.text(alphabet=" -+", min_size=1, max_size=6))
                texts = [draw(SAFE_TEXT) for _ in ops]
                old = tuple(t for o, t in zip(ops, texts, strict=True) if o != "+")
                new = tuple(t for o, t in zip(ops, texts, strict=True) if o != "-")
                anchor = draw(st.none() | SAFE_TEXT.filter(lambda s: s.strip() == s and s != ""))
                chunks.append(Chunk(anchor, old, new, False, ops))
            move = draw(st.none() | st.just(f"moved/{path}"))
            hunks.append(UpdateFile(path, move, tuple(chunks)))
    return tuple(hunks)


def render(model: tuple[object, ...]) -> str:
    out = ["*** Begin Patch"]
    for h in model:
        if isinstance(h, AddFile):
            out.append(f"*** Add File: {h.path}")
            out.extend("+" + x for x in h.lines)
        elif isinstance(h, DeleteFile):
            out.append(f"*** Delete File: {h.path}")
        elif isinstance(h, UpdateFile):
            out.append(f"*** Update File: {h.path}")
            if h.move_to:
                out.append(f"*** Move to: {h.move_to}")
            for c in h.chunks:
                out.append(f"@@ {c.anchor}" if c.anchor else "@@")
                old, new = iter(c.old_lines), iter(c.new_lines)
                for op in c.ops:
                    if op == " ":
                        line = next(old)
                        next(new)
                    elif op == "-":
                        line = next(old)
                    else:
                        line = next(new)
                    out.append(op + line)
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


@settings(max_examples=200, deadline=None)
@given(models())
def test_rendered_models_parse_back(model: tuple[object, ...]) -> None:
    text = render(model)
    try:
        parsed = strip_lines(parse_patch(text))
    except EditError as err:
        # Body text can itself look like a marker or header once rendered; that must be a
        # clean refusal, never a crash.
        assert err.code == Code.PARSE_ERROR
        return
    if "***" not in text.replace("\n***", "") and "@@" not in text.replace("\n@@", ""):
        assert parsed == model


# --- the hand-written reader (v4a._read_patch) against lark itself ---------------------------


def test_the_reader_s_terminals_are_the_grammar_s() -> None:
    """v4a._TERMINALS are v4a.lark's terminals as lark compiles them (lark's public API)."""
    from lark import Lark

    from lsp_server.engine import v4a

    lark = Lark(v4a._grammar(), **v4a._LARK_OPTIONS)
    names = {t.name for t in lark.terminals} - {"BEGIN"}  # BEGIN: the reader's prefix check
    assert set(v4a._TERMINALS) == names
    for name, regexp in v4a._TERMINALS.items():
        assert lark.get_terminal(name).pattern.to_regexp() == regexp, name
    assert lark.get_terminal("BEGIN").pattern.value == v4a.BEGIN + "\n"


def _both_ways(text: str) -> None:
    """The reader parses `text` exactly as lark does, or leaves it to lark (errors always)."""
    from lark.exceptions import UnexpectedInput

    from lsp_server.engine import v4a

    norm = normalise_patch(text)
    outcomes = []
    for parse in (v4a._read_patch, lambda n: v4a._lark(v4a._ToHunks(n)).parse(n.text)):
        try:
            outcomes.append(("ok", parse(norm)))
        except UnexpectedInput:
            outcomes.append(("syntax", None))
        except EditError as err:
            outcomes.append(("error", err.to_result()))
    fast, lark = outcomes
    if lark[0] == "syntax":
        assert fast == ("ok", None), "a syntax error is left to lark"
    else:
        assert fast == lark


@settings(max_examples=400, deadline=None)
@given(st.lists(PATCHY_LINES, max_size=14), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_reader_parses_as_lark_does(lines: list[str], eol: str, framed: bool) -> None:
    body = eol.join(lines)
    _both_ways(f"*** Begin Patch{eol}{body}{eol}*** End Patch{eol}" if framed else body)


@settings(max_examples=200, deadline=None)
@given(models())
def test_reader_parses_rendered_models_as_lark_does(model: tuple[object, ...]) -> None:
    _both_ways(render(model))


@pytest.mark.parametrize(("name", "text", "expected"), LENIENT, ids=[c[0] for c in LENIENT])
def test_reader_parses_the_lenient_corpus_as_lark_does(
    name: str, text: str, expected: tuple[object, ...]
) -> None:
    _both_ways(text)


def test_reader_parses_the_conformance_patches_as_lark_does() -> None:
    from tests.engine.test_conformance import SCENARIOS  # the corpus the conformance test reads

    patches = sorted(SCENARIOS.glob("*/patch.txt"))
    assert len(patches) >= 20
    for p in patches:
        _both_ways(p.read_text(encoding="utf-8"))


def test_lark_parses_when_the_grammar_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    from lsp_server.engine import v4a

    bad = "*** Begin Patch\n*** Update File: a\nbogus\n*** End Patch\n"
    with pytest.raises(EditError) as with_reader:
        parse_patch(bad)
    monkeypatch.setattr(v4a, "_read_patch", lambda norm: None)
    assert strip_lines(parse_patch(LENIENT[0][1])) == (BASIC,)
    with pytest.raises(EditError) as info:
        parse_patch(bad)
    assert info.value.code == Code.PARSE_ERROR
    assert info.value.to_result() == with_reader.value.to_result()


# --- chunks, line by line: what `_chunks` builds in bulk, against a model of each chunk --------


@st.composite
def chunked_patches(draw: st.DrawFn) -> tuple[str, list[UpdateFile]]:
    """A patch of Update File sections (with Delete Files and dropped blank lines between them)
    and the UpdateFiles it means, chunk patch lines included, built line by line."""
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [""] * draw(st.integers(0, 2)) + ["*** Begin Patch"]
    files: list[UpdateFile] = []
    gap = True  # a blank line here is between sections (dropped), not in a chunk
    for i in range(draw(st.integers(1, 3))):
        lines += [""] * draw(st.integers(0, 2) if gap else st.just(0))
        if draw(st.booleans()):
            lines.append(f"*** Delete File: gone{i}.txt")
            lines += [""] * draw(st.integers(0, 2))
        lines.append(f"*** Update File: f{i}.txt")
        chunks: list[Chunk] = []
        for j in range(draw(st.integers(1, 3))):
            header = draw(st.sampled_from(["@@", "@@ def f():", "@@ x = 1 ", "bare"]))
            if header == "bare" and j > 0:
                header = "@@"
            anchor = None if header in ("@@", "bare") else header[3:].strip()
            if header != "bare":
                lines.append(header)
            patch_line = len(lines) + (1 if header == "bare" else 0)
            body = draw(st.lists(st.tuples(st.sampled_from(" -+"), SAFE_TEXT), min_size=1))
            if header == "bare" and body[0][0] == " " and not body[0][1][:1].isalnum():
                # Before its first line the section has no chunk yet: a blank, marker or '@@'
                # line there is not a context line.
                body[0] = ("-", body[0][1])
            for k, (op, text) in enumerate(body):
                # An empty context line may lose its space, except where it would be a blank
                # line before the chunk (dropped, not part of it).
                blank = op == " " and not text and (k > 0 or header != "bare")
                lines.append("" if blank and draw(st.booleans()) else op + text)
            eof = draw(st.booleans())
            if eof:
                lines.append("*** End of File")
            ops = "".join(op for op, _ in body)
            old = tuple(t for op, t in body if op != "+")
            new = tuple(t for op, t in body if op != "-")
            chunks.append(Chunk(anchor, old, new, eof, ops, patch_line))
            gap = eof
        files.append(UpdateFile(f"f{i}.txt", None, tuple(chunks), 0))
    lines.append("*** End Patch")
    return eol.join(lines) + eol, files


@settings(max_examples=300, deadline=None)
@given(chunked_patches())
def test_chunks_are_built_as_each_chunk_reads(case: tuple[str, list[UpdateFile]]) -> None:
    text, files = case
    updates = [h for h in parse_patch(text) if isinstance(h, UpdateFile)]
    assert [(u.path, u.chunks) for u in updates] == [(f.path, f.chunks) for f in files]
    _both_ways(text)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["*** Add File", "*** Delete File", "*** Update File", "*** Move to", "***"]),
    st.sampled_from(["", ":", ": ", ":  ", ": \t", ":\t", ": \x0c", "::"]),
    st.text(alphabet=": \t\x0c\r*ab", max_size=6),
)
def test_marker_shortcut_is_what_the_match_rebuilds(head: str, sep: str, rest: str) -> None:
    """A canonical file marker skips `_FILE_MARKER`; the match would give the same."""
    import re

    from lsp_server.engine import v4a

    stripped = (head + sep + rest).strip()
    m = re.match(v4a._FILE_MARKER, stripped)  # a source, compiled at first use
    expected = None
    if m:
        kind, path = m.group(1), m.group(2)
        state = {"Add File": v4a._ADD, "Delete File": v4a._TOP}.get(kind, v4a._UPDATE_HEAD)
        expected = (f"*** {kind}: {path}", state)
    if stripped in (v4a.BEGIN, v4a.END, v4a.END_OF_FILE):
        return
    assert v4a._marker(stripped) == expected


@pytest.mark.parametrize(
    "body",
    [
        "*** Update File: a\n*** Move to: b\n-x\n+y\n",
        "*** Update File: a\n*** Move to: b\n@@ f\n@@ g\n x\n-y\n*** End of File\n",
        "*** Update File: a\n x\n\n-y\n@@\n+z\n*** Add File: n\n*** Delete File: d\n",
        "*** Add File: n\n+1\n+\n*** Update File: a\n-q\n",
    ],
)
def test_the_reader_takes_every_section_shape_itself(body: str) -> None:
    """Valid patches never need lark (it is imported only for errors): each shape of section
    the grammar has is read by the hand-written reader, the same as lark reads it."""
    from lsp_server.engine import v4a

    text = f"*** Begin Patch\n{body}*** End Patch\n"
    assert v4a._read_patch(normalise_patch(text)) is not None
    _both_ways(text)
