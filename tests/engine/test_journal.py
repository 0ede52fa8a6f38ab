"""The journal: where it lives, crash safety (begin before apply, torn lines, unfinished plans),
reloading the history from it, compaction, and two processes sharing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import History
from lsp_server.engine.journal import ENV_STATE_DIR, Journal, state_base, state_dir_for
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.planner import plan_replace, plan_write
from lsp_server.engine.text import Snapshot
from tests.history_helpers import FS, apply_plan, snap, snaps

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 31))
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    base = tmp_path / "state"
    monkeypatch.setenv(ENV_STATE_DIR, str(base))
    return base


def edit(history: History, fs: FS, path: str, old: str, new: str) -> tuple[int, FS]:
    plan = Plan("replace", (plan_replace(snap(fs, path), old, new),))
    entry_id = history.begin(plan, {"path": path})
    fs = apply_plan(fs, plan)
    history.finish(entry_id, "applied")
    return entry_id, fs


# -- where it lives -------------------------------------------------------------------------------


def test_journal_lives_outside_the_workspace_in_a_per_workspace_dir(ws: Path, state: Path) -> None:
    j = Journal(ws)
    assert j.dir.parent == state / "workspaces"
    assert not str(os.path.realpath(j.path)).startswith(str(os.path.realpath(ws)) + os.sep)
    other = ws.parent / "other"
    other.mkdir()
    assert Journal(other).dir != j.dir
    assert Journal(str(ws) + "/.").dir == j.dir  # the same workspace however it is spelled
    History(j).record("read", {"path": "x"}, outcome="dry-run")
    assert j.path.exists() and not any(ws.iterdir())


def test_default_base_is_platformdirs_user_state_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv(ENV_STATE_DIR, raising=False)
    for xdg in ("", "/tmp/xdg-state"):
        monkeypatch.setenv("XDG_STATE_HOME", xdg)
        assert state_base() == Path(platformdirs.user_state_dir("agent-edit"))


def test_a_state_dir_inside_the_workspace_is_refused(ws: Path) -> None:
    with pytest.raises(EditError) as exc:
        state_dir_for(ws, base=ws / ".state")
    assert exc.value.code == Code.DENIED and exc.value.details["rule"]
    with pytest.raises(EditError):
        Journal(ws, state_dir=ws / "sub")


# -- crash safety ---------------------------------------------------------------------------------


def test_begin_is_on_disk_before_the_apply_and_finish_after(ws: Path, state: Path) -> None:
    j = Journal(ws)
    h = History(j)
    plan = Plan("replace", (plan_replace(Snapshot("f.py", ORIGINAL), "line 3\n", "three\n"),))
    entry_id = h.begin(plan, {"path": "f.py"})
    lines = [json.loads(x) for x in j.path.read_text().splitlines()]
    assert [r["t"] for r in lines] == ["begin"]
    (change,) = lines[0]["changes"]
    assert change["hunks"][0][3] == ["line 3\n"]  # the pre-image
    assert lines[0]["baselines"]["f.py"]["text"] == ORIGINAL
    assert j.unfinished()[0]["id"] == entry_id
    h.finish(entry_id, "applied")
    assert [json.loads(x)["t"] for x in j.path.read_text().splitlines()] == ["begin", "finish"]
    assert j.unfinished() == []


CRASH_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from lsp_server.engine.history import History
    from lsp_server.engine.journal import Journal
    from lsp_server.engine.model import Plan
    from lsp_server.engine.planner import plan_replace
    from lsp_server.engine.text import Snapshot
    from pathlib import Path

    ws = Path(sys.argv[1])
    f = ws / "f.py"
    snap = Snapshot("f.py", f.read_text())
    plan = Plan("replace", (plan_replace(snap, "line 3\\n", "three\\n"),))
    History.load(Journal(ws)).begin(plan, {"path": "f.py"})
    if sys.argv[2] == "write":
        f.write_text(plan.changes[0].new_text)
    os._exit(9)  # killed between the write and recording the outcome
    """
)


