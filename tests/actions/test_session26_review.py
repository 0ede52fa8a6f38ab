"""Adversarial review (session 26) of four changes, written without reading their own tests:

1. headless + split_plan: `History.prestage` suspended only around the reads made before the
   fork (`before_fork`), not the whole split planning;
2. startup.quick_thread_handoffs: the CLI runs with a 0.5 ms switch interval, restored after
   `cli.main`;
3. execute: a disk apply that flushes with syncfs makes its diff while the writer waits on the
   disk (`runs_meanwhile`, `History.begin(diff_later=True)` + `set_diff`);
4. blobs/recording: a many-file pack is staged in the pack writer's thread, small parts joined.

Each test is labelled FINDING (with a severity; it fails on the reviewed code) or CONFIRMATION
(a claim that held under attack; it passes).
"""

from __future__ import annotations

import _thread
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions, cli, startup
from lsp_server.actions import execute as execute_mod
from lsp_server.actions import headless
from lsp_server.engine import blobs as blobs_mod
from lsp_server.engine import files
from lsp_server.engine.history import open_history, recording
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.results import wire
from tests.editor_client import REPO

N_FILES = 20  # >= 16 writes: the disk writer flushes with syncfs (runs_meanwhile)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(files, "TEST_HOOK", None)
    return tmp_path / "state"


# -- helpers ------------------------------------------------------------------------------------


def file_text(i: int, lines: int = 120) -> str:
    """A file with distinct lines; a few carry CRLF or lone CR or non-ASCII text, and the last
    one has no final newline, so the diff and the byte-exact undo see every line shape."""
    eol = ["\n", "\r\n", "\r"][i % 3] if i % 4 == 0 else "\n"
    body = "".join(
        f"mod {i} line {k} {'é' if k % 17 == 0 else ''} pad pad pad{eol}" for k in range(lines)
    )
    return body + f"tail {i}" if i % 5 == 0 else body


def make_tree(root: Path, n: int = N_FILES, lines: int = 120, big: int = 0) -> dict[str, bytes]:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        p = root / f"d{i % 3}" / f"f{i}.txt"
        p.parent.mkdir(parents=True, exist_ok=True)
        data = file_text(i, lines).encode()
        if i == 1:
            data = b"\xef\xbb\xbf" + data  # a BOM
        p.write_bytes(data)
    if big:
        (root / "big.txt").write_bytes(b"".join(b"big line %d\n" % k for k in range(big)))
    return snapshot_tree(root)


def section(i: int) -> str:
    return (
        f"*** Update File: d{i % 3}/f{i}.txt\n@@\n mod {i} line 9  pad pad pad\n"
        f"-mod {i} line 10  pad pad pad\n+mod {i} line 10 CHANGED\n mod {i} line 11  pad pad pad\n"
    )


def make_patch(n: int = N_FILES, big: bool = False, extra: str = "") -> str:
    body = "".join(section(i) for i in range(n))
    if big:
        body += "*** Update File: big.txt\n@@\n big line 5\n-big line 6\n+BIG LINE 6\n big line 7\n"
    return "*** Begin Patch\n" + body + extra + "*** End Patch\n"


def snapshot_tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def run(root: Path, name: str, args: Any, fork_plans: bool = True, before: Any = None) -> Any:
    """One action through the headless context, driven as the CLI drives it (run_sync)."""

    async def go() -> Any:
        async with headless.open(str(root), fork_plans=fork_plans) as ctx:
            if before is not None:
                before(ctx)
            return wire(await actions.run(ctx, name, args))

    return startup.run_sync(go())


def blob_dir(state: Path) -> Path:
    (ws,) = (state / "workspaces").iterdir()
    return ws / "blobs"


def temps(state: Path) -> list[str]:
    d = state / "workspaces"
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.rglob("*.tmp"))


def strip(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("time", "pid", "startedAt")}
    if isinstance(o, list):
        return [strip(x) for x in o]
    return o


