"""An adversarial review of recovery everywhere and the tolerant journal (issue 13 items 2-3):
hostile blob markers and blob files, apply journals of the wrong shape, recovery messages that
must not claim a rollback they did not do, and a sliced history answer while edits land."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.engine import files, recovery
from lsp_server.engine.errors import EditError
from lsp_server.engine.history import History, drive
from lsp_server.engine.journal import BLOB_MIN, Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_replace
from tests.cli.test_cli_atomic import cli
from tests.history_helpers import FS, apply_plan, snap

REPO = Path(__file__).resolve().parents[2]


def _journal(tmp_path: Path) -> Journal:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return Journal(ws, state_dir=tmp_path / "state")


def _big_session(journal: Journal) -> tuple[History, FS]:
    """One applied edit of a file large enough that its pre-image lives in a blob."""
    history = History(journal)
    fs: FS = {"big.txt": "x" * BLOB_MIN + "\nend\n"}
    plan = Plan("replace", (plan_replace(snap(fs, "big.txt"), "end\n", "END\n"),))
    entry_id = history.begin(plan, {"path": "big.txt"})
    fs = apply_plan(fs, plan)
    history.finish(entry_id, "applied")
    return history, fs


def _record_until_compacted(history: History, journal: Journal) -> None:
    """Dry runs recorded until one of them compacts the journal (it is rewritten: a new inode).
    A compaction waits for a quarter of `max_bytes`, or of what the last one left if that is
    more (`Journal.wants_compaction`)."""
    inode = journal.path.stat().st_ino
    for _ in range(200):
        history.record("replace", {"path": "big.txt"}, outcome="dry-run")
        if journal.path.stat().st_ino != inode:
            return
    raise AssertionError("200 records and no compaction")


def test_a_blob_marker_that_is_not_a_name_is_skipped(tmp_path: Path) -> None:
    # `{"$blob": [1]}` in a record that names blobs: was a TypeError (unhashable list) out of
    # the journal's parser, so no server could start and `history` crashed.
    journal = _journal(tmp_path)
    journal.dir.mkdir(parents=True)
    good = {"t": "record", "id": 1, "action": "replace", "outcome": "applied"}
    journal.path.write_bytes(
        b'{"t":"record","id":2,"$blobs":["a"],"diff":{"$blob":[1]}}\n'
        b'{"t":"record","id":3,"$blobs":["a"],"diff":{"$json":{"k":1}}}\n'
        + json.dumps(good).encode()
        + b"\n"
    )
    history = History.load(journal)
    assert history.skipped == 2
    assert [e.id for e in history.entries] == [1]
    assert journal.unfinished() == []


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_blob_that_is_not_a_regular_file_is_skipped_not_waited_on(
    tmp_path: Path, kind: str
) -> None:
    # A blob replaced by a FIFO blocked History.load (every server start) in open() for ever;
    # one replaced by a symlink was followed. The load runs in a child so that the old code's
    # hang shows as a timeout, not as a stuck suite.
    journal = _journal(tmp_path)
    _big_session(journal)
    blobs = list((journal.dir / "blobs").iterdir())
    assert blobs
    for blob in blobs:
        data = blob.read_bytes()
        blob.unlink()
        if kind == "fifo":
            os.mkfifo(blob)
        else:
            elsewhere = tmp_path / f"elsewhere-{blob.name}"
            elsewhere.write_bytes(data)
            blob.symlink_to(elsewhere)
    code = (
        "import sys\n"
        "from lsp_server.engine.history import History\n"
        "from lsp_server.engine.journal import Journal\n"
        "h = History.load(Journal(sys.argv[1], state_dir=sys.argv[2]))\n"
        "print(h.skipped, len(h.entries))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "ws"), str(journal.dir)],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert proc.returncode == 0, proc.stderr
    skipped, entries = map(int, proc.stdout.split())
    assert skipped >= 1 and entries == 0


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state"
    monkeypatch.setenv(files.STATE_DIR_ENV, str(path))
    return path


def _apply_journal(root: Path, data: bytes) -> Path:
    sdir = Path(files.state_dir(str(root)))
    (sdir / files.JOURNAL).write_bytes(data)
    return sdir


def test_an_unreadable_apply_journal_is_not_called_a_rollback(tmp_path: Path, state: Path) -> None:
    # The message said "rolled back an interrupted apply (pid None): left alone (changed
    # since): <the kept journal>": no rollback happened and that path is no workspace file.
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    _apply_journal(root, b"not json\n")
    proc = cli("history", "--root", str(root), "--json", state=state)
    assert proc.returncode == 0, proc.stderr
    assert "rolled back" not in proc.stderr
    assert "could not roll back" in proc.stderr and "unreadable" in proc.stderr
    (entry,) = json.loads(proc.stdout)["entries"]
    assert "rolled back" not in entry["args"]["message"]
    assert entry["files"] == []  # the kept journal is in the state folder, not the workspace
    assert entry["outcome"] == "PARTIAL"


@pytest.mark.parametrize(
    "data",
    [b"[]\n", b'{"blobSize": 1e400, "files": []}\nabc', b'{"files": 5}\n'],
    ids=["list", "huge-blob-size", "files-not-a-list"],
)
def test_an_apply_journal_of_the_wrong_shape_is_a_result(
    tmp_path: Path, state: Path, data: bytes
) -> None:
    # `[]` (AttributeError) and a blobSize of 1e400 (OverflowError) were tracebacks out of every
    # entry point, a server start included (recovery.recover promises never to raise).
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    done = recovery.recover(str(root))
    assert done.reports == [] and done.error is None  # no journal: nothing to do
    _apply_journal(root, data)
    done = recovery.recover(str(root))
    if done.error is None:  # set aside by files.py: said as not rolled back
        assert all("could not roll back" in m for m in done.messages())
    else:
        assert done.error.code == "IO_ERROR" and "nothing was rolled back" in done.error.message
    for command in (["history"], ["undo", "1"]):
        proc = cli(command[0], "--root", str(root), *command[1:], state=state)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert "rolled back an interrupted" not in proc.stderr
    assert (root / "a.txt").read_text() == "a\n"


def test_a_recovery_never_writes_outside_the_workspace(tmp_path: Path, state: Path) -> None:
    # An apply journal naming `../outside/victim.txt` (hand-edited, or another version's) had
    # the recovery of every entry point overwrite a file outside the workspace.
    root = tmp_path / "ws"
    root.mkdir()
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_bytes(b"precious\n")
    header = {
        "files": [
            {
                "path": "../outside/victim.txt",
                "op": "write",
                "pre": [0, 3],
                "newSha256": hashlib.sha256(b"precious\n").hexdigest(),
            }
        ],
        "blobSize": 3,
    }
    _apply_journal(root, json.dumps(header).encode() + b"\nabc")
    recovery.recover(str(root))
    assert victim.read_bytes() == b"precious\n"


def test_a_sliced_history_answer_counts_what_it_shows(tmp_path: Path) -> None:
    # The server runs iter_json in 2 ms slices; an edit landing between two slices was counted
    # in `total` but not shown in `entries`: a client read "1 of 2" and looked for a missing one.
    history, fs = _big_session(_journal(tmp_path))
    gen = history.iter_json(limit=None)
    next(gen)  # the first slice: the entries to show are chosen
    plan = Plan("replace", (plan_replace(snap(fs, "big.txt"), "END\n", "end!\n"),))
    history.finish(history.begin(plan, {"path": "big.txt"}), "applied")
    out = drive(gen)
    assert out["total"] == len(out["entries"]) == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("committed", [None]), ("baselines", {"f.py": None}), ("changes", [None])],
)
def test_a_null_where_a_record_holds_objects_is_skipped(
    tmp_path: Path, state: Path, field: str, value: object
) -> None:
    # records.py took `null` for an object inside lists and maps (its `_dict` reads None as
    # absent): `committed: [null]` loaded, then `undo` crashed on it (AttributeError in
    # plan_undo, a traceback out of the CLI); a null baseline broke replay half-way.
    root = tmp_path / "ws"
    root.mkdir()
    fs: FS = {"f.py": "a = 1\n"}
    plan = Plan("replace", (plan_replace(snap(fs, "f.py"), "a = 1", "a = 2"),))
    journal = Journal(root)
    history = History(journal)
    entry_id = history.begin(plan, {"path": "f.py"})
    (root / "f.py").write_text(apply_plan(fs, plan)["f.py"])
    history.finish(entry_id, "applied")
    records = [json.loads(line) for line in journal.path.read_bytes().splitlines()]
    mutated = 0
    for rec in records:
        if field in rec or (rec["t"] == "finish" and field == "committed"):
            rec[field] = value
            mutated += 1
    assert mutated
    journal.path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    proc = cli("undo", "--root", str(root), "--json", "1", state=state)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["code"] in ("NOT_FOUND", "INVALID_ARGUMENT")
    history = History.load(Journal(root))
    assert history.skipped >= 1


def test_an_altered_blob_is_written_again_not_named_again(tmp_path: Path) -> None:
    # Blobs.put kept any file of the right size: a blob altered on disk (same size) was named
    # again by the compaction of a history that still held the right text, so the next load
    # skipped the entry and its pre-image was gone for good.
    ws = tmp_path / "ws"
    ws.mkdir()
    journal = Journal(ws, state_dir=tmp_path / "state", max_bytes=200)
    history, _fs = _big_session(journal)
    for blob in (journal.dir / "blobs").iterdir():
        data = bytearray(blob.read_bytes())
        data[0] ^= 1
        blob.write_bytes(bytes(data))
    _record_until_compacted(history, journal)
    assert journal.compacted_size > 0
    again = History.load(Journal(ws, state_dir=tmp_path / "state"))
    assert again.skipped == 0
    assert again.entries[0].id == 1 and again.entries[0].undoable


def test_a_server_start_does_not_wait_for_a_running_apply(tmp_path: Path, state: Path) -> None:
    # The server's start (recovery.recover) waited on the workspace lock whenever an apply's
    # journal existed: a CLI apply stopped with ^Z (or just a long one) kept `initialize`
    # unanswered for as long. The lock is held here, in this process; the recovery runs in a
    # thread, joined with a bound only so that the old code's wait fails the test instead of
    # hanging the suite.
    import threading

    root = tmp_path / "ws"
    root.mkdir()
    out: list[recovery.Recovery] = []
    with files.workspace_lock(str(root)) as sdir:
        (Path(sdir) / files.JOURNAL).write_bytes(b'{"files": []}\n')
        thread = threading.Thread(
            target=lambda: out.append(recovery.recover(str(root), wait=False)), daemon=True
        )
        thread.start()
        thread.join(30)
        waited = thread.is_alive()
    thread.join()
    assert not waited
    (done,) = out
    assert done.busy and done.reports == [] and done.error is None
    assert "another agent-edit process is applying" in done.messages()[0]
    # Once the apply has ended (or was killed: its lock went with it), a start rolls back.
    done = recovery.recover(str(root), wait=False)
    assert not done.busy and len(done.reports) == 1
    assert not (Path(files.state_dir(str(root))) / files.JOURNAL).exists()


def test_a_blob_folder_that_is_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    # `blobs/` is checked nowhere (only the state folder is): as a symlink into the workspace,
    # pre-images were written there and each compaction's clean-up unlinked every file in it
    # that no record named, a user's own files included.
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "keep.py").write_text("mine\n")
    journal = Journal(ws, state_dir=tmp_path / "state", max_bytes=200)
    journal.dir.mkdir(parents=True)
    (journal.dir / "blobs").symlink_to(ws / "src")
    with pytest.raises(EditError) as caught:  # no undo record: the edit is not sent
        _big_session(journal)
    assert "undo record could not be written" in caught.value.message
    History(journal).record("replace", {"path": "big.txt"}, outcome="dry-run")  # compacts
    assert sorted(os.listdir(ws / "src")) == ["keep.py"]
    assert (ws / "src" / "keep.py").read_text() == "mine\n"


def test_a_compaction_removes_only_what_blobs_wrote(tmp_path: Path) -> None:
    # The clean-up removed every name in `blobs/` no record named: a file put there by hand
    # (a note, a backup) went with the unused blobs.
    ws = tmp_path / "ws"
    ws.mkdir()
    journal = Journal(ws, state_dir=tmp_path / "state", max_bytes=200)
    history, _fs = _big_session(journal)
    (journal.dir / "blobs" / "README").write_text("kept by hand\n")
    (journal.dir / "blobs" / ("0" * 64)).write_bytes(b"unused")
    _record_until_compacted(history, journal)
    names = os.listdir(journal.dir / "blobs")
    assert "README" in names and "0" * 64 not in names


@pytest.mark.parametrize("name", ["journal.jsonl", "journal.jsonl.tmp", "journal.lock"])
def test_a_journal_file_that_is_a_symlink_is_never_written_through(
    tmp_path: Path, name: str
) -> None:
    # The journal, its compaction's temporary file and its lock were opened following
    # symlinks: one pointing into the workspace had records appended to a user's file, or the
    # file truncated and overwritten by a compaction (O_TRUNC through the link), or created.
    ws = tmp_path / "ws"
    ws.mkdir()
    victim = ws / "victim.py"
    victim.write_text("mine\n")
    journal = Journal(ws, state_dir=tmp_path / "state", max_bytes=200)
    history, _fs = _big_session(journal)
    link = journal.dir / name
    link.unlink(missing_ok=True)
    link.symlink_to(victim if name != "journal.lock" else ws / "made.py")  # O_CREAT through it
    try:
        History(journal).record("replace", {"path": "big.txt"}, outcome="dry-run")  # compacts
        history.record("replace", {"path": "big.txt"}, outcome="dry-run")
    except EditError:
        pass  # refusing to journal is a fine answer; writing through the link is not
    assert victim.read_text() == "mine\n"
    assert sorted(os.listdir(ws)) == ["victim.py"]


def test_a_journal_that_is_a_fifo_does_not_hang_a_start(tmp_path: Path) -> None:
    # The journal was opened with plain open()s: a FIFO in its place (or a symlink to one)
    # blocked the first edit's journaling (and with it the server) for ever. Run in a child,
    # so that the old code fails by timeout instead of hanging the suite.
    journal = _journal(tmp_path)
    journal.dir.mkdir(parents=True)
    os.mkfifo(journal.path)
    code = (
        "import sys\n"
        "from lsp_server.engine.history import History\n"
        "from lsp_server.engine.journal import Journal\n"
        "h = History.load(Journal(sys.argv[1], state_dir=sys.argv[2]))\n"
        "h.record('replace', {'path': 'f.py'}, outcome='dry-run')\n"
        "print(h.journal_error)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "ws"), str(journal.dir)],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert proc.returncode == 0, proc.stderr
    assert "journal failed" in proc.stdout  # said; the history goes on in memory


@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["wrong-shape", "apply-running"])
async def test_a_server_starts_on_a_bad_or_busy_apply_journal_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # wrong-shape: `initialize` failed on recovery's AttributeError. apply-running: it waited on
    # the workspace lock for as long as the apply (held here) ran.
    import asyncio
    import contextlib

    from lsprotocol import types as t

    from tests.editor_client import STATE_DIR, server_config, start_session

    monkeypatch.setenv(files.STATE_DIR_ENV, STATE_DIR)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    with contextlib.ExitStack() as stack:
        if how == "apply-running":
            sdir = stack.enter_context(files.workspace_lock(str(root)))
            (Path(sdir) / files.JOURNAL).write_bytes(b'{"files": []}\n')
        else:
            _apply_journal(root, b"[]\n")
        client = await server_config().start()
        try:
            ed = await asyncio.wait_for(start_session(client, "visual-studio-code", root), 30)
            shown = await asyncio.wait_for(client.wait_for_notification(t.WINDOW_SHOW_MESSAGE), 10)
            if how == "apply-running":
                assert "another agent-edit process is applying" in shown.message
            else:
                # Either recovery refuses the journal or the writer sets it aside as
                # unreadable: both say that nothing was rolled back, never "rolled back".
                assert (
                    "cannot be read; nothing was rolled back" in shown.message
                    or "could not roll back an interrupted apply: its journal is unreadable"
                    in shown.message
                ), shown.message
                assert "rolled back an interrupted" not in shown.message
            ed.open("a.txt", "a\n")
            read = await ed.command("agentEdit.read", {"path": "a.txt"})
            assert read["ok"], read
        finally:
            stack.close()  # the apply "ends": the server's shutdown must not wait on it
            await client.shutdown_session()
            await client.stop()


@pytest.mark.parametrize("pid", [2**31, 2**32, -1, 0])
def test_an_unfinished_entry_with_an_impossible_pid_is_abandoned_not_a_crash(
    tmp_path: Path, pid: int
) -> None:
    # A begin line whose pid no process can have (hand-edited, or written by another platform):
    # 2**32 passed the record check (ints up to 2**53) and os.kill raised OverflowError out of
    # `unfinished`, so every `agent-edit history` and `undo` crashed; -1 and 0 name process
    # groups, which os.kill answers for, so the entry counted as running for ever.
    journal = _journal(tmp_path)
    journal.dir.mkdir(parents=True)
    journal.path.write_text(json.dumps({"t": "begin", "id": 1, "pid": pid, "changes": []}) + "\n")
    history = History.load(journal)
    assert [e.id for e in history.unfinished()] == [1]


def test_the_pack_of_a_set_aside_apply_journal_of_many_files_survives_a_compaction(
    tmp_path: Path,
) -> None:
    # The apply journal's header names ~300 bytes a file: past 1 MiB at ~3,500 files, where
    # the compaction's read of it stopped; the header did not parse, and the pack of
    # pre-images the person was told to restore from was removed as named by nothing.
    journal = _journal(tmp_path)
    with journal.transaction() as (_, w):
        w.append({"t": "record", "id": 1, "action": "replace", "outcome": "applied"})
    pack = journal.blobs.put(b"the pre-images of 4,000 files")
    entries = [
        {"path": f"src/pkg{i // 100}/module_{i}.py", "op": "replace", "pre": [i, 1]}
        | {"newSha256": "0" * 64, "tmp": f"src/pkg{i // 100}/.module_{i}.py.tmp" + "x" * 150}
        for i in range(4000)
    ]
    header = {"version": 3, "root": str(journal.workspace), "pid": 1, "files": entries}
    line = json.dumps(header | {"blobSize": 0, "pack": pack}).encode() + b"\n"
    assert len(line) > 1 << 20
    (journal.dir / (files.JOURNAL + ".unreached-1")).write_bytes(line)
    with journal.transaction() as (_, w):
        w.rewrite([{"t": "record", "id": 1, "action": "replace", "outcome": "applied"}])
    assert journal.blobs.get(pack) == b"the pre-images of 4,000 files"
