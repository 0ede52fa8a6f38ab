"""Syntax diagnostics engine: grammars, messages, positions, incremental reparse, blame."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_server.engine.model import LineEdit, apply_line_edits
from lsp_server.engine.syntax import (
    GRAMMARS,
    DocumentSyntax,
    SyntaxProblem,
    introduced_errors,
    language_for,
    line_edit_to_byte_edit,
    load_language,
    syntax_problems,
)
from lsp_server.engine.text import split_lines

# language, file name, an LSP languageId for it, valid text, broken text, the 1-based line the
# error is reported on, and words the message must contain.
CASES = [
    (
        "python",
        "m.py",
        "python",
        "def f(x):\n    return x\n",
        "def f(x):\n    return g(x\n\ny = 1\n",
        2,
        "missing ')' to close '(' opened at 2:13",
    ),
    (
        "javascript",
        "m.js",
        "javascript",
        "function f(a) {\n  return a;\n}\n",
        "function f(a) {\n  return [a;\n}\n",
        2,
        "missing ']'",
    ),
    (
        "typescript",
        "m.ts",
        "typescript",
        "function f(a: number): number {\n  return a;\n}\n",
        "function f(a: number {\n  return a;\n}\n",
        1,
        "missing ')' to close '(' opened at 1:11",
    ),
    (
        "tsx",
        "m.tsx",
        "typescriptreact",
        "const A = () => <div className='x'>hi</div>;\n",
        "const A = () => <div className='x>hi</div>;\n",
        1,
        "unclosed string",
    ),
    (
        "rust",
        "m.rs",
        "rust",
        "fn main() {\n    let x = (1 + 2);\n}\n",
        "fn main() {\n    let x = (1 + 2;\n}\n",
        2,
        "missing ')' to close '(' opened at 2:13",
    ),
    (
        "go",
        "m.go",
        "go",
        'package main\n\nfunc main() {\n\tprintln("hi")\n}\n',
        'package main\n\nfunc main() {\n\tprintln("hi"\n}\n',
        4,
        "missing ')' to close '('",
    ),
    (
        "java",
        "A.java",
        "java",
        "class A {\n  void f() {\n    int x = 1;\n  }\n}\n",
        "class A {\n  void f() {\n    int x = 1\n  }\n}\n",
        3,
        "missing ';' after '1'",
    ),
    (
        "c",
        "m.c",
        "c",
        "int main(void) {\n  return 0;\n}\n",
        "int main(void) {\n  return 0\n}\n",
        2,
        "missing ';'",
    ),
    (
        "cpp",
        "m.cpp",
        "cpp",
        "#include <vector>\nint main() { std::vector<int> v = {1, 2}; }\n",
        "#include <vector>\nint main() { std::vector<int> v = {1, 2; }\n",
        2,
        "missing '}' to close '{'",
    ),
    ("json", "m.json", "json", '{"a": [1, 2]}\n', '{"a": [1, 2}\n', 1, "missing ']'"),
    ("yaml", "m.yaml", "yaml", "a: [1, 2]\nb: 3\n", "a: [1, 2\nb: 3\n", 1, "missing ']'"),
    (
        "toml",
        "m.toml",
        "toml",
        'a = "x"\n[t]\nb = 1\n',
        'a = "x\n[t]\nb = 1\n',
        1,
        "unclosed string",
    ),
    (
        "bash",
        "m.sh",
        "shellscript",
        "if [ -n x ]; then\n  echo hi\nfi\n",
        "if [ -n x ]; then\n  echo hi\n",
        3,
        "missing 'fi'",
    ),
    (
        "html",
        "m.html",
        "html",
        '<div class="a">hi</div>\n',
        '<div class="a>hi</div>\n',
        1,
        "unclosed string",
    ),
    ("css", "m.css", "css", "a { color: red; }\n", "a { color: red;\n", 1, "missing '}'"),
]
IDS = [c[0] for c in CASES]


def test_every_grammar_has_a_case() -> None:
    assert sorted(IDS) == sorted(GRAMMARS)


@pytest.mark.parametrize(("language", "name", "language_id"), [c[:3] for c in CASES], ids=IDS)
def test_language_detection(language: str, name: str, language_id: str) -> None:
    assert language_for(language_id, None) == language
    assert language_for(None, name) == language
    assert language_for(None, f"/some/dir/{name}") == language
    assert language_for("", f"file:///w/{name}") == language
    load_language(language)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_valid_snippet_has_no_problems(case: tuple[str, str, str, str, str, int, str]) -> None:
    language, _, _, valid, *_ = case
    assert syntax_problems(language, valid) == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_broken_snippet_is_reported_helpfully(
    case: tuple[str, str, str, str, str, int, str],
) -> None:
    language, _, _, _, broken, line, words = case
    problems = syntax_problems(language, broken)
    assert problems, f"no error found in {broken!r}"
    first = problems[0]
    assert first.line == line, first
    assert words in first.message, first.message
    assert "ERROR" not in first.message
    assert first.to_result()["line"] == line


@pytest.mark.parametrize(
    ("language_id", "path", "expected"),
    [
        ("plaintext", "notes.txt", None),
        ("plaintext", "script.py", None),  # the editor says plain text: believed
        ("markdown", "README.md", None),
        (None, "README", None),
        (None, "data.unknownext", None),
        (None, None, None),
        ("jsonc", "settings.json", None),  # comments and trailing commas allowed there
        ("jsonc", "tsconfig.jsonc", None),
        ("vue", "App.js", "javascript"),  # an id we do not know: the extension decides
        ("typescriptreact", "a.tsx", "tsx"),
        ("sh", "x", "bash"),
        ("c++", "x.cc", "cpp"),
        (None, "include/x.h", "cpp"),
        (None, "C:\\w\\Main.JAVA", "java"),
        (None, ".bashrc", "bash"),
        (None, "Cargo.lock", "toml"),
        ("Python", None, "python"),
    ],
)
def test_language_for(language_id: str | None, path: str | None, expected: str | None) -> None:
    assert language_for(language_id, path) == expected


def test_plain_text_and_unknown_languages_give_none() -> None:
    broken = "def f(:\n  (((\n"
    assert syntax_problems(language_for("plaintext", "a.txt"), broken) == []
    assert syntax_problems(language_for(None, "a.weird"), broken) == []


# ---- edits through DocumentSyntax ------------------------------------------------------------


class Doc:
    """A document as a front end holds it: LSP lines plus the incremental syntax object."""

    def __init__(self, language: str, text: str) -> None:
        self.lines = split_lines(text)
        self.syntax = DocumentSyntax(language, text)

    def replace_line(self, index: int, new: str) -> list[SyntaxProblem]:
        """Replace one line (0-based); the problems this edit introduced."""
        return self.apply([LineEdit(index, index + 1, (new,))])

    def apply(self, edits: list[LineEdit]) -> list[SyntaxProblem]:
        before = self.syntax.problems()
        self.syntax.apply_line_edits(self.lines, edits)
        self.lines = apply_line_edits(self.lines, edits)
        assert self.syntax.source == "".join(self.lines).encode()
        return introduced_errors(before, self.syntax.problems(), edits)


PY = "".join(f"def f{i}(a, b):\n    x = [a, b, {i}]\n    return g(x, a)\n\n" for i in range(50))
TS = "".join(
    f"export function f{i}(a: number): number {{\n  const x = [a, {i}];\n  return g(x);\n}}\n"
    for i in range(50)
)
RS = "".join(f"fn f{i}(a: i32) -> i32 {{\n    let x = (a, {i});\n    g(x)\n}}\n" for i in range(50))


@pytest.mark.parametrize(
    ("language", "text", "line", "broken", "words"),
    [
        ("python", PY, 81, "    x = [a, b, 20\n", "missing ']' to close '[' opened at 82:9"),
        ("python", PY, 80, "def f20(a, b)\n", "missing ':'"),
        ("python", PY, 81, "    x = 'a, b, 20]\n", "unclosed string starting at 82:9"),
        ("typescript", TS, 81, "  const x = [a, 20;\n", "missing ']' to close '[' opened at 82:13"),
        ("typescript", TS, 80, "export function f20(a: number: number {\n", "82"),
        ("rust", RS, 81, "    let x = (a, 20;\n", "missing ')' to close '(' opened at 82:13"),
    ],
)
def test_breaking_edit_is_reported_and_fixing_edit_clears_it(
    language: str, text: str, line: int, broken: str, words: str
) -> None:
    doc = Doc(language, text)
    assert doc.syntax.problems() == []
    good = doc.lines[line]
    introduced = doc.replace_line(line, broken)
    assert introduced, doc.syntax.problems()
    first = introduced[0]
    if words.isdigit():
        assert str(first.line) in (words, str(line + 1)), first
    else:
        assert words in first.message, first.message
        assert first.line in (line + 1, line + 2), first
    assert doc.replace_line(line, good) == []
    assert doc.syntax.problems() == []


def test_already_broken_file_does_not_blame_an_unrelated_edit() -> None:
    lines = split_lines(PY)
    lines[5] = "    x = [a, b, 1\n"  # broken far above the edit
    doc = Doc("python", "".join(lines))
    assert doc.syntax.problems()
    # An unrelated, valid edit far below (shifting lines by inserting two) blames nothing.
    assert doc.apply([LineEdit(150, 151, ("    y = 1\n", "    z = 2\n"))]) == []
    # A breaking edit there is still reported, even though the file was broken before.
    introduced = doc.replace_line(161, "    return g(x, a\n")
    assert [p.line for p in introduced][:1] in ([162], [163]), introduced
    assert "missing ')'" in introduced[0].message


def test_edit_inside_an_already_broken_line_that_keeps_the_error_is_not_blamed() -> None:
    lines = split_lines(PY)
    lines[5] = "    x = [a, b, 1\n"
    doc = Doc("python", "".join(lines))
    before = doc.syntax.problems()
    assert doc.replace_line(5, "    x = [a, b, 2\n") == []
    assert [p.key for p in doc.syntax.problems()] == [p.key for p in before]


def test_clean_file_blames_an_error_reported_far_from_the_edit() -> None:
    # Deleting a class's closing brace is reported where the parser gave up: the file's end.
    text = "function top() {\n  if (x) {\n    y();\n  }\n}\n" + "function f() {\n  g();\n}\n" * 10
    doc = Doc("typescript", text)
    introduced = doc.replace_line(3, "\n")
    assert len(introduced) == 1
    assert introduced[0].message == "missing '}' to close '{' opened at 1:16"
    assert introduced[0].line > 30
    # Had the file been broken elsewhere before, an error this far from the edit would not count.
    far = introduced_errors(
        [introduced[0]], [introduced[0]], [LineEdit(10, 11, ("  n() { return 3; }\n",))]
    )
    assert far == []


def test_one_unclosed_bracket_is_reported_once() -> None:
    text = "x = foo(\n" + PY * 4
    problems = syntax_problems("python", text)
    assert len(problems) == 1
    assert problems[0].message == "missing ')' to close '(' opened at 1:8"
    # The range stays on its line; the span records how far the damage reaches.
    assert problems[0].end.line == 0
    assert problems[0].span_end_line > 500


def test_problem_count_is_capped() -> None:
    text = "".join(f"y{i} = 1 1\n" for i in range(200))
    problems = DocumentSyntax("python", text, max_problems=5).problems()
    assert [p.line for p in problems] == [1, 2, 3, 4, 5]
    assert len(syntax_problems("python", text)) == 20
    # Several brackets left open in one swallowed region: the first line's innermost one.
    text = "x = (1 + [2,\n" + "".join(f"x{i} = (1 +\n\n" for i in range(50))
    problems = syntax_problems("python", text)
    assert problems[0].message == "missing ']' to close '[' opened at 1:10", problems


def test_positions_in_every_encoding() -> None:
    # "é" is 2 UTF-8 bytes / 1 UTF-16 unit; "😀" is 4 bytes / 2 units; both 1 code point.
    problems = syntax_problems("python", "s = 'é😀'\nt = 'é😀' + (1\n")
    p = problems[0]
    assert p.start.line == 1
    assert (p.start.char, p.start.utf16, p.start.byte) == (11, 12, 15)
    assert p.column == 12
    assert p.lsp_range("utf-8") == ((1, 15), (1, 16))
    assert p.lsp_range("utf-16") == ((1, 12), (1, 13))
    assert p.lsp_range("utf-32") == ((1, 11), (1, 12))
    assert p.to_result() == {
        "line": 2,
        "column": 12,
        "endLine": 2,
        "endColumn": 13,
        "message": "missing ')' to close '(' opened at 2:12",
        "kind": "unclosed",
    }


@pytest.mark.parametrize(
    ("language", "eol"),
    [
        ("python", "\n"),
        ("python", "\r\n"),
        # tree-sitter-python itself does not end lines at a lone "\r" (old Mac files); the
        # TypeScript grammar takes it as whitespace, so positions can be checked there.
        ("typescript", "\r"),
        ("typescript", "\r\n"),
    ],
)
def test_lines_follow_lsp_line_endings(language: str, eol: str) -> None:
    text = eol.join(["a = 1", "b = 2", "c = [1, 2", "d = 4", ""])
    if language == "typescript":
        text = eol.join(["let a = 1;", "let b = 2;", "c = [1, 2;", "let d = 4;", ""])
    problems = syntax_problems(language, text)
    assert problems, text
    assert problems[0].message.startswith("missing ']' to close '[' opened at 3:5"), problems
    assert problems[0].start.line in (2, 3)


def test_line_edit_to_byte_edit_points() -> None:
    lines = split_lines("aé\nbb\ncc")
    source = "".join(lines).encode()
    e = line_edit_to_byte_edit(lines, LineEdit(1, 2, ("xyz\n", "w")), source)
    assert (e.start_byte, e.old_end_byte, e.new_end_byte) == (4, 7, 9)
    assert (e.start_point, e.old_end_point, e.new_end_point) == ((1, 0), (2, 0), (2, 1))
    assert e.new_bytes == b"xyz\nw"
    # Replacing the unterminated last line.
    e = line_edit_to_byte_edit(lines, LineEdit(2, 3, ("d",)), source)
    assert (e.start_point, e.old_end_point, e.new_end_point) == ((2, 0), (2, 2), (2, 1))


def test_byte_and_tree_sitter_style_edits() -> None:
    syntax = DocumentSyntax("python", "x = (1 + 2)\n")
    assert syntax.problems() == []
    syntax.replace(10, 11, "")  # drop the ')'
    assert "missing ')'" in syntax.problems()[0].message
    syntax.edit(10, 10, 11, (0, 10), (0, 10), (0, 11), b"x = (1 + 2)\n")
    assert syntax.problems() == []
    syntax.set_text("x = (1 + 2\ny = 3\n")
    assert syntax.problems()[0].line == 1
    syntax.set_text("x = (1 + 2)\ny = 3\n")
    assert syntax.problems() == []


# ---- incremental == full ----------------------------------------------------------------------

PY_FRAGMENTS = [
    "def g(a):\n",
    "    return a\n",
    "x = [1, 2\n",
    "y = (3,\n",
    "]\n",
    ")\n",
    "if x:\n",
    "    pass\n",
    "s = 'abc\n",
    "class C:\n",
    "    def m(self): return 1\n",
    "z = 1 +\n",
    "",
    "# comment é\n",
    '"""doc\n',
]

