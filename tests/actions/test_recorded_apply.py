"""A headless apply recorded in the history with one copy of its pre-images: the history's
baselines go to one blob (the pack) and the disk writer's apply journal names it (version 3).

Attacked here: SIGKILL at each step of such an apply (after the history's `begin`, after each
temporary file and rename, after the writer committed but before `finish`), then the next open
must roll back or settle it, keep no entry pending, show the net diff and undo it; a compaction
between the crash and the recovery must not collect the pack the rollback needs; a pack
missing or altered must never be acted on half-way.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files
from lsp_server.engine.history import History, open_history
from lsp_server.engine.journal import BLOB_MIN, Journal
from lsp_server.engine.results import wire
from tests.editor_client import REPO

N = 20  # files: past the writer's syncfs threshold (16), ~100 KB of pre-images (a pack)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def run(root: Path, name: str, args: Any, **kw: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root), **kw) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def make_tree(ws: Path) -> tuple[dict[str, bytes], str]:
    """N files of ~5 KB (one with a BOM), and a patch changing a line of each."""
    old: dict[str, bytes] = {}
    patch = ["*** Begin Patch\n"]
    for i in range(N):
        rel = f"pkg/m{i}.py"
        lines = [f"value_{i}_{j} = compute({j})  # some padding text\n" for j in range(120)]
        data = "".join(lines).encode()
        if i == 3:
            data = b"\xef\xbb\xbf" + data
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
        old[rel] = data
        patch += [f"*** Update File: {rel}\n", "@@\n", f"-{lines[50]}", f"+changed_{i} = 1\n"]
    patch.append("*** End Patch\n")
    return old, "".join(patch)


def tree(ws: Path) -> dict[str, bytes]:
    return {p.relative_to(ws).as_posix(): p.read_bytes() for p in ws.rglob("*") if p.is_file()}


KILLED = """
import asyncio, os, signal, sys
from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files
from lsp_server.engine.history import History

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

mode = sys.argv[3]
if mode == "begun":  # the history's begin is written, the writer not started
    files.TEST_HOOK = lambda point, path: die() if point == "resolved" else None
elif mode == "committed":  # the writer committed (its journal gone), `finish` not written
    History.finish = die

async def go():
    async with headless.open(sys.argv[1]) as ctx:
        await actions.run(ctx, "applyPatch", {"patch": sys.argv[2]})

asyncio.run(go())
"""


def killed(ws: Path, state: Path, patch: str, mode: str) -> None:
    """The apply in a child process, SIGKILLed at `mode` (a kill point above, or the writer's
    crash hook's step number)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    env.pop(files.CRASH_ENV, None)
    if mode.isdigit():
        env[files.CRASH_ENV] = mode
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(ws), patch, mode],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def sdir_of(ws: Path) -> Path:
    return Path(files.state_dir(str(ws)))


def test_the_pre_images_are_stored_once(tmp_path: Path, state: Path) -> None:
    """Killed after its first temporary file: the apply journal is a header naming the blob
    the history's record names too; that blob holds every file's bytes, and neither journal
    holds the texts."""
    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    killed(ws, state, patch, "1")
    sdir = sdir_of(ws)
    apply_journal = sdir / files.JOURNAL
    header = json.loads(apply_journal.read_bytes().split(b"\n", 1)[0])
    assert header["version"] == 3 and header["blobSize"] == 0
    assert apply_journal.stat().st_size < 16 * 1024  # names, not ~100 KB of pre-images
    pack = (sdir / "blobs" / header["pack"]).read_bytes()
    assert hashlib.sha256(pack).hexdigest() == header["pack"]
    for entry in header["files"]:
        offset, size = entry["pre"]
        assert pack[offset : offset + size] == old[entry["path"]]
    (begin,) = [json.loads(x) for x in (sdir / "journal.jsonl").read_bytes().splitlines()]
    assert begin["t"] == "begin" and begin["pack"] == header["pack"]
    assert header["pack"] in begin["$blobs"]
    assert (sdir / "journal.jsonl").stat().st_size < BLOB_MIN
    # The next open rolls it back from the pack and settles the entry.
    said: list[str] = []
    hist = run(ws, "history", {}, notify=said.append)
    assert any("rolled back an interrupted apply" in s for s in said), said
    assert tree(ws) == old
    outcomes = {e["action"]: e["outcome"] for e in hist["entries"]}
    assert outcomes == {"recover": "rolled-back", "applyPatch": "NOT_APPLIED"}, outcomes


