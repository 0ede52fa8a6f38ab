"""Region checks (engine/syntax/region.py) against whole parses, over every shipped grammar.

The differential property (tests/syntax_corpus.py `differential`): random edits of real-looking
files; a clean region is never a file with errors, and after the fallback the errors (so the
errors the edit introduced) are exactly a full parse's. bench/bench_diagnostics_equivalence.py
runs the same property over thousands of edits.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine.model import LineEdit
from lsp_server.engine.syntax import GRAMMARS, DocumentSyntax, syntax_problems
from lsp_server.engine.text import split_lines
from tests.syntax_corpus import differential, real_file


@settings(max_examples=45, deadline=None)
@given(st.sampled_from(sorted(GRAMMARS)), st.integers(min_value=0, max_value=2**32))
def test_region_checks_agree_with_full_parses(language: str, seed: int) -> None:
    differential(language, seed, edits=25)


def _doc(language: str, text: str) -> tuple[DocumentSyntax, list[str]]:
    syn = DocumentSyntax(language, text, region_above=0)
    assert syn.problems() == []
    return syn, split_lines(text)


def _edit(syn: DocumentSyntax, lines: list[str], start: int, end: int, *new: str) -> list[str]:
    syn.apply_line_edits(lines, [LineEdit(start, end, new)])
    return split_lines("".join(lines[:start] + list(new) + lines[end:]))


def test_clean_edit_of_a_large_file_is_checked_without_a_whole_parse() -> None:
    text = real_file("python", 300)
    syn, lines = _doc("python", text)
    parses = []
    whole = syn._parser.parse
    syn._parser = type("Spy", (), {"parse": lambda self, *a: parses.append(a) or whole(*a)})()
    k = lines.index("    limit = 150 * 2\n")
    lines = _edit(syn, lines, k, k + 1, "    limit = 151 * 2\n")
    assert syn.check().status == "region" and syn.check().problems == ()
    assert parses == []  # only the region parser ran
    # A second clean edit on the stale tree, and a breaking one: its errors at file positions.
    lines = _edit(syn, lines, k + 3, k + 4, "        self.items = list(items or ())\n")
    assert syn.check().problems == ()
    lines = _edit(syn, lines, k, k + 1, "    limit = (151 * 2\n")
    check = syn.check()
    assert check.status == "region"
    assert [(p.line, p.message) for p in check.problems] == [
        (k + 1, f"missing ')' to close '(' opened at {k + 1}:13")
    ]
    assert parses == []
    # Now the file is known broken: the next edit waits for a whole parse.
    lines = _edit(syn, lines, k, k + 1, "    limit = 151 * 2\n")
    assert syn.check().status == "pending"
    assert syn.parse_detached() == ([], True)
    assert syntax_problems("python", "".join(lines)) == []


@pytest.mark.parametrize(
    ("language", "text", "start", "end", "new"),
    [
        # A string opened here and closed by the next docstring: the region cannot see it close.
        (
            "python",
            'def f():\n    return 1\n\n\ndef g():\n    """doc"""\n',
            1,
            2,
            ('    return """1\n',),
        ),
        # An else joining the if above it, a decorator joining the def below.
        ("python", "if x:\n    pass\n\ny = 1\n\nz = 2\n", 3, 4, ("else:\n",)),
        ("python", "x = 1\n\n\ndef f():\n    pass\n\n\ny = 2\n", 2, 2, ("@dec\n",)),
        # Joining two statements by deleting a line break (no ';' needed in JS).
        ("javascript", "let a = 1\nlet b = 2\nlet c = 3\n", 0, 2, ("let a = 1 let b = 2\n",)),
        # A heredoc whose terminator goes, a template literal or a string opened over lines.
        ("bash", "echo a\n\ncat <<EOF\nhi\nEOF\n\necho b\n", 4, 5, ("EOFX\n",)),
        ("javascript", "let a = 1\n\nlet t = `x\ny`\n\nlet c = 3\n", 0, 1, ("let a = `1\n",)),
        ("python", "x = 1\n\ny = '''\nz\n'''\n\nw = 2\n", 0, 1, ("x = '''1\n",)),
        ("html", "<p>a</p>\n<script>\nlet x = 1;\n</script>\n", 2, 3, ("let x = '</script>';\n",)),
        # A block comment opened and closed far below.
        ("c", "int a;\n\nint b;\n\nint c;\n\n/* x */\n", 2, 3, ("/* int b;\n",)),
    ],
)
def test_edits_across_top_level_boundaries_are_never_called_clean_wrongly(
    language: str, text: str, start: int, end: int, new: tuple[str, ...]
) -> None:
    syn, lines = _doc(language, text)
    lines = _edit(syn, lines, start, end, *new)
    check = syn.check()
    full = syntax_problems(language, "".join(lines))
    if check.status == "region" and not check.problems:
        assert full == []
    assert syn.parse_detached()[0] == full


