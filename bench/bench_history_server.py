"""History bar (issue 4) through the real server: N one-line edits on an open 100k-line buffer,
then the server's RSS and how fast `agentEdit.history` answers.

Every edit is a real replace (executeCommand -> journal -> applyEdit -> verified -> history).
Run from the repository root: `python bench/bench_history_server.py [N]` (default 10,000; at
~20 ms an edit that is a few minutes). The journal goes to a temporary state directory.
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


def make_text(n: int) -> str:
    return "".join(f"    value_{i} = compute(alpha, beta, gamma) + {i}\n" for i in range(n))


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def main(n_edits: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        (root / "big.txt").write_text(make_text(100_000))
        editor = MiniEditor(root)
        await editor.start(state_dir=str(Path(tmp) / "state"))
        pid = editor.client._server.pid  # type: ignore[union-attr]
        try:
            editor.open("big.txt")
            await editor.command("agentEdit.read", {"path": "big.txt"})
            print(f"server RSS after open: {rss_mb(pid):.1f} MB")
            start = time.perf_counter()
            for i in range(n_edits):
                line = (i * 7919) % 100_000  # spread over the file
                tag = "compute" if (i // 100_000) % 2 == 0 else "recompute"
                other = "recompute" if tag == "compute" else "compute"
                r = await editor.command(
                    "agentEdit.replace",
                    {
                        "path": "big.txt",
                        "oldText": f"value_{line} = {tag}(",
                        "newText": f"value_{line} = {other}(",
                    },
                )
                if not r["ok"]:
                    # Already flipped by an earlier pass over the same line: flip it back.
                    r = await editor.command(
                        "agentEdit.replace",
                        {
                            "path": "big.txt",
                            "oldText": f"value_{line} = {other}(",
                            "newText": f"value_{line} = {tag}(",
                        },
                    )
                assert r["ok"], r
            elapsed = time.perf_counter() - start
            print(f"{n_edits} edits in {elapsed:.1f} s ({elapsed / n_edits * 1000:.1f} ms each)")
            print(f"server RSS after the edits: {rss_mb(pid):.1f} MB")
            times = []
            for _ in range(7):
                t0 = time.perf_counter()
                h = await editor.command("agentEdit.history", {"format": "json"})
                times.append(time.perf_counter() - t0)
            print(
                f"agentEdit.history (json, latest {len(h['entries'])} of {h.get('total')} entries, "
                f"net diff): median {statistics.median(times) * 1000:.1f} ms"
            )
            # Right after the answers, their garbage (a net diff of 10,000 hunks is ~3.5 MB of
            # text, and its JSON twice that) is still in the heap: the server hands it back to
            # the OS once idle (malloc_trim ~50 ms after the last request).
            print(f"server RSS right after the history answers: {rss_mb(pid):.1f} MB")
            await asyncio.sleep(0.5)
            print(f"server RSS once idle: {rss_mb(pid):.1f} MB")
        finally:
            await editor.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