def history(root: Path) -> Any:
    return strip(run(root, "history", {"limit": 50}))


def the_entry(root: Path, edit_id: int) -> dict[str, Any]:
    (entry,) = [e for e in history(root)["entries"] if e["id"] == edit_id]
    return entry


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# == 2. quick_thread_handoffs ==================================================================


def test_confirmation_switch_interval_is_restored_after_main_returns_and_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONFIRMATION (change 2): cli.main restores the caller's switch interval on a normal
    return, on an error exit, on a Ctrl-C and on an exception escaping `_run`; inside it runs
    at 0.5 ms."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    was = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.0123)
        seen: list[float] = []
        real = cli._run

        def spy(args: Any) -> int:
            seen.append(sys.getswitchinterval())
            return real(args)

        monkeypatch.setattr(cli, "_run", spy)
        assert cli.main(["read", "--root", str(ws), "a.txt"]) == 0
        assert cli.main(["read", "--root", str(ws), "missing.txt"]) != 0
        assert seen == [0.0005, 0.0005]
        assert sys.getswitchinterval() == pytest.approx(0.0123)

        def interrupted(args: Any) -> int:
            raise KeyboardInterrupt

        monkeypatch.setattr(cli, "_run", interrupted)
        assert cli.main(["read", "--root", str(ws), "a.txt"]) == 130
        assert sys.getswitchinterval() == pytest.approx(0.0123)

        def broken(args: Any) -> int:
            raise RuntimeError("boom")

        monkeypatch.setattr(cli, "_run", broken)
        with pytest.raises(RuntimeError):
            cli.main(["read", "--root", str(ws), "a.txt"])
        assert sys.getswitchinterval() == pytest.approx(0.0123)
    finally:
        sys.setswitchinterval(was)


def test_finding_low_sub_microsecond_switch_interval_makes_main_raise_and_not_restore(
    tmp_path: Path,
) -> None:
    """FINDING (LOW, change 2): an in-process caller whose switch interval is below 1 us
    (sys.setswitchinterval(1e-7) is accepted; getswitchinterval() then says 0.0) gets a
    ValueError from `cli.main` instead of its exit code, and the interval is left at 0.5 ms:
    quick_thread_handoffs restores with sys.setswitchinterval(0.0), which Python refuses. The
    claim "restored after cli.main returns" did not hold for that caller. Fixed: the restore
    puts back a positive value under 1 us (the same 0 us)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    was = sys.getswitchinterval()
    try:
        sys.setswitchinterval(1e-7)
        before = sys.getswitchinterval()
        rc = cli.main(["read", "--root", str(ws), "a.txt"])  # raised ValueError before the fix
        assert rc == 0
        assert sys.getswitchinterval() == before
    finally:
        sys.setswitchinterval(was)


# == 3. the diff made while the writer waits on the disk ========================================


def _old_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow before change 3: the diff made before `begin` (runs_meanwhile False)."""
    monkeypatch.setattr(headless.DiskAttempt, "runs_meanwhile", property(lambda self: False))


def _scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tag: str, old: bool, hook: Any
) -> tuple[Any, Any, dict[str, bytes], list[str], list[bool]]:
    """Apply the 20-file patch on a fresh tree (in its own state folder) with `hook` as the disk
    writer's test hook; what the result, the history and the tree say, and whether the diff
    was made inside the writer's `_flush_while` (the meanwhile)."""
    root = tmp_path / tag / "ws"
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / tag / "state"))
    make_tree(root)
    with monkeypatch.context() as m:
        if old:
            _old_path(m)
        inside: list[bool] = []
        flag = threading.local()
        real_flush = files._flush_while
        real_diff = execute_mod.plan_diff

        def flush_while(flusher: Any, meanwhile: Any) -> None:
            flag.on = True
            try:
                real_flush(flusher, meanwhile)
            finally:
                flag.on = False

        def diff(changes: Any, *a: Any) -> str:
            inside.append(getattr(flag, "on", False))
            return real_diff(changes, *a)

        m.setattr(files, "_flush_while", flush_while)
        m.setattr(execute_mod, "plan_diff", diff)
        m.setattr(files, "TEST_HOOK", hook)
        try:
            result: Any = run(root, "applyPatch", {"patch": make_patch()})
        except KeyboardInterrupt:
            result = "KeyboardInterrupt"
    tree = snapshot_tree(root)
    hist = history(root)
    return strip(result), hist, tree, temps(tmp_path / tag / "state"), inside


