"""`history` builds only what its answer shows, and lets the server serve others meanwhile.

A session with one patch of thousands of files: the answer renders (and reads live) only the net
diff's first `netLimit` files, names at most ENTRY_FILES files per entry and says what it left
out; the generator yields between files, and the server's driver gives the loop a turn between
slices. Counted, never timed (bench/bench_history_scale.py has the figures).
"""

from __future__ import annotations

import asyncio

import pytest

from lsp_server.engine.history import ENTRY_FILES, NET_FILES, History, Tracked, drive
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_write
from lsp_server.engine.text import Snapshot
from lsp_server.lsp import server as server_module

FILES = 3000


@pytest.fixture(scope="module")
def session() -> History:
    h = History()
    changes = tuple(
        plan_write(Snapshot(f"d{i % 50}/f{i}.py", f"v = {i}\n"), f"v = -{i}\n")
        for i in range(FILES)
    )
    h.finish(h.begin(Plan("applyPatch", changes), {"patch": "..."}), "applied")
    h.record("replace", {"path": "x"}, outcome="dry-run")
    return h


def test_the_answer_renders_and_reads_only_the_files_it_shows(
    session: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered: list[str] = []
    real = Tracked.render

    def counting(self: Tracked) -> dict | None:
        rendered.append(self.path)
        return real(self)

    monkeypatch.setattr(Tracked, "render", counting)
    looked: list[str] = []

    def live(path: str) -> Snapshot | None:
        looked.append(path)
        return None

    out = session.to_json(live=live)
    assert len(out["net"]) == NET_FILES and len(rendered) == NET_FILES == len(looked)
    assert out["netCut"] and out["netFiles"] == FILES and "netLimit" in out["netNote"]
    patch = next(e for e in out["entries"] if e["action"] == "applyPatch")
    assert len(patch["files"]) == ENTRY_FILES and patch["filesTotal"] == FILES
    rendered.clear()
    text = session.to_diff_text(live, net_files=10)
    assert len(rendered) == 10 and "# net diff cut: the first 10 changed files" in text
    rendered.clear()
    small = session.to_json(limit=1, net_files=5)
    assert [e["action"] for e in small["entries"]] == ["replace"] and len(rendered) == 5
    assert small["total"] == 2


def test_the_whole_net_diff_is_still_there_when_asked(session: History) -> None:
    out = session.to_json(net_files=None)
    assert len(out["net"]) == FILES and "netCut" not in out


def test_the_generator_yields_between_entries_and_files(session: History) -> None:
    steps = 0
    gen = session.iter_json(net_files=50)
    while True:
        try:
            next(gen)
            steps += 1
        except StopIteration as stop:
            result = stop.value
            break
    assert steps >= 50 + 2 and len(result["net"]) == 50
    assert drive(session.iter_json(net_files=50))["net"] == result["net"]


@pytest.mark.asyncio
async def test_the_server_driver_lets_others_run_between_slices(
    session: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "SLICE_S", 0.0)  # one step a slice
    turns: list[int] = []
    done = asyncio.Event()

    async def reader() -> None:
        while not done.is_set():
            turns.append(1)
            await asyncio.sleep(0)

    task = asyncio.create_task(reader())
    await asyncio.sleep(0)
    out = await server_module.in_slices(session.iter_json(net_files=20))
    done.set()
    await task
    assert len(out["net"]) == 20 and len(turns) >= 20
