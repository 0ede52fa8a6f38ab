"""Benchmark: what recording one apply in the history costs, in-process (`History.begin` and
`finish` on a fresh journal), for bench_patch's workloads; no files are written.

The CLI records every apply in the history journal (issue 15); on the 1,000-file patch that
recording was ~40% of a whole apply. This times only that part, so a change to it shows without
a whole process's noise (whole applies: bench/bench_ab.py). Best and median of `--runs`.

    .venv/bin/python bench/bench_recording.py [--runs N] [--workload many|big]

Figures (the 1,000-file workload, --runs 5, old = 5be1f61 and new = this branch alternating four
times, on a loaded machine: load ~4 on 2 cores; best of each run, ms):
    begin   old 643 805 866 1264   new 590 695 816 852
    finish  old 134 175 270 337    new 111 134 163 212
    replay  old 382 691 704 719    new 269 353 584 603
Then (the pre-image pack, the result's diff reused, sync left to the writer's syncfs:
history/recording.py's docstring), CPU best of 5 on a machine at load 7-8, main 0941b12 vs
the branch: begin 258 -> 165 ms, finish 54 -> 41 ms, replay ~180 ms unchanged.
What moved them before: `History._begin` puts the entry it built into the state instead of
decoding its record again (recording.py), `compose`'s shortcut for a file's first edit
(history/netdiff.py, also every replay of such an entry), the journal's blob walk returning
short line lists whole.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_patch  # noqa: E402 - the workloads

from lsp_server.engine import files  # noqa: E402
from lsp_server.engine.diffing import plan_diff  # noqa: E402
from lsp_server.engine.history import History  # noqa: E402
from lsp_server.engine.journal import Journal  # noqa: E402
from lsp_server.engine.patching import plan_patch  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--workload", choices=("many", "big"), default="many")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        make = bench_patch.make_big if args.workload == "big" else bench_patch.make_many
        patch = make(root)
        plan = plan_patch(patch, lambda rel: files.read_snapshot(str(root), rel))
        times: dict[str, list[float]] = {"begin": [], "finish": [], "replay": []}
        for i in range(args.runs):
            state = Path(tmp) / f"state{i}"
            history = History.load(Journal(root, state))
            t0 = time.perf_counter()
            # As actions/execute.py calls it for a disk apply: with the result's diff, and not
            # fsynced when the writer's syncfs will make it durable.
            entry_id = history.begin(
                plan,
                {"patch": "..."},
                action="apply_patch",
                diff=plan_diff(plan.changes),
                sync=not files.flushes_state(plan),
            )
            t1 = time.perf_counter()
            history.finish(entry_id, "applied")
            t2 = time.perf_counter()
            History.load(Journal(root, state))  # what the next CLI run replays
            t3 = time.perf_counter()
            times["begin"].append(t1 - t0)
            times["finish"].append(t2 - t1)
            times["replay"].append(t3 - t2)
        size = os.path.getsize(Path(tmp) / "state0" / "journal.jsonl")
        print(f"{args.workload}: {len(plan.changes)} files, journal {size / 1e6:.1f} MB")
        for name, ts in times.items():
            best, median = min(ts) * 1000, statistics.median(ts) * 1000
            print(f"  {name:7s} best {best:6.1f} ms  median {median:6.1f} ms")


if __name__ == "__main__":
    main()