def _hook_for(kind: str, root_of: Any) -> Any:
    fired: list[str] = []

    def hook(point: str, path: str) -> None:
        if kind == "stale" and point == "resolved" and not fired:
            fired.append(point)
            p = root_of() / "d1" / "f7.txt"
            p.write_bytes(p.read_bytes() + b"saved by the user\n")
        if kind == "oserror-written" and point == "written" and not fired:
            fired.append(point)
            raise OSError(errno.EIO, "Input/output error (injected)")
        if kind == "interrupt-written" and point == "written" and not fired:
            fired.append(point)
            raise KeyboardInterrupt
        if kind == "partial" and point == "renamed":
            fired.append(point)
            if len(fired) == 5:
                raise OSError(errno.EIO, "rename failed (injected)")
        if kind == "partial" and point == "putting-back" and "pb" not in fired:
            fired.append("pb")
            raise OSError(errno.EIO, "put back failed (injected)")

    return hook


@pytest.mark.parametrize("kind", ["ok", "stale", "oserror-written", "interrupt-written", "partial"])
def test_confirmation_diff_made_meanwhile_gives_what_the_diff_made_first_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """CONFIRMATION (change 3): a differential run of the same 20-file patch on identical trees,
    once as reviewed (diff made in the writer's meanwhile) and once with runs_meanwhile forced
    False (the flow before: diff made before begin), on success, a STALE refusal, an OSError
    and a Ctrl-C from the writer, and a PARTIAL (a rename and then the put-back failing): the
    same result (diff included), the same history (entry diffs included), the same tree."""
    runs = {}
    for old in (True, False):
        tag = f"{kind}-{'old' if old else 'new'}"
        runs[old] = _scenario(
            tmp_path, monkeypatch, tag, old, _hook_for(kind, lambda t=tag: tmp_path / t / "ws")
        )
    (r_old, h_old, t_old, tmp_old, in_old), (r_new, h_new, t_new, tmp_new, in_new) = (
        runs[True],
        runs[False],
    )
    assert r_new == r_old
    assert h_new == h_old
    assert t_new == t_old
    assert tmp_old == tmp_new == []
    if kind == "ok":
        assert r_new["status"] == "applied" and r_new["diff"].count("diff --git") == N_FILES
        assert in_new == [True] and in_old == [False]  # the new path really made it meanwhile


