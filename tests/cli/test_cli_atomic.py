"""The headless CLI on disk: all files or none, crash rollback on the next run, exit codes.

The crash tests use the `AGENT_EDIT_CRASH_AFTER=N` hook of engine/files.py: the CLI process
SIGKILLs itself right after its N-th write/rename/delete step, at every step of an apply.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server.engine import files
from lsp_server.engine.diffing import plan_diff
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.journal import JOURNAL_NAME
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.results import wire

REPO = Path(__file__).resolve().parents[2]

OLD_TREE = {
    "a.txt": b"alpha\nbeta\ngamma\n",
    "crlf.txt": b"one\r\ntwo\r\n",
    "gone.txt": b"bye\n",
    "src/old.py": b"x = 1\n",
}
PATCH = """*** Begin Patch
*** Update File: a.txt
@@
 alpha
-beta
+BETA
*** Update File: crlf.txt
@@
-two
+TWO
*** Add File: new/dir/added.txt
+fresh
*** Delete File: gone.txt
*** Update File: src/old.py
*** Move to: dst/new.py
@@
-x = 1
+x = 2
*** End Patch
"""
NEW_TREE = {
    "a.txt": b"alpha\nBETA\ngamma\n",
    "crlf.txt": b"one\r\nTWO\r\n",
    "new/dir/added.txt": b"fresh\n",
    "dst/new.py": b"x = 2\n",
}
# 4 temp files written, 4 renames, 2 deletes (gone.txt and the move's source).
STEPS = 10


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def dirs(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}


def make(root: Path, content: dict[str, bytes]) -> None:
    for rel, data in content.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def cli(
    *args: str, state: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return _python("-m", "lsp_server", *args, state=state, stdin=stdin, env=env)


def _python(
    *args: str, state: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A fresh Python process on this checkout, its journal in `state`."""
    full_env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    full_env.pop(files.CRASH_ENV, None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )


def apply_journals(state: Path) -> list[Path]:
    """The disk writer's apply journals (and their temporaries) left in the state folder; the
    edit history's journal (engine/journal.py), where the CLI's edits are recorded, is not one."""
    return [p for p in state.rglob(files.JOURNAL + "*") if p.name != JOURNAL_NAME]


def headless_apply_patch(root: str, patch: str) -> dict[str, Any]:
    """What `agent-edit apply-patch` runs (the headless context, the applyPatch action), in
    this process; a refusal raises its EditError."""
    from lsp_server import actions, startup
    from lsp_server.actions import headless

    async def go() -> dict[str, Any]:
        async with headless.open(root) as ctx:
            return wire(await actions.run(ctx, "applyPatch", {"patch": patch}))

    result = startup.run_sync(go())
    if not result["ok"]:
        raise EditError(result["code"], result["message"], result["hint"], result["details"])
    return result


def apply_killed_after(
    steps: int, root: Path, patch: str, state: Path
) -> subprocess.CompletedProcess[str]:
    """`apply-patch` in `root`, SIGKILLed by the crash hook after `steps` steps."""
    return cli(
        "apply-patch",
        "--root",
        str(root),
        "-",
        state=state,
        stdin=patch,
        env={files.CRASH_ENV: str(steps)},
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    make(root, OLD_TREE)
    return root


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state"
    monkeypatch.setenv(files.STATE_DIR_ENV, str(path))
    return path


def test_apply_writes_everything(work: Path, state: Path) -> None:
    proc = cli("apply-patch", "--root", str(work), "-", state=state, stdin=PATCH)
    assert proc.returncode == 0, proc.stderr
    assert tree(work) == NEW_TREE
    assert "A new/dir/added.txt" in proc.stdout and "R src/old.py -> dst/new.py" in proc.stdout
    assert "+BETA" in proc.stdout
    # Nothing left behind: no temp files in the workspace, no journal in the state dir.
    assert not [p for p in work.rglob("*agent-edit*")]
    assert not list(state.rglob(files.JOURNAL))


def test_result_hashes_are_the_written_files(work: Path, state: Path) -> None:
    import hashlib

    proc = cli("apply-patch", "--root", str(work), "--json", "-", state=state, stdin=PATCH)
    result = json.loads(proc.stdout)
    for entry in result["files"]:
        if entry["change"] == "delete":
            assert entry["sha256"] is None
            continue
        path = entry.get("movedTo") or entry["path"]
        assert entry["sha256"] == hashlib.sha256((work / path).read_bytes()).hexdigest()


def test_second_file_failing_changes_nothing(work: Path, state: Path) -> None:
    bad = PATCH.replace("-two\n+TWO\n", "-three\n+THREE\n")
    proc = cli("apply-patch", "--root", str(work), "--json", "-", state=state, stdin=bad)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["ok"] is False and result["code"] == "NO_MATCH"
    assert result["details"]["path"] == "crlf.txt"
    assert result["committed"] == []
    assert tree(work) == OLD_TREE


@pytest.mark.parametrize("crash_after", range(1, STEPS + 1))
def test_sigkill_mid_apply_is_rolled_back_on_the_next_run(
    work: Path, state: Path, crash_after: int
) -> None:
    before_dirs = dirs(work)
    proc = apply_killed_after(crash_after, work, PATCH, state)
    assert proc.returncode == -signal.SIGKILL
    assert list(state.rglob(files.JOURNAL)), "the journal survives the crash"
    # The next run (any edit command) rolls the interrupted apply back and says so.
    again = cli("replace", "--root", str(work), "--json", "a.txt", "gamma", "GAMMA", state=state)
    assert "rolled back an interrupted apply" in again.stderr
    result = json.loads(again.stdout)
    assert result["ok"] is True
    assert result["recovered"][0]["conflicts"] == []
    expected = dict(OLD_TREE, **{"a.txt": b"alpha\nbeta\nGAMMA\n"})
    assert tree(work) == expected
    assert dirs(work) == before_dirs  # created folders are removed again
    assert not list(state.rglob(files.JOURNAL))


@pytest.mark.parametrize("crash_after", [1, 15, 20, 21, 33, 40])
def test_sigkill_during_a_threaded_many_file_apply(
    tmp_path: Path, state: Path, crash_after: int
) -> None:
    """Past 16 files the temporary files are written by a thread pool; same guarantee."""
    root = tmp_path / "many"
    old, patch = _many(root, 20)
    proc = apply_killed_after(crash_after, root, patch, state)
    assert proc.returncode == -signal.SIGKILL  # 20 writes + 20 renames = 40 steps
    files.recover(str(root))
    assert tree(root) == old


def test_every_file_all_old_or_all_new_at_each_crash_point(work: Path, state: Path) -> None:
    """Right after each crash (before recovery) every file is whole: old or new bytes."""
    for crash_after in range(1, STEPS + 1):
        for rel in list(tree(work)):
            (work / rel).unlink()
        make(work, OLD_TREE)
        proc = apply_killed_after(crash_after, work, PATCH, state)
        assert proc.returncode == -signal.SIGKILL
        for rel, data in tree(work).items():
            if ".agent-edit-" in rel:
                continue  # a temporary file, removed by recovery
            assert data in (OLD_TREE.get(rel), NEW_TREE.get(rel)), (crash_after, rel)
        files.recover(str(work))
        assert tree(work) == OLD_TREE


def test_io_error_mid_apply_rolls_back(
    work: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(work)
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(root, p))
    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src: str, dst: str, **kw: int) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device", dst)
        real_replace(src, dst, **kw)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(EditError) as info:
        files.apply_plan(root, plan)
    monkeypatch.setattr(os, "replace", real_replace)
    assert info.value.code == Code.IO_ERROR
    assert "put back" in info.value.message
    assert tree(work) == OLD_TREE
    assert not list(state.rglob(files.JOURNAL))