edit_strategy = st.tuples(
    st.integers(min_value=0, max_value=10_000),
    st.integers(min_value=0, max_value=3),
    st.lists(st.sampled_from(PY_FRAGMENTS), max_size=3),
    st.booleans(),  # hand over the whole new text (set_text) instead of the LineEdit
)


def _fields(problems: list[SyntaxProblem]) -> list[tuple[object, ...]]:
    return [(p.message, p.kind, p.start, p.end, p.span_end_line) for p in problems]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(edit_strategy, min_size=1, max_size=6))
def test_incremental_reparse_matches_a_full_parse(
    edits: list[tuple[int, int, list[str], bool]],
) -> None:
    base = PY[: PY.index("def f12")]
    lines = split_lines(base)
    # exact_below=0: always the incremental reparse, never the small-file fresh parse.
    syntax = DocumentSyntax("python", base, exact_below=0)
    syntax.problems()
    for start_seed, length, new_lines, whole in edits:
        start = start_seed % len(lines)
        end = min(len(lines), start + length)
        edit = LineEdit(start, end, tuple(new_lines))
        if whole:
            syntax.set_text("".join(apply_line_edits(lines, [edit])))
        else:
            syntax.apply_line_edits(lines, [edit])
        # The LSP line list of the new text (an unterminated "" fragment mid-text is no line).
        lines = split_lines("".join(apply_line_edits(lines, [edit])))
        text = "".join(lines)
        assert syntax.source == text.encode()
        assert _fields(syntax.problems()) == _fields(syntax_problems("python", text)), text


