"""History at scale (issue 13), through the real server; prints figures, asserts nothing.

(a) `big-edit`: the median latency of a one-line `agentEdit.replace` on a small open buffer,
    before and after one edit of a 50 MB open buffer (its first touch journals its baseline),
    their ratio (bar: <= 2x), and the journal's size after it (the JSON lines, and the blob files
    beside them).
(b) `session`: a 100k-file session (one applyPatch entry over 100k files on disk, journaled by
    the engine, then replayed by a server start): how long `agentEdit.history` takes (json and
    diff formats), and the longest an `agentEdit.read` sent meanwhile waits for its answer (bar:
    history <= 1 s, read <= 100 ms). Also the engine's own `to_json` time, in this process.

Run from the repository root: `python bench/bench_history_scale.py [big-edit|session|all]
[--files N] [--mb M]`. Everything goes to a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.mini_editor import MiniEditor  # noqa: E402


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def replaces(editor: MiniEditor, first: int, n: int) -> list[float]:
    """Latency of `n` one-line replaces on small.py (lines first..first+n-1)."""
    times = []
    for i in range(first, first + n):
        start = time.perf_counter()
        r = await editor.command(
            "agentEdit.replace",
            {"path": "small.py", "oldText": f"line {i} = 1\n", "newText": f"line {i} = 2\n"},
        )
        times.append(time.perf_counter() - start)
        if not r["ok"]:
            raise SystemExit(f"replace failed: {r}")
    return times


async def big_edit(mb: int, n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        state = Path(tmp) / "state"
        (root / "small.py").write_text("".join(f"line {i} = 1\n" for i in range(2 * n + 10)))
        line = "    value = compute(alpha, beta, gamma)  # padding padding padding\n"
        count = mb * 1024 * 1024 // len(line)
        (root / "big.txt").write_text("".join(f"{i:08d}{line}" for i in range(count)))
        editor = MiniEditor(root)
        await editor.start(state_dir=str(state))
        try:
            editor.open("small.py")
            await editor.command("agentEdit.read", {"path": "small.py"})
            await replaces(editor, 0, 5)  # warm-up
            before = await replaces(editor, 5, n)
            editor.open("big.txt")
            start = time.perf_counter()
            r = await editor.command(
                "agentEdit.replace",
                {"path": "big.txt", "oldText": f"{count // 2:08d}    value", "newText": "X"},
            )
            big_s = time.perf_counter() - start
            if not r["ok"]:
                raise SystemExit(f"big edit failed: {r}")
            after = await replaces(editor, 5 + n, n)
        finally:
            await editor.stop()
        journal = next(state.rglob("journal.jsonl"))
        blobs = journal.parent / "blobs"
        b, a = statistics.median(before) * 1000, statistics.median(after) * 1000
        print(f"(a) one-line replace on a small buffer, {n} each, around one {mb} MB buffer edit")
        print(f"    before: median {b:.1f} ms   after: median {a:.1f} ms   ratio {a / b:.2f}x")
        print(f"    the {mb} MB edit itself: {big_s * 1000:.0f} ms")
        print(
            f"    journal after: {journal.stat().st_size / 1024:.1f} KiB of JSON lines, "
            f"{dir_size(blobs) / 1024 / 1024 if blobs.is_dir() else 0:.1f} MiB of blobs"
        )


def build_session(root: Path, state: Path, files: int) -> float:
    """`files` files on disk and a journal with one applyPatch entry over all of them."""
    os.environ["AGENT_EDIT_STATE_DIR"] = str(state)
    from lsp_server.engine.history import History
    from lsp_server.engine.journal import Journal
    from lsp_server.engine.model import Plan
    from lsp_server.engine.planner import plan_write
    from lsp_server.engine.text import Snapshot

    changes = []
    for i in range(files):
        rel = f"d{i % 1000}/f{i}.py"
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_text(f"v = -{i}\n")
        changes.append(plan_write(Snapshot(rel, f"v = {i}\n"), f"v = -{i}\n"))
    history = History(Journal(root))
    history.finish(history.begin(Plan("applyPatch", tuple(changes)), {"patch": "..."}), "applied")
    start = time.perf_counter()
    history.to_json(live=None)
    return time.perf_counter() - start


async def session(files: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        state = Path(tmp) / "state"
        (root / "probe.py").write_text("x = 1\n")
        engine_s = build_session(root, state, files)
        editor = MiniEditor(root)
        start = time.perf_counter()
        await editor.start(state_dir=str(state))
        await editor.command("agentEdit.read", {"path": "probe.py"})
        start_s = time.perf_counter() - start
        try:
            editor.open("probe.py")
            for fmt in ("json", "diff"):
                done = asyncio.Event()

                spans: list[tuple[float, float]] = []

                async def reads(done: asyncio.Event, spans: list[tuple[float, float]]) -> None:
                    while not done.is_set():
                        t0 = time.perf_counter()
                        await editor.command("agentEdit.read", {"path": "probe.py"})
                        spans.append((t0, time.perf_counter()))

                task = asyncio.create_task(reads(done, spans))
                await asyncio.sleep(0.05)
                t0 = time.perf_counter()
                r = await editor.command("agentEdit.history", {"format": fmt})
                t1 = time.perf_counter()
                hist_s = t1 - t0
                done.set()
                await task
                # The reads that were waiting while the history request was out.
                waits = [b - a for a, b in spans if b > t0 and a < t1] or [0.0]
                if not r["ok"]:
                    raise SystemExit(f"history failed: {r}")
                shown = len(r.get("net", [])) if fmt == "json" else r["diff"].count("diff --git")
                print(
                    f"(b) history ({fmt}) of a {files}-file session: {hist_s * 1000:.0f} ms "
                    f"({shown} files shown); reads meanwhile: {len(waits)}, longest wait "
                    f"{max(waits) * 1000:.1f} ms, median {statistics.median(waits) * 1000:.1f} ms"
                )
        finally:
            await editor.stop()
        print(
            f"    engine to_json in-process: {engine_s * 1000:.0f} ms; server start + first read "
            f"(replays the journal): {start_s * 1000:.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", nargs="?", default="all", choices=("big-edit", "session", "all"))
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--edits", type=int, default=30)
    args = parser.parse_args()
    if args.what in ("big-edit", "all"):
        asyncio.run(big_edit(args.mb, args.edits))
    if args.what in ("session", "all"):
        asyncio.run(session(args.files))


if __name__ == "__main__":
    main()