@pytest.mark.parametrize("mode", ["begun", "1", "20", "21", "33", "40", "committed"])
def test_sigkill_at_each_step_of_a_recorded_apply(tmp_path: Path, state: Path, mode: str) -> None:
    """20 temporary files then 20 renames (steps 1-40), and the points around them: the next
    open leaves every file old (or, once committed, every file new), no entry pending, the
    net diff of what landed, and an undo that puts it all back."""
    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    killed(ws, state, patch, mode)
    hist = run(ws, "history", {})
    assert open_history(str(ws)).unfinished() == []
    assert not (sdir_of(ws) / files.JOURNAL).exists()
    (entry,) = [e for e in hist["entries"] if e["action"] == "applyPatch"]
    assert not entry.get("unfinished"), entry
    now = tree(ws)
    if mode != "committed":
        assert now == old
        assert entry["outcome"] == "NOT_APPLIED", entry
        assert hist["net"] == []
        return
    assert entry["outcome"] == "applied", entry
    assert all(now[p] != old[p] for p in old) and set(now) == set(old)
    net = {f["path"]: f for f in hist["net"]}
    assert set(net) == set(old)
    assert "+changed_3 = 1\n" in net["pkg/m3.py"]["diff"]
    undo = run(ws, "undo", {"editId": entry["id"]})
    assert undo["ok"], undo
    assert tree(ws) == old
    assert run(ws, "history", {})["net"] == []


def test_a_compaction_before_the_recovery_keeps_the_pack(tmp_path: Path, state: Path) -> None:
    """Killed mid-rename; the history's entry is settled (as when a rollback failed and the
    apply journal stays for the next run) and compacted, so no history record names the pack
    any more: it stays, since the apply journal names it, and the rollback puts every file
    back."""
    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    killed(ws, state, patch, "25")
    sdir = sdir_of(ws)
    header = json.loads((sdir / files.JOURNAL).read_bytes().split(b"\n", 1)[0])
    history = History.load(Journal(ws, max_bytes=2 * 1024))
    for e in history.unfinished():
        history.recover(e.id, {p: files.read_snapshot(str(ws), p) for p in e.paths})
    for i in range(3):
        history.record("replace", {"path": "x", "note": "y" * 1024, "i": i}, outcome="dry-run")
    compacted = (sdir / "journal.jsonl").read_bytes()
    assert header["pack"].encode() not in compacted  # compaction ran and dropped the name
    assert (sdir / "blobs" / header["pack"]).exists()
    run(ws, "history", {})
    assert tree(ws) == old


def test_a_pack_altered_after_the_crash_is_never_acted_on(tmp_path: Path, state: Path) -> None:
    """The pack the apply journal names is altered: the journal is set aside for a human (no
    file is "put back" from wrong bytes) and said so."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _old, patch = make_tree(ws)
    killed(ws, state, patch, "25")
    sdir = sdir_of(ws)
    header = json.loads((sdir / files.JOURNAL).read_bytes().split(b"\n", 1)[0])
    blob = sdir / "blobs" / header["pack"]
    blob.write_bytes(blob.read_bytes().replace(b"value_0_0", b"VALUE_0_0"))
    before = tree(ws)
    report = files.recover(str(ws))
    assert report and report[0]["conflicts"][0]["why"].startswith("journal unreadable")
    assert tree(ws) == before  # nothing was touched
    assert not (sdir / files.JOURNAL).exists()
    assert list(sdir.glob(files.JOURNAL + ".unreadable-*"))


def test_the_entry_diff_is_the_results_diff(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _old, patch = make_tree(ws)
    result = run(ws, "applyPatch", {"patch": patch})
    assert result["ok"], result
    entry = open_history(str(ws)).entry(result["editId"])
    assert entry.diff == result["diff"] and "+changed_19 = 1\n" in entry.diff


def test_the_diff_is_made_while_the_writer_waits_on_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a `syncfs` to wait for (16 files or more), the plan's diff is made after the
    history's `begin`, while the writer flushes, before the first rename; the entry and the
    result still have the same diff."""
    from lsp_server.actions import execute
    from lsp_server.engine.history import recording

    ws = tmp_path / "ws"
    ws.mkdir()
    _old, patch = make_tree(ws)
    events: list[str] = []
    begin, diff, flush = recording.History.begin, execute.plan_diff, files._Flusher.flush
    replace = files.PreparedApply._replace

    def begun(self: Any, *args: Any, **kwargs: Any) -> int:
        got = begin(self, *args, **kwargs)
        events.append("begun")
        return got

    def diffed(*args: Any, **kwargs: Any) -> str:
        events.append("diff")
        return diff(*args, **kwargs)

    def flushed(self: Any, *args: Any, **kwargs: Any) -> None:
        events.append("flush")
        flush(self, *args, **kwargs)

    def renamed(self: Any, step: Any) -> None:
        if "rename" not in events:
            events.append("rename")
        replace(self, step)

    monkeypatch.setattr(recording.History, "begin", begun)
    monkeypatch.setattr(execute, "plan_diff", diffed)
    monkeypatch.setattr(files._Flusher, "flush", flushed)
    monkeypatch.setattr(files.PreparedApply, "_replace", renamed)
    result = run(ws, "applyPatch", {"patch": patch})
    assert result["ok"], result
    assert events.count("diff") == 1, events
    assert events.index("begun") < events.index("diff") < events.index("rename"), events
    assert events.index("flush") < events.index("rename"), events
    entry = open_history(str(ws)).entry(result["editId"])
    assert entry.diff == result["diff"] and "+changed_19 = 1\n" in entry.diff