@given(st.binary(max_size=300), st.binary(max_size=300), st.binary(max_size=9000))
def test_common_prefix_and_suffix(a: bytes, b: bytes, shared: bytes) -> None:
    from lsp_server.engine.syntax import _common_prefix, _common_suffix

    for x, y in ((shared + a + shared, shared + b + shared), (a, b), (a + shared, shared + b)):
        p = _common_prefix(x, y)
        s = _common_suffix(x, y, p)
        assert x[:p] == y[:p] and (p == min(len(x), len(y)) or x[p] != y[p])
        assert p + s <= min(len(x), len(y))
        assert x[len(x) - s :] == y[len(y) - s :]
        assert p + s == min(len(x), len(y)) or x[len(x) - s - 1] != y[len(y) - s - 1]


@given(
    st.lists(st.sampled_from(["a", "é", "😀", "\n", "\r", "\r\n", " "]), max_size=60),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_positions_match_a_naive_count(pieces: list[str], seeds: list[int]) -> None:
    import re

    from lsp_server.engine.syntax import _Positions

    text = "".join(pieces)
    src = text.encode()
    # Offsets at character starts, never between the two bytes of a "\r\n".
    starts = [len(text[:i].encode()) for i in range(len(text) + 1)]
    offsets = [o for o in starts if not (src[o - 1 : o + 1] == b"\r\n")]
    conv = _Positions(src)
    for seed in seeds:
        o = offsets[seed % len(offsets)]
        before = src[:o].decode()
        line = len(re.findall(r"\r\n|\r|\n", before))
        col_text = re.split(r"\r\n|\r|\n", before)[-1]
        p = conv.at(o)
        assert (p.line, p.char, p.byte) == (line, len(col_text), len(col_text.encode())), (o, text)


def test_set_text_diff_inside_a_multibyte_character() -> None:
    # 'é' (c3 a9) -> 'è' (c3 a8): the byte diff starts inside the character.
    syntax = DocumentSyntax("python", "s = 'é'\nt = (1,\n", exact_below=0)
    first = syntax.problems()
    syntax.set_text("s = 'è'\nt = (1,\n")
    assert _fields(syntax.problems()) == _fields(first)
    syntax.set_text("s = 'è'\nt = (1,)\n")
    assert syntax.problems() == []
    syntax.set_text("s = 'è\nt = (1,)\n")
    assert _fields(syntax.problems()) == _fields(syntax_problems("python", "s = 'è\nt = (1,)\n"))