def test_syncfs_is_used_on_linux_for_many_files(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linux: many temporary files are made durable by one syncfs, a few by an fsync each (a
    syncfs would also wait for other programs' unwritten data)."""
    has_syncfs = files._syncfs_function() is not None
    assert has_syncfs == sys.platform.startswith("linux")  # elsewhere: the fallback below
    if not has_syncfs:
        return
    real = files._syncfs_function
    calls: list[int] = []

    def counting() -> object:
        fn = real()
        assert fn is not None

        def syncfs(fd: int) -> int:
            calls.append(fd)
            return fn(fd)

        return syncfs

    monkeypatch.setattr(files, "_syncfs_function", counting)
    for n, flushes in ((3, 0), (files._SYNCFS_FROM, 2)):
        root = tmp_path / f"ws{n}"
        make(root, {f"f{i}.txt": b"x\n" for i in range(n)})
        patch = "*** Begin Patch\n" + "".join(
            f"*** Update File: f{i}.txt\n@@\n-x\n+y\n" for i in range(n)
        )
        ws = str(root)
        plan = plan_patch(patch + "*** End Patch\n", lambda p, ws=ws: files.read_snapshot(ws, p))
        calls.clear()
        files.apply_plan(str(root), plan)
        assert tree(root) == {f"f{i}.txt": b"y\n" for i in range(n)}
        assert len(calls) == flushes  # before the renames and after them, one file system


def test_apply_without_syncfs_fsyncs_every_file(
    work: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(work)
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(root, p))
    monkeypatch.setattr(files, "_syncfs_function", lambda: None)
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if os.path.isdir("/proc") else "?")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    files.apply_plan(root, plan)
    assert tree(work) == NEW_TREE
    # Each of the 4 temporary files, the journal, and the folders.
    assert sum(".agent-edit-" in p for p in synced) == 4 or "?" in synced
    assert len(synced) >= 6


def test_failed_flush_rolls_back(work: Path, state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(work)
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(root, p))

    def broken() -> object:
        def syncfs(fd: int) -> int:
            raise OSError(5, "Input/output error")

        return syncfs

    monkeypatch.setattr(files, "_syncfs_function", broken)
    monkeypatch.setattr(files, "_SYNCFS_FROM", 1)  # this 4-file apply would fsync each file
    with pytest.raises(EditError) as info:
        files.apply_plan(root, plan)
    assert info.value.code == Code.IO_ERROR
    assert tree(work) == OLD_TREE
    assert dirs(work) == {"src"}
    assert not list(state.rglob(files.JOURNAL))


def test_failed_rollback_is_partial_and_finished_next_run(
    work: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(work)
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(root, p))
    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src: str, dst: str, **kw: int) -> None:
        calls["n"] += 1
        if calls["n"] >= 3:  # the journal rename and the first file succeed, then all fail
            raise OSError(5, "Input/output error", dst)
        real_replace(src, dst, **kw)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(EditError) as info:
        files.apply_plan(root, plan)
    monkeypatch.setattr(os, "replace", real_replace)
    assert info.value.code == Code.PARTIAL
    assert info.value.committed
    assert list(state.rglob(files.JOURNAL)), "kept for the next run"
    (report,) = files.recover(root)
    assert "a.txt" in report["restored"]
    assert tree(work) == OLD_TREE