def test_a_diff_that_fails_after_the_files_changed_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The diff made while the writer waits raises (a bug): the files landed, so the result
    is the success it is, its diff saying it is unavailable, and the entry is finished."""
    from lsp_server.actions import execute

    ws = tmp_path / "ws"
    ws.mkdir()
    _old, patch = make_tree(ws)

    def broken(*args: Any, **kwargs: Any) -> str:
        raise ValueError("a bug in the diff")

    monkeypatch.setattr(execute, "plan_diff", broken)
    result = run(ws, "applyPatch", {"patch": patch})
    assert result["ok"], result
    assert result["diff"] == "# diff unavailable: ValueError: a bug in the diff\n"
    assert (ws / "pkg/m19.py").read_text().count("changed_19 = 1") == 1
    entry = open_history(str(ws)).entry(result["editId"])
    assert entry.finished and entry.outcome == "applied", entry


def test_a_stale_apply_keeps_its_entry_and_result_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed between the plan and the writer's check: refused STALE before any
    flush (the diff was never made meanwhile); the entry is finished as refused."""
    from lsp_server.engine.history import recording

    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    begin = recording.History.begin

    def begun(self: Any, *args: Any, **kwargs: Any) -> int:
        got = begin(self, *args, **kwargs)
        (ws / "pkg/m7.py").write_bytes(b"typed by the user\n")
        return got

    monkeypatch.setattr(recording.History, "begin", begun)
    result = run(ws, "applyPatch", {"patch": patch})
    assert not result["ok"] and result["code"] == "STALE", result
    assert tree(ws) == {**old, "pkg/m7.py": b"typed by the user\n"}
    entry = open_history(str(ws)).entry(result["details"]["editId"])
    assert entry.finished and entry.outcome == "STALE" and not entry.diff


def test_a_record_with_a_pack_and_a_blob_reads_back_whole(tmp_path: Path) -> None:
    """The pack names no markers, a big added file's text is a `$blob` marker: both read
    back (the marker walk is skipped only for a line without markers)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _old, patch = make_tree(ws)
    added = "".join(f"added line {j}\n" for j in range(BLOB_MIN // 10))
    body = "".join(f"+{line}\n" for line in added.splitlines())
    patch = patch.replace("*** End Patch\n", f"*** Add File: big_new.txt\n{body}*** End Patch\n")
    result = run(ws, "applyPatch", {"patch": patch})
    assert result["ok"], result
    line = (sdir_of(ws) / "journal.jsonl").read_bytes().splitlines()[0]
    assert b'"$blob"' in line and b'"pack"' in line
    again = History.load(Journal(ws))
    assert again.skipped == 0
    (entry,) = again.entries
    assert {c.path for c in entry.changes} >= {"big_new.txt", "pkg/m0.py"}
    undo = run(ws, "undo", {"editId": entry.id})
    assert undo["ok"], undo
    assert not (ws / "big_new.txt").exists()


def test_a_compaction_while_the_entry_is_begun_keeps_its_pack(tmp_path: Path) -> None:
    """A compaction in the very transaction of `begin` (the journal past its cap), or by
    another process before the writer's journal exists, still names the begun entry's pack:
    the writer's journal can name it, and a crash then is rolled back from it."""
    from lsp_server.engine.model import Plan
    from lsp_server.engine.patching import plan_patch

    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    history = History.load(Journal(ws, max_bytes=2 * 1024))
    for i in range(3):  # past the cap: the next write compacts
        history.record("replace", {"path": "x", "note": "y" * 1024, "i": i}, outcome="dry-run")
    plan: Plan = plan_patch(patch, lambda rel: files.read_snapshot(str(ws), rel))
    entry_id = history.begin(plan, {"patch": "..."})
    pack = history.pack_of(entry_id)
    assert pack is not None and pack.path.exists()
    other = History.load(Journal(ws, max_bytes=2 * 1024))  # another process compacts too
    for i in range(3):
        other.record("replace", {"path": "x", "note": "z" * 1024, "i": i}, outcome="dry-run")
    assert pack.path.exists()
    files.apply_plan(str(ws), plan, pack=pack)
    assert all(tree(ws)[p] != old[p] for p in old)
    history.finish(entry_id, "applied")
    assert {f["path"] for f in History.load(Journal(ws)).net()} == set(old)
