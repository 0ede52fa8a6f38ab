"""Large pre-images live outside the JSON-lines journal as content-addressed blob files: written
and fsynced before the record naming them, not rewritten by compaction (which no longer runs on
every write), collected once nothing names them; a missing or altered blob skips its record."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from lsp_server.engine import journal as journal_module
from lsp_server.engine.history import History
from lsp_server.engine.journal import BLOB_MIN, Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_replace
from tests.history_helpers import FS, apply_plan, snap

BIG = "".join(f"    value_{i} = compute(alpha, beta, gamma) + {i}\n" for i in range(60_000))  # 3 MB


def edit(history: History, fs: FS, path: str, old: str, new: str) -> FS:
    plan = Plan("replace", (plan_replace(snap(fs, path), old, new),))
    entry_id = history.begin(plan, {"path": path})
    fs = apply_plan(fs, plan)
    history.finish(entry_id, "applied")
    return fs


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def blob_files(j: Journal) -> dict[str, os.stat_result]:
    d = j.dir / "blobs"
    return {n: os.stat(d / n) for n in os.listdir(d)} if d.is_dir() else {}


def test_a_big_baseline_is_a_blob_and_the_journal_stays_small(ws: Path, tmp_path: Path) -> None:
    j = Journal(ws, state_dir=tmp_path / "state")
    h = History(j)
    fs = edit(h, {"big.py": BIG}, "big.py", "value_7 =", "value_seven =")
    assert j.size() < BLOB_MIN  # the 3 MB baseline is not in the line
    sha = hashlib.sha256(BIG.encode()).hexdigest()
    assert sha in blob_files(j)
    again = History.load(Journal(ws, state_dir=tmp_path / "state"))
    assert again.net() == h.net() and again.skipped == 0
    assert again.net()[0]["baseBlob"] == h.net()[0]["baseBlob"]
    # A big change's lines (one hunk rewriting the whole file) go to a blob too.
    whole = BIG.replace("compute", "recompute")
    plan = Plan("write", (plan_replace(snap(fs, "big.py"), fs["big.py"], whole),))
    h.finish(h.begin(plan, {"path": "big.py"}), "applied")
    assert j.size() < 2 * BLOB_MIN
    reloaded = History.load(Journal(ws, state_dir=tmp_path / "state"))
    assert reloaded.net() == h.net()
    undo = reloaded.plan_undo(2, {"big.py": snap({"big.py": whole}, "big.py")})
    assert apply_plan({"big.py": whole}, undo)["big.py"] == fs["big.py"]


def test_the_blob_is_durable_before_the_record_naming_it(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_write, real_replace = os.fsync, os.write, os.replace

    def name(fd: int) -> str:
        return os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))

    def fsync(fd: int) -> None:
        events.append(("fsync", name(fd)))
        real_fsync(fd)

    def write(fd: int, data: bytes) -> int:
        events.append(("write", name(fd)))
        return real_write(fd, data)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str], **fds: int) -> None:
        events.append(("rename", os.path.basename(dst)))
        real_replace(src, dst, **fds)  # blobs rename through the folder's descriptor

    monkeypatch.setattr(journal_module.os, "fsync", fsync)
    monkeypatch.setattr(journal_module.os, "write", write)
    monkeypatch.setattr(journal_module.os, "replace", replace)
    h = History(Journal(ws, state_dir=tmp_path / "state"))
    edit(h, {"big.py": BIG}, "big.py", "value_7 =", "value_seven =")
    sha = hashlib.sha256(BIG.encode()).hexdigest()
    first_record = events.index(("write", "journal.jsonl"))
    assert events.index(("rename", sha)) < first_record
    synced = [i for i, e in enumerate(events) if e[0] == "fsync" and sha in e[1]]
    assert synced and synced[0] < first_record


def test_compaction_neither_rewrites_blobs_nor_runs_on_every_write(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = Journal(ws, state_dir=tmp_path / "state", max_bytes=32 * 1024)
    h = History(j)
    fs: FS = {"big.py": BIG, "small.py": "".join(f"line {i}\n" for i in range(200))}
    fs = edit(h, fs, "big.py", "value_7 =", "value_seven =")
    before = blob_files(j)
    rewrites = []
    real = Journal._rewrite

    def counting(self: Journal, records: list[dict]) -> None:
        rewrites.append(len(records))
        real(self, records)

    monkeypatch.setattr(Journal, "_rewrite", counting)
    for i in range(60):
        fs = edit(h, fs, "small.py", f"line {i}\n", f"edited {i} {'x' * 200}\n")
    # Once per quarter of the cap appended (~1.5 KB an edit here), not on every write (as when
    # the 3 MB baseline was inline and every compaction still left the journal over the cap).
    assert 1 <= len(rewrites) <= 15, rewrites
    after = blob_files(j)
    for sha, st in before.items():
        assert after[sha].st_ino == st.st_ino and after[sha].st_mtime_ns == st.st_mtime_ns
    assert j.size() < 200 * 1024  # the undo window's 60 edits, not the 3 MB baseline
    again = History.load(Journal(ws, state_dir=tmp_path / "state"))
    assert again.net() == h.net()


def test_unused_blobs_are_collected_at_compaction(ws: Path, tmp_path: Path) -> None:
    j = Journal(ws, state_dir=tmp_path / "state", max_bytes=16 * 1024)
    h = History(j)
    fs: FS = {"big.py": BIG, "small.py": "".join(f"line {i}\n" for i in range(200))}
    fs = edit(h, fs, "big.py", "value_7 =", "value_seven =")
    kept = hashlib.sha256(BIG.encode()).hexdigest()
    orphan = j.dir / "blobs" / hashlib.sha256(b"crashed").hexdigest()
    orphan.write_bytes(b"crashed")  # a blob whose record a crash never appended
    (j.dir / "blobs" / ".abc.123.tmp").write_bytes(b"half")
    for i in range(40):
        fs = edit(h, fs, "small.py", f"line {i}\n", f"edited {i} {'y' * 300}\n")
    assert set(blob_files(j)) == {kept}
    assert History.load(Journal(ws, state_dir=tmp_path / "state")).net() == h.net()


def test_a_missing_or_altered_blob_skips_its_record(ws: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    h = History(Journal(ws, state_dir=state))
    fs = edit(h, {"big.py": BIG, "s.py": "a\n"}, "big.py", "value_7 =", "value_seven =")
    edit(h, fs, "s.py", "a\n", "b\n")
    (blob,) = (state / "blobs").iterdir()
    blob.write_bytes(blob.read_bytes()[:-1] + b"!")
    again = History.load(Journal(ws, state_dir=state))
    assert again.skipped == 1 and "skipped 1" in (again.skipped_note() or "")
    assert [e.id for e in again.entries] == [2]
    blob.unlink()
    assert History.load(Journal(ws, state_dir=state)).skipped == 1


def test_a_marker_in_an_agents_arguments_is_never_resolved(ws: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    h = History(Journal(ws, state_dir=state))
    edit(h, {"big.py": BIG}, "big.py", "value_7 =", "value_seven =")
    (blob,) = (state / "blobs").iterdir()
    forged = {"note": {"$blob": blob.name}, "big": "z" * BLOB_MIN}
    h.record("replace", forged, outcome="dry-run")
    (entry,) = [e for e in History.load(Journal(ws, state_dir=state)).entries if e.id == 2]
    assert entry.args["note"] == {"$blob": blob.name}
    assert json.loads(entry.args_json)["note"] == {"$blob": blob.name}
