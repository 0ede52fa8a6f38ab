"""Hypothesis properties over the engine: no crash on any input, and results mean what they say.

- replace is unique-or-refuse: one match gives exactly `str.replace(old, new, 1)` (on the text with
  line terminators seen as `\\n`, which is how matching is defined), several give `AMBIGUOUS` with
  every line, none gives `NO_MATCH`; `replaceAll` gives `str.replace(old, new)`.
- write round-trips: the planned text is the agent's text (line endings restored only where the
  agent sent bare `\\n` to a file that has CRs), and decode/encode round-trips bytes.
- every diff `diffing.file_diff` prints, applied to the old text by an independent applier, gives
  the new text byte for byte.
- the path policy never raises anything but `EditError` and never accepts a path outside the root.
- the V4A parser only ever returns hunks or `PARSE_ERROR`, and planning any patch only ever
  returns a plan or an `EditError`; a patch generated (difflib, 3 lines of context) from a random
  before/after pair gives exactly the after, or, when lines repeat, is `AMBIGUOUS`, never a text
  with the change in the wrong place.

Any exception other than `EditError` fails the property. The example counts add up to well over
10,000 per run (see `EXAMPLES`);
`pytest tests/engine/test_fuzz.py --hypothesis-show-statistics` prints the per-property figures.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_server.engine.diffing import file_diff
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import FileChange, apply_line_edits
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.planner import plan_replace, plan_write
from lsp_server.engine.policy import PathPolicy
from lsp_server.engine.text import (
    BINARY_SNIFF_BYTES,
    Snapshot,
    absent,
    decode_file,
    encode_file,
    split_lines,
)
from lsp_server.engine.v4a import parse_patch
from tests.unidiff import apply_unified_diff

EXAMPLES = {
    "replace": 3000,
    "replace_all": 1000,
    "lenient": 1000,
    "write": 1500,
    "roundtrip": 1500,
    "bytes": 1500,
    "diff": 2000,
    "policy": 1500,
    "v4a_parse": 1500,
    "v4a_unique": 1000,
    "v4a_dups": 700,
}
assert sum(EXAMPLES.values()) >= 10_000


# A longer hunt (nightly, or after touching the engine): AGENT_EDIT_FUZZ_SCALE=10 pytest ...
SCALE = float(os.environ.get("AGENT_EDIT_FUZZ_SCALE", "1"))


def fuzz(name: str):  # type: ignore[no-untyped-def]
    return settings(
        max_examples=max(1, int(EXAMPLES[name] * SCALE)),
        deadline=None,  # no timing in tests; slow CI machines must not fail properties
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# Small alphabets so that matches (and repeated matches) are common, plus every line terminator,
# the characters Python splits lines on but LSP does not, tabs, non-ASCII and an astral character.
TOKENS = ["a", "b", "ab", " ", "\t", "\n", "\r\n", "\r", "é", "😀", "\u2028", "\f", "x\n"]
token_text = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
any_text = st.one_of(token_text, st.text(max_size=60))
LF_TOKENS = [t for t in TOKENS if "\r" not in t]
lf_text = st.lists(st.sampled_from(LF_TOKENS), max_size=40).map("".join)


def norm(s: str) -> str:
    return s.replace("\r\n", "\n").replace("\r", "\n")


@st.composite
def replace_case(
    draw: st.DrawFn, text_st: st.SearchStrategy[str] = any_text
) -> tuple[str, str, str]:
    text = draw(text_st)
    if text and draw(st.booleans()):
        i = draw(st.integers(0, len(text) - 1))
        j = draw(st.integers(i + 1, len(text)))
        old = text[i:j]
    else:
        old = draw(token_text)
    new = draw(any_text)
    return text, old, new


def check_replace(text: str, old: str, new: str, replace_all: bool) -> None:
    snap = Snapshot("f", text)
    try:
        change = plan_replace(snap, old, new, replace_all=replace_all)
    except EditError as err:
        if old == "" or old == new:
            assert err.code == Code.INVALID_ARGUMENT
            return
        count = norm(text).count(norm(old))
        if count == 0:
            assert err.code == Code.NO_MATCH
            assert all(1 <= c["line"] <= len(snap.lines) for c in err.details["candidates"])
        else:
            assert not replace_all and count > 1
            assert err.code == Code.AMBIGUOUS
            assert err.details["count"] == count
            assert err.details["lines"] == sorted(err.details["lines"])
            assert all(1 <= n <= len(snap.lines) for n in err.details["lines"])
        return
    assert old != "" and old != new
    count = norm(text).count(norm(old))
    assert count == 1 or (replace_all and count >= 1)
    expected = norm(text).replace(norm(old), norm(new), -1 if replace_all else 1)
    assert norm(change.new_text) == expected
    if "\r" not in text + old + new:
        assert change.new_text == text.replace(old, new, -1 if replace_all else 1)
    assert "".join(change.new_lines) == change.new_text
    assert change.new_lines == split_lines(change.new_text)
    # Lines outside the edits are the old lines, terminators included.
    shift = 0
    pos = 0
    for e in change.edits:
        for i in range(pos, e.start):
            assert change.new_lines[i + shift] == snap.lines[i]
        shift += len(e.new_lines) - (e.end - e.start)
        pos = e.end
    assert apply_unified_diff(text, file_diff(change)) == change.new_text


@fuzz("replace")
@given(replace_case())
def test_replace_is_unique_or_refuse(case: tuple[str, str, str]) -> None:
    check_replace(*case, replace_all=False)


@fuzz("replace_all")
@given(replace_case())
def test_replace_all_replaces_every_occurrence(case: tuple[str, str, str]) -> None:
    check_replace(*case, replace_all=True)


@fuzz("lenient")
@given(replace_case(), st.booleans())
def test_lenient_replace_keeps_the_line_structure(case: tuple[str, str, str], every: bool) -> None:
    text, old, new = case
    snap = Snapshot("f", text)
    try:
        change = plan_replace(snap, old, new, replace_all=every, match="lenient")
    except EditError as err:
        assert err.code in (Code.INVALID_ARGUMENT, Code.NO_MATCH, Code.AMBIGUOUS)
        return
    # Whatever lenient matched, the result is well-formed LSP lines and its diff is exact.
    assert change.new_lines == split_lines(change.new_text)
    assert apply_unified_diff(text, file_diff(change)) == change.new_text


@fuzz("write")
@given(old=any_text, new=any_text, exists=st.booleans())
def test_write_round_trips(old: str, new: str, exists: bool) -> None:
    snap = Snapshot("f", old) if exists else absent("f")
    change = plan_write(snap, new)
    if not exists:
        assert change.change == "add" and change.new_text == new
        return
    agent = new[1:] if new.startswith("\ufeff") else new
    if "\r" in agent or "\r" not in old:
        assert change.new_text == agent
    else:
        # Bare `\n` text over a file with CRs: same lines, endings restored per line.
        assert norm(change.new_text) == agent
        assert len(split_lines(change.new_text)) == len(split_lines(agent))
    assert change.new_lines == split_lines(change.new_text)
    assert apply_unified_diff(old, file_diff(change)) == change.new_text


@fuzz("roundtrip")
@given(text=any_text, bom=st.booleans())
def test_decode_encode_round_trips(text: str, bom: bool) -> None:
    data = encode_file(text, bom)
    try:
        snap = decode_file("f", data)
    except EditError as err:
        assert err.code == Code.BINARY and b"\0" in data[:BINARY_SNIFF_BYTES]
        return
    assert encode_file(snap.text, snap.bom) == data
    assert "".join(snap.lines) == snap.text


@fuzz("bytes")
@given(data=st.binary(max_size=64))
def test_decode_never_mangles_bytes(data: bytes) -> None:
    try:
        snap = decode_file("f", data)
    except EditError as err:
        assert err.code in (Code.BINARY, Code.INVALID_ENCODING)
        return
    assert encode_file(snap.text, snap.bom) == data


@fuzz("diff")
@given(old=any_text, new=any_text, kind=st.sampled_from(["update", "add", "delete", "move"]))
def test_diff_applies_to_give_the_new_text(old: str, new: str, kind: str) -> None:
    if kind == "add":
        change = plan_write(absent("f"), new)
        assert apply_unified_diff("", file_diff(change)) == new
        return
    snap = Snapshot("f", old)
    if kind == "delete":
        change = FileChange("delete", snap)
        assert apply_unified_diff(old, file_diff(change)) == ""
        return
    change = plan_write(snap, new)
    if kind == "move":
        change = FileChange("move", snap, change.edits, moved_to="g")
    diff = file_diff(change)
    assert apply_unified_diff(old, diff) == change.new_text
    if old == change.new_text and kind == "update":
        assert diff == ""


# --- the path policy -------------------------------------------------------------------------

PATH_TOKENS = [
    "a",
    "src",
    ".",
    "..",
    "/",
    "//",
    ".git",
    ".env",
    "~",
    "link",
    "out",
    "file:",
    "%2e",
    "%2f",
    "%00",
    "\\",
    "C:",
    "\0",
    "\n",
    "é",
    "\u202e",
    "x" * 50,
]
hostile_path = st.one_of(
    st.lists(st.sampled_from(PATH_TOKENS), max_size=12).map("".join),
    st.text(max_size=40),
    st.from_regex(r"file://[a-z]*/[a-z%0-9./]*", fullmatch=True),
)


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fuzzpolicy")
    root = base / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src/a").write_text("a\n")
    (root / "link").symlink_to("src")
    (root / "out").symlink_to(base)
    (root / ".git").mkdir()
    return root


@fuzz("policy")
@given(path=hostile_path)
def test_policy_never_crashes_and_never_leaves_the_root(fuzz_root: Path, path: str) -> None:
    policy = PathPolicy.from_settings([str(fuzz_root)])
    try:
        r = policy.resolve(path)
    except EditError as err:
        assert err.code in (Code.OUTSIDE_WORKSPACE, Code.DENIED, Code.INVALID_ARGUMENT)
        assert err.details["rule"] and err.details["rule"] in err.message
        return
    real = os.path.realpath(r.abs_path)
    assert real == r.abs_path
    assert real.startswith(str(fuzz_root) + os.sep)
    assert not re.search(r"(^|/)\.git(/|$)", r.rel_path, re.IGNORECASE)
    assert r.rel_path and not r.rel_path.startswith("/")


# --- V4A -------------------------------------------------------------------------------------

PATCH_TOKENS = [
    "*** Begin Patch\n",
    "*** End Patch\n",
    "*** Update File: f\n",
    "*** Add File: g\n",
    "*** Delete File: f\n",
    "*** Move to: h\n",
    "*** End of File\n",
    "@@\n",
    "@@ def f():\n",
    " ctx\n",
    "-old\n",
    "+new\n",
    "+\n",
    "\n",
    "<<EOF\n",
    "EOF\n",
    "  *** End Patch  \n",
    "\r\n",
    "\t",
    "x",
    "***",
    "@@ ",
]
patchish = st.one_of(
    st.lists(st.sampled_from(PATCH_TOKENS), max_size=25).map("".join),
    st.text(max_size=80),
    st.lists(st.sampled_from(PATCH_TOKENS[2:]), max_size=20).map(
        lambda xs: "*** Begin Patch\n" + "".join(xs) + "*** End Patch\n"
    ),
)


def snapshots(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda path: Snapshot(path, files[path]) if path in files else absent(path)


@fuzz("v4a_parse")
@given(patch=patchish, text=any_text)
def test_v4a_parser_returns_hunks_or_parse_error(patch: str, text: str) -> None:
    try:
        parse_patch(patch)
    except EditError as err:
        assert err.code == Code.PARSE_ERROR
        assert isinstance(err.details["patchLine"], int)
    try:
        plan = plan_patch(patch, snapshots({"f": text}))
    except EditError as err:
        assert err.code in (
            Code.PARSE_ERROR,
            Code.NOT_FOUND,
            Code.ALREADY_EXISTS,
            Code.NO_MATCH,
            Code.AMBIGUOUS,
            Code.INVALID_ARGUMENT,
        ), err
        return
    for change in plan.changes:
        assert change.new_lines == split_lines(change.new_text)


def make_patch(before: list[str], after: list[str], context: int = 3) -> str:
    """A V4A update patch turning the lines `before` into `after` (contents, no terminators)."""
    body: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        body.append("@@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                body.extend(f" {x}\n" for x in before[i1:i2])
            if tag in ("replace", "delete"):
                body.extend(f"-{x}\n" for x in before[i1:i2])
            if tag in ("replace", "insert"):
                body.extend(f"+{x}\n" for x in after[j1:j2])
    return "*** Begin Patch\n*** Update File: f\n" + "".join(body) + "*** End Patch\n"


# Line contents: no terminators; spaces, tabs and characters the lenient passes fold.
LINE = st.text(
    alphabet=st.sampled_from(["a", "b", "c", " ", "\t", "-", "+", "’", " ", "é", "😀"]),
    max_size=6,
)


def check_generated_patch(before: list[str], after: list[str], eol: str, context: int = 3) -> str:
    text = "".join(x + eol for x in before)
    patch = make_patch(before, after, context)
    try:
        (change,) = plan_patch(patch, snapshots({"f": text})).changes
    except EditError as err:
        return str(err.code)
    # Every new line takes the file's terminator; an updated file ends with one.
    assert change.new_text == "".join(x + eol for x in after), patch
    assert change.new_lines == split_lines(change.new_text)
    assert "".join(apply_line_edits(change.before.lines, list(change.edits))) == change.new_text
    assert apply_unified_diff(text, file_diff(change)) == change.new_text
    return "ok"


@fuzz("v4a_unique")
@given(
    before=st.lists(LINE, unique=True, max_size=30),
    data=st.data(),
    eol=st.sampled_from(["\n", "\r\n"]),
)
def test_generated_patch_gives_exactly_the_after(
    before: list[str], data: st.DataObject, eol: str
) -> None:
    # Unique lines: every chunk's old lines occur once, so the patch must apply exactly.
    after = data.draw(st.lists(st.one_of(st.sampled_from(before or ["z"]), LINE), max_size=30))
    if after == before or not before:
        return
    assert check_generated_patch(before, after, eol) == "ok"


@fuzz("v4a_dups")
@given(
    before=st.lists(st.sampled_from(["a", "b", "", " a", "a\t"]), min_size=1, max_size=25),
    after=st.lists(st.sampled_from(["a", "b", "", "c", " a"]), max_size=25),
    eol=st.sampled_from(["\n", "\r\n"]),
    context=st.integers(1, 3),
)
def test_generated_patch_on_repeated_lines_is_exact_or_ambiguous(
    before: list[str], after: list[str], eol: str, context: int
) -> None:
    if after == before:
        return
    # With little context a chunk can fit several places: refused, never applied at a guess.
    assert check_generated_patch(before, after, eol, context) in ("ok", "AMBIGUOUS")
