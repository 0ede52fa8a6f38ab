"""A begin record leaves its hunks' context lines out when its file's pre-image is in the record's
pack (undo/changes.py `CONTEXT_IN_PACK`, a speed trick): replay must read back exactly the hunks
`record_change` made, a lost pack must lose only the context (never the edit or its undo), a
hand-edited record must not be misread, and the previous release (03eec8d) must read the new
journal as records without context: listed, and undone where their lines are."""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.history import History
from lsp_server.engine.journal import Journal
from lsp_server.engine.model import EditedLines, LineEdit
from lsp_server.engine.results import wire
from lsp_server.engine.text import split_lines
from lsp_server.engine.undo import changes
from lsp_server.engine.undo.changes import CONTEXT_IN_PACK, ChangeRecord, with_context

ROOT = Path(__file__).resolve().parent.parent.parent
PREVIOUS = "03eec8d"


def _random_change(rnd: random.Random) -> tuple[list[str], ChangeRecord]:
    n = rnd.randint(0, 40)
    old = split_lines("".join(f"l{i}\n" for i in range(n)) + rnd.choice(["", "tail"]))
    edits: list[LineEdit] = []
    pos = 0
    while pos <= len(old) and rnd.random() < 0.8:
        start = rnd.randint(pos, min(len(old), pos + rnd.choice([2, 8, 20])))
        end = rnd.randint(start, min(len(old), start + 3))
        lines = tuple(f"n{rnd.randint(0, 99)}\n" for _ in range(rnd.randint(0, 3)))
        if lines and rnd.random() < 0.2:
            lines = (*lines[:-1], "unterminated")
        if start == end and not lines:
            break
        edits.append(LineEdit(start, end, lines))
        pos = end + rnd.choice([0, 1, 3, 4, 7])  # adjacent, near and clear of each other
    hunks = changes._record_hunks(old, EditedLines(old, edits), edits) if edits else ()
    return old, ChangeRecord("f.py", "update", before_lines=len(old), hunks=hunks)


def test_replay_reads_back_the_very_hunks_record_change_made() -> None:
    """Every shape of hunk (at the start, at the end, an unterminated last line, neighbours
    closer than CONTEXT, far apart): written without context, read back through JSON and
    rebuilt from the pre-image, the record is the one made."""
    rnd = random.Random(18)
    clear = 0
    for _ in range(20_000):
        old, rec = _random_change(rnd)
        data = json.loads(json.dumps(rec.to_json(context=False)))
        if rec.hunks and all(h.end < len(old) for h in rec.hunks[:-1]):
            assert data["context"] == CONTEXT_IN_PACK
            assert all(h[5] == [] and h[6] == [] for h in data["hunks"])
            clear += all(h.ctx_before or h.ctx_after for h in rec.hunks)
        assert with_context(data, old) == rec, rec
    assert clear > 5_000  # the slices' path was taken, not only the rebuild's


def test_a_pre_image_that_is_not_the_records_is_not_used() -> None:
    """A hand-edited journal (or a pack that is another file's): the record is kept as written,
    without context, never given lines from the wrong file."""
    rnd = random.Random(5)
    for _ in range(2_000):
        old, rec = _random_change(rnd)
        if not rec.hunks:
            continue
        data = json.loads(json.dumps(rec.to_json(context=False)))
        bare = ChangeRecord.from_json(data)
        other = [x + "x" for x in old]
        # (Hunks that only insert have no old lines to check: then only the line count is; the
        # pack's bytes are the ones its name says, so only a hand-edited `at` gets that far.)
        if any(h.before for h in rec.hunks):
            assert with_context(data, other) == bare
        assert with_context(data, old[:-1]) == bare  # another line count


def make_tree(ws: Path, count: int = 30) -> tuple[dict[str, bytes], str]:
    """Files enough for a pack (journal.BLOB_MIN bytes of pre-images), a patch editing each
    one at its start, in the middle (two hunks close together) and at its end."""
    old: dict[str, bytes] = {}
    patch = ["*** Begin Patch\n"]
    for i in range(count):
        lines = [f"row {i} {j} {'y' * 30}\n" for j in range(80)]
        (ws / f"f{i}.py").write_text("".join(lines))
        old[f"f{i}.py"] = (ws / f"f{i}.py").read_bytes()
        patch += [f"*** Update File: f{i}.py\n", "@@\n", f"-{lines[0]}", "+first\n"]
        patch += ["@@\n", f" {lines[39]}", f"-{lines[40]}", "+forty\n", f" {lines[41]}"]
        patch += [f"-{lines[42]}", "+forty-two\n", "+more\n"]
        patch += ["@@\n", f" {lines[78]}", f"-{lines[79]}", "+last\n", "*** End of File\n"]
    patch.append("*** End Patch\n")
    return old, "".join(patch)


def run(ws: Path, name: str, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(ws)) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "ws"
    root.mkdir()
    return root


def _begin_line(ws: Path) -> dict[str, Any]:
    lines = (Journal(ws).path).read_bytes().splitlines()
    (line,) = [x for x in lines if x.startswith(b'{"t":"begin"')]
    return json.loads(line)  # type: ignore[no-any-return]


