"""An editor's save that changed what an edit left (format on save, trimmed whitespace, a final
newline: `History.saved`): the history shows it, keeps it across a reload and a compaction, and
the edit's undo restores the text from before the edit instead of a CONFLICT on the lines the
save changed (before, on main, the undo of such an edit was CONFLICT: "expected `p = 1   `,
current `p = 1`", and for a final newline "expected `r = 1`, current `r = 1`")."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import History
from lsp_server.engine.journal import ENV_STATE_DIR, Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_replace
from lsp_server.engine.undo import save_record
from tests.history_helpers import FS, apply_plan, snap, snaps


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(ENV_STATE_DIR, str(tmp_path / "state"))
    root = tmp_path / "ws"
    root.mkdir()
    return root


def edit_then_save(h: History, fs: FS, path: str, old: str, new: str, saved: str) -> int:
    """An agent edit, then the editor's save turning its text into `saved`."""
    plan = Plan("replace", (plan_replace(snap(fs, path), old, new),))
    entry_id = h.begin(plan, {"path": path})
    edited = apply_plan(fs, plan)[path]
    h.finish(entry_id, "applied")
    h.saved(entry_id, [save_record(path, edited, saved)])
    fs[path] = saved
    return entry_id


def undo(h: History, fs: FS, entry_id: int) -> FS:
    plan = h.plan_undo(entry_id, snaps(fs, h.undo_paths(entry_id)))
    return apply_plan(fs, plan)


@pytest.mark.parametrize(
    ("before", "old", "new", "saved"),
    [
        # files.trimTrailingWhitespace: the agent's own line trimmed, and a user's line too.
        ("p = 0\nq = 0  \n", "p = 0", "p = 1   ", "p = 1\nq = 0\n"),
        # files.insertFinalNewline on a file without one.
        ("r = 0", "r = 0", "r = 1", "r = 1\n"),
    ],
    ids=["trim", "final-newline"],
)
def test_undo_restores_the_text_from_before_the_edit(
    ws: Path, before: str, old: str, new: str, saved: str
) -> None:
    h = History(Journal(ws))
    fs: FS = {"f.py": before}
    entry_id = edit_then_save(h, fs, "f.py", old, new, saved)
    assert undo(h, fs, entry_id)["f.py"] == before
    # The same after a reload (another process, the next start).
    again = History.load(Journal(ws))
    assert undo(again, fs, entry_id)["f.py"] == before
    (shown,) = again.entry(entry_id).to_json()["changedOnSave"]
    assert shown["path"] == "f.py" and shown["diff"], shown


def test_undo_after_the_user_typed_elsewhere_keeps_the_typing(ws: Path) -> None:
    h = History(Journal(ws))
    text = "".join(f"line {i}\n" for i in range(1, 21))
    fs: FS = {"f.py": text}
    entry_id = edit_then_save(
        h, fs, "f.py", "line 3\n", "three   \n", text.replace("line 3\n", "three\n")
    )
    fs["f.py"] = fs["f.py"].replace("line 15\n", "typed\n")
    assert undo(h, fs, entry_id)["f.py"] == text.replace("line 15\n", "typed\n")


def test_lines_the_save_changed_changed_again_are_a_conflict(ws: Path) -> None:
    h = History(Journal(ws))
    fs: FS = {"f.py": "p = 0\nq = 0\n"}
    entry_id = edit_then_save(h, fs, "f.py", "p = 0", "p = 1   ", "p = 1\nq = 0\n")
    fs["f.py"] = "p = 2\nq = 0\n"  # the user changed the agent's line since
    with pytest.raises(EditError) as exc:
        undo(h, fs, entry_id)
    assert exc.value.code == Code.CONFLICT


def test_a_compaction_keeps_what_the_save_changed(ws: Path) -> None:
    j = Journal(ws, max_bytes=16 * 1024)
    h = History(j, undo_window=50)
    fs: FS = {"f.py": "p = 0\n", "g.py": "".join(f"line {i}\n" for i in range(200))}
    entry_id = edit_then_save(h, fs, "f.py", "p = 0", "p = 1   ", "p = 1\n")
    for i in range(40):  # other edits until the journal is compacted
        new = f"x{i} " + "y" * 400 + "\n"
        plan = Plan("replace", (plan_replace(snap(fs, "g.py"), f"line {i}\n", new),))
        other = h.begin(plan, {"path": "g.py"})
        fs = apply_plan(fs, plan)
        h.finish(other, "applied")
    assert '"t":"checkpoint"' in j.path.read_text()
    again = History.load(Journal(ws, max_bytes=16 * 1024), undo_window=50)
    assert again.entry(entry_id).saves, "the save's change was dropped by the compaction"
    assert undo(again, fs, entry_id)["f.py"] == "p = 0\n"


def test_the_undo_edits_are_minimal_ranges(ws: Path) -> None:
    # The save trimmed lines far apart: the undo restores each, not one region spanning them.
    h = History(Journal(ws))
    lines = [f"line {i}\n" for i in range(1, 21)]
    lines[1], lines[17] = "line 2  \n", "line 18  \n"
    before = "".join(lines)
    fs: FS = {"f.py": before}
    trimmed = before.replace("line 2  \n", "line 2\n").replace("line 18  \n", "line 18\n")
    entry_id = edit_then_save(
        h, fs, "f.py", "line 10\n", "ten  \n", trimmed.replace("line 10\n", "ten\n")
    )
    plan = h.plan_undo(entry_id, snaps(fs, ["f.py"]))
    (change,) = plan.changes
    assert [(e.start, e.end) for e in change.edits] == [(1, 2), (9, 10), (17, 18)]
    assert apply_plan(fs, plan)["f.py"] == before
