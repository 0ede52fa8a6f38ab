"""The disk writer under attack: deterministic races through its test hook (no sleeps).

`files.TEST_HOOK(point, path)` is called at each step of an apply ("resolved", "checked",
"written", "renamed" after each rename or delete, "rollback" and "recovery" before each file
is put back). At every such call, one at a time, another "process" (the hook) swaps a folder
for a symlink to a folder outside the workspace, or saves a file in place (same size, mtime
put back: a save within one timestamp tick). Whatever happens, nothing outside the workspace
changes, every file is whole (all old or all new, or the other program's save), no save is
lost, and the result says exactly what happened.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.patching import plan_patch

REPO = Path(__file__).resolve().parents[2]

OLD = {
    "d/a.txt": b"alpha\n",
    "d/b.txt": b"beta\n",
    "d/gone.txt": b"gone\n",
    "top.txt": b"top\n",
}
PATCH = """*** Begin Patch
*** Update File: d/a.txt
@@
-alpha
+ALPHA
*** Update File: d/b.txt
@@
-beta
+BETA
*** Add File: d/new.txt
+new
*** Delete File: d/gone.txt
*** Update File: top.txt
@@
-top
+TOP
*** End Patch
"""
NEW = {"d/a.txt": b"ALPHA\n", "d/b.txt": b"BETA\n", "d/new.txt": b"new\n", "top.txt": b"TOP\n"}
DECOY = {"a.txt": b"decoy a\n", "b.txt": b"decoy b\n", "gone.txt": b"decoy gone\n"}


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (symlinks not followed), by relative path."""
    out = {}
    for dirpath, _dirs, filenames in os.walk(root):
        for name in filenames:
            full = Path(dirpath) / name
            if full.is_symlink():
                out[full.relative_to(root).as_posix()] = b"<link>"
            else:
                out[full.relative_to(root).as_posix()] = full.read_bytes()
    return out


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "state"))
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    for base, content in ((root, OLD), (outside, DECOY)):
        for rel, data in content.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_bytes(data)
    # Every file counts as just changed, so the content check before each rename is always
    # made (on a loaded machine planning may take longer than the real window).
    monkeypatch.setattr(files, "_FINE_WINDOW_NS", 10**18)
    yield root, outside
    files.TEST_HOOK = None


def _points(root: Path) -> list[tuple[str, str]]:
    """The (point, path) calls of one clean apply of PATCH in `root` (then undone)."""
    seen: list[tuple[str, str]] = []
    files.TEST_HOOK = lambda point, path: seen.append((point, path))
    try:
        plan = plan_patch(PATCH, lambda p: files.read_snapshot(str(root), p))
        files.apply_plan(str(root), plan)
    finally:
        files.TEST_HOOK = None
    for rel in NEW:
        (root / rel).unlink()
    for rel, data in OLD.items():
        (root / rel).write_bytes(data)
    return seen


def _attack_at(index: int, attack: Callable[[], None]) -> Callable[[str, str], None]:
    calls = {"n": 0}

    def hook(point: str, path: str) -> None:
        calls["n"] += 1
        if calls["n"] == index:
            attack()

    return hook


def _swap(root: Path, outside: Path) -> Callable[[], None]:
    def attack() -> None:
        os.rename(root / "d", root / "d.moved")
        os.symlink(outside, root / "d")

    return attack


def _apply(root: Path) -> EditError | None:
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(str(root), p))
    try:
        files.apply_plan(str(root), plan)
    except EditError as err:
        return err
    return None


def _where(root: Path, rel: str, swapped: bool) -> Path:
    if swapped and rel.startswith("d/"):
        return root / "d.moved" / rel[2:]
    return root / rel


def _check_whole(root: Path, swapped: bool, saved: dict[str, bytes] | None = None) -> set[str]:
    """Every file all-old, all-new or the other program's save; the set of files now new."""
    saved = saved or {}
    now_new = set()
    for rel in sorted(set(OLD) | set(NEW)):
        path = _where(root, rel, swapped)
        data = path.read_bytes() if path.exists() else None
        assert data in (OLD.get(rel), NEW.get(rel), saved.get(rel)), (rel, data)
        if data is not None and data == NEW.get(rel) or (data is None and rel in OLD):
            now_new.add(rel)
    leftovers = [p for p in tree(root) if ".agent-edit-" in p]
    return now_new | {f"leftover:{p}" for p in leftovers}