def test_confirmation_a_diff_that_raises_meanwhile_is_a_comment_and_the_edit_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONFIRMATION (change 3): plan_diff raising (in the meanwhile and again after) never
    turns the landed 20-file edit into an error: result and entry carry '# diff unavailable'."""
    root = tmp_path / "ws"
    make_tree(root)

    def broken(changes: Any, *a: Any) -> str:
        raise ValueError("diff bug")

    monkeypatch.setattr(execute_mod, "plan_diff", broken)
    res = run(root, "applyPatch", {"patch": make_patch()})
    assert res["status"] == "applied", res
    assert res["diff"] == "# diff unavailable: ValueError: diff bug\n"
    assert the_entry(root, res["editId"])["diff"] == res["diff"]
    undone = run(root, "undo", {"editId": res["editId"]})
    assert undone["ok"], undone


# == 4. the many-file pack staged in a thread ===================================================


def _pack_of(root: Path, state: Path, edit_id: int) -> bytes:
    journal = (next((state / "workspaces").iterdir()) / "journal.jsonl").read_text()
    for line in journal.splitlines():
        rec = json.loads(line)
        if rec.get("t") == "begin" and rec.get("id") == edit_id:
            return (blob_dir(state) / rec["pack"]).read_bytes()
    raise AssertionError("no begin record")


def test_confirmation_staged_pack_is_the_preimages_concatenated_and_undo_is_exact(
    tmp_path: Path, state: Path
) -> None:
    """CONFIRMATION (change 4): small parts (joined in groups), 64 KiB+ parts and a 1 MiB+
    file in one plan: the pack blob is the pre-images concatenated in plan order, its name
    their sha256; undo gives every byte back; nothing staged is left."""
    root = tmp_path / "ws"
    orig = make_tree(root, n=40, lines=120, big=120_000)
    (root / "mid.txt").write_bytes(b"".join(b"mid %d\n" % k for k in range(12_000)))  # ~100 KB
    orig = snapshot_tree(root)
    extra = "*** Update File: mid.txt\n@@\n mid 1\n-mid 2\n+MID 2\n mid 3\n"
    res = run(root, "applyPatch", {"patch": make_patch(40, big=True, extra=extra)})
    assert res["status"] == "applied", res
    pack = _pack_of(root, state, res["editId"])
    want = b"".join(orig[f["path"]] for f in res["files"])
    assert pack == want and sha(pack) in os.listdir(blob_dir(state))
    assert temps(state) == []
    undone = run(root, "undo", {"editId": res["editId"]})
    assert undone["ok"], undone
    assert snapshot_tree(root) == orig


@pytest.mark.parametrize("race", ["other-history", "collected", "both"])
def test_confirmation_a_staged_pack_that_does_not_fit_is_dropped_and_undo_is_exact(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch, race: str
) -> None:
    """CONFIRMATION (change 4): between the pack thread's start and begin's lock, another
    History journals an edit of one of the plan's files (the baselines differ: the staged
    pack must not be taken), and/or a compaction's clean-up removes the staged temporary (the
    commit must fail and begin write its own). The edit lands, nothing .tmp is left, the
    other process's edit is not lost, and undo restores every byte."""
    root = tmp_path / "ws"
    make_tree(root, n=30, lines=200)
    taken: list[Any] = []
    busy: list[bool] = []
    real_begin = recording.History._begin
    real_take = recording._PackWriter.take

    def begin(self: Any, *a: Any, **k: Any) -> Any:
        if busy:  # the other History's own begin, below
            return real_begin(self, *a, **k)
        busy.append(True)
        writer = a[-1] if a and isinstance(a[-1], recording._PackWriter) else k.get("writer")
        assert writer is not None, "no pack writer thread for a 30-file plan"
        if race in ("other-history", "both"):
            # A second handle on the journal records meanwhile (a file not locked by this
            # process's open workspace lock: files.apply_plan takes its own lock, so use the
            # history only, and change the file as that process would have).
            other = open_history(str(root))
            path = "d2/f2.txt"
            snap = files.read_snapshot(str(root), path, 10 << 20)
            plan = plan_patch(
                f"*** Begin Patch\n*** Update File: {path}\n@@\n-mod 2 line 1  pad pad pad\n"
                "+mod 2 line 1 other\n*** End Patch\n",
                lambda p: snap,
            )
            eid = other.begin(plan, {"patch": "other"})
            other.finish(eid, "applied")
        if race in ("collected", "both"):
            writer._join()
            d = blob_dir(state)
            blobs_mod.Blobs(d).collect({n for n in os.listdir(d) if not n.endswith(".tmp")})
        return real_begin(self, *a, **k)

    def take(self: Any, parts: Any) -> Any:
        sha_ = real_take(self, parts)
        taken.append(sha_)
        return sha_

    monkeypatch.setattr(recording.History, "_begin", begin)
    monkeypatch.setattr(recording._PackWriter, "take", take)
    before = snapshot_tree(root)
    res = run(root, "applyPatch", {"patch": make_patch(30)})
    monkeypatch.setattr(recording.History, "_begin", real_begin)
    assert res["status"] == "applied", res
    assert taken in ([None], []), taken  # never the staged pack
    assert temps(state) == []
    undone = run(root, "undo", {"editId": res["editId"]})
    assert undone["ok"], undone
    assert snapshot_tree(root) == before


