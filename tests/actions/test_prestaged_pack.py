"""A large file's pre-image written ahead of its plan (History.prestage, through the headless
context's snapshots): taken by `begin` when the plan packs exactly it, removed otherwise, and
never a reason for a different result, history or rollback."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files, patching
from lsp_server.engine.blobs import BLOB_DIR, Blobs
from lsp_server.engine.history import recording
from lsp_server.engine.results import wire
from tests.editor_client import REPO

LINES = 30_000  # ~1.4 MB: past PRESTAGE_MIN


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def run(root: Path, name: str, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def big_tree(ws: Path) -> bytes:
    data = "".join(f"value_{i} = compute({i})  # padding text\n" for i in range(LINES)).encode()
    assert len(data) >= recording.PRESTAGE_MIN
    ws.mkdir()
    (ws / "big.py").write_bytes(data)
    (ws / "small.py").write_bytes(b"x = 1\n")
    return data


def patch_of(*sections: str) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


BIG = "*** Update File: big.py\n@@\n-value_20000 = compute(20000)  # padding text\n+changed = 1\n"
SMALL = "*** Update File: small.py\n@@\n-x = 1\n+x = 2\n"


def leftovers(state: Path) -> list[str]:
    """Temporary blob files left in the state folder (a prestaged pack nobody took)."""
    return sorted(p.name for p in state.rglob(f"{BLOB_DIR}/.*.tmp"))


def watch_pack_writes(monkeypatch: pytest.MonkeyPatch, owner: Any, planner: str) -> list[str]:
    """Events in order: "writer" (a `_PackWriter` made), "planned" (`owner.planner` returned),
    "put N" (a pack of N bytes written by `begin` itself)."""
    events: list[str] = []
    made = recording._PackWriter.__init__
    plan = getattr(owner, planner)
    put = Blobs.put_parts

    def writer(self: Any, *args: Any, **kwargs: Any) -> None:
        events.append("writer")
        made(self, *args, **kwargs)

    def planned(*args: Any, **kwargs: Any) -> Any:
        got = plan(*args, **kwargs)
        events.append("planned")
        return got

    def put_parts(self: Blobs, parts: Any, sync: bool = True) -> str:
        events.append(f"put {sum(map(len, parts))}")
        return put(self, parts, sync)

    monkeypatch.setattr(recording._PackWriter, "__init__", writer)
    monkeypatch.setattr(owner, planner, planned)
    monkeypatch.setattr(Blobs, "put_parts", put_parts)
    return events


def test_the_pack_is_written_while_the_plan_is_made(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    old = big_tree(ws)
    events = watch_pack_writes(monkeypatch, patching, "plan_hunks")
    result = run(ws, "applyPatch", {"patch": patch_of(BIG)})
    assert result["ok"], result
    # One writer, made while planning (the snapshot's read), and its pack taken by `begin`:
    # the pre-image is never written a second time.
    assert events[:2] == ["writer", "planned"], events
    assert events.count("writer") == 1 and f"put {len(old)}" not in events, events
    assert leftovers(state) == []
    # The pack is the history's baseline: undo puts the file back byte for byte.
    undone = run(ws, "undo", {"editId": result["editId"]})
    assert undone["ok"], undone
    assert (ws / "big.py").read_bytes() == old


def many_chunks(lines: int, every: int) -> str:
    """An Update File section of big.py with a one-line chunk every `every` lines."""
    out = ["*** Update File: big.py\n"]
    for i in range(every // 2, lines, every):
        out.append(f"@@\n-value_{i} = compute({i})  # padding text\n+value_{i} = changed({i})\n")
    return "".join(out)


@pytest.mark.parametrize("small_after", [False, True], ids=["one-section", "big-file-first"])
def test_the_cli_context_prestages_a_large_patch_planned_in_one_process(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch, small_after: bool
) -> None:
    """The CLI's context (`fork_plans`) plans a patch of SPLIT_PLAN_FROM_CHARS or more through
    split_plan. Only the reads split_plan makes before it forks must start no thread: a
    one-section patch (a big file's 1,000 chunks: it cannot be split) and a big file before
    the cut (read by the parent after the fork) keep their prestaged pack."""
    ws = tmp_path / "ws"
    old = big_tree(ws)
    section = many_chunks(LINES, 6)
    patch = patch_of(section, SMALL) if small_after else patch_of(section)
    assert len(patch) >= headless.SPLIT_PLAN_FROM_CHARS
    events = watch_pack_writes(monkeypatch, headless.HeadlessContext, "plan_patch")

    async def go() -> dict[str, Any]:
        async with headless.open(str(ws), fork_plans=True) as ctx:
            return wire(await actions.run(ctx, "applyPatch", {"patch": patch}))

    result = asyncio.run(go())
    assert result["ok"], result
    assert events[:2] == ["writer", "planned"], events
    if not small_after:  # the pack holds big.py alone: the prestaged one, taken
        assert events.count("writer") == 1 and f"put {len(old)}" not in events, events
    assert leftovers(state) == []
    undone = run(ws, "undo", {"editId": result["editId"]})
    assert undone["ok"], undone
    assert (ws / "big.py").read_bytes() == old


@pytest.mark.parametrize(
    "args",
    [
        {"patch": patch_of(BIG), "dryRun": True},
        {"patch": patch_of("*** Update File: big.py\n@@\n-no such line\n+x\n")},  # NO_MATCH
        {"patch": patch_of(BIG, "*** Update File: missing.py\n@@\n-a\n+b\n")},  # NOT_FOUND
    ],
    ids=["dry-run", "no-match", "second-file-refused"],
)
def test_a_pack_nobody_takes_is_removed(tmp_path: Path, state: Path, args: Any) -> None:
    ws = tmp_path / "ws"
    old = big_tree(ws)
    run(ws, "applyPatch", args)
    assert leftovers(state) == []
    assert (ws / "big.py").read_bytes() == old
    assert not [p for p in state.rglob(f"{BLOB_DIR}/*") if p.is_file()]  # nothing named


def test_a_plan_of_more_files_packs_them_all(tmp_path: Path, state: Path) -> None:
    ws = tmp_path / "ws"
    old = big_tree(ws)
    result = run(ws, "applyPatch", {"patch": patch_of(BIG, SMALL)})
    assert result["ok"], result
    assert leftovers(state) == []
    undone = run(ws, "undo", {"editId": result["editId"]})
    assert undone["ok"], undone
    assert (ws / "big.py").read_bytes() == old
    assert (ws / "small.py").read_bytes() == b"x = 1\n"


def test_a_file_edited_before_is_not_prestaged(tmp_path: Path, state: Path) -> None:
    """Tracked already (an earlier edit): its baseline is not packed again, so nothing is
    written ahead for it; a second edit and undoing both still give the old bytes."""
    ws = tmp_path / "ws"
    old = big_tree(ws)
    first = run(ws, "applyPatch", {"patch": patch_of(BIG)})
    sha = hashlib.sha256((ws / "big.py").read_bytes()).hexdigest()
    args = {"path": "big.py", "oldText": "value_7 = compute(7)", "newText": "seven = 7"}
    second = run(ws, "replace", {**args, "expect": {"sha256": sha}})
    assert first["ok"] and second["ok"], (first, second)
    assert leftovers(state) == []
    for edit in (second, first):
        assert run(ws, "undo", {"editId": edit["editId"]})["ok"]
    assert (ws / "big.py").read_bytes() == old


@pytest.mark.parametrize("step", ["1", "2"])
def test_killed_mid_apply_is_rolled_back_from_the_prestaged_pack(
    tmp_path: Path, state: Path, step: str
) -> None:
    """SIGKILL after the temporary file (1) and after the rename (2): the next run puts the
    file back from the pack that was written ahead."""
    ws = tmp_path / "ws"
    old = big_tree(ws)
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    env[files.CRASH_ENV] = step
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "apply-patch", "--root", str(ws), "-"],
        input=patch_of(BIG),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert run(ws, "history", {})["ok"]  # opening the workspace rolls the apply back
    assert (ws / "big.py").read_bytes() == old
    assert leftovers(state) == []