def test_hook_points_cover_every_step(ws: tuple[Path, Path]) -> None:
    root, _ = ws
    points = _points(root)
    names = [p for p, _ in points]
    assert names[:2] == ["resolved", "checked"]
    assert names[2] == "written"
    # One call after each of the 4 renames and the delete.
    assert names[3:] == ["renamed"] * 5


@pytest.mark.parametrize("index", range(1, 9))
def test_folder_swapped_for_a_symlink_at_each_step(ws: tuple[Path, Path], index: int) -> None:
    root, outside = ws
    assert len(_points(root)) == 8
    files.TEST_HOOK = _attack_at(index, _swap(root, outside))
    err = _apply(root)
    files.TEST_HOOK = None
    assert tree(outside) == DECOY, "nothing outside the workspace changed"
    now_new = _check_whole(root, swapped=True)
    if err is None:
        # Swapped after the last rename or delete: the apply was complete.
        assert index == 8
        assert now_new == set(NEW) | {"d/gone.txt"}
        return
    assert err.code in (Code.STALE, Code.PARTIAL), err
    report = err.details.get("rolledBack")
    if err.code == Code.STALE:
        assert (
            "folder d was replaced by a symbolic link during the apply; nothing was written "
            "through it"
            in err.message
            or "d is a symbolic link, not a folder (for d/a.txt) since the patch was planned; "
            "nothing was written."
            == err.message
        )
        # What it says it put back is old; top.txt (outside the swapped folder) is old.
        assert (root / "top.txt").read_bytes() == OLD["top.txt"]
        if "every file was put back" in err.message or "nothing was changed" in err.message:
            assert not {p for p in now_new if not p.startswith("leftover:")}
    else:
        # Files already renamed in the swapped folder cannot be reached: named, not hidden.
        assert report is not None and report["unreached"]
        unreached = {u["path"] for u in report["unreached"]}
        assert unreached and all(p.startswith("d/") for p in unreached)
        assert {p for p in now_new if not p.startswith("leftover:")} <= unreached
        assert "could not be put back" in err.message
        assert (root / "top.txt").read_bytes() == OLD["top.txt"]
        for tmp in report["leftBehind"]:
            assert tmp in err.message
    # Never a temporary file left unnamed in the reachable workspace.
    for p in tree(root):
        if ".agent-edit-" in p:
            assert report is not None and p.replace("d.moved/", "d/") in report["leftBehind"]


def _same_size_save(root: Path, rel: str, data: bytes) -> Callable[[], None]:
    def attack() -> None:
        path = root / rel
        if not path.exists():
            return  # deleted by the apply already: nothing to save in place
        st = path.stat()
        with open(path, "r+b") as f:  # in place: same inode, same size
            f.write(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # within one timestamp tick

    return attack


@pytest.mark.parametrize("index", range(1, 9))
@pytest.mark.parametrize("rel", ["d/a.txt", "d/gone.txt"])
def test_in_place_save_at_each_step_is_never_lost(
    ws: tuple[Path, Path], index: int, rel: str
) -> None:
    root, _ = ws
    points = _points(root)
    mine = OLD[rel].upper()[:-2] + b"!\n"
    assert len(mine) == len(OLD[rel])
    files.TEST_HOOK = _attack_at(index, _same_size_save(root, rel, mine))
    err = _apply(root)
    files.TEST_HOOK = None
    point, path = points[index - 1]
    replaced_before = [p for pt, p in points[: index - 1] if pt == "renamed"]
    done = point == "renamed" and (path == rel or rel in replaced_before)
    if done:
        # Saved after our rename (or delete) of that file: a save onto the new file (or a
        # file created again), which the apply did not lose either.
        assert err is None
        return
    assert err is not None and err.code == Code.STALE, err
    assert err.details["path"] == rel
    assert (root / rel).read_bytes() == mine, "the other program's save is kept"
    if point == "resolved":
        # Saved before the check under the lock: its ctime moved, refused before any write.
        assert err.message.endswith("while the patch was being planned; nothing was written.")
        assert _check_whole(root, swapped=False, saved={rel: mine}) == set()
        return
    assert "(its content is kept)" in err.message
    assert "except what another program saved" not in err.message  # only the file named
    first = next(p for pt, p in points if pt == "renamed")
    if rel == first:
        assert err.message.endswith("; nothing was changed.")  # caught at the first rename
    else:
        assert err.message.endswith("; every file was put back as it was.")
    now_new = _check_whole(root, swapped=False, saved={rel: mine})
    assert not now_new, now_new


def test_a_save_that_changes_the_mtime_is_seen_without_reading(
    ws: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = ws
    monkeypatch.setattr(files, "_FINE_WINDOW_NS", 0)
    points = _points(root)
    index = points.index(("written", "")) + 1

    def save() -> None:
        path = root / "top.txt"
        st = path.stat()
        path.write_bytes(b"TOp\n")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))

    files.TEST_HOOK = _attack_at(index, save)
    err = _apply(root)
    files.TEST_HOOK = None
    assert err is not None and err.code == Code.STALE and err.details["path"] == "top.txt"
    assert (root / "top.txt").read_bytes() == b"TOp\n"
    assert err.message.endswith("; every file was put back as it was.")
    assert _check_whole(root, swapped=False, saved={"top.txt": b"TOp\n"}) == set()


