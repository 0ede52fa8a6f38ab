"""History benchmark (issue 4), engine level: the cost the history adds to each edit, and what a
long session leaves behind.

(a) begin + finish per edit (journal fsyncs included), on a 100-line and a 100k-line file.
(b) 10,000 one-line edits spread over a 100k-line file, then: process RSS, the time to build the
    `agentEdit.history` answer (`to_json`, all entries and the net diff) and the diff text, the
    journal's size on disk, and the time to reload the history from the journal.

Prints medians / figures; run from the repository root: `python bench/bench_history.py [N]`.
The journal goes to a temporary state directory.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lsp_server.engine.history import History  # noqa: E402
from lsp_server.engine.journal import ENV_STATE_DIR, Journal  # noqa: E402
from lsp_server.engine.model import Plan, apply_line_edits  # noqa: E402
from lsp_server.engine.planner import plan_replace  # noqa: E402
from lsp_server.engine.text import Snapshot, split_lines  # noqa: E402


def make_text(n: int) -> str:
    return "".join(f"    value_{i} = compute(alpha, beta, gamma) + {i}\n" for i in range(n))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def session(n_lines: int, n_edits: int, ws: Path) -> tuple[History, list[float], str]:
    history = History(Journal(ws))
    text = make_text(n_lines)
    lines = split_lines(text)
    rng = random.Random(4)
    times = []
    for k in range(n_edits):
        i = rng.randrange(n_lines)
        old = lines[i]
        snap = Snapshot("big.py", text, source="buffer", version=k, given_lines=lines)
        change = plan_replace(snap, old, old.replace("compute", f"recompute{k}", 1))
        plan = Plan("replace", (change,))
        start = time.perf_counter()
        entry_id = history.begin(plan, {"path": "big.py", "oldText": old})
        mid = time.perf_counter()
        new_text = change.new_text  # what the front end computes for verification anyway
        resume = time.perf_counter()
        # The server reports the version the editor's didChange gave the buffer.
        history.finish(entry_id, "applied", versions={"big.py": k + 1})
        times.append(mid - start + time.perf_counter() - resume)
        lines = apply_line_edits(lines, list(change.edits))
        text = new_text
    return history, times, text


def main() -> None:
    n_edits = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[ENV_STATE_DIR] = str(Path(tmp) / "state")
        for n_lines in (100, 100_000):
            ws = Path(tmp) / f"ws{n_lines}"
            ws.mkdir()
            _, times, _ = session(n_lines, 200, ws)
            print(
                f"(a) begin+finish per edit, {n_lines:>7} lines: "
                f"{statistics.median(times[10:]) * 1000:.3f} ms (median, fsync included)"
            )
        ws = Path(tmp) / "long"
        ws.mkdir()
        base_rss = rss_mb()
        start = time.perf_counter()
        history, times, text = session(100_000, n_edits, ws)
        total = time.perf_counter() - start
        print(
            f"(b) {n_edits} edits on a 100k-line file: {total:.1f} s in all, history share "
            f"{sum(times):.1f} s (median {statistics.median(times) * 1000:.2f} ms/edit)"
        )
        print(f"    RSS {rss_mb():.1f} MB (before the session {base_rss:.1f} MB)")
        for label, fn in (
            ("to_json (all entries + net diff)", lambda: history.to_json()),
            ("to_json, last 200 entries", lambda: history.to_json(limit=200)),
            ("to_diff_text (net diff)", lambda: history.to_diff_text()),
        ):
            fn()  # the net diff is cached after the first call; show both
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                out = fn()
                runs.append(time.perf_counter() - t0)
            size = len(json.dumps(out)) if isinstance(out, dict) else len(out)
            print(f"    {label}: {statistics.median(runs) * 1000:.1f} ms, {size / 1e6:.2f} MB")
        t0 = time.perf_counter()
        json.dumps(history.to_json())
        print(f"    to_json + json.dumps: {(time.perf_counter() - t0) * 1000:.1f} ms")
        j = history.journal
        assert j is not None
        print(f"    journal {j.size() / 1e6:.2f} MB at {j.path}")
        t0 = time.perf_counter()
        again = History.load(Journal(ws))
        print(
            f"    reload from the journal: {(time.perf_counter() - t0) * 1000:.0f} ms, "
            f"{len(again.entries)} entries, net diff equal: {again.net() == history.net()}"
        )


if __name__ == "__main__":
    main()