def test_confirmation_ctrl_c_during_begin_while_the_pack_thread_runs_leaves_nothing(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONFIRMATION (change 4): a Ctrl-C in `begin` while the thread stages a 30-file pack: no
    file changed, no entry begun, no .tmp left once the context is closed; the next apply and
    its undo are exact."""
    root = tmp_path / "ws"
    orig = make_tree(root, n=30, lines=200)
    real = recording.History._begin
    seen: list[bool] = []

    def begin(self: Any, *a: Any, **k: Any) -> Any:
        seen.append(True)
        raise KeyboardInterrupt

    monkeypatch.setattr(recording.History, "_begin", begin)
    with pytest.raises(KeyboardInterrupt):
        run(root, "applyPatch", {"patch": make_patch(30)})
    monkeypatch.setattr(recording.History, "_begin", real)
    assert seen == [True]
    assert snapshot_tree(root) == orig
    assert temps(state) == []
    res = run(root, "applyPatch", {"patch": make_patch(30)})
    assert res["status"] == "applied"
    assert run(root, "undo", {"editId": res["editId"]})["ok"]
    assert snapshot_tree(root) == orig


@pytest.mark.parametrize("outcome", ["dry-run", "stale"])
def test_confirmation_dry_run_and_refusal_leave_no_staged_file(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    """CONFIRMATION (change 4): with a prestaged 1 MiB+ file and a 30-file pack thread, a dry
    run and a STALE refusal leave no .tmp in the blobs folder."""
    root = tmp_path / "ws"
    orig = make_tree(root, n=30, lines=200, big=120_000)
    args: dict[str, Any] = {"patch": make_patch(30, big=True)}
    if outcome == "dry-run":
        args["dryRun"] = True
    else:

        def hook(point: str, path: str) -> None:
            if point == "resolved":
                p = root / "d0" / "f3.txt"
                p.write_bytes(p.read_bytes() + b"x\n")

        monkeypatch.setattr(files, "TEST_HOOK", hook)
    res = run(root, "applyPatch", args)
    assert res.get("status") == "dry-run" or res.get("code") == "STALE", res
    assert temps(state) == []
    if outcome == "dry-run":
        assert snapshot_tree(root) == orig


# -- a full disk (a small tmpfs holding the state folder) --------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Any:
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=900k", "tmpfs", str(mnt)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr!r}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_confirmation_full_disk_refuses_whole_and_leaves_no_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_fs: Path
) -> None:
    """CONFIRMATION (change 4): the state folder on a 900 KiB tmpfs filled to leave from 0 to
    ~600 KiB free: each 30-file apply (a ~250 KiB pack staged in the thread) either lands (then
    undo is exact) or is refused with every file as it was; no .tmp is ever left."""
    state = small_fs / "state"
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(state))
    outcomes: list[str] = []
    for free_kb in (0, 40, 80, 120, 160, 200, 240, 280, 320, 400, 600):
        root = tmp_path / f"ws{free_kb}"
        orig = make_tree(root, n=30, lines=150)
        shutil.rmtree(state, ignore_errors=True)
        filler = small_fs / "filler"
        filler.unlink(missing_ok=True)
        st = os.statvfs(small_fs)
        size = max(0, st.f_bavail * st.f_frsize - free_kb * 1024)
        with open(filler, "wb") as f:
            try:
                f.write(b"\0" * size)
            except OSError:
                pass
        try:
            res = run(root, "applyPatch", {"patch": make_patch(30)})
        except Exception as exc:  # noqa: BLE001 - a state folder that cannot be used at all
            res = {"ok": False, "code": type(exc).__name__}
        assert temps(state) == [], (free_kb, temps(state))
        outcomes.append(str(res.get("status") or res.get("code")))
        if res.get("status") == "applied":
            filler.unlink()
            undone = run(root, "undo", {"editId": res["editId"]})
            assert undone["ok"], (free_kb, undone)
            assert snapshot_tree(root) == orig, free_kb
        else:
            assert snapshot_tree(root) == orig, (free_kb, res)
        filler.unlink(missing_ok=True)
    print(outcomes)
    assert "applied" in outcomes and any(o != "applied" for o in outcomes), outcomes


# -- SIGKILL at every step of a many-file apply (the real CLI) ----------------------------------


def _cli(ws: Path, state: Path, args: list[str], inp: str | None = None, crash: int = 0) -> Any:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    env.pop(files.CRASH_ENV, None)
    if crash:
        env[files.CRASH_ENV] = str(crash)
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=ws,
        input=inp,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("crash", [1, 10, 21, 22, 30, 41, 42])
def test_confirmation_sigkill_during_a_packed_apply_rolls_back_from_the_pack(
    tmp_path: Path, crash: int
) -> None:
    """CONFIRMATION (change 4): the CLI SIGKILLed at a step of a 21-file apply (20 small files
    staged in groups + a 1.1 MB prestaged-size file; the apply journal names the pack): the
    next run puts every file back byte for byte, and the entry is settled."""
    ws = tmp_path / "ws"
    state = tmp_path / "state"
    orig = make_tree(ws, big=120_000)
    done = _cli(ws, state, ["apply-patch", "--json", "-"], make_patch(big=True), crash=crash)
    assert done.returncode == -9, done.stderr
    listed = _cli(ws, state, ["history", "--json"])
    assert listed.returncode == 0, listed.stderr
    assert snapshot_tree(ws) == orig
    entries = json.loads(listed.stdout)["entries"]
    assert all(not e.get("unfinished") for e in entries), entries
    again = _cli(ws, state, ["apply-patch", "--json", "-"], make_patch(big=True))
    assert again.returncode == 0, again.stderr
    eid = json.loads(again.stdout)["editId"]
    undone = _cli(ws, state, ["undo", "--json", str(eid)])
    assert undone.returncode == 0, undone.stdout
    assert snapshot_tree(ws) == orig


# == 1. prestage around the fork =================================================================


def _big_section_tree(root: Path) -> dict[str, bytes]:
    """Files for a >= 256 KiB patch: 60 modules, plus two 1 MiB+ files, one in each half."""
    root.mkdir(parents=True)
    for i in range(60):
        (root / f"m{i}.py").write_text(
            "".join(f"v_{i}_{k} = {k}  # {'x' * 40}\n" for k in range(200))
        )
    for name in ("early_big.txt", "late_big.txt"):
        (root / name).write_bytes(b"".join(b"%s %d\n" % (name.encode(), k) for k in range(120_000)))
    return snapshot_tree(root)


def _big_patch() -> str:
    out = ["*** Begin Patch\n"]
    out.append(
        "*** Update File: early_big.txt\n@@\n early_big.txt 10\n-early_big.txt 11\n+EARLY\n"
        " early_big.txt 12\n"
    )
    for i in range(60):
        out.append(f"*** Update File: m{i}.py\n")
        for c in range(12):
            at = 5 + c * 15
            out.append("@@\n")
            out.extend(f" v_{i}_{k} = {k}  # {'x' * 40}\n" for k in range(at - 3, at))
            out.append(f"-v_{i}_{at} = {at}  # {'x' * 40}\n+v_{i}_{at} = -{at}  # changed\n")
            out.extend(f" v_{i}_{k} = {k}  # {'x' * 40}\n" for k in range(at + 1, at + 4))
    out.append(
        "*** Update File: late_big.txt\n@@\n late_big.txt 10\n-late_big.txt 11\n+LATE\n"
        " late_big.txt 12\n"
    )
    out.append("*** End Patch\n")
    return "".join(out)


def test_confirmation_no_thread_runs_or_is_starting_at_the_fork_and_split_equals_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONFIRMATION (change 1): a >= 256 KiB patch with a 1 MiB+ file in each half is planned
    in two processes; at the fork no thread runs and no prestaged writer exists (not even one
    started but not yet counted); the parent's big file is prestaged after the fork; result,
    tree and history equal planning in order; undo is exact."""
    from lsp_server import split_plan

    patch = _big_patch()
    assert len(patch) >= headless.SPLIT_PLAN_FROM_CHARS
    at_fork: list[tuple[int, bool]] = []
    events: list[str] = []
    ctxs: list[Any] = []
    real_fork = os.fork

    def fork() -> int:
        ctx = ctxs[-1]
        at_fork.append((_thread._count(), ctx.history._early is not None))
        return real_fork()

    prestaged: list[str] = []
    real_prestage = recording.History.prestage

    def prestage(self: Any, path: str, data: bytes) -> None:
        had = self._early
        real_prestage(self, path, data)
        if self._early is not None and self._early is not had:
            prestaged.append(path)

    results = {}
    for mode in ("split", "order"):
        root = tmp_path / mode / "ws"
        monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / mode / "state"))
        orig = _big_section_tree(root)
        with monkeypatch.context() as m:
            m.setattr(os, "fork", fork)
            m.setattr(recording.History, "prestage", prestage)
            m.setattr(split_plan, "TEST_HOOK", lambda point, detail: events.append(point))
            prestaged.clear()
            res = run(
                root, "applyPatch", {"patch": patch}, fork_plans=mode == "split", before=ctxs.append
            )
        results[mode] = (strip(res), snapshot_tree(root), history(root), list(prestaged))
        assert run(root, "undo", {"editId": res["editId"]})["ok"]
        assert snapshot_tree(root) == orig
    assert "joined" in events, events
    assert at_fork == [(0, False)], at_fork
    assert results["split"][3] == ["early_big.txt"], results["split"][3]
    assert results["split"][:3] == results["order"][:3]


