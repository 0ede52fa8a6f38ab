"""Adversarial review of `History.prestage` (a large file's pack written in a thread while its
plan is made): the pack must hold what the plan was made on, whatever happens meanwhile, and
nothing may be left behind in the state folder."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import blobs as blobs_mod
from lsp_server.engine import files
from lsp_server.engine.history import open_history, recording
from lsp_server.engine.results import wire
from tests.editor_client import REPO

BIG = b"HEAD\n" + ("x" * 99 + "\n").encode() * 11_000  # 1.1 MB: prestaged
OTHER = ("y" * 99 + "\n").encode() * 11_000


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def run(root: Path, name: str, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_dir(state: Path) -> Path:
    (ws,) = (state / "workspaces").iterdir()
    return ws / "blobs"


def temps(state: Path) -> list[str]:
    d = blob_dir(state)
    return sorted(n for n in os.listdir(d) if n.endswith(".tmp")) if d.is_dir() else []


def workspace(tmp_path: Path, data: bytes = BIG) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_bytes(data)
    return ws


def begun_pack(state: Path) -> str:
    import json

    recs = [
        json.loads(x) for x in (blob_dir(state).parent / "journal.jsonl").read_text().splitlines()
    ]
    (pack,) = [r["pack"] for r in recs if r.get("t") == "begin"]
    return pack


DELETE = "*** Begin Patch\n*** Delete File: big.txt\n*** End Patch\n"


def test_dry_run_record_blob_is_not_truncated_by_the_prestage_thread(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dry run of deleting a large file records its text, a blob with the very sha of the
    prestaged pack: the thread and the main thread once wrote the same temporary file at the
    same time, and the thread's O_TRUNC emptied the blob the record then named. Now each stage
    has a temporary name of its own, and `History.record` drops the prestaged pack (its
    thread joined, its temporary removed) before the record's own blob is written: the two
    writes never overlap, and the recorded blob holds the file's bytes."""
    ws = workspace(tmp_path)
    S = sha(BIG)
    main = threading.get_ident()
    order: list[str] = []
    orig_temp = blobs_mod.Blobs._write_temp

    def write_temp(self: Any, dfd: int, s: str, parts: Any, sync: bool, *rest: Any) -> Any:
        who = "main" if threading.get_ident() == main else "thread"
        if s == S:
            order.append(f"{who} starts")
        got = orig_temp(self, dfd, s, parts, sync, *rest)
        if s == S:
            order.append(f"{who} done")
        return got

    monkeypatch.setattr(blobs_mod.Blobs, "_write_temp", write_temp)
    out = run(ws, "applyPatch", {"patch": DELETE, "dryRun": True})
    assert out["status"] == "dry-run", out
    assert order == ["thread starts", "thread done", "main starts", "main done"], order
    assert S in (blob_dir(state) / "../journal.jsonl").resolve().read_text()
    assert (blob_dir(state) / S).read_bytes() == BIG
    assert temps(state) == []


def test_file_changed_between_read_and_begin_is_stale_and_pack_holds_the_read(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path)
    changed = BIG.replace(b"x", b"z", 5)
    orig_begin = recording.History.begin
    packs: list[Any] = []

    def begin(self: Any, plan: Any, *a: Any, **kw: Any) -> int:
        (ws / "big.txt").write_bytes(changed)  # a save after the read, before the journal
        entry_id = orig_begin(self, plan, *a, **kw)
        packs.append(self.pack_of(entry_id))
        return entry_id

    monkeypatch.setattr(recording.History, "begin", begin)
    out = run(
        ws, "replace", {"path": "big.txt", "oldText": "x" * 99, "newText": "q", "replaceAll": True}
    )
    assert out["ok"] is False and out["code"] == "STALE", out
    assert (ws / "big.txt").read_bytes() == changed
    (pack,) = packs
    assert pack is not None and (blob_dir(state) / pack.sha).read_bytes() == BIG
    assert temps(state) == []


def test_exception_mid_plan_leaves_no_temporary_blob(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path)
    from lsp_server.actions import replace as replace_mod

    def boom(*a: Any, **kw: Any) -> Any:
        raise RuntimeError("planner bug")

    monkeypatch.setattr(replace_mod, "plan_replace", boom)
    with pytest.raises(RuntimeError):
        run(ws, "replace", {"path": "big.txt", "oldText": "x", "newText": "y", "replaceAll": True})
    assert temps(state) == []
    assert (ws / "big.txt").read_bytes() == BIG


