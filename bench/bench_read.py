"""Benchmark: what the CLI does before parsing a 1,000-file patch (bench_patch's "many").

`cli._apply_patch` first finds the patch's `*** Update File:` lines and resolves and reads each
file (`cli._snapshot`: path policy, open/fstat/read, decode, Snapshot). This times exactly that
loop in fresh processes: once cold (the first time in the process, as in a CLI run, policy
creation and regex compiling included) and then warm (median of 15 more in the same process),
wall and CPU, with the cyclic GC off as the CLI runs. Medians (and minimums) over the processes.

    /work/venv/bin/python bench/bench_read.py [--runs N] [--repo CHECKOUT]

`--repo` times another checkout's lsp_server (e.g. main, for a before/after) with this script.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_patch import WORK, make_many  # noqa: E402

CHILD = """
import gc, json, statistics, sys, time
gc.disable()
from lsp_server import cli
from lsp_server.engine import files  # loaded by the CLI before this loop
root, text = sys.argv[1], open(sys.argv[2]).read()
# (Checkouts from before cli._update_paths found the headers with this regex.)
headers = getattr(cli, "_update_paths", None) or (
    lambda t: [m.group(1).strip() for m in cli._UPDATE_HEADER.finditer(t)]
)

def loop():
    cli._WALK_MEMO.clear()
    t, c = time.perf_counter(), time.process_time()
    for path in headers(text):
        cli._snapshot(root, path)
    return (time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3

cold = loop()
warm = [loop() for _ in range(15)]
print(json.dumps([*cold, *(statistics.median(w[i] for w in warm) for i in (0, 1))]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="fresh processes")
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to time (default: this)")
    args = ap.parse_args()
    compileall.compile_dir(str(args.repo / "lsp_server"), quiet=1)
    tree, patch = WORK / "read-tree", WORK / "read-patch.txt"
    WORK.mkdir(parents=True, exist_ok=True)
    patch.write_text(make_many(tree))
    env = dict(os.environ, PYTHONPATH=str(args.repo))
    rows = []
    for _ in range(args.runs):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(tree), str(patch)],
            cwd=args.repo,  # (`-c` puts the current directory first on sys.path)
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        rows.append(json.loads(out))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.runs} processes")
    names = ["cold wall", "cold CPU", "warm wall", "warm CPU"]
    for i, name in enumerate(names):
        col = [r[i] for r in rows]
        print(f"  {name:9s} median {statistics.median(col):6.1f} ms   min {min(col):6.1f} ms")


if __name__ == "__main__":
    main()