# == 4. (cont.) no thread to be had ==============================================================


def test_finding_low_medium_no_thread_for_the_pack_writer_escapes_as_runtimeerror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FINDING (LOW-MEDIUM, change 4): in a process that cannot start a thread (a pids cgroup
    or RLIMIT_NPROC at its limit: "can't start new thread"), a 20-file apply with >= 64 KiB of
    pre-images now raises RuntimeError out of `actions.run` (the CLI prints a traceback) and
    the attempt is not recorded in the history: `History.begin` starts `_PackWriter` for every
    pack (before: only packs of <= 4 files) and does not catch the RuntimeError, although
    `History.prestage` does ("no thread to be had: begin writes the pack itself"). At 94433f1
    the same apply was a clean IO_ERROR refusal, recorded, "nothing was changed". (Packs of
    <= 4 files had this defect before; the change extends it to every pack.) Nothing on disk
    changes either way. Fixed: `_PackWriter.start` gives no writer then, and `_pack` writes
    the pack in the calling thread, as for a small plan."""
    root = tmp_path / "ws"
    orig = make_tree(root, n=20, lines=150)

    def no_thread(*a: Any, **k: Any) -> Any:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as m:
        m.setattr(recording._thread, "start_new_thread", no_thread)
        m.setattr(threading, "_start_new_thread", no_thread)
        res = run(root, "applyPatch", {"patch": make_patch(20)})
    assert snapshot_tree(root) == orig
    # A result, not an exception: applied, or a refusal the history records.
    assert isinstance(res, dict) and ("status" in res or "code" in res), res
    assert any(e["action"] == "applyPatch" for e in history(root)["entries"])