@pytest.mark.parametrize("landed", [True, False])
def test_begin_without_finish_survives_a_killed_process(
    ws: Path, state: Path, landed: bool
) -> None:
    (ws / "f.py").write_text(ORIGINAL)
    env = {**os.environ, "PYTHONPATH": str(REPO), ENV_STATE_DIR: str(state)}
    proc = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, str(ws), "write" if landed else "none"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 9, proc.stderr.decode()
    h = History.load(Journal(ws))
    (pending,) = h.unfinished()
    assert pending.paths == ["f.py"] and pending.to_json()["unfinished"] is True
    fs = {"f.py": (ws / "f.py").read_text()}
    entry = h.recover(pending.id, snaps(fs, pending.paths))
    assert h.unfinished() == []
    if not landed:
        assert entry.outcome == "NOT_APPLIED"
        assert entry.committed == [{"path": "f.py", "change": "update", "state": "not-applied"}]
        return
    assert entry.outcome == "applied" and entry.committed[0]["state"] == "applied"
    assert "-line 3\n+three\n" in (entry.diff or "")
    # The recovered edit is undoable, and the net diff knows about it.
    assert "+three" in h.net()[0]["diff"]
    plan = h.plan_undo(entry.id, snaps(fs, entry.paths))
    assert apply_plan(fs, plan) == {"f.py": ORIGINAL}
    # And a fresh load sees it settled.
    assert History.load(Journal(ws)).unfinished() == []


def test_a_torn_last_line_is_ignored_and_the_next_record_starts_clean(
    ws: Path, state: Path
) -> None:
    j = Journal(ws)
    h = History(j)
    fs = {"f.py": ORIGINAL}
    first, fs = edit(h, fs, "f.py", "line 3\n", "three\n")
    with open(j.path, "ab") as f:
        f.write(b'{"t":"begin","id":2,"acti')  # the process died mid-write
    h2 = History.load(Journal(ws))
    assert [e.id for e in h2.entries] == [first] and h2.unfinished() == []
    second, fs = edit(h2, fs, "f.py", "line 5\n", "five\n")
    h3 = History.load(Journal(ws))
    assert [e.id for e in h3.entries] == [first, second]
    assert all(e.outcome == "applied" for e in h3.entries)


# -- reload ---------------------------------------------------------------------------------------


def test_history_reloads_from_the_journal_as_it_was(ws: Path, state: Path) -> None:
    h = History(Journal(ws))
    fs: FS = {"f.py": ORIGINAL, "gone.txt": "x\n"}
    _, fs = edit(h, fs, "f.py", "line 3\n", "three\n")
    h.record(
        "replace",
        {"path": "f.py"},
        error=EditError(Code.NO_MATCH, "no", "read", {"path": "f.py", "candidates": []}),
    )
    fs["f.py"] = fs["f.py"].replace("line 20\n", "user\n")  # not the agent's
    _, fs = edit(h, fs, "f.py", "line 9\n", "nine\n")
    plan = Plan("patch", (FileChange("delete", snap(fs, "gone.txt")),))
    entry_id = h.begin(plan)
    fs = apply_plan(fs, plan)
    h.finish(entry_id, "applied")
    plan = h.plan_undo(1, snaps(fs, ["f.py"]))
    entry_id = h.begin(plan, {"editId": 1})
    fs = apply_plan(fs, plan)
    h.finish(entry_id, "applied")
    again = History.load(Journal(ws))
    assert again.to_json() == h.to_json()
    assert "user" not in again.to_diff_text()
    assert again.entry(1).undone_by == entry_id


def test_two_processes_share_one_journal_without_id_clashes(ws: Path, state: Path) -> None:
    server = History.load(Journal(ws))
    cli = History.load(Journal(ws))
    fs: FS = {"f.py": ORIGINAL}
    a, fs = edit(server, fs, "f.py", "line 3\n", "three\n")
    b, fs = edit(cli, fs, "f.py", "line 4\n", "four\n")  # cli picks up #1 before writing
    c, fs = edit(server, fs, "f.py", "line 5\n", "five\n")
    assert (a, b, c) == (1, 2, 3)
    assert cli.refresh() is True and server.refresh() is False
    assert [e.id for e in cli.entries] == [1, 2, 3]
    assert cli.to_json() == server.to_json()


