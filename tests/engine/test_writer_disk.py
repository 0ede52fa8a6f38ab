"""The disk writer against real disks and real permissions: owners kept, symlinks removed as
links, paths under a regular file, a full disk, a read-only folder, an unwritable state
folder, a hostile journal, SIGKILL at random steps of a 400-file apply.

Several tests need root (chown, mount): CI runs as root, and where root or a loop mount is not
to be had the test fails rather than skips (a skipped test proves nothing). Every mount is
undone in a `finally`.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_server import cli as cli_module
from lsp_server import startup
from lsp_server.actions import headless
from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.patching import plan_patch
from tests.cli.test_cli_atomic import _large, _many, apply_killed_after, cli, make, tree

NOBODY = 65534


def _need_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("this test needs root (CI runs as root): chown and mount")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state"
    monkeypatch.setenv(files.STATE_DIR_ENV, str(path))
    return path


def _update(*rels: str) -> str:
    body = "".join(f"*** Update File: {r}\n@@\n-old\n+new\n" for r in rels)
    return f"*** Begin Patch\n{body}*** End Patch\n"


@pytest.mark.parametrize("n", [2, 20])
def test_owner_group_and_mode_are_kept_as_root(tmp_path: Path, state: Path, n: int) -> None:
    """Root applying to a user's 0600 file leaves it that user's 0600 file (a few files, and
    20: the threaded writes of a large patch), and so does the rollback."""
    _need_root()
    root = tmp_path / "ws"
    rels = [f"f{i}.txt" for i in range(n)]
    make(root, dict.fromkeys(rels, b"old\n"))
    for rel in rels[:2]:
        os.chown(root / rel, NOBODY, NOBODY)
        os.chmod(root / rel, 0o600)
    os.chmod(root / rels[1], 0o4755)  # setuid: chown would clear it, the mode is set after
    proc = cli("apply-patch", "--root", str(root), "-", state=state, stdin=_update(*rels))
    assert proc.returncode == 0, proc.stderr
    for rel, mode in ((rels[0], 0o600), (rels[1], 0o4755)):
        st = (root / rel).stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, mode)
        assert (root / rel).read_bytes() == b"new\n"
    # Killed after the renames: the recovery puts the old bytes back with the same owner.
    make(root, dict.fromkeys(rels, b"old\n"))
    proc = apply_killed_after(2 * n, root, _update(*rels), state)
    assert proc.returncode == -signal.SIGKILL
    (report,) = files.recover(str(root))
    assert rels[0] in report["restored"]
    st = (root / rels[0]).stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o600)
    assert (root / rels[0]).read_bytes() == b"old\n"


def test_a_moved_file_keeps_its_mode_and_owner_as_root(tmp_path: Path, state: Path) -> None:
    """A Move writes the destination as a new file: a user's 0600 file (a key, a token) must not
    land 0644 by the umask, nor become root's (found by the patch-fidelity review)."""
    _need_root()
    root = tmp_path / "ws"
    make(root, {"secret.txt": b"old\n", "plain.txt": b"old\n"})
    os.chown(root / "secret.txt", NOBODY, NOBODY)
    os.chmod(root / "secret.txt", 0o600)
    os.chmod(root / "plain.txt", 0o664)  # wider than the umask allows a new file
    patch = (
        "*** Begin Patch\n*** Update File: secret.txt\n*** Move to: moved/secret.txt\n@@\n-old\n"
        "+new\n*** Update File: plain.txt\n*** Move to: plain2.txt\n@@\n-old\n+new\n"
        "*** End Patch\n"
    )
    proc = cli("apply-patch", "--root", str(root), "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    st = (root / "moved" / "secret.txt").stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o600)
    assert stat.S_IMODE((root / "plain2.txt").stat().st_mode) == 0o664
    assert not (root / "secret.txt").exists()


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder `nobody` can reach (pytest's tmp_path is under a 0700 folder)."""
    path = Path(tempfile.mkdtemp(prefix="agent-edit-nobody-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _as_nobody(fn: Callable[[], Any]) -> Any:
    """`fn()` run in a forked child as user and group `nobody`; what it returned (or raised,
    as a string)."""
    # nobody's own runtime folder: this process's (root's) is not one nobody may trust, and
    # with no trusted runtime folder a CLI edit is refused (lsp_server/discovery.py).
    runtime = tempfile.mkdtemp(prefix="agent-edit-nobody-run-")
    os.chown(runtime, NOBODY, NOBODY)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.environ["AGENT_EDIT_RUNTIME_DIR"] = runtime
            os.close(read_end)
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            try:
                out: Any = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the parent
                out = f"raised {exc!r}"
            os.write(write_end, pickle.dumps(out))
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 1 << 16):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    shutil.rmtree(runtime, ignore_errors=True)
    return pickle.loads(data)


def refusal(stdout: str) -> dict[str, Any]:
    """A refusal's result but for its editId: each refusal is its own history entry, and its id
    is not what a dry run and its apply must agree on."""
    result: dict[str, Any] = json.loads(stdout)
    (result.get("details") or {}).pop("editId", None)
    return result


def _cli_json(*args: str) -> Callable[[], tuple[int, dict[str, Any]]]:
    def run() -> tuple[int, dict[str, Any]]:
        import io
        import sys

        out = io.StringIO()
        real, sys.stdout = sys.stdout, out
        try:
            rc = cli_module.main(list(args))
        finally:
            sys.stdout = real
        result = json.loads(out.getvalue())
        # Each refusal is its own history entry: its id is not what a dry run and its apply
        # must agree on.
        (result.get("details") or {}).pop("editId", None)
        return rc, result

    return run


def test_an_owner_that_cannot_be_kept_is_refused(
    open_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`nobody` may write root's 0666 file in a 0777 folder, but replacing it would make it
    nobody's: refused DENIED, nothing changed, no temporary file left."""
    _need_root()
    root = open_dir / "ws"
    make(root, {"shared.txt": b"old\n", "mine.txt": b"old\n"})
    os.chmod(root, 0o777)
    os.chmod(root / "shared.txt", 0o666)
    os.chown(root / "mine.txt", NOBODY, NOBODY)
    (open_dir / "state").mkdir(mode=0o777)
    os.chmod(open_dir / "state", 0o777)
    monkeypatch.setenv(files.STATE_DIR_ENV, str(open_dir / "state"))
    (open_dir / "p").write_text(_update("mine.txt", "shared.txt"))
    args = ("apply-patch", "--root", str(root), "--json")
    dry = _as_nobody(_cli_json(*args, "--dry-run", str(open_dir / "p")))
    rc, result = _as_nobody(_cli_json(*args, str(open_dir / "p")))
    assert dry == (rc, result)
    assert rc == 1, result
    assert result["code"] == "DENIED" and result["details"]["reason"] == "OWNER", result
    assert result["details"]["path"] == "shared.txt"
    assert "nothing was changed" in result["message"]
    assert tree(root) == {"shared.txt": b"old\n", "mine.txt": b"old\n"}
    assert (root / "shared.txt").stat().st_uid == 0


def test_a_folder_nobody_may_not_write_is_refused_alike_by_dry_run_and_apply(
    open_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EACCES as a plain user (root bypasses modes): the dry run and the apply give the same
    DENIED result, and nothing changes."""
    _need_root()
    root = open_dir / "ws"
    make(root, {"ro/a.txt": b"old\n", "rw/b.txt": b"old\n"})
    os.chmod(root / "ro/a.txt", 0o666)
    os.chown(root / "rw", NOBODY, NOBODY)
    os.chown(root / "rw/b.txt", NOBODY, NOBODY)
    (open_dir / "state").mkdir()
    os.chmod(open_dir / "state", 0o777)
    monkeypatch.setenv(files.STATE_DIR_ENV, str(open_dir / "state"))
    (open_dir / "p").write_text(_update("rw/b.txt", "ro/a.txt"))
    args = ("apply-patch", "--root", str(root), "--json")
    dry = _as_nobody(_cli_json(*args, "--dry-run", str(open_dir / "p")))
    real = _as_nobody(_cli_json(*args, str(open_dir / "p")))
    assert dry == real, (dry, real)
    rc, result = real
    assert rc == 1 and result["code"] == "DENIED", result
    assert result["details"]["folder"] == "ro" and result["details"]["reason"] == "READ_ONLY"
    assert tree(root) == {"ro/a.txt": b"old\n", "rw/b.txt": b"old\n"}


@pytest.fixture
def mounts() -> Iterator[list[str]]:
    """Mount points to unmount afterwards, whatever happened."""
    made: list[str] = []
    try:
        yield made
    finally:
        for point in reversed(made):
            subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def _run(*cmd: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")


def test_a_read_only_mount_is_refused_alike_by_dry_run_and_apply(
    tmp_path: Path, state: Path, mounts: list[str]
) -> None:
    _need_root()
    root = tmp_path / "ws"
    make(root, {"ro/a.txt": b"old\n", "ro/gone.txt": b"x\n", "b.txt": b"old\n"})
    _run("mount", "--bind", str(root / "ro"), str(root / "ro"))
    mounts.append(str(root / "ro"))
    _run("mount", "-o", "remount,ro,bind", str(root / "ro"))
    for patch in (
        _update("b.txt", "ro/a.txt"),
        "*** Begin Patch\n*** Delete File: ro/gone.txt\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: ro/new.txt\n+x\n*** End Patch\n",
    ):
        dry = cli(
            "apply-patch", "--root", str(root), "--json", "--dry-run", "-", state=state, stdin=patch
        )
        real = cli("apply-patch", "--root", str(root), "--json", "-", state=state, stdin=patch)
        assert dry.stderr == real.stderr == ""
        assert dry.returncode == real.returncode == 1
        assert refusal(dry.stdout) == refusal(real.stdout)
        result = json.loads(real.stdout)
        assert result["code"] == "DENIED" and result["details"]["folder"] == "ro"
    assert tree(root) == {"ro/a.txt": b"old\n", "ro/gone.txt": b"x\n", "b.txt": b"old\n"}


def _small_ext4(tmp_path: Path, mounts: list[str], size: str = "4M") -> Path:
    image = tmp_path / "disk.img"
    _run("truncate", "-s", size, str(image))
    _run("mkfs.ext4", "-q", "-F", str(image))
    point = tmp_path / "mnt"
    point.mkdir()
    _run("mount", "-o", "loop", str(image), str(point))
    mounts.append(str(point))
    return point


def test_a_full_disk_mid_apply_is_a_clean_io_error(
    tmp_path: Path, state: Path, mounts: list[str]
) -> None:
    """ENOSPC on a real (loop-mounted) ext4 while the temporary files are written: IO_ERROR
    saying to free space, every file as it was, no temporary file left."""
    _need_root()
    root = _small_ext4(tmp_path, mounts) / "ws"
    old = {"a.txt": b"old\n", "d/b.txt": b"old\n"}
    make(root, old)
    big = "".join(f"+{'x' * 60} {i}\n" for i in range(80_000))  # ~5 MB: more than the disk
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n"
        f"*** Add File: d/big.txt\n{big}*** Update File: d/b.txt\n@@\n-old\n+new\n"
        "*** End Patch\n"
    )
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=state, stdin=patch)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    result = json.loads(proc.stdout)
    assert result["code"] == "IO_ERROR", result
    assert "No space left on device" in result["message"]
    assert "nothing was changed" in result["message"]
    assert "Free disk space" in result["hint"]
    assert {k: v for k, v in tree(root).items() if k != "lost+found"} == old
    assert not list(state.rglob(files.JOURNAL))


def test_a_full_disk_for_the_journal_and_an_unwritable_state_folder(
    tmp_path: Path, mounts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _need_root()
    disk = _small_ext4(tmp_path, mounts)
    root = tmp_path / "ws"
    make(root, {"a.txt": b"old\n"})
    patch = _update("a.txt")
    sdir = disk / "state"
    env_state = sdir
    # The state folder exists, the disk is then filled: the journal cannot be written.
    proc = cli("apply-patch", "--root", str(root), "--dry-run", "-", state=env_state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    for size in (1 << 20, 1 << 16, 1 << 10, 1):  # until not even a byte more fits
        try:
            while True:
                os.write(fd, b"\0" * size)
        except OSError:
            pass
    os.close(fd)
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=env_state, stdin=patch)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    result = json.loads(proc.stdout)
    assert result["code"] == "IO_ERROR" and "journal" in result["message"]
    assert (root / "a.txt").read_bytes() == b"old\n"
    # A state base that cannot be created (a regular file is in the way): a result, not a
    # traceback, from every command that needs it.
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    for args in (
        ("apply-patch", "--root", str(root), "--json", "-"),
        ("apply-patch", "--root", str(root), "--json", "--dry-run", "-"),
        ("replace", "--root", str(root), "--json", "a.txt", "old", "new"),
    ):
        proc = cli(*args, state=blocker / "sub", stdin=patch)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        result = json.loads(proc.stdout)
        assert result["code"] == "IO_ERROR" and result["details"]["reason"] == "STATE_DIR"
        assert "AGENT_EDIT_STATE_DIR" in result["hint"]
    assert (root / "a.txt").read_bytes() == b"old\n"


@pytest.mark.parametrize(
    "patch",
    [
        "*** Begin Patch\n*** Add File: f.txt/new.txt\n+hi\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: f.txt/deeper/new.txt\n+hi\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: g.txt\n*** Move to: f.txt/g.txt\n@@\n-x\n+y\n"
        "*** End Patch\n",
    ],
)
def test_a_path_under_a_regular_file_is_refused_by_dry_run_and_apply(
    tmp_path: Path, state: Path, patch: str
) -> None:
    root = tmp_path / "ws"
    old = {"f.txt": b"x\n", "g.txt": b"x\n"}
    make(root, old)
    args = ("apply-patch", "--root", str(root), "--json")
    dry = cli(*args, "--dry-run", "-", state=state, stdin=patch)
    real = cli(*args, "-", state=state, stdin=patch)
    assert dry.stderr == real.stderr == "", real.stderr
    assert dry.returncode == real.returncode == 1
    assert refusal(dry.stdout) == refusal(real.stdout)
    result = json.loads(real.stdout)
    assert result["code"] == "NOT_FOUND", result
    assert result["details"]["reason"] == "PARENT_NOT_A_FOLDER"
    assert result["details"]["parent"] == "f.txt"
    assert "f.txt is a file, not a folder" in result["message"]
    assert tree(root) == old


def test_deleting_a_symlink_removes_the_link_not_its_target(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    make(root, {"target.txt": b"keep me\n"})
    (root / "link.txt").symlink_to("target.txt")
    patch = "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n"
    dry = cli("apply-patch", "--root", str(root), "--dry-run", "-", state=state, stdin=patch)
    assert dry.returncode == 0 and "D link.txt" in dry.stdout, dry.stdout + dry.stderr
    proc = cli("apply-patch", "--root", str(root), "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    assert "D link.txt" in proc.stdout
    assert not (root / "link.txt").is_symlink() and not (root / "link.txt").exists()
    assert (root / "target.txt").read_bytes() == b"keep me\n"


def test_moving_a_symlink_moves_the_link_and_keeps_its_target(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    make(root, {"d/target.txt": b"old\n"})
    (root / "link.txt").symlink_to("d/target.txt")
    patch = (
        "*** Begin Patch\n*** Update File: link.txt\n*** Move to: moved.txt\n@@\n-old\n+new\n"
        "*** End Patch\n"
    )
    proc = cli("apply-patch", "--root", str(root), "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stderr
    assert "R link.txt -> moved.txt" in proc.stdout
    assert not os.path.lexists(root / "link.txt")
    assert (root / "moved.txt").read_bytes() == b"new\n" and not (root / "moved.txt").is_symlink()
    assert (root / "d/target.txt").read_bytes() == b"old\n"


@pytest.mark.parametrize("crash_after", [1, 2])
def test_a_deleted_symlink_is_put_back_as_a_link(
    tmp_path: Path, state: Path, crash_after: int
) -> None:
    root = tmp_path / "ws"
    make(root, {"target.txt": b"keep me\n", "a.txt": b"old\n"})
    (root / "link.txt").symlink_to("target.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** Delete File: link.txt\n"
        "*** End Patch\n"
    )
    proc = apply_killed_after(crash_after + 1, root, patch, state)  # 1 temp file first
    assert proc.returncode == -signal.SIGKILL
    (report,) = files.recover(str(root))
    assert report["conflicts"] == [] and report["failed"] == []
    assert os.readlink(root / "link.txt") == "target.txt"
    assert (root / "target.txt").read_bytes() == b"keep me\n"
    assert (root / "a.txt").read_bytes() == b"old\n"


def test_a_symlink_replaced_before_its_delete_is_stale(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    make(root, {"target.txt": b"keep me\n", "other.txt": b"x\n"})
    (root / "link.txt").symlink_to("target.txt")
    ws = str(root)

    async def plan_it() -> Any:  # as the CLI plans it (actions/headless.py)
        async with headless.open(ws) as ctx:
            return ctx.plan_patch(
                "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n",
                lambda p: ctx.snapshot(ctx.resolve(p)),
            )

    plan = startup.run_sync(plan_it())
    (root / "link.txt").unlink()
    (root / "link.txt").symlink_to("other.txt")
    with pytest.raises(EditError) as info:
        files.apply_plan(ws, plan)
    assert info.value.code == Code.STALE and info.value.details["path"] == "link.txt"
    assert os.readlink(root / "link.txt") == "other.txt"


@pytest.mark.parametrize(
    "entry",
    [
        {"path": "../outside.txt", "op": "write", "pre": [0, 4], "newSha256": None, "tmp": None},
        {"path": "/etc/passwd", "op": "write", "pre": [0, 4], "newSha256": None, "tmp": None},
        {"path": "a.txt", "op": "write", "pre": [0, 4], "newSha256": None, "tmp": "../x.tmp"},
        {"path": "a.txt", "op": "write", "pre": [0, 1e400], "newSha256": None, "tmp": None},
        {"path": "a.txt", "op": "explode", "pre": None, "newSha256": None, "tmp": None},
    ],
)
def test_a_hostile_journal_is_set_aside_untouched(
    tmp_path: Path, state: Path, entry: dict[str, Any]
) -> None:
    root = tmp_path / "ws"
    make(root, {"a.txt": b"old\n"})
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"mine\n")
    sdir = Path(files.state_dir(str(root)))
    header = {"version": 2, "files": [entry], "dirs": [], "blobSize": 4}
    (sdir / files.JOURNAL).write_bytes(json.dumps(header).encode() + b"\nEVIL")
    (report,) = files.recover(str(root))
    assert "unreadable" in report["conflicts"][0]["why"]
    assert outside.read_bytes() == b"mine\n"
    assert tree(root) == {"a.txt": b"old\n"}


def test_sigkill_at_random_steps_of_a_400_file_apply(tmp_path: Path, state: Path) -> None:
    """SIGKILL at random steps of a 400-file apply (with an added and a deleted file); each
    time the next run (here a dry run, which recovers first) rolls everything back and says
    so. The seed is printed on failure."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    root = tmp_path / "large"
    old, patch = _large(root)
    make(root, {"gone.txt": b"deleted content\n"})
    old["gone.txt"] = b"deleted content\n"
    patch = patch.replace(
        "*** Update File: d0/f0.py\n",
        "*** Delete File: gone.txt\n*** Add File: new/new.txt\n+new\n*** Update File: d0/f0.py\n",
    )
    for crash_after in sorted(rng.sample(range(1, 803), 4)):
        proc = apply_killed_after(crash_after, root, patch, state)
        assert proc.returncode == -signal.SIGKILL, (seed, crash_after, proc.stderr)
        again = cli("apply-patch", "--root", str(root), "--dry-run", "-", state=state, stdin=patch)
        assert again.returncode == 0, (seed, crash_after, again.stderr)
        assert "rolled back an interrupted apply" in again.stderr, (seed, crash_after)
        assert tree(root) == old, (seed, crash_after)
        assert not (root / "new").exists(), (seed, crash_after)


def test_prepare_then_commit_or_abort(tmp_path: Path, state: Path) -> None:
    """The writer's two halves, for a mixed editor+disk edit: after `prepare_plan` nothing the
    user sees has changed (only temporary files exist); `commit()` puts everything in place,
    `abort()` removes every trace."""
    root = tmp_path / "ws"
    old, patch = _many(root, 3)
    ws = str(root)
    for finish in ("abort", "commit"):
        plan = plan_patch(patch, lambda p: files.read_snapshot(ws, p))
        with files.workspace_lock(ws) as sdir:
            prepared = files.prepare_plan(ws, sdir, plan)
            now = tree(root)
            assert {k: v for k, v in now.items() if ".agent-edit-" not in k} == old
            assert sum(".agent-edit-" in k for k in now) == 3
            if finish == "abort":
                report = prepared.abort()
                assert report["restored"] == [] and report["leftBehind"] == []
                assert tree(root) == old
            else:
                prepared.commit()
                assert tree(root) == {rel: data.upper() for rel, data in old.items()}
        assert not list(state.rglob(files.JOURNAL + "*"))


def test_recovery_in_a_workspace_folder_made_again_touches_nothing(
    tmp_path: Path, state: Path
) -> None:
    """Killed mid-apply; the workspace folder is then moved away and made again (a fresh clone
    at the same path): its files are not the apply's, so nothing is put back into it and the
    journal is kept for a human."""
    root = tmp_path / "ws"
    make(root, {"a.txt": b"old\n", "b.txt": b"old\n"})
    proc = apply_killed_after(3, root, _update("a.txt", "b.txt"), state)  # a.txt renamed
    assert proc.returncode == -signal.SIGKILL
    os.rename(root, tmp_path / "old-ws")  # kept: the new folder cannot reuse its inode
    make(root, {"a.txt": b"clone\n", "b.txt": b"clone\n"})
    (report,) = files.recover(str(root))
    assert report["restored"] == [] and report["unreached"]
    assert tree(root) == {"a.txt": b"clone\n", "b.txt": b"clone\n"}
    assert list(state.rglob(files.JOURNAL + ".unreached-*"))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_ENTRY_KEYS = st.sampled_from(
    ["path", "op", "pre", "newSha256", "tmp", "mode", "uid", "gid", "link"]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    raw=st.binary(max_size=200),
    header=st.dictionaries(
        st.sampled_from(["version", "files", "dirs", "folders", "blobSize", "time", "pid"]),
        _JSON
        | st.lists(
            st.dictionaries(
                _ENTRY_KEYS, _JSON | st.sampled_from(["a.txt", "write", "remove", "../x"])
            ),
            max_size=3,
        ),
    ),
    as_json=st.booleans(),
)
def test_any_journal_never_crashes_a_recovery_or_touches_a_file(
    tmp_path: Path, state: Path, raw: bytes, header: dict[str, Any], as_json: bool
) -> None:
    """Whatever the journal holds (any bytes, any JSON header), a recovery answers (a report
    or a clean IO_ERROR) and never changes a file it cannot prove the apply wrote."""
    root = tmp_path / "fuzz-ws"
    make(root, {"a.txt": b"old\n", "d/b.txt": b"old\n"})
    sdir = Path(files.state_dir(str(root)))
    data = (json.dumps(header).encode() + b"\n" + raw) if as_json else raw
    (sdir / files.JOURNAL).write_bytes(data)
    try:
        files.recover(str(root))
    except EditError as err:
        assert err.code == Code.IO_ERROR
    now = tree(root)
    # The existing files: never proven written by the apply (no journal names their current
    # sha256), so never touched. (A journal may name a file that does not exist: putting its
    # pre-image back is what recovery is for.)
    assert now["a.txt"] == b"old\n" and now["d/b.txt"] == b"old\n"
    assert not (tmp_path / "x").exists()  # "../x" is refused, never created
    for p in sdir.glob(files.JOURNAL + "*"):
        p.unlink()
