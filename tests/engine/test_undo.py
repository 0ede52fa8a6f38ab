"""Undo planning (three-way check, relocation, CONFLICT) and rollback of partly applied plans."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import FileChange, Plan, apply_line_edits
from lsp_server.engine.planner import plan_replace, plan_write
from lsp_server.engine.text import Snapshot, absent, split_lines
from lsp_server.engine.undo import (
    ChangeRecord,
    line_diff,
    plan_rollback,
    plan_undo,
    record_change,
    rollback_records,
    undo_paths,
)
from tests.history_helpers import FS, apply_plan, snaps


@dataclass
class FakeEntry:
    """The four things plan_undo reads from a history entry."""

    changes: tuple[ChangeRecord, ...]
    id: int = 1
    committed: list[dict[str, Any]] = field(default_factory=list)
    saves: tuple[ChangeRecord, ...] = ()


def entry_for(plan: Plan, committed: list[dict[str, Any]] | None = None) -> FakeEntry:
    return FakeEntry(tuple(record_change(c) for c in plan.changes), committed=committed or [])


def undo(fs: FS, entry: FakeEntry) -> FS:
    current = snaps(fs, undo_paths(entry.changes))
    return apply_plan(fs, plan_undo(entry, current))


ORIGINAL = "".join(f"line {i}\n" for i in range(1, 21))

# (name, original text, function making the agent's change)
EDITS = [
    ("one line", ORIGINAL, lambda s: plan_replace(s, "line 5\n", "five\n")),
    ("grow", ORIGINAL, lambda s: plan_replace(s, "line 5\n", "a\nb\nc\n")),
    ("shrink", ORIGINAL, lambda s: plan_replace(s, "line 5\nline 6\nline 7\n", "x\n")),
    ("delete lines", ORIGINAL, lambda s: plan_replace(s, "line 5\nline 6\n", "")),
    ("first line", ORIGINAL, lambda s: plan_replace(s, "line 1\n", "first\n")),
    ("last line", ORIGINAL, lambda s: plan_replace(s, "line 20\n", "last\n")),
    ("replace all", ORIGINAL, lambda s: plan_replace(s, "line 1", "L1", replace_all=True)),
    ("no final newline", "a\nb\nc", lambda s: plan_replace(s, "c", "C")),
    ("add final newline", "a\nb\nc", lambda s: plan_write(s, "a\nb\nc\n")),
    ("drop final newline", "a\nb\nc\n", lambda s: plan_write(s, "a\nb\nc")),
    ("crlf", "a\r\nb\r\nc\r\n", lambda s: plan_replace(s, "b", "B\nBB")),
    ("empty to text", "", lambda s: plan_write(s, "hello\nworld\n")),
    ("text to empty", "a\nb\n", lambda s: plan_write(s, "")),
    ("rewrite", ORIGINAL, lambda s: plan_write(s, ORIGINAL.replace("1", "one"))),
]


@pytest.mark.parametrize(("name", "text", "make"), EDITS, ids=[e[0] for e in EDITS])
def test_undo_after_edit_restores_exactly(name: str, text: str, make: Any) -> None:
    fs = {"f.txt": text}
    change: FileChange = make(Snapshot("f.txt", text))
    after = apply_plan(fs, Plan("replace", (change,)))
    assert after != fs
    assert undo(after, entry_for(Plan("replace", (change,)))) == fs


@pytest.mark.parametrize(("name", "text", "make"), EDITS, ids=[e[0] for e in EDITS])
def test_rollback_of_an_applied_change_restores_exactly(name: str, text: str, make: Any) -> None:
    fs = {"f.txt": text}
    plan = Plan("replace", (make(Snapshot("f.txt", text)),))
    after = apply_plan(fs, plan)
    committed, back = plan_rollback(plan, snaps(after, ["f.txt"]))
    assert committed == [
        {"path": "f.txt", "change": "update", "state": "applied", "revertible": True}
    ]
    assert apply_plan(after, back) == fs


def test_undo_keeps_unrelated_user_edits_and_relocates_shifted_lines() -> None:
    fs = {"f.txt": ORIGINAL}
    plan = Plan("replace", (plan_replace(Snapshot("f.txt", ORIGINAL), "line 10\n", "ten\n"),))
    after = apply_plan(fs, plan)["f.txt"]
    # The user adds lines at the top and changes the end: the agent's line moved down by 3.
    user = "new 1\nnew 2\nnew 3\n" + after.replace("line 20\n", "twenty\n")
    result = undo({"f.txt": user}, entry_for(plan))
    assert result["f.txt"] == "new 1\nnew 2\nnew 3\n" + ORIGINAL.replace("line 20\n", "twenty\n")


def test_undo_refused_with_conflict_when_the_region_changed() -> None:
    fs = {"f.txt": ORIGINAL}
    plan = Plan("replace", (plan_replace(Snapshot("f.txt", ORIGINAL), "line 10\n", "ten\n"),))
    after = apply_plan(fs, plan)
    user = {"f.txt": after["f.txt"].replace("ten\n", "TEN!\n")}
    with pytest.raises(EditError) as exc:
        undo(user, entry_for(plan))
    err = exc.value
    assert err.code == Code.CONFLICT
    assert err.details["lines"] == [
        {"path": "f.txt", "line": 10, "expected": "ten", "current": "TEN!"}
    ]
    assert "read" in err.hint.lower()


def test_conflict_on_a_pure_deletion_whose_surroundings_changed() -> None:
    text = "a\nb\nc\nd\ne\nf\ng\n"
    plan = Plan("replace", (plan_replace(Snapshot("f.txt", text), "d\n", ""),))
    after = apply_plan({"f.txt": text}, plan)["f.txt"]
    assert after == "a\nb\nc\ne\nf\ng\n"
    with pytest.raises(EditError) as exc:
        undo({"f.txt": "x\ny\nz\nw\nv\n"}, entry_for(plan))
    assert exc.value.code == Code.CONFLICT


def test_undo_add_is_delete_and_refused_when_the_new_file_changed() -> None:
    plan = Plan("write", (plan_write(absent("new.py"), "x = 1\ny = 2\n"),))
    after = apply_plan({}, plan)
    assert undo(after, entry_for(plan)) == {}
    with pytest.raises(EditError) as exc:
        undo({"new.py": "x = 1\ny = 3\n"}, entry_for(plan))
    assert exc.value.code == Code.CONFLICT
    assert exc.value.details["lines"] == [
        {"path": "new.py", "line": 2, "expected": "y = 2", "current": "y = 3"}
    ]


def test_undo_delete_is_add_of_the_pre_image() -> None:
    fs = {"old.py": "keep\nme\n"}
    plan = Plan("patch", (FileChange("delete", Snapshot("old.py", fs["old.py"], bom=True)),))
    entry = entry_for(plan)
    restored = apply_plan({}, plan_undo(entry, {"old.py": absent("old.py")}))
    assert restored == fs
    (change,) = plan_undo(entry, {"old.py": absent("old.py")}).changes
    assert change.change == "add" and change.bom is True
    with pytest.raises(EditError) as exc:
        plan_undo(entry, {"old.py": Snapshot("old.py", "someone else\n")})
    assert exc.value.code == Code.CONFLICT


def test_undo_move_is_move_back_with_the_edits_reverted() -> None:
    text = "def f():\n    return 1\n"
    before = Snapshot("a.py", text)
    move = plan_write(before, "def f():\n    return 2\n")
    move = FileChange("move", before, move.edits, moved_to="b.py")
    plan = Plan("patch", (move,))
    after = apply_plan({"a.py": text}, plan)
    assert after == {"b.py": "def f():\n    return 2\n"}
    assert undo(after, entry_for(plan)) == {"a.py": text}
    with pytest.raises(EditError) as exc:
        undo({**after, "a.py": "new\n"}, entry_for(plan))
    assert exc.value.code == Code.CONFLICT
    assert exc.value.details["files"][0]["path"] == "a.py"


def test_not_applied_changes_are_skipped_and_pre_image_loss_is_said() -> None:
    fs = {"a": "1\n", "b": "2\n"}
    plan = Plan(
        "patch",
        (plan_write(Snapshot("a", "1\n"), "one\n"), plan_write(Snapshot("b", "2\n"), "two\n")),
    )
    landed = {"a": "one\n", "b": "2\n"}
    committed = [
        {"path": "a", "change": "update", "state": "applied"},
        {"path": "b", "change": "update", "state": "not-applied"},
    ]
    assert undo(landed, entry_for(plan, committed)) == fs
    old = FakeEntry(tuple(c.stripped() for c in entry_for(plan).changes))
    with pytest.raises(EditError) as exc:
        plan_undo(old, snaps(landed, ["a", "b"]))
    assert exc.value.code == Code.INVALID_ARGUMENT


def test_records_round_trip_through_json() -> None:
    plan = Plan("replace", (plan_replace(Snapshot("f", ORIGINAL), "line 3\n", "3\n"),))
    rec = record_change(plan.changes[0])
    assert ChangeRecord.from_json(rec.to_json()) == rec


# -- hypothesis: undo after edit restores exactly; user edits elsewhere survive ------------------

line = st.sampled_from(["a\n", "b\n", "\n", "c d\n", "  e\n", "a\r\n"])
texts = st.lists(line, max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(old=texts, new=texts, tail=st.sampled_from(["", "z", "a"]))
def test_property_undo_restores_the_original(old: str, new: str, tail: str) -> None:
    old, new = old + tail, new
    if old == new:
        return
    change = plan_write(Snapshot("f", old), new)
    if not change.edits:
        return  # plan_write kept the file's CRLF style, so nothing changes
    plan = Plan("write", (change,))
    after = apply_plan({"f": old}, plan)
    assert after["f"] == change.new_text
    assert undo(after, entry_for(plan)) == {"f": old}


marked = st.lists(st.sampled_from(["a\n", "b\n", "\n"]), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.lists(line, max_size=15),
    region=st.lists(line, min_size=0, max_size=4),
    suffix=st.lists(line, max_size=15),
    agent=st.integers(1, 4),
    user_prefix=st.lists(line, max_size=15),
)
def test_property_undo_with_user_edits_above(
    prefix: list[str], region: list[str], suffix: list[str], agent: int, user_prefix: list[str]
) -> None:
    # The agent's new lines carry a unique marker, so their place is never in doubt; the user
    # rewrites everything above them (shifting the lines), which undo must keep.
    original = "".join(prefix + ["<<\n"] + region + [">>\n"] + suffix)
    new_region = [f"agent {i}\n" for i in range(agent)]
    edited = "".join(prefix + ["<<\n"] + new_region + [">>\n"] + suffix)
    plan = Plan("write", (plan_write(Snapshot("f", original), edited),))
    user = "".join(user_prefix) + edited[len("".join(prefix)) :]
    expected = "".join(user_prefix + ["<<\n"] + region + [">>\n"] + suffix)
    assert undo({"f": user}, entry_for(plan)) == {"f": expected}


@settings(max_examples=200, deadline=None)
@given(old=texts, new=texts, other=texts)
def test_property_undo_never_silently_clobbers(old: str, new: str, other: str) -> None:
    """Against arbitrary current content undo is CONFLICT or a plan; on the edit's own result it
    restores the original exactly."""
    if old == new:
        return
    plan = Plan("write", (plan_write(Snapshot("f", old), new),))
    try:
        result = undo({"f": other}, entry_for(plan))["f"]
    except EditError as e:
        assert e.code in (Code.CONFLICT, Code.INVALID_ARGUMENT)
        return
    # `write` keeps the terminators of lines it leaves alone, so its result may differ from `new`
    # in line endings: the property is about the text the edit really left.
    if other == plan.changes[0].new_text:
        assert result == old


@settings(max_examples=300, deadline=None)
@given(a=st.lists(line, max_size=40), b=st.lists(line, max_size=40))
def test_property_line_diff_edits_turn_old_into_new(a: list[str], b: list[str]) -> None:
    old, new = split_lines("".join(a)), split_lines("".join(b))
    assert apply_line_edits(old, line_diff(old, new)) == new


# -- rollback: every subset of a 5-file mixed plan ------------------------------------------------

BEFORE: FS = {
    "up1.py": "a = 1\nb = 2\nc = 3\n",
    "up2.txt": "one\ntwo\nthree",
    "gone.md": "# obsolete\n",
    "old/name.py": "x = 1\ny = 2\n",
}


def five_file_plan() -> Plan:
    s = {p: Snapshot(p, t) for p, t in BEFORE.items()}
    moved = plan_write(s["old/name.py"], "x = 1\ny = 20\n")
    return Plan(
        "patch",
        (
            plan_write(absent("new.py"), "print('hi')\n"),
            plan_replace(s["up1.py"], "b = 2", "b = 22"),
            FileChange("delete", s["gone.md"]),
            FileChange("move", s["old/name.py"], moved.edits, moved_to="new/name.py"),
            plan_replace(s["up2.txt"], "three", "3"),
        ),
    )


def apply_subset(fs: FS, plan: Plan, landed: set[int]) -> FS:
    return apply_plan(
        fs, Plan(plan.action, tuple(c for i, c in enumerate(plan.changes) if i in landed))
    )


ALL_PATHS = ["new.py", "up1.py", "gone.md", "old/name.py", "new/name.py", "up2.txt"]


@pytest.mark.parametrize(
    "landed", [set(c) for r in range(6) for c in itertools.combinations(range(5), r)]
)
def test_rollback_finds_exactly_what_landed_and_restores_it(landed: set[int]) -> None:
    plan = five_file_plan()
    observed_fs = apply_subset(BEFORE, plan, landed)
    committed, back = plan_rollback(plan, snaps(observed_fs, ALL_PATHS))
    states = [c["state"] for c in committed]
    assert states == ["applied" if i in landed else "not-applied" for i in range(5)]
    assert [c["path"] for c in committed] == [c.path for c in plan.changes]
    assert apply_plan(observed_fs, back) == BEFORE


def test_rollback_says_unknown_for_other_content_and_leaves_it() -> None:
    plan = five_file_plan()
    observed_fs = apply_subset(BEFORE, plan, {0, 1})
    observed_fs["up1.py"] = "the user typed here\n"
    committed, back = plan_rollback(plan, snaps(observed_fs, ALL_PATHS))
    assert committed[1]["state"] == "unknown" and committed[1]["revertible"] is False
    assert committed[0]["state"] == "applied"
    assert [c.path for c in back.changes] == ["new.py"]


def test_rollback_of_a_rename_whose_edits_did_not_land() -> None:
    # VS Code applies resource operations without the text edits after a failure ("abort").
    plan = five_file_plan()
    fs = dict(BEFORE)
    fs["new/name.py"] = fs.pop("old/name.py")
    committed, back = plan_rollback(plan, snaps(fs, ALL_PATHS))
    assert committed[3]["state"] == "unknown" and committed[3]["revertible"] is True
    assert apply_plan(fs, back) == BEFORE


def test_rollback_without_observation_is_unknown() -> None:
    plan = five_file_plan()
    committed, back = rollback_records([record_change(c) for c in plan.changes], {})
    assert {c["state"] for c in committed} == {"unknown"}
    assert back.changes == ()


# -- without content hashes (a journaled record, as crash recovery sees it) ----------------------


@pytest.mark.parametrize(
    ("current", "state"),
    [
        (ORIGINAL, "not-applied"),
        (ORIGINAL.replace("line 10\n", "ten\n"), "applied"),
        # The user changed another line (same count): the edit's own lines show it landed.
        (ORIGINAL.replace("line 10\n", "ten\n").replace("line 2\n", "two\n"), "applied"),
        (ORIGINAL.replace("line 10\n", "ten\n") + "more\n", "unknown"),
        (ORIGINAL.replace("line 10\n", "TEN\n"), "unknown"),
    ],
)
def test_recovery_classifies_by_the_edit_regions_when_no_hash_was_kept(
    current: str, state: str
) -> None:
    change = plan_replace(Snapshot("f.txt", ORIGINAL), "line 10\n", "ten\n")
    rec = record_change(change)
    assert rec.before_sha256 is None and rec.after_sha256 is None  # nothing was hashed
    rec = ChangeRecord.from_json(rec.to_json())
    committed, back = rollback_records([rec], snaps({"f.txt": current}, ["f.txt"]))
    assert committed[0]["state"] == state
    if state == "applied":
        restored = apply_plan({"f.txt": current}, back)["f.txt"]
        assert "ten\n" not in restored and "line 10\n" in restored


def test_records_carry_hashes_when_known_or_asked() -> None:
    snap_ = Snapshot("f.txt", ORIGINAL)
    change = plan_replace(snap_, "line 10\n", "ten\n")
    assert record_change(change).before_sha256 is None
    snap_.sha256  # noqa: B018 - computed by someone else, e.g. a precondition check
    assert record_change(change).before_sha256 == snap_.sha256
    assert record_change(change, hashes=True).after_sha256 == change.new_sha256


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 30),
    start=st.integers(0, 29),
    length=st.integers(0, 5),
    new=st.integers(1, 5),
    pick=st.integers(0, 100),
    shift=st.integers(0, 5),
)
def test_property_undo_refuses_with_conflict_when_its_lines_changed(
    n: int, start: int, length: int, new: int, pick: int, shift: int
) -> None:
    """Whatever the edit and however the lines above moved, once one of the lines it wrote is
    changed, undo is CONFLICT and names that line."""
    lines = [f"original {i}\n" for i in range(n)]
    start = min(start, n)
    end = min(start + length, n)
    edited = lines[:start] + [f"agent {k}\n" for k in range(new)] + lines[end:]
    original, after = "".join(lines), "".join(edited)
    plan = Plan("write", (plan_write(Snapshot("f", original), after),))
    k = start + pick % new
    user_lines = [f"user {i}\n" for i in range(shift)] + edited
    user_lines[shift + k] = "changed by the user\n"
    with pytest.raises(EditError) as exc:
        undo({"f": "".join(user_lines)}, entry_for(plan))
    assert exc.value.code == Code.CONFLICT
    listed = exc.value.details["lines"]
    if n > 0:  # with context to go by, exactly the changed line is named, where it is now
        assert listed == [
            {
                "path": "f",
                "line": shift + k + 1,
                "expected": f"agent {k - start}",
                "current": "changed by the user",
            }
        ]


def test_undo_never_reverts_lines_that_only_read_like_the_edits_own() -> None:
    # The agent changed line 2 to `x = 2`; the user then retyped line 2. Line 6 already read
    # `x = 2` (untouched by the edit, nothing around it like the edit's context): taken as the
    # edit's region moved there, the undo rewrote line 6 to `x = 1`, a line the agent never
    # changed, and reported success.
    fs: FS = {"a.txt": "a\nx = 1\nb\nc\nd\nx = 2\ne\n"}
    plan = Plan("replace", (plan_replace(Snapshot("a.txt", fs["a.txt"]), "a\nx = 1", "a\nx = 2"),))
    entry = entry_for(plan)
    fs = {"a.txt": "a\nx = 3\nb\nc\nd\nx = 2\ne\n"}
    with pytest.raises(EditError) as err:
        undo(fs, entry)
    assert err.value.code == Code.CONFLICT