# -- compaction -----------------------------------------------------------------------------------


def test_compaction_bounds_the_journal_and_keeps_what_undo_needs(ws: Path, state: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(400))
    j = Journal(ws, max_bytes=64 * 1024)
    h = History(j, undo_window=5)
    fs: FS = {"f.py": text}
    ids = []
    for i in range(300):
        entry_id, fs = edit(h, fs, "f.py", f"line {i}\n", f"edited {i} " + "x" * 80 + "\n")
        ids.append(entry_id)
        assert j.size() <= 64 * 1024 + 4096
    assert '"t":"checkpoint"' in j.path.read_text()
    again = History.load(Journal(ws, max_bytes=64 * 1024), undo_window=5)
    assert again.net() == h.net()
    assert again.entries[-1].id == ids[-1]
    assert again.entry(ids[-1]).undoable and again.entry(ids[-5]).undoable
    # Inside the undo window edits stay undoable after compaction (undos are edits too, so
    # each one pushes the oldest edit out of the window of 5).
    for entry_id in ids[-3:][::-1]:
        plan = again.plan_undo(entry_id, snaps(fs, ["f.py"]))
        new_id = again.begin(plan, {"editId": entry_id})
        fs = apply_plan(fs, plan)
        again.finish(new_id, "applied")
    assert f"line {ids[-1] - 1}\n" in fs["f.py"]
    with pytest.raises(EditError) as exc:  # outside the window: said, not guessed
        again.plan_undo(ids[-6] if ids[-6] in {e.id for e in again.entries} else ids[0], {})
    assert exc.value.code == Code.INVALID_ARGUMENT
    # The net diff still starts at the true baseline.
    assert again.net()[0]["baseBlob"] == History.load(Journal(ws)).net()[0]["baseBlob"]


def test_compaction_keeps_an_unfinished_plan(ws: Path, state: Path) -> None:
    j = Journal(ws, max_bytes=16 * 1024)
    crashed = History(j)
    plan = Plan("write", (plan_write(Snapshot("a.txt", "a\n"), "A\n"),))
    pending = crashed.begin(plan, {"path": "a.txt"})
    h = History.load(Journal(ws, max_bytes=16 * 1024))
    fs: FS = {"f.py": "".join(f"line {i}\n" * 20 for i in range(1, 31))}
    for i in range(1, 31):
        _, fs = edit(h, fs, "f.py", f"line {i}\n" * 20, f"L{i}\n" * 20)
    assert '"t":"checkpoint"' in j.path.read_text()  # it was compacted
    assert [e.id for e in History.load(Journal(ws)).unfinished()] == [pending]


def test_another_process_compacting_is_noticed(ws: Path, state: Path) -> None:
    writer = History(Journal(ws, max_bytes=8 * 1024))
    reader = History.load(Journal(ws))
    fs: FS = {"f.py": "".join(f"line {i}\n" * 10 for i in range(1, 31))}
    for i in range(1, 31):
        _, fs = edit(writer, fs, "f.py", f"line {i}\n" * 10, f"L{i}\n" * 10)
    assert '"t":"checkpoint"' in writer.journal.path.read_text()  # type: ignore[union-attr]
    assert reader.refresh() is True
    assert [e.id for e in reader.entries][-1] == 30
    assert reader.net() == writer.net()


def _rec(entry_id: int, pad: int = 0) -> dict[str, object]:
    return {"t": "record", "id": entry_id, "action": "x" * pad, "outcome": "applied"}


