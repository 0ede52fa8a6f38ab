"""engine/edit_texts.py on its own: what a diff editor is given for entries in every state, from a
dict file system (the LSP round trip is in test_lsp_edit_texts.py). Never a claim the history
cannot back: an unfinished edit is not "changed nothing", a half-landed one shows only what
landed, an old one whose pre-images are gone says so."""

from __future__ import annotations

from lsp_server.engine.edit_texts import entry_texts, texts_result
from lsp_server.engine.history import History
from lsp_server.engine.model import Plan
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.planner import plan_replace
from lsp_server.engine.results import wire
from lsp_server.engine.text import Snapshot
from lsp_server.engine.undo import plan_undo
from tests.history_helpers import FS, apply_plan, snap, snaps

FILES: FS = {"a.txt": "one\ntwo\n", "b.txt": "bee\n"}


def _plan(fs: FS) -> Plan:
    return Plan(
        "applyPatch",
        (
            plan_replace(snap(fs, "a.txt"), "two", "TWO"),
            plan_replace(snap(fs, "b.txt"), "bee", "B"),
        ),
    )


def test_unfinished_edit_is_not_reported_as_changing_nothing() -> None:
    history = History()
    plan = _plan(FILES)
    entry_id = history.begin(plan, {})
    fs = apply_plan(FILES, plan)  # it landed, but nobody has said so yet
    files = entry_texts(history.entry(entry_id), snaps(fs, ["a.txt", "b.txt"]))
    assert [f["reason"] for f in files] == [f"edit #{entry_id} has not finished"] * 2
    assert all("before" not in f for f in files)


def test_partly_landed_edit_shows_what_landed() -> None:
    history = History()
    plan = _plan(FILES)
    entry_id = history.begin(plan, {})
    fs = dict(FILES, **{"a.txt": "one\nTWO\n"})  # a.txt landed, b.txt did not
    committed = [{"path": "a.txt", "state": "applied"}, {"path": "b.txt", "state": "not-applied"}]
    history.finish(entry_id, "PARTIAL", committed=committed)
    a, b = entry_texts(history.entry(entry_id), snaps(fs, ["a.txt", "b.txt"]))
    assert (a["before"], a["after"]) == ("one\ntwo\n", "one\nTWO\n")
    assert "changed nothing in this file" in b["reason"] and "before" not in b


def test_edit_whose_preimages_were_dropped_says_so() -> None:
    history = History(undo_window=1)
    fs = dict(FILES)
    ids = []
    for old, new in (("one", "1"), ("1", "uno")):
        plan = Plan("replace", (plan_replace(snap(fs, "a.txt"), old, new),))
        ids.append(history.begin(plan, {}))
        fs = apply_plan(fs, plan)
        history.finish(ids[-1], "applied")
    (old,) = entry_texts(history.entry(ids[0]), snaps(fs, ["a.txt"]))
    assert "too old" in old["reason"] and "before" not in old
    (latest,) = entry_texts(history.entry(ids[1]), snaps(fs, ["a.txt"]))
    assert (latest["before"], latest["after"]) == ("1\ntwo\n", "uno\ntwo\n")


def test_a_bom_is_left_out_of_both_texts() -> None:
    history = History()
    fs_snap = Snapshot("a.txt", "one\ntwo\n", bom=True)
    plan = Plan("replace", (plan_replace(fs_snap, "two", "TWO"),))
    entry_id = history.begin(plan, {})
    history.finish(entry_id, "applied")
    now = {"a.txt": Snapshot("a.txt", "one\nTWO\n", bom=True)}
    result = wire(texts_result(history, entry_id, now.get))
    (f,) = result["files"]
    assert (f["before"], f["after"]) == ("one\ntwo\n", "one\nTWO\n")


def test_an_undone_edit_is_shown_from_its_undo_not_from_lines_found_elsewhere() -> None:
    # The edit's new line `x = 2` also occurs further down: read off the undone file, its
    # "before" showed line 6 changed, a change the edit never made.
    fs: FS = {"a.txt": "a\nx = 1\nb\nc\nd\nx = 2\ne\n"}
    original = fs["a.txt"]
    history = History()
    plan = Plan("replace", (plan_replace(snap(fs, "a.txt"), "a\nx = 1", "a\nx = 2"),))
    entry_id = history.begin(plan, {})
    fs = apply_plan(fs, plan)
    after = fs["a.txt"]
    history.finish(entry_id, "applied")
    undo = plan_undo(history.entry(entry_id), snaps(fs, ["a.txt"]))
    undo_id = history.begin(undo, {}, undoes=entry_id)
    fs = apply_plan(fs, undo)
    history.finish(undo_id, "applied")
    assert fs["a.txt"] == original
    (f,) = texts_result(history, entry_id, snaps(fs, ["a.txt"]).get).files
    assert (f.get("before"), f.get("after")) == (original, after)


def test_a_moved_file_is_shown_when_a_new_file_took_its_old_path() -> None:
    fs: FS = {"a.txt": "one\ntwo\n"}
    history = History()
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n"
        "@@\n-two\n+TWO\n*** End Patch\n"
    )
    plan = plan_patch(patch, lambda p: snap(fs, p))
    entry_id = history.begin(plan, {})
    fs = apply_plan(fs, plan)
    history.finish(entry_id, "applied")
    fs["a.txt"] = "a new file\n"  # blocks undoing the move, not showing it
    (f,) = texts_result(history, entry_id, snaps(fs, ["a.txt", "b.txt"]).get).files
    assert (f.get("before"), f.get("after")) == ("one\ntwo\n", "one\nTWO\n"), f


def test_an_edit_whose_undo_was_undone_is_shown_from_the_file() -> None:
    fs: FS = {"a.txt": "one\ntwo\n"}
    history = History()
    plan = Plan("replace", (plan_replace(snap(fs, "a.txt"), "two", "TWO"),))
    entry_id = history.begin(plan, {})
    fs = apply_plan(fs, plan)
    history.finish(entry_id, "applied")
    undone_id = entry_id
    for _ in range(2):  # the undo, then the undo of the undo: the edit's lines are back
        undo = plan_undo(history.entry(undone_id), snaps(fs, ["a.txt"]))
        undo_id = history.begin(undo, {}, undoes=undone_id)
        fs = apply_plan(fs, undo)
        history.finish(undo_id, "applied")
        undone_id = undo_id
    assert fs["a.txt"] == "one\nTWO\n"
    (f,) = texts_result(history, entry_id, snaps(fs, ["a.txt"]).get).files
    assert (f.get("before"), f.get("after")) == ("one\ntwo\n", "one\nTWO\n"), f