def test_unreadable_journal_is_set_aside(work: Path, state: Path) -> None:
    sdir = Path(files.state_dir(str(work)))
    (sdir / files.JOURNAL).write_bytes(b"not json\n")
    (report,) = files.recover(str(work))
    assert "unreadable" in report["conflicts"][0]["why"]
    assert not (sdir / files.JOURNAL).exists()
    assert tree(work) == OLD_TREE


def test_file_changed_between_plan_and_apply_is_stale(work: Path, state: Path) -> None:
    root = str(work)
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(root, p))
    (work / "crlf.txt").write_bytes(b"someone else saved this\n")
    with pytest.raises(EditError) as info:
        files.apply_plan(root, plan)
    assert info.value.code == Code.STALE and info.value.details["path"] == "crlf.txt"
    assert tree(work) == dict(OLD_TREE, **{"crlf.txt": b"someone else saved this\n"})
    # A file created where the patch adds one is refused the same way.
    for rel in list(tree(work)):
        (work / rel).unlink()
    make(work, OLD_TREE)
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(root, p))
    make(work, {"new/dir/added.txt": b"mine\n"})
    with pytest.raises(EditError) as info:
        files.apply_plan(root, plan)
    assert info.value.code == Code.STALE
    assert (work / "new/dir/added.txt").read_bytes() == b"mine\n"


def test_recovery_leaves_files_changed_by_someone_else(work: Path, state: Path) -> None:
    proc = cli(
        "apply-patch",
        "--root",
        str(work),
        "-",
        state=state,
        stdin=PATCH,
        env={files.CRASH_ENV: "6"},  # all 4 temps written, 2 renames done
    )
    assert proc.returncode == -signal.SIGKILL
    (work / "a.txt").write_bytes(b"the user typed this\n")
    (report,) = files.recover(str(work))
    assert report["conflicts"] == [
        {"path": "a.txt", "why": "changed by someone else since the interrupted apply"}
    ]
    assert (work / "a.txt").read_bytes() == b"the user typed this\n"
    assert tree(work) == dict(OLD_TREE, **{"a.txt": b"the user typed this\n"})