def test_a_reader_notices_two_compactions_that_give_the_file_its_inode_back(
    ws: Path, state: Path
) -> None:
    # The second compaction's new file can get the inode number the first one freed, which
    # is the one the reader last saw; grown past the reader's offset, it was taken for
    # the same file with lines appended: the reader went on from the middle of a line,
    # skipped it and lost the records before it (and a compaction it ran next wrote the
    # loss into the journal). A reader now holds the file it read open, so its number
    # cannot come back while it is compared.
    writer, reader = Journal(ws), Journal(ws)
    with writer.transaction() as (_, w):
        w.append(_rec(1), _rec(2), _rec(3))
    with reader.transaction() as (batch, _):
        assert [r["id"] for r in batch.records] == [1, 2, 3]
    with writer.transaction() as (_, w):
        w.rewrite([_rec(1)])
    with writer.transaction() as (_, w):
        w.rewrite([_rec(7, 500), _rec(8, 500)])  # longer than the reader's offset
    with reader.transaction() as (batch, _):
        assert batch.reset and batch.skipped == 0
        assert [r["id"] for r in batch.records] == [7, 8]


def test_a_long_lived_history_follows_other_processes_compactions(ws: Path, state: Path) -> None:
    # The server's history against CLI runs (a fresh history each, compacting often): after
    # each run the server's view is the one a fresh load gives.
    server = History.load(Journal(ws, max_bytes=2000))
    fs: FS = {"f.py": "".join(f"line {i}\n" for i in range(200))}
    for i in range(40):
        run = History.load(Journal(ws, max_bytes=2000))
        _, fs = edit(run, fs, "f.py", f"line {i}\n", f"L{i} " + "y" * 800 + "\n")
        server.refresh()
        fresh = History.load(Journal(ws, max_bytes=2000))
        assert server.skipped == 0
        assert [e.id for e in server.entries] == [e.id for e in fresh.entries]
        assert server.net() == fresh.net()


# -- failures are results -------------------------------------------------------------------------


