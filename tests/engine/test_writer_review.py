"""An adversarial review of the disk writer (issue 13 item 1): the breaks it found, each kept
as a test.

- A save in place that puts the mtime back (`os.utime`, `touch -r`, `rsync --inplace -t`)
  keeps inode, size and mtime: only the ctime tells it. Without comparing the ctime such a
  save was lost, silently, whenever the file had last changed more than one tick before the
  read (the usual case), before the lock, after the STALE check or right before the rename.
- Hostile journals: a negative `blobSize` made the journal reader loop forever (every entry
  point hung); a mode out of range was an OverflowError traceback; a pre-image range past the
  end of the blob was "put back" truncated and reported restored.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.patching import plan_patch

REPO = Path(__file__).resolve().parents[2]
PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** End Patch\n"
THEIRS = b"alphA\n"  # another program's save: same size as "alpha\n"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "state"))
    # The file changed long before it was read (the usual case): no content comparison is
    # owed by the timestamp-tick rule, so only the identity check stands between the save and
    # its loss. (Its ctime is "now", which utime cannot set back: the window is made 0.)
    monkeypatch.setattr(files, "_FINE_WINDOW_NS", 0)
    monkeypatch.setattr(files, "_COARSE_WINDOW_NS", 0)
    monkeypatch.setattr(files, "_CTIME_WINDOW_NS", 0)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_bytes(b"alpha\n")
    hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(ws / "a.txt", ns=(hour_ago, hour_ago))
    yield ws
    files.TEST_HOOK = None


def _save_in_place_mtime_kept(path: Path) -> Callable[[], None]:
    def save() -> None:
        st = path.stat()
        with open(path, "r+b") as f:
            f.write(THEIRS)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    return save


@pytest.mark.parametrize("when", ["before-apply", "resolved", "checked", "written"])
def test_an_in_place_save_that_keeps_the_mtime_is_never_lost(root: Path, when: str) -> None:
    save = _save_in_place_mtime_kept(root / "a.txt")
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(str(root), p))
    if when == "before-apply":
        save()
    else:
        files.TEST_HOOK = lambda point, _path: save() if point == when else None
    with pytest.raises(EditError) as caught:
        files.apply_plan(str(root), plan)
    files.TEST_HOOK = None
    assert caught.value.code == Code.STALE, caught.value.message
    assert caught.value.details["path"] == "a.txt"
    assert (root / "a.txt").read_bytes() == THEIRS, "the other program's save is kept"
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]  # no temporary left


def test_a_save_that_keeps_the_mtime_while_the_rollback_puts_a_file_back_is_kept(
    root: Path,
) -> None:
    """The rollback's own re-check (before it puts a pre-image back over a file the apply
    wrote) sees such a save too."""
    (root / "b.txt").write_bytes(b"beta\n")
    patch = PATCH.replace(
        "*** End Patch", "*** Update File: b.txt\n@@\n-beta\n+BETA\n*** End Patch"
    )
    plan = plan_patch(patch, lambda p: files.read_snapshot(str(root), p))
    renamed: list[str] = []
    theirs = b"ALPHa\n"

    def hook(point: str, path: str) -> None:
        if point == "renamed":
            renamed.append(path)
            if len(renamed) == 1:
                # The second file changes under the apply: STALE, the first is rolled back.
                with open(root / "b.txt", "ab") as f:
                    f.write(b"!")
        elif point == "putting-back" and path == "a.txt":
            p = root / "a.txt"
            st = p.stat()
            with open(p, "r+b") as f:
                f.write(theirs)
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))

    files.TEST_HOOK = hook
    with pytest.raises(EditError) as caught:
        files.apply_plan(str(root), plan)
    files.TEST_HOOK = None
    assert renamed == ["a.txt"], renamed
    assert caught.value.code == Code.STALE, caught.value.message
    assert (root / "a.txt").read_bytes() == theirs, "a save during the rollback is kept"
    assert "a.txt" in caught.value.message  # reported as kept, not as put back
    report = caught.value.details["rolledBack"]
    assert "a.txt" not in report["restored"]
    assert "a.txt" in [c["path"] for c in report["conflicts"]]


def _journal(root: Path, header: dict[str, Any], blob: bytes) -> Path:
    sdir = Path(files.state_dir(str(root)))
    path = sdir / files.JOURNAL
    path.write_bytes(json.dumps(header).encode() + b"\n" + blob)
    return path


def _entry(**extra: Any) -> dict[str, Any]:
    new_sha = hashlib.sha256(b"alpha\n").hexdigest()  # "the apply wrote the current file"
    entry = {"path": "a.txt", "op": "write", "pre": [0, 4], "newSha256": new_sha, "tmp": None}
    entry.update(extra)
    return entry


@pytest.mark.parametrize(
    "extra",
    [
        {"mode": 2**70},  # OverflowError from fchmod
        {"mode": -1},  # all of 0o7777: a setuid, setgid, sticky file
        {"uid": 2**70, "gid": 0},
        {"uid": -5, "gid": -5},
        {"pre": [2, 100]},  # past the end of the blob: put back cut to "d\n"
        {"pre": [-3, 3]},  # a negative offset: put back empty
    ],
)
def test_a_journal_entry_out_of_range_is_set_aside_untouched(
    root: Path, extra: dict[str, Any]
) -> None:
    header = {"version": 2, "files": [_entry(**extra)], "dirs": [], "blobSize": 4}
    _journal(root, header, b"old\n")
    (report,) = files.recover(str(root))
    assert "unreadable" in report["conflicts"][0]["why"], report
    assert report["restored"] == []
    assert (root / "a.txt").read_bytes() == b"alpha\n"


def test_a_negative_blob_size_does_not_hang_the_journal_reader(root: Path) -> None:
    """A `blobSize` that points back at its own record made every entry point loop forever;
    run in a child so that a regression fails the test instead of hanging the suite (the
    timeout is a guard, not a measurement)."""
    header: dict[str, Any] = {"version": 2, "files": [_entry()], "dirs": [], "blobSize": 0}
    for _ in range(3):  # the size of the line, including the number itself
        header["blobSize"] = -(len(json.dumps(header).encode()) + 1)
    assert header["blobSize"] == -(len(json.dumps(header).encode()) + 1)
    _journal(root, header, b"old\n")
    code = (
        "import sys; from lsp_server.engine import files; "
        "r = files.recover(sys.argv[1]); print(r[0]['conflicts'][0]['why'])"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(root)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the journal reader loops forever on a negative blobSize")
    assert done.returncode == 0, done.stderr
    assert "unreadable" in done.stdout
    assert (root / "a.txt").read_bytes() == b"alpha\n"


TWO = (
    "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n"
    "*** Update File: b.txt\n@@\n-beta\n+BETA\n*** Delete File: gone.txt\n*** End Patch\n"
)


@pytest.mark.parametrize("victim", ["b.txt", "gone.txt", "d"])
def test_a_file_removed_by_another_program_is_not_put_back_by_the_rollback(
    root: Path, victim: str
) -> None:
    """Another program deletes a file (or its folder) the apply has not reached yet: the
    apply stops STALE; the rollback puts back only what the apply replaced, and never
    recreates what the other program removed (it did, and reported it "restored")."""
    for rel, data in (("b.txt", b"beta\n"), ("gone.txt", b"gone\n"), ("d/c.txt", b"see\n")):
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_bytes(data)
    patch = TWO.replace("*** End Patch", "*** Update File: d/c.txt\n@@\n-see\n+SEE\n*** End Patch")
    plan = plan_patch(patch, lambda p: files.read_snapshot(str(root), p))
    renamed: list[str] = []

    def hook(point: str, path: str) -> None:
        if point == "renamed":
            renamed.append(path)
            if path == "a.txt":
                target = root / victim
                if target.is_dir():
                    shutil.rmtree(target)  # with the apply's temporary file in it
                else:
                    target.unlink()

    files.TEST_HOOK = hook
    with pytest.raises(EditError) as caught:
        files.apply_plan(str(root), plan)
    files.TEST_HOOK = None
    err = caught.value
    assert err.code == Code.STALE, err.message
    assert not (root / victim).exists(), "what the other program removed stays removed"
    report = err.details["rolledBack"]
    assert sorted(report["restored"]) == sorted(renamed), (report, renamed)  # only those
    assert victim not in renamed and not any(p.startswith(victim + "/") for p in renamed)
    assert (root / "a.txt").read_bytes() == b"alpha\n"
    if victim != "d":
        assert err.details["path"] == victim
        assert f"{victim} was removed by another program" in err.message
    left = [p.name for p in root.rglob("*") if ".agent-edit-" in p.name]
    assert not left, left


def test_abort_does_not_put_back_a_file_removed_meanwhile(root: Path) -> None:
    """`prepare_plan` then another program deletes a file, then `abort()`: nothing was
    renamed, so nothing is put back (the deleted file stays deleted)."""
    (root / "b.txt").write_bytes(b"beta\n")
    (root / "gone.txt").write_bytes(b"gone\n")
    plan = plan_patch(TWO, lambda p: files.read_snapshot(str(root), p))
    with files.workspace_lock(str(root)) as sdir:
        prepared = files.prepare_plan(str(root), sdir, plan)
        (root / "b.txt").unlink()
        report = prepared.abort()
    assert report["restored"] == [] and report["removed"] == [], report
    assert sorted(p.name for p in root.iterdir()) == ["a.txt", "gone.txt"]


def test_recovery_does_not_put_back_a_file_the_killed_apply_never_reached(
    root: Path, tmp_path: Path
) -> None:
    """SIGKILL after the first of two renames; before the next run, the user deletes the file
    the apply had not reached yet (its temporary file is still there). The recovery puts the
    first file back and leaves the deleted one deleted (it recreated it with its old content
    and reported it restored)."""
    from tests.cli.test_cli_atomic import apply_killed_after, cli

    (root / "b.txt").write_bytes(b"beta\n")
    patch = PATCH.replace(
        "*** End Patch", "*** Update File: b.txt\n@@\n-beta\n+BETA\n*** End Patch"
    )
    state = tmp_path / "state"
    # 2 temporary files written, then 1 rename: killed with a.txt new, b.txt untouched.
    killed = apply_killed_after(3, root, patch, state)
    assert killed.returncode == -9, killed.stderr
    assert (root / "a.txt").read_bytes() == b"ALPHA\n"
    assert (root / "b.txt").read_bytes() == b"beta\n"
    (root / "b.txt").unlink()  # the user, meanwhile
    done = cli("history", "--root", str(root), "--json", state=state)
    assert done.returncode == 0, done.stderr
    assert (root / "a.txt").read_bytes() == b"alpha\n"
    assert not (root / "b.txt").exists(), "the file the user deleted stays deleted"
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]
    (report,) = json.loads(done.stdout)["recovered"]
    assert report["restored"] == ["a.txt"], report
    assert "restored 1 file(s): a.txt." in done.stderr


def test_out_of_descriptors_is_an_honest_result(tmp_path: Path) -> None:
    """EMFILE at every stage of a 60-folder apply (a low RLIMIT_NOFILE in the child): the
    result never says files "may hold the new content" when none was renamed (it did, then
    added "No files were changed."), and every file stays old."""
    import resource

    root = tmp_path / "emfile-ws"
    body = ""
    for i in range(60):
        (root / f"d{i}").mkdir(parents=True)
        (root / f"d{i}" / "f.txt").write_bytes(b"old\n")
        body += f"*** Update File: d{i}/f.txt\n@@\n-old\n+new\n"
    patch = f"*** Begin Patch\n{body}*** Add File: n1/n2/x.txt\n+x\n*** End Patch\n"
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(tmp_path / "st"))
    env.pop(files.CRASH_ENV, None)
    codes = set()
    for limit in range(50, 100):  # one by one: the failing stage moves with each

        def low(limit: int = limit) -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        done = subprocess.run(
            [sys.executable, "-m", "lsp_server", "apply-patch", "--root", str(root), "-"],
            input=patch,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            preexec_fn=low,
        )
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode == 0:
            break  # enough descriptors: applied
        codes.add(done.stderr.split(":")[1].strip() if ":" in done.stderr else "")
        assert "PARTIAL" not in done.stderr, (limit, done.stderr)
        assert "may hold the new content" not in done.stderr, (limit, done.stderr)
        now = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.txt")}
        assert set(now.values()) == {b"old\n"}, (limit, done.stderr)
    assert codes, "no limit was low enough to fail the apply"


def test_a_new_apply_never_overwrites_a_journal_that_is_not_rolled_back_yet(
    root: Path, tmp_path: Path
) -> None:
    """Killed after its rename of a.txt; the next run's recovery cannot put a.txt back (the
    disk refuses, simulated at the hook). That run must not go on to apply another patch: its
    journal would replace the one that still names a.txt, and a.txt would stay half-applied
    for good (nothing left to roll it back with)."""
    from tests.cli.test_cli_atomic import apply_killed_after

    (root / "b.txt").write_bytes(b"beta\n")
    state = tmp_path / "state"
    killed = apply_killed_after(2, root, PATCH, state)  # a temporary file, then its rename
    assert killed.returncode == -9, killed.stderr
    assert (root / "a.txt").read_bytes() == b"ALPHA\n"

    def refuse(point: str, path: str) -> None:
        if point == "putting-back" and path == "a.txt":
            raise PermissionError(13, "Permission denied")

    other = "*** Begin Patch\n*** Update File: b.txt\n@@\n-beta\n+BETA\n*** End Patch\n"
    plan = plan_patch(other, lambda p: files.read_snapshot(str(root), p))
    files.TEST_HOOK = refuse
    try:
        with pytest.raises(EditError) as caught:
            files.apply_plan(str(root), plan)
    finally:
        files.TEST_HOOK = None
    assert caught.value.code == Code.IO_ERROR, caught.value.message
    assert "not rolled back" in caught.value.message
    assert (root / "b.txt").read_bytes() == b"beta\n", "nothing new applied"
    (report,) = files.recover(str(root))  # the disk works again: the next run rolls back
    assert report["restored"] == ["a.txt"], report
    assert (root / "a.txt").read_bytes() == b"alpha\n"


def test_extended_attributes_are_kept(root: Path) -> None:
    """A rename onto the file replaced its extended attributes (ACLs, user.* attributes) with
    none: they were dropped silently."""
    target = root / "a.txt"
    try:
        os.setxattr(target, "user.agent-edit-review", b"kept")
    except OSError as exc:
        pytest.fail(f"this file system refuses user.* attributes ({exc}): run on tmpfs/ext4")
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(str(root), p))
    files.apply_plan(str(root), plan)
    assert target.read_bytes() == b"ALPHA\n"
    assert os.getxattr(target, "user.agent-edit-review") == b"kept"