def test_state_dir_is_outside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(files.STATE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    ws = tmp_path / "ws"
    ws.mkdir()
    sdir = Path(files.state_dir(str(ws)))
    assert ws not in sdir.parents
    assert sdir.is_dir()
    other = tmp_path / "other"
    other.mkdir()
    assert files.state_dir(str(other)) != str(sdir)


@pytest.mark.parametrize("xdg", [None, "/tmp/some-xdg-state"])
def test_state_base_follows_platformdirs(monkeypatch: pytest.MonkeyPatch, xdg: str | None) -> None:
    from platformdirs import user_state_dir

    if xdg is None:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_STATE_HOME", xdg)
    assert files.user_state_base() == user_state_dir("agent-edit")


def test_bom_mode_and_dry_run(work: Path, state: Path) -> None:
    (work / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\nworld\n")
    script = work / "run.sh"
    script.write_bytes(b"#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    patch = (
        "*** Begin Patch\n*** Update File: bom.txt\n@@\n-world\n+WORLD\n"
        "*** Update File: run.sh\n@@\n-echo hi\n+echo bye\n*** End Patch\n"
    )
    dry = cli("apply-patch", "--root", str(work), "--dry-run", "-", state=state, stdin=patch)
    assert dry.returncode == 0 and "+WORLD" in dry.stdout and "Would change" in dry.stdout
    assert (work / "bom.txt").read_bytes() == b"\xef\xbb\xbfhello\nworld\n"
    proc = cli("apply-patch", "--root", str(work), "--json", "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stdout
    result = json.loads(proc.stdout)
    assert result["status"] == "applied" and result["saved"] is True
    assert [f["change"] for f in result["files"]] == ["update", "update"]
    assert (work / "bom.txt").read_bytes() == b"\xef\xbb\xbfhello\nWORLD\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_replace_command(work: Path, state: Path, tmp_path: Path) -> None:
    proc = cli("replace", "--root", str(work), "a.txt", "beta", "BETA", state=state)
    assert proc.returncode == 0, proc.stderr
    assert (work / "a.txt").read_bytes() == b"alpha\nBETA\ngamma\n"
    # @file arguments, and a line-ending-preserving multi-line replace.
    (tmp_path / "old").write_text("one\ntwo")
    (tmp_path / "new").write_text("1\n2")
    proc = cli(
        "replace",
        "--root",
        str(work),
        "crlf.txt",
        f"@{tmp_path / 'old'}",
        f"@{tmp_path / 'new'}",
        state=state,
    )
    assert proc.returncode == 0, proc.stderr
    assert (work / "crlf.txt").read_bytes() == b"1\r\n2\r\n"


def test_replace_refusals(work: Path, state: Path) -> None:
    (work / "dup.txt").write_text("x\nx\n")
    amb = cli("replace", "--root", str(work), "--json", "dup.txt", "x", "y", state=state)
    assert amb.returncode == 1
    assert json.loads(amb.stdout)["details"]["lines"] == [1, 2]
    allx = cli("replace", "--root", str(work), "--replace-all", "dup.txt", "x", "y", state=state)
    assert allx.returncode == 0 and (work / "dup.txt").read_text() == "y\ny\n"
    stale = cli(
        "replace", "--root", str(work), "--expect-sha256", "0" * 64, "a.txt", "a", "b", state=state
    )
    assert stale.returncode == 1 and "STALE" in stale.stderr
    assert (work / "a.txt").read_bytes() == OLD_TREE["a.txt"]


@pytest.mark.parametrize(
    "path", ["../outside.txt", "/etc/hostname", "link/escape.txt", ".git/config"]
)
def test_paths_must_stay_inside_the_root(work: Path, state: Path, path: str) -> None:
    (work / "link").symlink_to(work.parent)
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("x\n")
    patch = f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n"
    proc = cli("apply-patch", "--root", str(work), "--json", "-", state=state, stdin=patch)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["code"] in ("OUTSIDE_WORKSPACE", "DENIED")
    assert not (work.parent / "outside.txt").exists()
    assert not (work.parent / "escape.txt").exists()


def test_usage_errors_exit_2(work: Path, state: Path, tmp_path: Path) -> None:
    assert cli("apply-patch", state=state).returncode == 2
    missing = cli("apply-patch", "--root", str(work), str(tmp_path / "nope.patch"), state=state)
    assert missing.returncode == 2 and "cannot read PATCH" in missing.stderr
    assert cli("replace", "--root", str(work), "a.txt", state=state).returncode == 2
    assert cli("apply-patch", "--root", str(tmp_path / "nodir"), "-", state=state).returncode == 2


def test_parse_error_exit_1_with_patch_line(work: Path, state: Path) -> None:
    proc = cli(
        "apply-patch",
        "--root",
        str(work),
        "--json",
        "-",
        state=state,
        stdin="*** Begin Patch\n*** Update File: a.txt\n@@\nbogus\n*** End Patch\n",
    )
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["code"] == "PARSE_ERROR" and result["details"]["patchLine"] == 4


def test_headless_commands_do_not_import_pygls(work: Path, state: Path) -> None:
    code = (
        "import sys\n"
        "from lsp_server.cli import main\n"
        f"rc = main(['replace', '--root', {str(work)!r}, 'a.txt', 'beta', 'B'])\n"
        "assert rc == 0, rc\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')]\n"
        "assert not bad, bad\n"
    )
    proc = _python("-c", code, state=state)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("argv", "plain"),
    [
        (["apply-patch", "-"], True),
        (["apply-patch", "p.patch"], True),
        (["apply-patch", "--json", "-"], True),
        (["apply-patch", "-", "--json", "--dry-run"], True),
        (["apply-patch", "--root", "ws", "--json", "p"], True),
        (["apply-patch", "--root", "a", "--root", "b", "-"], True),
        (["apply-patch", "--dry-run", "--dry-run", "x y.patch"], True),
        (["apply-patch", "--root", "-", "-"], False),
        (["apply-patch", "--root=ws", "-"], False),
        (["apply-patch", "--js", "-"], False),
        (["apply-patch", "-", "-"], False),
        (["apply-patch"], False),
        (["apply-patch", "--root"], False),
        (["apply-patch", "--", "-x"], False),
        (["apply-patch", "-h"], False),
        (["replace", "a", "b", "c"], True),
        (["replace", "--root", "ws", "--json", "a", "b", "c"], True),
        (["replace", "a", "--dry-run", "b", "--replace-all", "c", "--json"], True),
        (["replace", "a", "", "@-"], True),
        (["replace", "a", "-", "c"], True),
        (["replace", "a", "b"], False),
        (["replace", "a", "b", "c", "d"], False),
        (["replace", "a", "-b", "c"], False),
        (["replace", "a", "b c", "--match", "lenient", "d"], True),
        (["replace", "--match", "exact", "--match", "lenient", "a", "b", "c"], True),
        (["replace", "--match", "fuzzy", "a", "b", "c"], False),
        (["replace", "--match=exact", "a", "b", "c"], False),
        (["replace", "--expect-sha256", "0" * 64, "a", "b", "c"], True),
        (["replace", "--expect-sha256", "", "a", "b", "c"], True),
        (["replace", "--expect-sha256", "-x", "a", "b", "c"], False),
        (["replace", "a", "b", "c", "--expect-sha256"], False),
        (["write", "--expect-sha256", "1" * 64, "--expect-sha256", "2", "new.txt", "x"], True),
        (["apply-patch", "--expect-sha256", "a.py=1", "--expect-sha256", "b=2", "-"], True),
        (["apply-patch", "--expect-sha256", "a.py=1", "p"], True),
        (["apply-patch", "--expect", "a.py=1", "p"], False),
        (["apply-patch", "--match", "exact", "p"], False),
        (["write", "new.txt", "hello"], True),
        (["write", "--dry-run", "--root", "ws", "new.txt", "@file"], True),
        (["write", "--replace-all", "new.txt", "hello"], False),
        (["write", "new.txt"], False),
        (["read", "a"], True),
        (["read", "--root", "ws", "--json", "a b.py"], True),
        (["read", "--line-numbers", "-"], True),
        (["read", "--no-line-numbers", "a"], False),
        (["read", "--start-line", "3", "a"], True),
        (["read", "--start-line", "007", "--end-line", "12", "--json", "a"], True),
        (["read", "--start-line", "3", "--start-line", "4", "a"], True),
        (["read", "--start-line", "-3", "a"], False),
        (["read", "--start-line", "x", "a"], False),
        (["read", "--start-line", "\u0663", "a"], False),
        (["read", "--start-line", " 3", "a"], False),
        (["read", "--start-line=3", "a"], False),
        (["read", "--end-line", "a"], False),
        (["read", "a", "b"], False),
        (["history"], False),
    ],
)
def test_plain_apply_patch_arguments_read_as_argparse_reads_them(
    argv: list[str], plain: bool
) -> None:
    from lsp_server.cli import _plain, build_parser

    fast = _plain(argv)
    assert (fast is not None) == plain, "the usual forms skip argparse, the rest do not"
    if fast is not None:
        assert vars(fast) == vars(build_parser().parse_args(argv))


def test_plain_apply_patch_does_not_import_argparse(work: Path, state: Path) -> None:
    code = (
        "import sys\n"
        "from lsp_server.cli import main\n"
        f"rc = main(['apply-patch', '--root', {str(work)!r}, '--json', {str(work / 'p')!r}])\n"
        "assert rc == 0, rc\n"
        "assert 'argparse' not in sys.modules\n"
        "assert 'lark' not in sys.modules  # a valid patch is read without lark\n"
    )
    (work / "p").write_text(PATCH)
    proc = _python("-c", code, state=state)
    assert proc.returncode == 0, proc.stderr
    assert tree(work) == dict(NEW_TREE, p=PATCH.encode())


def test_replaced_files_keep_permissions_the_umask_would_narrow(work: Path, state: Path) -> None:
    root = str(work)
    (work / "a.txt").chmod(0o666)
    (work / "crlf.txt").chmod(0o640)
    plan = plan_patch(PATCH, lambda p: files.read_snapshot(root, p))
    old = os.umask(0o027)
    try:
        files.apply_plan(root, plan)
    finally:
        os.umask(old)
    assert tree(work) == NEW_TREE
    assert stat.S_IMODE((work / "a.txt").stat().st_mode) == 0o666
    assert stat.S_IMODE((work / "crlf.txt").stat().st_mode) == 0o640


def test_io_error_in_a_threaded_many_file_apply_rolls_back(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past 16 files the renames run in threads; a failing one stops the rest, all roll back."""
    import threading

    root = tmp_path / "many"
    old, patch = _many(root, 40)
    plan = plan_patch(patch, lambda p: files.read_snapshot(str(root), p))
    real_replace = os.replace
    lock = threading.Lock()
    calls = {"n": 0}

    def flaky(src: str, dst: str, **kw: int) -> None:
        with lock:
            calls["n"] += 1
            n = calls["n"]
        if n == 12:  # the journal's own rename is call 1
            raise OSError(28, "No space left on device", dst)
        real_replace(src, dst, **kw)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(EditError) as info:
        files.apply_plan(str(root), plan)
    monkeypatch.setattr(os, "replace", real_replace)
    assert info.value.code == Code.IO_ERROR
    assert tree(root) == old
    assert not list(state.rglob(files.JOURNAL))


def _many(root: Path, n: int) -> tuple[dict[str, bytes], str]:
    old = {f"d{i % 3}/f{i}.txt": f"line {i}\n".encode() for i in range(n)}
    make(root, old)
    patch = "*** Begin Patch\n" + "".join(
        f"*** Update File: d{i % 3}/f{i}.txt\n@@\n-line {i}\n+LINE {i}\n" for i in range(n)
    )
    return old, patch + "*** End Patch\n"


def test_refused_many_file_patch_leaves_no_temporary_files(tmp_path: Path, state: Path) -> None:
    """A refused many-file patch leaves no temporary file, and no journal."""
    root = tmp_path / "many"
    old, patch = _many(root, 30)
    patch = patch.replace("-line 29\n", "-no such line\n")
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=state, stdin=patch)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["code"] == "NO_MATCH"
    assert tree(root) == old  # no temporary file left
    assert not list(state.rglob(files.JOURNAL))
    assert not list(state.rglob(files.JOURNAL + ".tmp"))


def test_many_file_apply_keeps_the_replaced_files_permissions(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "many"
    old, patch = _many(root, 20)
    (root / "d0/f0.txt").chmod(0o640)
    (root / "d1/f1.txt").chmod(0o755)
    proc = cli("apply-patch", "--root", str(root), "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    assert tree(root) == {rel: data.upper() for rel, data in old.items()}
    assert stat.S_IMODE((root / "d0/f0.txt").stat().st_mode) == 0o640
    assert stat.S_IMODE((root / "d1/f1.txt").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "d2/f2.txt").stat().st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_headless_apply_does_not_load_inspect(work: Path, state: Path) -> None:
    """`inspect` (imported by dataclasses) is not loaded by a headless run: dataclasses holds a
    stand-in (lsp_server/startup.py) that loads the real module the moment anything reads from
    it, and nothing else sees it: `sys.modules` never keeps it, `import inspect` is the real
    module, and a dataclass without a docstring still gets its signature as one."""
    code = (
        "import sys\n"
        "from lsp_server.cli import main\n"
        f"rc = main(['apply-patch', '--root', {str(work)!r}, {str(work / 'p')!r}])\n"
        "assert rc == 0, rc\n"
        "assert 'inspect' not in sys.modules, 'loaded, or the stand-in left in sys.modules'\n"
        "import dataclasses\n"
        "m = dataclasses.inspect\n"
        "assert 'signature' not in vars(m), 'not loaded yet'\n"
        "@dataclasses.dataclass\n"
        "class NoDoc:\n"
        "    x: int\n"
        "assert NoDoc.__doc__ == 'NoDoc(x: int)', NoDoc.__doc__\n"
        "assert callable(m.signature) and m.isfunction(main)\n"
        "import inspect\n"
        "assert inspect.signature(main) and inspect is not m and 'signature' in vars(m)\n"
        "assert sys.modules['inspect'] is inspect\n"
    )
    (work / "p").write_text(PATCH)
    proc = _python("-c", code, state=state)
    assert proc.returncode == 0, proc.stderr
    assert tree(work) == dict(NEW_TREE, p=PATCH.encode())


def test_lines_that_only_look_like_update_headers_change_nothing_else(
    tmp_path: Path, state: Path
) -> None:
    """An update header inside a chunk (a context line) names no file: nothing else is
    changed or refused, even a denied one, and no temporary file is left."""
    root = tmp_path / "many"
    old, patch = _many(root, 20)
    make(root, {"other.txt": b"keep\n", ".env": b"SECRET=1\n"})
    old = dict(old, **{"other.txt": b"keep\n", ".env": b"SECRET=1\n"})
    make(root, {"d0/f0.txt": b"*** Update File: other.txt\n *** Update File: .env\nline 0\n"})
    patch = patch.replace(
        "@@\n-line 0\n",
        "@@\n  *** Update File: other.txt\n  *** Update File: .env\n-line 0\n",
    )
    proc = cli("apply-patch", "--root", str(root), "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    expected = {rel: data.upper() for rel, data in old.items() if rel.startswith("d")}
    expected["d0/f0.txt"] = b"*** Update File: other.txt\n *** Update File: .env\nLINE 0\n"
    expected.update({"other.txt": b"keep\n", ".env": b"SECRET=1\n"})
    assert tree(root) == expected


def _large(root: Path) -> tuple[dict[str, bytes], str]:
    """A large patch: 400 files of 40 lines, ~400 KB."""
    old = {
        f"d{i % 7}/f{i}.py": "".join(f"value_{i}_{j} = compute({j})\n" for j in range(40)).encode()
        for i in range(400)
    }
    make(root, old)
    sections = []
    for i in range(400):
        context = "".join(f" value_{i}_{j} = compute({j})\n" for j in range(5, 30))
        sections.append(
            f"*** Update File: d{i % 7}/f{i}.py\n@@\n{context}"
            f"-value_{i}_30 = compute(30)\n+value_{i}_30 = compute(3000)\n"
        )
    text = "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"
    return old, text


def test_large_patch_applies_and_refuses_as_in_order(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "large"
    old, patch = _large(root)
    bad = patch.replace("-value_390_30 = compute(30)\n", "-value_390_30 = compute(31)\n")
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=state, stdin=bad)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["code"] == "NO_MATCH" and result["details"]["path"] == "d5/f390.py"
    assert (
        result["details"]["patchLine"] == bad.split("\n").index("*** Update File: d5/f390.py") + 2
    )
    assert tree(root) == old
    expected_diff = plan_diff(
        plan_patch(patch, lambda p: files.read_snapshot(str(root), p)).changes
    )
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert len(result["files"]) == 400
    assert result["diff"] == expected_diff  # made while the disk flushed
    assert tree(root) == {
        rel: data.replace(b"compute(30)\n", b"compute(3000)\n") for rel, data in old.items()
    }
    assert not list(state.rglob(files.JOURNAL))


@pytest.mark.parametrize("crash_after", [21, 42, 43])
def test_sigkill_after_deleting_a_file_of_a_many_file_apply(
    tmp_path: Path, state: Path, crash_after: int
) -> None:
    """A many-file apply's journal holds every pre-image once (the deleted file's too), and
    recovery restores from it."""
    root = tmp_path / "many"
    old, patch = _many(root, 20)
    make(root, {"gone.txt": b"deleted content\n"})
    old["gone.txt"] = b"deleted content\n"
    patch = patch.replace(
        "*** End Patch\n", "*** Delete File: gone.txt\n*** Add File: new.txt\n+new\n*** End Patch\n"
    )
    proc = apply_killed_after(crash_after, root, patch, state)
    assert proc.returncode == -signal.SIGKILL  # 21 writes, 21 renames, 1 delete
    (journal,) = state.rglob(files.JOURNAL)
    header, blob = files._read_journal(str(journal))
    assert len(blob) == sum(map(len, old.values()))  # each pre-image once
    assert journal.read_bytes().count(b'"blobSize"') == 1  # one record
    assert header["blobSize"] == len(blob)
    files.recover(str(root))
    assert tree(root) == old


def test_journal_records(tmp_path: Path) -> None:
    path = str(tmp_path / "journal.json")
    first = {"files": [{"path": "a", "pre": [0, 3]}], "blobSize": 3}
    os.close(files._write_journal(path, first, [b"old"]))
    second = {"files": [{"path": "a", "pre": [0, 3]}, {"path": "b", "pre": [3, 2]}], "blobSize": 2}
    # A second record appended (as versions that reserved temporary files wrote them).
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    files._write_record(fd, second, [b"bb"])
    os.close(fd)
    assert files._read_journal(path) == (second, b"oldbb")
    # A record cut short (a run killed while appending it) is ignored.
    whole = Path(path).read_bytes()
    for cut in (len(whole) - 1, len(whole) - 2, len(whole) - 3, whole.rindex(b"{") + 5):
        Path(path).write_bytes(whole[:cut])
        assert files._read_journal(path) == (first, b"old")
    # Version 1: one record whose blob is the rest of the file.
    Path(path).write_bytes(b'{"version": 1, "files": []}\nraw bytes')
    assert files._read_journal(path) == ({"version": 1, "files": []}, b"raw bytes")
    Path(path).write_bytes(b'{"blobSize": 9}\nshort')
    with pytest.raises(ValueError):
        files._read_journal(path)


@pytest.mark.parametrize("n", [3, 20])
def test_meanwhile_runs_once_during_the_apply_and_may_fail(
    tmp_path: Path, state: Path, n: int
) -> None:
    """`apply_plan(meanwhile=...)` runs the caller's work while the disk flushes (one syncfs
    from 16 files, else per-file fsyncs); a failure in it does not stop the apply."""
    root = tmp_path / "many"
    old, patch = _many(root, n)
    plan = plan_patch(patch, lambda p: files.read_snapshot(str(root), p))
    seen: list[dict[str, bytes]] = []

    def look_then_fail() -> None:
        seen.append(tree(root))
        raise RuntimeError("the caller's own problem")

    files.apply_plan(str(root), plan, meanwhile=look_then_fail)
    (during,) = seen
    # Called after every temporary file was written, before the first rename.
    assert {rel: data for rel, data in during.items() if ".agent-edit-" not in rel} == old
    assert sum(".agent-edit-" in rel for rel in during) == n
    assert tree(root) == {rel: data.upper() for rel, data in old.items()}


# --- review: leftovers of a large apply ------------------------------------------------------


def _no_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize(
    "how", ["applied", "refused", "refused-first", "interrupted-plan", "interrupted", "failed"]
)
def test_large_apply_leaves_no_process_descriptor_or_file_behind(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The headless apply-patch on a large patch: after success, a refusal (late or early),
    Ctrl-C while it is planned, or Ctrl-C or an exception in the apply, no child process is left
    (running or zombie) and no descriptor stays open. A refusal leaves no temporary file or
    journal; an apply stopped by an exception is rolled back by that run (review rtrust: it
    used to leave its journal and a half-applied tree for the next run to put back)."""
    root = tmp_path / "large"
    old, patch = _large(root)
    expected = {
        rel: data.replace(b"compute(30)\n", b"compute(3000)\n") for rel, data in old.items()
    }
    if how == "refused":
        patch = patch.replace("-value_399_30 = compute(30)\n", "-value_399_30 = compute(31)\n")
    elif how == "refused-first":
        patch = patch.replace("-value_3_30 = compute(30)\n", "-value_3_30 = compute(31)\n")
    elif how == "interrupted-plan":

        def plan_hunks(*args: object) -> None:
            raise KeyboardInterrupt

        from lsp_server.engine import patching

        monkeypatch.setattr(patching, "plan_hunks", plan_hunks)
    elif how in ("interrupted", "failed"):
        error = KeyboardInterrupt() if how == "interrupted" else RuntimeError("disk on fire")

        def flush_while(*args: object) -> None:
            raise error

        monkeypatch.setattr(files, "_flush_while", flush_while)
    fds = set(os.listdir("/proc/self/fd"))
    assert _no_children()
    if how == "applied":
        result = headless_apply_patch(str(root), patch)
        assert len(result["files"]) == 400 and result["diff"]
        assert tree(root) == expected
    else:
        with pytest.raises((EditError, KeyboardInterrupt, RuntimeError)):
            headless_apply_patch(str(root), patch)
    assert _no_children()
    assert set(os.listdir("/proc/self/fd")) == fds
    assert not list(state.rglob(files.JOURNAL + ".tmp"))
    assert not list(state.rglob(files.JOURNAL))
    if how != "applied":
        assert tree(root) == old  # as it was before this run: nothing for the next to do
        files.recover(str(root))
        assert tree(root) == old


def test_a_version_1_journal_is_rolled_back_before_a_large_apply(
    tmp_path: Path, state: Path
) -> None:
    """An older version's journal (one record, its blob the rest of the file, no `blobSize`)
    left by a crash after it renamed one file and before it removed its temporary file: the
    next run, a large apply, restores that file first and applies to it."""
    import hashlib

    root = tmp_path / "large"
    old, patch = _large(root)
    (root / "d0/f0.py").write_bytes(b"half-applied\n")
    (root / "d0/.f7.py.agent-edit-0ld.tmp").write_bytes(b"temporary\n")
    header = {
        "version": 1,
        "root": os.path.realpath(root),
        "pid": 1,
        "time": 0.0,
        "dirs": [],
        "files": [
            {
                "path": "d0/f0.py",
                "op": "write",
                "pre": [len(old["d0/f7.py"]), len(old["d0/f0.py"])],
                "newSha256": hashlib.sha256(b"half-applied\n").hexdigest(),
                "tmp": "d0/.f0.py.agent-edit-0ld.tmp",
            },
            {
                "path": "d0/f7.py",
                "op": "write",
                "pre": [0, len(old["d0/f7.py"])],
                "newSha256": "0" * 64,
                "tmp": "d0/.f7.py.agent-edit-0ld.tmp",
            },
        ],
    }
    sdir = Path(files.state_dir(str(root)))
    (sdir / files.JOURNAL).write_bytes(
        json.dumps(header).encode() + b"\n" + old["d0/f7.py"] + old["d0/f0.py"]
    )
    proc = cli("apply-patch", "--root", str(root), "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    assert "rolled back an interrupted apply (pid 1): restored 1 file(s): d0/f0.py" in proc.stderr
    assert tree(root) == {
        rel: data.replace(b"compute(30)\n", b"compute(3000)\n") for rel, data in old.items()
    }
    assert not apply_journals(state)


def _variant(root: Path, patch: str, how: str) -> str:
    """`patch` (from `_large`) changed the way `how` says, with what it needs in `root`."""
    last = "*** Update File: d0/f399.py\n"  # not a file: replaced below
    sections = patch.split("*** Update File: ")
    tail = sections[-1]  # d0/f399.py's section (399 % 7 == 0), before '*** End Patch'
    assert tail.startswith("d0/f399.py\n") and last
    f0 = "@@\n value_0_35 = compute(35)\n-value_0_36 = compute(36)\n+value_0_36 = 36\n"
    extra = ""
    if how == "same-file-spelled-twice":
        extra = f"*** Update File: d0/./f0.py\n{f0}"
    elif how == "symlink-to-a-file-of-the-first-half":
        (root / "link.py").symlink_to("d0/f0.py")
        extra = f"*** Update File: link.py\n{f0}"
    elif how == "through-a-symlinked-folder":
        (root / "alias").symlink_to("d0")
        tail = tail.replace("d0/f399.py\n", "alias/f399.py\n", 1)
    elif how == "binary-after-the-cut":
        (root / "d0/f399.py").write_bytes(b"\0binary\n")
    elif how == "binary-before-the-cut":
        (root / "d0/f0.py").write_bytes(b"\0binary\n")
    elif how == "fifo-after-the-cut":
        os.mkfifo(root / "fifo.py")
        extra = "*** Update File: fifo.py\n@@\n-x\n+y\n"
    elif how == "missing-after-the-cut":
        extra = "*** Update File: d0/nope.py\n@@\n-x\n+y\n"
    elif how == "lenient-after-the-cut":
        (root / "d0/f399.py").write_bytes(
            (root / "d0/f399.py").read_bytes().replace(b"compute(30)\n", b"compute(30)  \n")
        )
    elif how == "outside-after-the-cut":
        extra = "*** Update File: ../outside.py\n@@\n-x\n+y\n"
    sections[-1] = tail.replace("*** End Patch\n", extra + "*** End Patch\n")
    return "*** Update File: ".join(sections)


@pytest.mark.parametrize(
    "how",
    [
        "same-file-spelled-twice",
        "symlink-to-a-file-of-the-first-half",
        "through-a-symlinked-folder",
        "binary-after-the-cut",
        "binary-before-the-cut",
        "fifo-after-the-cut",
        "missing-after-the-cut",
        "lenient-after-the-cut",
        "outside-after-the-cut",
    ],
)
def test_large_apply_answers_as_its_dry_run(tmp_path: Path, state: Path, how: str) -> None:
    """The CLI's apply and its dry run give the same refusal, or the same files and diff, on
    a real workspace."""
    root = tmp_path / "large"
    old, patch = _large(root)
    patch = _variant(root, patch, how)
    args = ("apply-patch", "--root", str(root), "--json", "-")
    dry = cli(*args[:-1], "--dry-run", "-", state=state, stdin=patch)
    real = cli(*args, state=state, stdin=patch)
    assert dry.stderr == real.stderr == ""
    dry_result, real_result = json.loads(dry.stdout), json.loads(real.stdout)
    assert real.returncode == dry.returncode
    if dry.returncode:
        # Each refusal is its own history entry: the same result but for its editId.
        assert real_result["details"].pop("editId") != dry_result["details"].pop("editId")
        assert real_result == dry_result
    else:
        assert real_result["files"] == dry_result["files"]
        assert real_result["diff"] == dry_result["diff"]
    assert not [p for p in root.rglob("*agent-edit*")]


@pytest.mark.parametrize("crash_after", [1, 250, 402, 403, 650, 804, 805])
def test_sigkill_at_points_of_a_large_split_apply(
    tmp_path: Path, state: Path, crash_after: int
) -> None:
    """The 400-file patch with an added and a deleted file, killed at points among its 402
    writes, 402 renames and 1 delete: the next run (an apply of the same patch) rolls back to
    the old tree, then applies it whole."""
    root = tmp_path / "large"
    old, patch = _large(root)
    make(root, {"gone.txt": b"deleted content\n"})
    old["gone.txt"] = b"deleted content\n"
    patch = patch.replace(
        "*** Update File: d0/f0.py\n",
        "*** Delete File: gone.txt\n*** Add File: new/new.txt\n+new\n*** Add File: a.txt\n+a\n"
        "*** Update File: d0/f0.py\n",
    )
    proc = apply_killed_after(crash_after, root, patch, state)
    assert proc.returncode == -signal.SIGKILL
    assert files.recover(str(root))
    assert tree(root) == old
    assert not (root / "new").exists()
    proc = cli("apply-patch", "--root", str(root), "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    new = {rel: data.replace(b"compute(30)\n", b"compute(3000)\n") for rel, data in old.items()}
    del new["gone.txt"]
    assert tree(root) == {**new, "new/new.txt": b"new\n", "a.txt": b"a\n"}
    assert not apply_journals(state)


def test_a_journal_the_disk_refuses_is_a_clean_io_error(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Disk full (or a read-only state folder) while the journal is written: an IO_ERROR result
    naming the folder, and nothing changed or left behind."""
    import errno

    root = tmp_path / "many"
    old, patch = _many(root, 20)
    ws = str(root)

    def full(fd: int, header: dict[str, object], blob: list[bytes]) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "_write_record", full)
    with files.workspace_lock(ws) as sdir:
        plan = plan_patch(patch, lambda p: files.read_snapshot(ws, p))
        with pytest.raises(EditError) as info:
            files.apply_plan(ws, plan, locked=sdir)
    assert info.value.code == Code.IO_ERROR
    assert "journal" in info.value.message and "nothing was changed" in info.value.message
    assert tree(root) == old
    # (The lock files, and the list of nested workspace roots, engine/state.py, are kept.)
    kept = ("lock", "nested-registered")
    left = [p for p in state.rglob("*") if p.is_file() and p.name not in kept]
    assert not [p for p in left if p.parent.name != "nested"]