def test_could_hide_a_save() -> None:
    now = 10**19
    assert files._could_hide_a_save(now - 1_000, now)  # changed just before the read
    assert not files._could_hide_a_save(now - 10**9 - 7, now)  # a second before, fine clock
    assert files._could_hide_a_save(now - 10**9, now)  # whole seconds: a coarse file system
    assert files._could_hide_a_save(now + 5 * 10**9, now)  # mtime in the future


def test_folder_swapped_during_the_rollback(ws: tuple[Path, Path]) -> None:
    """A save makes the apply fail after two renames; while it rolls back, the folder is
    swapped for a symlink to outside: the rollback writes nothing outside, names the files it
    could not reach, and sets the journal aside for a human."""
    root, outside = ws
    points = _points(root)
    second = [i for i, (p, _) in enumerate(points) if p == "renamed"][1] + 1
    calls = {"n": 0, "rollback": 0}

    def hook(point: str, path: str) -> None:
        calls["n"] += 1
        if calls["n"] == second:
            _same_size_save(root, "top.txt", b"tOP\n")()
        if point == "rollback":
            calls["rollback"] += 1
            if calls["rollback"] == 1:
                _swap(root, outside)()

    files.TEST_HOOK = hook
    err = _apply(root)
    files.TEST_HOOK = None
    assert err is not None and err.code == Code.PARTIAL, err
    assert tree(outside) == DECOY
    report = err.details["rolledBack"]
    unreached = {u["path"] for u in report["unreached"]}
    assert unreached == {"d/a.txt", "d/b.txt", "d/new.txt"}  # renamed; d/gone.txt never was
    assert "d/a.txt (not put back: folder d was replaced by a symbolic link)" in err.message
    assert (root / "top.txt").read_bytes() == b"tOP\n"
    # The renamed files are in the moved folder, whole; the message said they may be new.
    _check_whole(root, swapped=True, saved={"top.txt": b"tOP\n"})
    assert list((root.parent / "state").rglob(files.JOURNAL + ".unreached-*"))


def _crash_then(root: Path, state: Path, steps: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    env[files.CRASH_ENV] = str(steps)
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "apply-patch", "--root", str(root), "-"],
        input=PATCH,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


@pytest.mark.parametrize("steps", [5, 6, 9])
def test_folder_swapped_before_the_recovery(ws: tuple[Path, Path], steps: int) -> None:
    """Killed after some renames; the folder is swapped for a symlink to outside before the
    next run: the recovery restores nothing outside, puts back what it can reach, and names
    the rest."""
    root, outside = ws
    state = root.parent / "state"
    _crash_then(root, state, steps)
    _swap(root, outside)()
    (report,) = files.recover(str(root))
    assert tree(outside) == DECOY
    assert (root / "top.txt").read_bytes() == OLD["top.txt"]
    unreached = {u["path"] for u in report["unreached"]}
    assert unreached == {"d/a.txt", "d/b.txt", "d/new.txt", "d/gone.txt"}
    assert not report["restored"] or report["restored"] == ["top.txt"]
    _check_whole(root, swapped=True)