def test_thread_that_cannot_start_does_not_fail_a_dry_run(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process at its thread limit (RuntimeError: can't start new thread): the prestage is
    an optimisation, so planning (a dry run needs no thread at all) must not fail for it."""
    ws = workspace(tmp_path)

    def no_thread(*a: Any, **kw: Any) -> Any:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(recording._thread, "start_new_thread", no_thread)
    out = run(ws, "applyPatch", {"patch": DELETE, "dryRun": True})
    assert out.get("status") == "dry-run", out
    assert (ws / "big.txt").read_bytes() == BIG


def test_thread_write_failing_part_way_leaves_no_partial_temporary(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC in the prestage thread after part of the pack was written: a dry run (which had
    never written to the blobs before) must leave nothing in the state folder."""
    ws = workspace(tmp_path)
    main = threading.get_ident()
    orig_parts = blobs_mod._write_parts

    def write_parts(fd: int, parts: Any) -> None:
        if threading.get_ident() != main:
            os.write(fd, b"".join(parts)[:300_000])
            raise OSError(errno.ENOSPC, "No space left on device")
        return orig_parts(fd, parts)

    monkeypatch.setattr(blobs_mod, "_write_parts", write_parts)
    out = run(
        ws,
        "replace",
        {"path": "big.txt", "oldText": "x", "newText": "y", "replaceAll": True, "dryRun": True},
    )
    assert out.get("status") == "dry-run", out
    assert temps(state) == []


def test_thread_enospc_then_apply_is_correct_and_undoable(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path)
    main = threading.get_ident()
    orig_parts = blobs_mod._write_parts

    def write_parts(fd: int, parts: Any) -> None:
        if threading.get_ident() != main:
            os.write(fd, b"".join(parts)[:300_000])
            raise OSError(errno.ENOSPC, "No space left on device")
        return orig_parts(fd, parts)

    monkeypatch.setattr(blobs_mod, "_write_parts", write_parts)
    out = run(ws, "write", {"path": "big.txt", "text": "small\n", "expect": {"sha256": sha(BIG)}})
    assert out["status"] == "applied", out
    monkeypatch.setattr(blobs_mod, "_write_parts", orig_parts)
    assert (blob_dir(state) / begun_pack(state)).read_bytes() == BIG
    undo = run(ws, "undo", {"editId": out["editId"]})
    assert undo["ok"], undo
    assert (ws / "big.txt").read_bytes() == BIG
    assert temps(state) == []


KILLED = """
import asyncio, sys
from lsp_server import actions
from lsp_server.actions import headless
async def go():
    async with headless.open(sys.argv[1]) as ctx:
        print(await actions.run(ctx, "applyPatch", {"patch": sys.argv[2]}))
asyncio.run(go())
"""

MOVE_EDIT = (
    "*** Begin Patch\n*** Update File: big.txt\n*** Move to: moved.txt\n@@\n-HEAD\n+short\n"
    "*** Delete File: other.txt\n*** End Patch\n"
)


@pytest.mark.parametrize("crash_after", range(1, 5))
def test_sigkill_at_each_step_of_a_prestaged_move_is_rolled_back_exactly(
    tmp_path: Path, state: Path, crash_after: int
) -> None:
    ws = workspace(tmp_path)
    (ws / "other.txt").write_bytes(OTHER)
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state)) | {
        files.CRASH_ENV: str(crash_after)
    }
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(ws), MOVE_EDIT], env=env, capture_output=True, timeout=60
    )
    if proc.returncode != -signal.SIGKILL:
        assert proc.returncode == 0 and b"applied" in proc.stdout, (proc.stdout, proc.stderr)
        pytest.skip("fewer steps")
    hist = run(ws, "history", {})
    assert (ws / "big.txt").read_bytes() == BIG, hist
    assert (ws / "other.txt").read_bytes() == OTHER
    assert not (ws / "moved.txt").exists()
    assert open_history(str(ws)).unfinished() == []
    # Then the same edit, applied and undone, gives the bytes back.
    out = run(ws, "applyPatch", {"patch": MOVE_EDIT})
    assert out["status"] == "applied", out
    undo = run(ws, "undo", {"editId": out["editId"]})
    assert undo["ok"], undo
    assert (ws / "big.txt").read_bytes() == BIG and (ws / "other.txt").read_bytes() == OTHER
    assert [n for n in temps(state) if not n.endswith(f".{proc.pid}.tmp")] == []


