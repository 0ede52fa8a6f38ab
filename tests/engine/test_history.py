"""History entries and the agent's net diff (baseline vs last write, user edits not attributed)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lsp_server.engine.diffing import blob_sha1
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import (
    LIVE_CHANGED,
    History,
    NetIndex,
    compose,
    map_spans,
    summarize_args,
)
from lsp_server.engine.model import FileChange, LineEdit, Plan, apply_line_edits
from lsp_server.engine.planner import plan_replace, plan_write
from lsp_server.engine.text import Snapshot, absent, split_lines
from lsp_server.engine.undo import line_diff, plan_rollback
from tests.history_helpers import FS, apply_plan, apply_unified, snap, snaps

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 31))


class Session:
    """A dict file system with a history, applying plans the way a front end would."""

    def __init__(self, fs: FS, history: History | None = None) -> None:
        self.fs = dict(fs)
        self.history = history or History()

    def run(self, plan: Plan, args: dict[str, Any] | None = None) -> int:
        entry_id = self.history.begin(plan, args or {})
        self.fs = apply_plan(self.fs, plan)
        self.history.finish(entry_id, "applied")
        return entry_id

    def replace(self, path: str, old: str, new: str) -> int:
        change = plan_replace(snap(self.fs, path), old, new)
        return self.run(Plan("replace", (change,)), {"path": path, "oldText": old, "newText": new})

    def write(self, path: str, text: str) -> int:
        return self.run(Plan("write", (plan_write(snap(self.fs, path), text),)), {"path": path})

    def undo(self, entry_id: int) -> int:
        paths = self.history.undo_paths(entry_id)
        plan = self.history.plan_undo(entry_id, snaps(self.fs, paths))
        return self.run(plan, {"editId": entry_id})

    def live(self, path: str) -> Snapshot:
        return snap(self.fs, path)


def net_by_path(h: History, live: Any = None) -> dict[str, dict[str, Any]]:
    return {n["path"]: n for n in h.net(live)}


# -- entries --------------------------------------------------------------------------------------


def test_every_action_gets_an_entry_with_outcome_diff_and_committed() -> None:
    s = Session({"f.py": ORIGINAL})
    ok_id = s.replace("f.py", "line 3\n", "three\n")
    err = EditError(Code.AMBIGUOUS, "two matches", "add context", {"path": "f.py", "lines": [1, 2]})
    refused = s.history.record("replace", {"path": "f.py", "oldText": "line"}, error=err)
    plan = Plan("write", (plan_write(snap(s.fs, "f.py"), "partial\n"),))
    fail_id = s.history.begin(plan, {"path": "f.py"})
    committed = [{"path": "f.py", "change": "update", "state": "unknown"}]
    partial = EditError(Code.PARTIAL, "half", "look", {"files": committed}, committed)
    s.history.finish(fail_id, str(Code.PARTIAL), error=partial, committed=committed)
    entries = s.history.to_json()["entries"]
    assert [e["id"] for e in entries] == [ok_id, refused.id, fail_id] == [1, 2, 3]
    ok, ref, fail = entries
    assert ok["outcome"] == "applied" and ok["ok"] is True and ok["undoable"] is True
    assert ok["files"] == [{"path": "f.py", "change": "update"}]
    assert "-line 3\n+three\n" in ok["diff"] and ok["diff"].startswith("diff --git a/f.py b/f.py")
    assert ok["args"] == {"path": "f.py", "oldText": "line 3\n", "newText": "three\n"}
    assert ref["outcome"] == "AMBIGUOUS" and ref["ok"] is False and ref["diff"] == ""
    assert ref["error"]["code"] == "AMBIGUOUS" and ref["files"] == [{"path": "f.py"}]
    assert fail["outcome"] == "PARTIAL" and fail["committed"] == committed
    assert fail["diff"] == ""  # nothing is known to have landed
    assert all(e["time"].endswith("+00:00") for e in entries)


def test_args_summary_cuts_big_strings_and_lists() -> None:
    args = {"patch": "x" * 5000, "list": list(range(100)), "n": 3, "nested": {"t": "y" * 300}}
    out = summarize_args(args)
    assert out["patch"].startswith("x" * 200) and out["patch"].endswith("(5000 chars)")
    assert len(out["list"]) == 21 and out["list"][-1] == "... (100 items)"
    assert out["n"] == 3 and out["nested"]["t"].endswith("(300 chars)")


def test_listeners_hear_every_entry() -> None:
    heard: list[int] = []
    s = Session({"f": "a\n"})
    s.history.listeners.append(lambda e: heard.append(e.id))
    s.write("f", "b\n")
    s.history.record("read", {"path": "f"}, outcome="dry-run")
    assert heard == [1, 2]


def test_unknown_edit_id_is_a_result_not_a_crash() -> None:
    with pytest.raises(EditError) as exc:
        History().to_json(edit_id=42)
    assert exc.value.code == Code.INVALID_ARGUMENT


# -- net diff -------------------------------------------------------------------------------------


def test_net_diff_over_several_edits_is_baseline_to_final() -> None:
    s = Session({"f.py": ORIGINAL})
    s.replace("f.py", "line 3\n", "three\n")
    s.replace("f.py", "line 20\n", "twenty\nand more\n")
    s.replace("f.py", "three\n", "THREE\n")
    (item,) = s.history.net()
    assert item["change"] == "update" and item["path"] == "f.py"
    assert apply_unified(ORIGINAL, item["diff"]) == s.fs["f.py"]
    assert f"index {blob_sha1(ORIGINAL)[:12]}..{blob_sha1(s.fs['f.py'])[:12]}" in item["diff"]
    assert item["baseBlob"] == blob_sha1(ORIGINAL)
    assert (item["added"], item["removed"]) == (3, 2)
    assert item["agentBlob"] == blob_sha1(s.fs["f.py"])
    assert "-line 3\n+THREE\n" in item["diff"] and "three" not in item["diff"]


def test_an_edit_reverted_by_the_agent_leaves_no_net_diff() -> None:
    s = Session({"f.py": ORIGINAL})
    s.replace("f.py", "line 3\n", "three\n")
    s.replace("f.py", "three\n", "line 3\n")
    assert s.history.net() == []


def test_user_edits_between_agent_edits_are_not_the_agents() -> None:
    s = Session({"f.py": ORIGINAL})
    s.replace("f.py", "line 3\n", "three\n")
    s.fs["f.py"] = s.fs["f.py"].replace("line 25\n", "user was here\n")  # the user types
    s.replace("f.py", "line 10\n", "ten\n")
    (item,) = s.history.net(s.live)
    assert "user was here" not in item["diff"] and "line 25" not in item["diff"]
    assert "+three\n" in item["diff"] and "+ten\n" in item["diff"]
    user_baseline = ORIGINAL.replace("line 25\n", "user was here\n")
    assert apply_unified(user_baseline, item["diff"]) == s.fs["f.py"]
    assert item["liveChanged"] is False and item["notes"] == []


def test_user_edits_inside_agent_lines_are_said() -> None:
    s = Session({"f.py": ORIGINAL})
    s.replace("f.py", "line 3\n", "three\n")
    s.fs["f.py"] = s.fs["f.py"].replace("three\n", "three (user)\n")
    s.replace("f.py", "line 10\n", "ten\n")
    (item,) = s.history.net()
    assert "+three (user)\n" in item["diff"]
    assert any("edited by someone else" in n for n in item["notes"])


def test_live_content_moving_on_is_flagged_not_diffed() -> None:
    s = Session({"f.py": ORIGINAL})
    s.replace("f.py", "line 3\n", "three\n")
    agent_text = s.fs["f.py"]
    s.fs["f.py"] += "typed after the agent\n"
    (item,) = s.history.net(s.live)
    assert item["liveChanged"] is True and LIVE_CHANGED in item["notes"]
    assert apply_unified(ORIGINAL, item["diff"]) == agent_text
    assert f"# f.py: {LIVE_CHANGED}\n" in s.history.to_diff_text(s.live)
    assert s.history.net({"f.py": Snapshot("f.py", agent_text)})[0]["liveChanged"] is False


def test_add_delete_and_move_show_git_style() -> None:
    s = Session({"gone.txt": "bye\n", "a.py": "x = 1\n"})
    s.write("new.py", "hello\n")
    s.run(Plan("patch", (FileChange("delete", snap(s.fs, "gone.txt")),)))
    before = snap(s.fs, "a.py")
    change = plan_write(before, "x = 2\n")
    s.run(Plan("patch", (FileChange("move", before, change.edits, moved_to="b/a.py"),)))
    net = net_by_path(s.history)
    assert net["new.py"]["change"] == "add"
    assert "new file mode 100644\n" in net["new.py"]["diff"]
    assert "--- /dev/null\n+++ b/new.py\n" in net["new.py"]["diff"]
    assert net["gone.txt"]["change"] == "delete"
    assert "deleted file mode 100644\n" in net["gone.txt"]["diff"]
    assert net["b/a.py"]["change"] == "move" and net["b/a.py"]["movedFrom"] == "a.py"
    assert "rename from a.py\nrename to b/a.py\n" in net["b/a.py"]["diff"]


def test_created_then_deleted_by_the_agent_is_no_net_change() -> None:
    s = Session({})
    s.write("tmp.txt", "scratch\n")
    s.run(Plan("patch", (FileChange("delete", snap(s.fs, "tmp.txt")),)))
    assert s.history.net() == []


def test_net_diff_applies_with_git(tmp_path: Path) -> None:
    start = {
        "src/app.py": ORIGINAL,
        "old.txt": "old\nfile\n",
        "mv/from.py": "a\nb\nc\n",
        "crlf.txt": "one\r\ntwo\r\n",
        "noeol.txt": "a\nb",
    }
    s = Session(start)
    s.replace("src/app.py", "line 5\n", "five\n")
    s.replace("src/app.py", "line 29\n", "")
    s.write("added.md", "# new\n")
    s.run(Plan("patch", (FileChange("delete", snap(s.fs, "old.txt")),)))
    before = snap(s.fs, "mv/from.py")
    change = plan_write(before, "a\nB\nc\n")
    s.run(Plan("patch", (FileChange("move", before, change.edits, moved_to="mv/to.py"),)))
    s.replace("crlf.txt", "two", "2")
    s.replace("noeol.txt", "b", "b\nc")
    repo = tmp_path / "repo"
    for path, text in start.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(text.encode())
    patch = tmp_path / "net.diff"
    patch.write_bytes(s.history.to_diff_text().encode())
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "apply", "--whitespace=nowarn", str(patch)],
        check=True,
        capture_output=True,
    )
    tree = {
        str(p.relative_to(repo)): p.read_bytes().decode()
        for p in repo.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }
    assert tree == s.fs


def test_undo_is_an_entry_and_undoing_everything_empties_the_net_diff() -> None:
    s = Session({"f.py": ORIGINAL})
    first = s.replace("f.py", "line 3\n", "three\n")
    second = s.replace("f.py", "line 7\n", "seven\n")
    u2 = s.undo(second)
    u1 = s.undo(first)
    assert s.fs["f.py"] == ORIGINAL
    entries = {e["id"]: e for e in s.history.to_json()["entries"]}
    assert entries[u2]["action"] == "undo" and entries[u2]["undoes"] == second
    assert entries[second]["undoneBy"] == u2 and entries[second]["undoable"] is False
    assert entries[first]["undoneBy"] == u1
    assert s.history.net() == []
    with pytest.raises(EditError) as exc:
        s.undo(first)
    assert exc.value.code == Code.INVALID_ARGUMENT and "already undone" in exc.value.message


def test_undo_through_history_conflicts_when_the_user_changed_the_lines() -> None:
    s = Session({"f.py": ORIGINAL})
    first = s.replace("f.py", "line 3\n", "three\n")
    s.fs["f.py"] = s.fs["f.py"].replace("three", "drei")
    with pytest.raises(EditError) as exc:
        s.undo(first)
    assert exc.value.code == Code.CONFLICT
    assert exc.value.details["lines"][0] == {
        "path": "f.py",
        "line": 3,
        "expected": "three",
        "current": "drei",
    }


def test_to_diff_text_for_one_entry() -> None:
    s = Session({"f.py": ORIGINAL})
    first = s.replace("f.py", "line 3\n", "three\n")
    text = s.history.to_diff_text(edit_id=first)
    assert text.startswith("# agent edit #1 replace applied ")
    assert "-line 3\n+three\n" in text


# -- hypothesis -----------------------------------------------------------------------------------

line = st.sampled_from(["a\n", "b\n", "\n", "c d\n", "e"])
texts = st.lists(line, max_size=25).map("".join)


@settings(max_examples=200, deadline=None)
@example(start="a\na\nb\na\nb\n", writes=["b\n", "a\na\nb\n", "a\na\nb\na\nb\n"])
@given(start=texts, writes=st.lists(texts, min_size=1, max_size=6))
def test_property_net_diff_equals_baseline_to_final(start: str, writes: list[str]) -> None:
    s = Session({"f": start})
    for text in writes:
        if text != s.fs["f"]:
            s.write("f", text)
    net = s.history.net()
    if s.fs["f"] == start:
        assert net == []
        return
    (item,) = net
    assert apply_unified(start, item["diff"]) == s.fs["f"]


@settings(max_examples=200, deadline=None)
@given(
    start=st.lists(line, min_size=1, max_size=20),
    steps=st.lists(
        st.tuples(st.booleans(), st.integers(0, 30), st.integers(0, 3), st.lists(line, max_size=3)),
        min_size=1,
        max_size=8,
    ),
)
def test_property_compose_keeps_base_plus_net_equal_to_last(
    start: list[str], steps: list[tuple[bool, int, int, list[str]]]
) -> None:
    """Agent and user edits in any order: base + net == last, and user-only changes never show
    up in the net regions unless they touch them."""
    base = split_lines("".join(start))
    net: list[LineEdit] = []
    index = NetIndex.build(net)
    last = base
    for is_user, at, length, new in steps:
        at = min(at, len(last) - 1)
        end = min(at + length, len(last))
        # A valid line list: only the final element may lack a terminator.
        new_lines = tuple(x if x.endswith("\n") else x + "\n" for x in new)
        if end == len(last) and new and not new[-1].endswith("\n"):
            new_lines = (*new_lines[:-1], new[-1])
        target = apply_line_edits(last, [LineEdit(at, end, new_lines)])
        edits = line_diff(last, target)
        base, net, _, index = compose(base, net, edits, fold=is_user, index=index)
        last = target
        assert apply_line_edits(base, net) == last
        assert index == NetIndex.build(net)
    if not net:
        assert base == last


def test_net_diff_of_a_long_session_on_a_big_file_is_cheap_to_show() -> None:
    text = "".join(f"line {i}\n" for i in range(100_000))
    s = Session({"big.py": text})
    for i in range(0, 100_000, 2500):
        s.replace("big.py", f"line {i}\n", f"LINE {i}\n")
    (item,) = s.history.net()
    assert item["diff"].count("+LINE ") == 40
    assert apply_unified(text, item["diff"]) == s.fs["big.py"]


def test_absent_live_file_is_changed_when_the_agent_left_it() -> None:
    s = Session({"f": "a\n"})
    s.write("f", "b\n")
    assert s.history.net({"f": absent("f")})[0]["liveChanged"] is True


# -- partial outcomes ------------------------------------------------------------------------------


def partial_setup() -> tuple[Session, Plan, FS, list[dict[str, Any]]]:
    from tests.engine.test_undo import ALL_PATHS, BEFORE, apply_subset, five_file_plan

    s = Session(BEFORE)
    plan = five_file_plan()
    entry_id = s.history.begin(plan, {"patch": "*** Begin Patch ..."})
    assert entry_id == 1
    observed = apply_subset(BEFORE, plan, {1, 3})  # the update of up1.py and the move landed
    committed, _ = plan_rollback(plan, snaps(observed, ALL_PATHS))
    return s, plan, observed, committed


def test_partial_entry_shows_only_what_landed_and_undoes_only_that() -> None:
    s, plan, observed, committed = partial_setup()
    err = EditError(Code.PARTIAL, "part landed", "inspect", {"files": committed}, committed)
    s.history.finish(1, str(Code.PARTIAL), error=err, committed=committed)
    s.fs = observed
    entry = s.history.to_json()["entries"][0]
    assert entry["outcome"] == "PARTIAL" and entry["undoable"] is True
    assert [c["state"] for c in entry["committed"]] == [
        "not-applied",
        "applied",
        "not-applied",
        "applied",
        "not-applied",
    ]
    assert sorted(n["path"] for n in s.history.net()) == ["new/name.py", "up1.py"]
    assert "+++ b/new.py" not in entry["diff"] and "+++ b/up1.py" in entry["diff"]
    s.undo(1)
    from tests.engine.test_undo import BEFORE

    assert s.fs == BEFORE
    assert s.history.net() == []


def test_rolled_back_entry_changes_nothing_and_is_not_undoable() -> None:
    s, plan, observed, committed = partial_setup()
    err = EditError(Code.PARTIAL_ROLLED_BACK, "undone", "retry", {"files": committed}, committed)
    s.history.finish(1, str(Code.PARTIAL_ROLLED_BACK), error=err, committed=committed)
    entry = s.history.entry(1)
    assert entry.undoable is False and entry.diff == ""
    assert s.history.net() == []
    with pytest.raises(EditError) as exc:
        s.undo(1)
    assert exc.value.code == Code.INVALID_ARGUMENT


def test_to_json_can_page_and_leave_out_diffs() -> None:
    s = Session({"f.py": ORIGINAL})
    for i in range(1, 6):
        s.replace("f.py", f"line {i}\n", f"L{i}\n")
    out = s.history.to_json(limit=2, diffs=False)
    assert out["total"] == 5 and [e["id"] for e in out["entries"]] == [4, 5]
    assert all("diff" not in e for e in out["entries"])
    assert out["net"][0]["diff"] == s.history.to_diff_text()
    cut = s.history.to_json(net_cap=10)["net"][0]
    assert cut["diffCut"] is True and "# diff cut: +5 -5 lines" in cut["diff"]


# -- buffer versions: the server says which version its edit produced ---------------------------


def buffer(text: str, version: int) -> Snapshot:
    return Snapshot("f.py", text, source="buffer", version=version)


def test_a_reported_version_spares_the_comparison_and_a_new_one_finds_user_edits() -> None:
    h = History()
    text = ORIGINAL
    change = plan_replace(buffer(text, 1), "line 3\n", "three\n")
    entry_id = h.begin(Plan("replace", (change,)))
    h.finish(entry_id, "applied", versions={"f.py": 2})
    text = change.new_text
    # Same version: the next edit's snapshot is what the agent wrote.
    change = plan_replace(buffer(text, 2), "line 5\n", "five\n")
    entry_id = h.begin(Plan("replace", (change,)))
    assert h.entry(entry_id)._user == {}
    h.finish(entry_id, "applied", versions={"f.py": 3})
    text = change.new_text.replace("line 20\n", "user\n")  # the user types: version 4
    change = plan_replace(buffer(text, 4), "line 7\n", "seven\n")
    entry_id = h.begin(Plan("replace", (change,)))
    assert "f.py" in h.entry(entry_id)._user
    h.finish(entry_id, "applied", versions={"f.py": 5})
    (item,) = h.net({"f.py": buffer(change.new_text, 5)})
    assert "user" not in item["diff"] and item["liveChanged"] is False
    assert apply_unified(ORIGINAL.replace("line 20\n", "user\n"), item["diff"]) == change.new_text
    assert h.net({"f.py": buffer(change.new_text + "x\n", 6)})[0]["liveChanged"] is True


# -- code lenses ----------------------------------------------------------------------------------


def test_lenses_sit_on_the_lines_each_agent_edit_left_and_follow_user_edits() -> None:
    s = Session({"f.py": ORIGINAL})
    first = s.replace("f.py", "line 10\n", "ten\nTEN\n")
    second = s.replace("f.py", "line 3\n", "three\n")
    lenses = s.history.lenses("f.py", s.live("f.py"))
    assert [(x["line"], x["endLine"], x["editId"]) for x in lenses] == [
        (2, 3, second),
        (9, 11, first),
    ]
    # (Their titles are the LSP layer's: tests/lsp/test_lenses.py.)
    assert lenses[0]["action"] == "replace"
    # The user adds two lines at the top: the lenses move with the text.
    s.fs["f.py"] = "# a\n# b\n" + s.fs["f.py"]
    moved = s.history.lenses("f.py", s.live("f.py"))
    assert [(x["line"], x["editId"]) for x in moved] == [(4, second), (11, first)]
    # The user rewrites the first edit's lines: its lens goes (undo would conflict anyway).
    s.fs["f.py"] = s.fs["f.py"].replace("TEN\n", "user\n")
    assert [x["editId"] for x in s.history.lenses("f.py", s.live("f.py"))] == [second]
    # An undone edit has no lens.
    s.fs["f.py"] = s.fs["f.py"].replace("user\n", "TEN\n")
    undo_id = s.undo(second)
    ids = [x["editId"] for x in s.history.lenses("f.py", s.live("f.py"))]
    assert second not in ids and first in ids and undo_id in ids


def test_lenses_survive_a_reload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lsp_server.engine.journal import ENV_STATE_DIR, Journal

    monkeypatch.setenv(ENV_STATE_DIR, str(tmp_path / "state"))
    s = Session({"f.py": ORIGINAL}, History(Journal(tmp_path / "ws")))
    s.replace("f.py", "line 10\n", "ten\n")
    again = History.load(Journal(tmp_path / "ws"))
    assert again.lenses("f.py") == s.history.lenses("f.py") != []


@settings(max_examples=200, deadline=None)
@given(
    spans=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 4)), max_size=6),
    edits=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 3), st.integers(0, 3)), max_size=4),
)
def test_property_map_spans_moves_untouched_lines_with_the_text(
    spans: list[tuple[int, int]], edits: list[tuple[int, int, int]]
) -> None:
    lines = [f"{i}\n" for i in range(40)] + [""]
    es: list[LineEdit] = []
    pos = 0
    for at, length, new in sorted(edits):
        start = max(at, pos)
        end = min(start + length, 40)
        es.append(LineEdit(start, end, tuple(f"new{start}.{k}\n" for k in range(new))))
        pos = end + 1
    after = apply_line_edits(lines, es)
    given_spans = [(a, min(a + n, 40), i) for i, (a, n) in enumerate(spans)]
    for s, t, i in map_spans(given_spans, es):
        orig = next(x for x in given_spans if x[2] == i)
        assert after[s:t] == lines[orig[0] : orig[1]]