def test_folder_swapped_during_the_recovery(ws: tuple[Path, Path]) -> None:
    root, outside = ws
    state = root.parent / "state"
    _crash_then(root, state, 7)  # 4 temps, 3 renames (d/a, d/b, d/new)
    calls = {"n": 0}

    def hook(point: str, path: str) -> None:
        assert point in ("recovery", "putting-back")
        if point != "recovery":
            return
        calls["n"] += 1
        if calls["n"] == 2:  # d/a.txt put back; d/b.txt next
            _swap(root, outside)()

    files.TEST_HOOK = hook
    (report,) = files.recover(str(root))
    files.TEST_HOOK = None
    assert tree(outside) == DECOY
    assert report["restored"] == ["d/a.txt"]
    assert {u["path"] for u in report["unreached"]} == {"d/b.txt", "d/new.txt", "d/gone.txt"}
    assert (root / "d.moved/a.txt").read_bytes() == OLD["d/a.txt"]
    assert (root / "d.moved/b.txt").read_bytes() == NEW["d/b.txt"]


@pytest.mark.parametrize("at", ["resolved", "checked", "written", "renamed-1", "renamed-10"])
@pytest.mark.parametrize("attack", ["swap", "save"])
def test_a_many_file_cli_apply_under_attack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: str, attack: str
) -> None:
    """The CLI's many-file apply: a folder swapped or a file saved at each step is never
    written through or lost, and a refusal leaves no temporary file behind."""
    from tests.cli.test_cli_atomic import _many, headless_apply_patch

    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "state"))
    monkeypatch.setattr(files, "_FINE_WINDOW_NS", 10**18)
    root = tmp_path / "many"
    old, patch = _many(root, 20)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f1.txt").write_bytes(b"decoy\n")
    point, _, nth = at.partition("-")
    count = {"n": 0}
    victim = "d1/f1.txt"
    mine = b"mine 1\n"
    assert len(mine) == len(old[victim])

    def hook(p: str, path: str) -> None:
        if p != point:
            return
        count["n"] += 1
        if count["n"] != int(nth or 1):
            return
        if attack == "swap":
            os.rename(root / "d1", tmp_path / "d1-moved")
            os.symlink(outside, root / "d1")
        else:
            _same_size_save(root, victim, mine)()

    files.TEST_HOOK = hook
    try:
        headless_apply_patch(str(root), patch)
        err = None
    except EditError as e:
        err = e
    finally:
        files.TEST_HOOK = None
    assert tree(outside) == {"f1.txt": b"decoy\n"}
    if attack == "swap":
        os.unlink(root / "d1")
        os.rename(tmp_path / "d1-moved", root / "d1")
    now = tree(root)
    for rel, data in old.items():
        assert now[rel] in (data, data.upper(), mine if rel == victim else None), rel
    if attack == "save":
        assert now[victim] == mine  # never lost
        if at == "renamed-10":
            assert err is None  # saved onto the new file, after its rename
        else:
            assert err is not None and err.code == Code.STALE and err.details["path"] == victim
    if err is not None:
        left = [p for p in now if ".agent-edit-" in p]
        report = err.details.get("rolledBack") or {}
        assert sorted(left) == sorted(report.get("leftBehind", [])), (left, err)
        if "every file was put back" in err.message or "nothing was" in err.message:
            assert all(now[r] in (d, mine) for r, d in old.items())


def test_a_save_while_the_rollback_puts_a_file_back_is_kept(ws: tuple[Path, Path]) -> None:
    """The rollback re-checks each file right before it replaces it, as the apply does: a
    same-size save made while it wrote the pre-image is kept and reported, not overwritten."""
    root, _ = ws
    points = _points(root)
    last = len(points) - 1  # the hook after the 4th rename (top.txt), before the delete
    assert points[last - 1] == ("renamed", "top.txt")
    mine = b"mine!\n"
    calls = {"n": 0}

    def hook(point: str, path: str) -> None:
        calls["n"] += 1
        if calls["n"] == last:
            _same_size_save(root, "d/gone.txt", b"GONE\n")()  # the delete will be STALE
        if point == "putting-back" and path == "d/a.txt":
            assert len(mine) == len(NEW["d/a.txt"])
            _same_size_save(root, "d/a.txt", mine)()

    files.TEST_HOOK = hook
    err = _apply(root)
    files.TEST_HOOK = None
    assert err is not None and err.code == Code.STALE and err.details["path"] == "d/gone.txt"
    assert (root / "d/a.txt").read_bytes() == mine
    report = err.details["rolledBack"]
    assert {"path": "d/a.txt", "why": files._SAVED_MEANWHILE} in report["conflicts"]
    assert "except what another program saved meanwhile: d/a.txt" in err.message
    assert (root / "d/b.txt").read_bytes() == OLD["d/b.txt"]
    assert (root / "top.txt").read_bytes() == OLD["top.txt"]
