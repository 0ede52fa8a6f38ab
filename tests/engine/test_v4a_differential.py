"""The hand-written V4A reader against the parser it replaced (commit 88c6be5: lark's tables run
by a private LALR loop, lark itself for errors): the same hunks for every patch either accepts,
and the same PARSE_ERROR (message, line, details) for every patch either rejects.

The old parser is taken from git at test time into a temporary package, so this test needs the
repository's history; without it (an exported tree) it is skipped, saying why.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_server.engine import v4a
from lsp_server.engine.errors import EditError

OLD = "88c6be5"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = "/work/shared/conformance/codex-scenarios"


def _git_show(path: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "show", f"{OLD}:{path}"],
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.decode("utf-8")


def _missing(why: str) -> None:
    """Skipped only on a developer's machine; in CI (a full clone, ../shared beside it) a missing
    base commit or corpus fails instead of letting the comparison pass unseen."""
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    base = tmp_path_factory.mktemp("oldv4a")
    pkg = base / "old_v4a_88c6be5"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("v4a.py", "v4a_tables.py", "v4a.lark"):
        text = _git_show(f"lsp_server/engine/{name}")
        if text is None:
            _missing(f"commit {OLD} is not in this checkout's history (git show failed)")
        if name == "v4a.py":
            text = text.replace(
                "from lsp_server.engine.v4a_tables import", "from old_v4a_88c6be5.v4a_tables import"
            )
        (pkg / name).write_text(text, encoding="utf-8")
    sys.path.insert(0, str(base))
    try:
        module = importlib.import_module("old_v4a_88c6be5.v4a")
    finally:
        sys.path.remove(str(base))
    assert module._tables() is not None, "the old tables must match the old grammar"
    return module


def _chunk(c: Any) -> tuple[Any, ...]:
    return (c.anchor, c.old_lines, c.new_lines, c.is_end_of_file, c.ops, c.patch_line, c.anchors)


def _hunk(h: Any) -> tuple[Any, ...]:
    kind = type(h).__name__
    if kind == "AddFile":
        return (kind, h.path, h.lines, h.patch_line, h.text)
    if kind == "DeleteFile":
        return (kind, h.path, h.patch_line)
    assert kind == "UpdateFile", kind
    return (kind, h.path, h.move_to, h.patch_line, tuple(_chunk(c) for c in h.chunks))


def _outcome(parse: Any, text: str) -> tuple[Any, ...]:
    try:
        patch = parse(text)
    except EditError as exc:  # both raise the engine's one EditError class
        return ("error", exc.code, exc.message, exc.hint, exc.details)
    return ("ok", tuple(_hunk(h) for h in patch))


def _same(old: ModuleType, text: str) -> tuple[Any, ...]:
    new_out = _outcome(v4a.parse_patch, text)
    old_out = _outcome(old.parse_patch, text)
    assert new_out == old_out, text
    return new_out


# Lines a model (or an attacker) emits, valid and not: markers padded and broken, headers of
# every form, body lines, blanks, and hostile characters (CR, NUL, unicode line separators).
_LINES = [
    "*** Begin Patch",
    "*** End Patch",
    " *** End Patch ",
    "*** Add File: a.txt",
    "*** Add File:b.txt",
    "*** Add File: ",
    "*** Update File: u.py",
    "  *** Update File: u.py",
    "*** Update File:",
    "*** Delete File: d.txt",
    "*** Delete File:",
    "*** Move to: m.py",
    "*** Move to:",
    "*** End of File",
    "***",
    "*** Frobnicate File: x",
    "@@",
    "@@ ",
    "@@ def f():",
    "@@ class A",
    "@@ -1,3 +1,4 @@ def g",
    "@@ -1 +1 @@",
    "@@ anchor @@",
    "@@x",
    " ctx",
    " *** End Patch",
    " *** Add File: inner",
    "-old",
    "+new",
    "+",
    "-",
    " ",
    "",
    "   ",
    "\t",
    "plain",
    "<<EOF",
    "EOF",
    "+a\rb",
    " c\x00d",
    "-e\u2028f",
    "+g\u2029h",
    " \x85",
    "+\ufeffbom",
    "+" + "y" * 5000,
]
_ENDINGS = ["\n", "\r\n", "\r\r\n", "\r", "\u2028"]


@st.composite
def _patches(draw: st.DrawFn) -> str:
    body = draw(st.lists(st.sampled_from(_LINES), max_size=14))
    begin = draw(st.sampled_from(["*** Begin Patch", "", "  *** Begin Patch", "<<'EOF'"]))
    end = draw(st.sampled_from(["*** End Patch", "", "*** End Patch  ", "EOF"]))
    lines = [x for x in [begin, *body, end] if x or draw(st.booleans())]
    if draw(st.booleans()):
        sep = draw(st.sampled_from(_ENDINGS[:2]))
        return sep.join(lines) + draw(st.sampled_from(["", sep, sep * 2]))
    parts = []
    for line in lines:
        parts.append(line + draw(st.sampled_from(_ENDINGS)))
    return "".join(parts)


@st.composite
def _valid_shaped(draw: st.DrawFn) -> str:
    """Patches built section by section, so most parse (the reader's own path, not lark's)."""
    out = ["*** Begin Patch"]
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["add", "delete", "update"]))
        if kind == "add":
            out.append(f"*** Add File: f{i}.txt")
            out += draw(
                st.lists(st.sampled_from(["+x", "+", "", "+ y", "+*** End Patch"]), max_size=4)
            )
        elif kind == "delete":
            out.append(f"*** Delete File: d{i}.txt")
        else:
            out.append(f"*** Update File: u{i}.py")
            if draw(st.booleans()):
                out.append(f"*** Move to: m{i}.py")
            for j in range(draw(st.integers(1, 3))):
                heads = draw(
                    st.lists(
                        st.sampled_from(["@@", "@@ def f():", "@@ -2,3 +2,3 @@ x"]), max_size=3
                    )
                )
                if j and not heads:
                    heads = ["@@"]
                out += heads
                out += draw(
                    st.lists(
                        st.sampled_from([" a", "-b", "+c", "", " *** End Patch", " ***", "- "]),
                        min_size=1,
                        max_size=5,
                    )
                )
                if draw(st.integers(0, 4)) == 0:
                    out.append("*** End of File")
            if draw(st.integers(0, 6)) == 0:
                out.append(draw(st.sampled_from(_LINES)))  # one stray line: an error somewhere
    out.append("*** End Patch")
    sep = draw(st.sampled_from(["\n", "\r\n"]))
    return sep.join(out) + sep


_SETTINGS = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(_patches())
def test_random_lines_parse_as_before(old: ModuleType, text: str) -> None:
    _same(old, text)


@_SETTINGS
@given(_valid_shaped())
def test_section_shaped_patches_parse_as_before(old: ModuleType, text: str) -> None:
    _same(old, text)


HOSTILE = [
    # no End Patch at all, or only inside a chunk's context
    "*** Begin Patch\n*** Update File: a\n@@\n x\n",
    "*** Begin Patch\n*** Update File: a\n@@\n *** End Patch\n x\n",
    "*** Begin Patch\n*** Update File: a\n@@\n x\n *** End Patch\n",
    # markers inside a hunk
    "*** Begin Patch\n*** Update File: a\n@@\n x\n*** End of File\n x\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: a\n x\n*** End of File\n@@\n y\n*** End Patch\n",
    "*** Begin Patch\n*** Add File: a\n+x\n*** Move to: b\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Move to: c\n@@\n x\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: a\n@@\n x\n*** End Patch\n*** End Patch\n",
    "*** Begin Patch\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n",
    "*** Begin Patch\n*** Delete File: a\n+x\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: a\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: a\n@@\n@@ x\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: \n@@\n x\n*** Delete File: b\nbad\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: a\n@@\n x\nbad\n*** Update File: \n@@\n x\n*** End Patch\n",
    # hostile characters
    "*** Begin Patch\n*** Add File: a\x00b\n+\x00\n*** End Patch\n",
    "*** Begin Patch\r*** Delete File: a\r*** End Patch\r",
    "*** Begin Patch\u2028*** Delete File: a\u2028*** End Patch\n",
    "*** Begin Patch\n*** Update File: a\n@@ x\u2028y\n -\u2029\n+\x85\n*** End Patch\n",
    "*** Begin Patch\n*** Add File: a\n+" + "z" * 1_000_000 + "\n*** End Patch\n",
    "*** Begin Patch\n*** Update File: a\n@@\n" + " q\n" * 20_000 + "bad\n*** End Patch\n",
    "\ufeff*** Begin Patch\n*** Delete File: a\n*** End Patch\n",
    "",
    "\n\n",
    "*** End Patch\n",
    "*** Begin Patch\n",
    "*** Begin Patch\n*** End Patch\n",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_patches_parse_as_before(old: ModuleType, text: str) -> None:
    _same(old, text)


def _corpus_patches() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if not os.path.isdir(CORPUS):
        return found
    for scenario in sorted(os.listdir(CORPUS)):
        path = os.path.join(CORPUS, scenario, "patch.txt")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                found.append((scenario, f.read()))
    return found


def test_codex_scenarios_parse_as_before(old: ModuleType) -> None:
    patches = _corpus_patches()
    if not patches:
        _missing(f"no conformance corpus at {CORPUS}")
    for _name, text in patches:
        _same(old, text)