def test_symlink_to_big_file_update_and_delete(tmp_path: Path, state: Path) -> None:
    ws = workspace(tmp_path)
    os.symlink("big.txt", ws / "link.txt")
    out = run(
        ws, "applyPatch", {"patch": "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n"}
    )
    assert out["status"] == "applied", out
    assert (ws / "big.txt").read_bytes() == BIG and not os.path.lexists(ws / "link.txt")
    undo = run(ws, "undo", {"editId": out["editId"]})
    assert undo["ok"], undo
    # (undo gives the link's content back as a file: as before this change, not reviewed here)
    assert (ws / "link.txt").read_bytes() == BIG and (ws / "big.txt").read_bytes() == BIG
    assert temps(state) == []


def test_another_process_compaction_removes_the_staged_file_before_begin(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's compaction (Blobs.collect of everything unnamed, temporaries of live
    processes too) between the thread's write and begin: begin writes the pack itself; the
    rollback data is the pre-image, and undo gives it back."""
    ws = workspace(tmp_path)
    orig_begin = recording.History.begin

    def begin(self: Any, plan: Any, *a: Any, **kw: Any) -> int:
        self._early._join()
        assert temps(state), "staged"
        blobs_mod.Blobs(blob_dir(state)).collect(set())
        return orig_begin(self, plan, *a, **kw)

    monkeypatch.setattr(recording.History, "begin", begin)
    out = run(ws, "write", {"path": "big.txt", "text": "small\n", "expect": {"sha256": sha(BIG)}})
    assert out["status"] == "applied", out
    monkeypatch.setattr(recording.History, "begin", orig_begin)
    assert (blob_dir(state) / begun_pack(state)).read_bytes() == BIG
    assert run(ws, "undo", {"editId": out["editId"]})["ok"]
    assert (ws / "big.txt").read_bytes() == BIG
    assert temps(state) == []


def test_mcp_disk_calls_leave_nothing_between_calls(tmp_path: Path, state: Path) -> None:
    """The MCP server's disk context, one call after another in one process: a dry run's
    prestaged pack goes with its call; the next call's apply packs the file itself."""
    from lsp_server.actions.session import Session
    from lsp_server.mcp import disk

    ws = workspace(tmp_path)
    session = Session()

    async def calls() -> list[dict[str, Any]]:
        a = await disk.run(str(ws), session, "applyPatch", {"patch": DELETE, "dryRun": True})
        left = temps(state)
        b = await disk.run(str(ws), session, "applyPatch", {"patch": DELETE})
        return [a, {"left": left}, b]

    a, left, b = asyncio.run(calls())
    assert a["status"] == "dry-run" and left["left"] == [] and b["status"] == "applied", (a, b)
    assert (blob_dir(state) / begun_pack(state)).read_bytes() == BIG
    assert run(ws, "undo", {"editId": b["editId"]})["ok"]
    assert (ws / "big.txt").read_bytes() == BIG and temps(state) == []


@pytest.fixture
def small_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A state folder on a 900 KiB tmpfs (root only): a 1.1 MB pack cannot be written."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=900k", "tmpfs", str(mnt)], capture_output=True
        ).returncode
    ):
        pytest.skip("needs root and tmpfs")
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(mnt / "st"))
    yield mnt / "st"
    subprocess.run(["umount", str(mnt)], check=False)


def test_full_state_disk_dry_run_is_recorded_and_apply_refused_truthfully(
    tmp_path: Path, small_state: Path
) -> None:
    """A real ENOSPC: the prestage thread's partial pack must not stay and eat the space the
    dry run's own record needs (7f1419a: the journal stayed empty, 921,600 bytes of temporary
    left for ever); the apply is refused as not sent, the file untouched, nothing left."""
    ws = workspace(tmp_path)
    dry = run(ws, "replace", {"path": "big.txt", "oldText": "HEAD", "newText": "Z", "dryRun": True})
    assert dry["status"] == "dry-run", dry
    assert temps(small_state) == []
    assert [e["outcome"] for e in run(ws, "history", {})["entries"]] == ["dry-run"]
    out = run(ws, "replace", {"path": "big.txt", "oldText": "HEAD", "newText": "Z"})
    assert out["ok"] is False and out["code"] == "IO_ERROR", out
    assert "not sent" in out["message"]
    assert (ws / "big.txt").read_bytes() == BIG
    assert temps(small_state) == []