def test_a_plan_begun_by_a_live_process_is_not_taken_for_a_crash(ws: Path, state: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        h = History(Journal(ws))
        plan = Plan("write", (plan_write(Snapshot("a.txt", "a\n"), "A\n"),))
        entry_id = h.begin(plan, {"path": "a.txt"})
        j_lines = Journal(ws).path.read_text().splitlines()
        rec = json.loads(j_lines[-1])
        rec["pid"] = other.pid  # as if the server, still running, had begun it
        Journal(ws).path.write_text("\n".join(j_lines[:-1] + [json.dumps(rec)]) + "\n")
        assert History.load(Journal(ws)).unfinished() == []
    finally:
        other.kill()
        other.wait()
    (pending,) = History.load(Journal(ws)).unfinished()
    assert pending.id == entry_id


def test_journal_failures_refuse_the_plan_but_never_lose_the_history(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    ws = tmp_path / "ws"
    ws.mkdir()
    broken = Journal(ws, state_dir=blocker / "state")
    h = History(broken)
    plan = Plan("write", (plan_write(Snapshot("a.txt", "a\n"), "A\n"),))
    with pytest.raises(EditError) as exc:
        h.begin(plan, {"path": "a.txt"})
    assert exc.value.code == Code.IO_ERROR and h.entries == [] and h.journal_error
    entry = h.record("replace", {"path": "a.txt"}, error=EditError(Code.NO_MATCH, "no", "read"))
    assert entry.outcome == "NO_MATCH" and [e.id for e in h.entries] == [1]
    # Begun fine, then the journal breaks: the outcome is kept in memory.
    good = History(Journal(ws, state_dir=tmp_path / "state"))
    entry_id = good.begin(plan, {"path": "a.txt"})
    assert good.journal is not None
    good.journal.dir = blocker / "gone"
    good.journal.path = good.journal.dir / "journal.jsonl"
    assert good.finish(entry_id, "applied").outcome == "applied"
    assert good.journal_error and good.net()[0]["path"] == "a.txt"


def test_open_history_falls_back_to_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lsp_server.engine.history import open_history

    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv(ENV_STATE_DIR, str(blocker))
    h = open_history(tmp_path)
    assert h.journal_error and "not available" in h.journal_error
    h.record("read", {"path": "x"}, outcome="dry-run")
    monkeypatch.setenv(ENV_STATE_DIR, str(tmp_path / "state"))
    ok = open_history(tmp_path / "ws")
    assert ok.journal is not None and ok.journal_error is None


def test_an_unreadable_record_is_skipped_not_fatal(ws: Path, state: Path) -> None:
    h = History(Journal(ws))
    fs: FS = {"f.py": ORIGINAL}
    _, fs = edit(h, fs, "f.py", "line 3\n", "three\n")
    with open(Journal(ws).path, "a") as f:
        f.write('{"t":"finish"}\n{"t":"begin","id":"x"}\n')
    again = History.load(Journal(ws))
    assert [e.id for e in again.entries] == [1] and again.skipped == 2 and again.skipped_note()
    _, fs = edit(again, fs, "f.py", "line 4\n", "four\n")
    assert [e.id for e in History.load(Journal(ws)).entries] == [1, 2]


def test_a_dropped_journal_closes_the_file_it_held(ws: Path, state: Path) -> None:
    # A reader keeps the journal file open between reads; tests, the CLI and the MCP server
    # make journals and drop them: none may leave its descriptor behind.
    with Journal(ws).transaction() as (_, w):
        w.append(_rec(1))
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        journal = Journal(ws)
        assert [r["id"] for r in journal.read_all()] == [1]
        with journal.transaction() as (_, w):
            w.rewrite([_rec(1)])
        del journal
    assert len(os.listdir("/proc/self/fd")) <= before


def test_a_read_that_fails_on_a_replaced_journal_still_resets_the_next_one(
    ws: Path, state: Path
) -> None:
    # The journal moved away, a directory in its place (a read fails), then put back: the
    # reader had taken its offset back to 0 before the open failed, then found its own file
    # again and read it whole as if every record were new. A history took each in twice
    # (a line inserted, then changed, showed as two insertions).
    writer, reader = Journal(ws), Journal(ws)
    with writer.transaction() as (_, w):
        w.append(_rec(1))
    with reader.transaction() as (batch, _):
        assert [r["id"] for r in batch.records] == [1]
    with writer.transaction() as (_, w):
        w.append(_rec(2))
    away = reader.path.with_name("away")
    reader.path.rename(away)
    reader.path.mkdir()
    with pytest.raises(OSError), reader.transaction():
        pass
    reader.path.rmdir()
    away.rename(reader.path)
    with reader.transaction() as (batch, _):
        assert batch.reset and [r["id"] for r in batch.records] == [1, 2]
    with reader.transaction() as (batch, _):
        assert not batch.reset and batch.records == []


def test_a_history_whose_journal_was_briefly_replaced_still_has_each_edit_once(
    ws: Path, state: Path
) -> None:
    server = History.load(Journal(ws))
    fs: FS = {"a.txt": "one\ntwo\n"}
    _, fs = edit(History.load(Journal(ws)), fs, "a.txt", "one\n", "one\nadded\n")
    server.refresh()
    _, fs = edit(History.load(Journal(ws)), fs, "a.txt", "two", "TWO")
    path = server.journal.path  # type: ignore[union-attr]
    path.rename(path.with_name("away"))
    path.mkdir()
    assert server.refresh() is False and "reading the journal failed" in str(server.journal_error)
    path.rmdir()
    path.with_name("away").rename(path)
    server.refresh()
    fresh = History.load(Journal(ws))
    assert [e.id for e in server.entries] == [e.id for e in fresh.entries] == [1, 2]
    assert server.net() == fresh.net()


def test_a_closed_journal_reads_the_whole_file_again_as_a_reset(ws: Path, state: Path) -> None:
    journal = Journal(ws)
    with journal.transaction() as (_, w):
        w.append(_rec(1))
    before = len(os.listdir("/proc/self/fd"))
    journal.close()
    assert len(os.listdir("/proc/self/fd")) == before - 1
    with journal.transaction() as (batch, _):
        assert batch.reset and [r["id"] for r in batch.records] == [1]