def test_a_large_parse_reads_the_text_in_chunks_so_the_gil_is_let_go() -> None:
    from lsp_server.engine.syntax.rows import MAX_READ, READ_CHUNK, Rows

    text = real_file("python", 400)  # ~300 KiB
    syn = DocumentSyntax("python", text)
    reads: list[int] = []
    read = Rows.read

    def spy(self: Rows, byte: int, point: object = None) -> bytes:
        out = read(self, byte, point)
        reads.append(len(out))
        return out

    Rows.read = spy  # type: ignore[method-assign]
    try:
        assert syn.parse_detached() == ([], True)
    finally:
        Rows.read = read  # type: ignore[method-assign]
    assert len(reads) >= len(text) // (2 * READ_CHUNK)
    assert max(reads) <= READ_CHUNK + MAX_READ


def test_an_edit_during_a_detached_parse_is_neither_lost_nor_overwritten() -> None:
    text = real_file("python", 100)
    syn, lines = _doc("python", text)
    from lsp_server.engine.syntax import document

    original = document._parse

    def parse_then_edit(*args: object) -> object:
        tree = original(*args)  # type: ignore[arg-type]
        # The event loop records an edit while the worker's parse runs (no lock held).
        syn.replace(0, 0, "x = (\n")
        return tree

    syn.replace(0, 0, "y = 1\n")
    document._parse = parse_then_edit  # type: ignore[assignment]
    try:
        problems, current = syn.parse_detached()
    finally:
        document._parse = original
    assert (problems, current) == ([], False)  # the parse was of the text before the edit
    assert syn.source.startswith(b"x = (\ny = 1\n")
    assert syn.known_problems() is None  # not installed: the text it described is gone
    assert syn.problems() == syntax_problems("python", syn.source.decode())
    assert syn.problems()


@given(
    st.binary(max_size=40).map(lambda b: bytes(b"ab\n"[x % 3] for x in b)),
    st.lists(
        st.tuples(
            st.integers(0, 60), st.integers(0, 8), st.sampled_from([b"", b"x", b"\n", b"y\nz\n"])
        ),
        max_size=8,
    ),
)
def test_rows_stay_the_text_through_edits_and_frozen_copies_do_not_move(
    source: bytes, edits: list[tuple[int, int, bytes]]
) -> None:
    from lsp_server.engine.syntax import rows as rows_module

    rows_module.MAX_BLOCK, saved = 3, rows_module.MAX_BLOCK  # many blocks on small texts
    try:
        rows = rows_module.Rows(source)
        text = source
        for start_seed, length, new in edits:
            start = start_seed % (len(text) + 1)
            end = min(len(text), start + length)
            frozen, before = rows.frozen(), text
            rows.replace(start, end, new)
            text = text[:start] + new + text[end:]
            assert rows.to_bytes() == text and frozen.to_bytes() == before
            assert len(rows) == text.count(b"\n") + 1
            for o in range(len(text) + 1):
                assert rows.point_at(o) == (
                    text.count(b"\n", 0, o),
                    o - text.rfind(b"\n", 0, o) - 1,
                )
                chunk = rows.read(o)
                assert text.startswith(chunk, o) and (chunk or o == len(text))
    finally:
        rows_module.MAX_BLOCK = saved