def test_the_next_run_has_the_hunks_the_apply_made(ws: Path) -> None:
    """The CLI's apply writes its change records without context; the next run's history has
    exactly the records the apply held in memory, and shows the same entry and diffs."""
    old, patch = make_tree(ws)
    history: list[History] = []

    async def go() -> dict[str, Any]:
        async with headless.open(str(ws)) as ctx:
            result = wire(await actions.run(ctx, "applyPatch", {"patch": patch}))
            history.append(ctx.history)  # type: ignore[attr-defined]
            return result

    assert asyncio.run(go())["ok"]
    rec = _begin_line(ws)
    assert rec.get("pack") and all(c.get("context") == CONTEXT_IN_PACK for c in rec["changes"])
    assert all(h[5] == [] == h[6] for c in rec["changes"] for h in c["hunks"])
    (made,) = [e for e in history[0].entries if e.action == "applyPatch"]
    again = History.load(Journal(ws))
    assert again.skipped == 0
    assert again.entry(made.id).changes == made.changes
    shown = run(ws, "history", {"editId": made.id})
    assert shown["entries"][0]["diff"] == made.diff
    undo = run(ws, "undo", {"editId": made.id})
    assert undo["ok"], undo
    assert {p: (ws / p).read_bytes() for p in old} == old


def test_a_lost_pack_loses_the_context_not_the_undo(ws: Path) -> None:
    """The pack deleted after the apply: the record is read without context (said), and undo
    still puts every file back (the hunks' old lines are in the record's own line)."""
    old, patch = make_tree(ws)
    assert run(ws, "applyPatch", {"patch": patch})["ok"]
    rec = _begin_line(ws)
    (Journal(ws).blobs.path(rec["pack"])).unlink()
    again = History.load(Journal(ws))
    assert "pre-image pack" in (again.skipped_note() or "")
    (entry,) = [e for e in again.entries if e.action == "applyPatch"]
    assert all(not h.ctx_before and not h.ctx_after for c in entry.changes for h in c.hunks)
    undo = run(ws, "undo", {"editId": entry.id})
    assert undo["ok"], undo
    assert {p: (ws / p).read_bytes() for p in old} == old


PREVIOUS_UNDO = """
import asyncio, json, sys
from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire

async def go():
    async with headless.open(sys.argv[1]) as ctx:
        hist = wire(await actions.run(ctx, "history", {}))
        (entry,) = [e for e in hist["entries"] if e["action"] == "applyPatch"]
        undo = wire(await actions.run(ctx, "undo", {"editId": entry["id"]}))
        print(json.dumps({"skipped": ctx.history.skipped, "entry": entry, "undo": undo["ok"]}))

asyncio.run(go())
"""


def _previous_release(base: Path) -> Path | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "archive", PREVIOUS, "lsp_server"],
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        tar.extractall(base, filter="data")
    return base


def test_the_previous_release_reads_the_new_journal(ws: Path, tmp_path: Path) -> None:
    """03eec8d, the release before this format, loads a journal written by this code: nothing
    skipped, the edit listed with its diff, and its undo (without the context lines, at the
    place the lines are) puts every file back."""
    code = _previous_release(tmp_path / "previous")
    if code is None:
        pytest.skip(f"commit {PREVIOUS} is not in this checkout's history (git archive failed)")
    old, patch = make_tree(ws)
    assert run(ws, "applyPatch", {"patch": patch})["ok"]
    assert _begin_line(ws)["changes"][0]["context"] == CONTEXT_IN_PACK
    env = dict(os.environ, PYTHONPATH=str(code))
    done = subprocess.run(
        [sys.executable, "-c", PREVIOUS_UNDO, str(ws)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["skipped"] == 0
    assert "+forty-two" in seen["entry"]["diff"]
    assert seen["undo"] is True
    assert {p: (ws / p).read_bytes() for p in old} == old


def test_a_bom_crlf_and_unterminated_files_hunks_read_back(ws: Path) -> None:
    """The pack holds a file's bytes (BOM and all) and replay decodes its text after the BOM:
    the lines the context is read from must be the snapshot's own, CRLF and a last line
    without its newline included."""
    old: dict[str, bytes] = {}
    patch = ["*** Begin Patch\n"]
    for i in range(12):
        lines = [f"crlf {i} {j} {'w' * 40}\r\n" for j in range(120)]
        data = b"\xef\xbb\xbf" * (i % 2) + "".join(lines).encode() + b"no newline"
        (ws / f"g{i}.txt").write_bytes(data)
        old[f"g{i}.txt"] = data
        patch += [f"*** Update File: g{i}.txt\n", "@@\n", f"-{lines[60].rstrip()}\n", "+mid\n"]
        patch += ["@@\n", f" {lines[119].rstrip()}\n", "-no newline\n", "+the end\n"]
        patch.append("*** End of File\n")
    patch.append("*** End Patch\n")
    history: list[History] = []

    async def go() -> dict[str, Any]:
        async with headless.open(str(ws)) as ctx:
            result = wire(await actions.run(ctx, "applyPatch", {"patch": "".join(patch)}))
            history.append(ctx.history)  # type: ignore[attr-defined]
            return result

    assert asyncio.run(go())["ok"]
    assert all(c.get("context") == CONTEXT_IN_PACK for c in _begin_line(ws)["changes"])
    (made,) = [e for e in history[0].entries if e.action == "applyPatch"]
    assert any(h.ctx_before for c in made.changes for h in c.hunks)
    assert History.load(Journal(ws)).entry(made.id).changes == made.changes
    assert run(ws, "undo", {"editId": made.id})["ok"]
    assert {p: (ws / p).read_bytes() for p in old} == old


def test_a_hand_edited_hunk_outside_its_file_is_kept_not_skipped() -> None:
    """Hunks near each other (read again by `_record_hunks`) of which one is past the file's
    end: the record is kept as written (without context), not a crash that drops it."""
    old = split_lines("".join(f"l{i}\n" for i in range(10)))
    data = {
        "path": "f.py",
        "change": "update",
        "lines": len(old),
        "context": CONTEXT_IN_PACK,
        "hunks": [[1, 2, 1, ["l1\n"], ["x\n"], [], []], [3, 40, 3, [], ["y\n"], [], []]],
    }
    assert with_context(data, old) == ChangeRecord.from_json(data)
