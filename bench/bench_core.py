"""Core benchmarks (issue 2): didChange cost, and the replace round trip over stdio.

(a) One single-character incremental change applied by the server's document store, in a
    100-line and a 100k-line document (pygls's own TextDocument alongside, for scale).
(b) executeCommand -> workspace/applyEdit -> didChange -> verified result, over stdio with a real
    server process, for a one-line replace in an open 100-line and 100k-line buffer. The file is
    plain text, so this measures the edit machinery alone; the syntax diagnostics a Python file
    adds are measured by bench/bench_diagnostics_lsp.py.

Prints medians; run from the repository root: `python bench/bench_core.py`.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.mini_editor import MiniEditor  # noqa: E402
from lsp_server.engine.text import split_lines  # noqa: E402
from lsp_server.lsp.documents import Document  # noqa: E402


def make_text(n: int) -> str:
    return "".join(f"    value_{i} = compute(alpha, beta, gamma) + {i}\n" for i in range(n))


def bench_did_change(n_lines: int, reps: int = 20_000) -> float:
    doc = Document("file:///x.py", "/x.py", "python", 1, split_lines(make_text(n_lines)))
    mid = n_lines // 2
    times = []
    for i in range(reps):
        start = time.perf_counter()
        doc.replace_range((mid, 4 + i % 8), (mid, 4 + i % 8), "x", "utf-16")
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def bench_pygls_did_change(n_lines: int, reps: int = 50) -> float:
    from lsprotocol import types as t
    from pygls.workspace import TextDocument

    doc = TextDocument("file:///x.py", make_text(n_lines))
    mid = n_lines // 2
    times = []
    for _ in range(reps):
        pos = t.Position(line=mid, character=4)
        change = t.TextDocumentContentChangePartial(range=t.Range(start=pos, end=pos), text="x")
        start = time.perf_counter()
        doc.apply_change(change)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def bench_round_trip(n_lines: int, reps: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "big.txt").write_text(make_text(n_lines))
        editor = MiniEditor(root)
        await editor.start(state_dir=str(Path(tmp) / "state"))
        try:
            editor.open("big.txt", "plaintext")
            await editor.command("agentEdit.read", {"path": "big.txt"})
            mid = n_lines // 2
            a, b = f"value_{mid} = compute", f"value_{mid} = recompute"
            times = []
            for i in range(reps):
                old, new = (a, b) if i % 2 == 0 else (b, a)
                start = time.perf_counter()
                result = await editor.command(
                    "agentEdit.replace", {"path": "big.txt", "oldText": old, "newText": new}
                )
                times.append(time.perf_counter() - start)
                assert result["ok"], result
            return statistics.median(times[2:]) * 1000
        finally:
            await editor.stop()


def main() -> None:
    small, big = bench_did_change(100), bench_did_change(100_000)
    print("(a) didChange, one character, server document store (median)")
    print(f"    100 lines:     {small:.4f} ms")
    print(f"    100k lines:    {big:.4f} ms   ratio {big / small:.2f}x")
    print(
        f"    pygls TextDocument at 100k lines, for scale: {bench_pygls_did_change(100_000):.2f} ms"
    )
    small_rt = asyncio.run(bench_round_trip(100, 60))
    big_rt = asyncio.run(bench_round_trip(100_000, 30))
    print("(b) replace round trip over stdio: executeCommand -> applyEdit -> verified (median)")
    print(f"    100 lines:     {small_rt:.2f} ms")
    print(f"    100k lines:    {big_rt:.2f} ms   ratio {big_rt / small_rt:.2f}x")


if __name__ == "__main__":
    main()
