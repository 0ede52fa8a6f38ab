"""Benchmark: whole-process CLI applies of revisions of agent-edit against each other (A/B).

Each revision given (anything `git rev-parse` reads; `WORKTREE` is the checkout as it is now;
a folder holding an `lsp_server` package, such as a variant made by hand) is exported to a
temporary folder and byte-compiled; then rounds alternate between them, each run one
`python -m lsp_server apply-patch -` process on a fresh, flushed copy of bench_patch's
1,000-file tree (workload (a) of issue 3), run from inside that copy as bench_patch runs it
(`--workload big`: its workload (b), 1,000 chunks on one 100k-line file).
Medians of wall and CPU (the process and its children) are printed per revision;
`--instructions` counts what each process executed instead (valgrind's callgrind, ~50x slower
a run), which a loaded machine does not blur.

Why this exists: a whole apply swings by 20% from run to run here, so a change worth 5% only
shows when both versions alternate in one run. The process must start inside the tree: run
from a checkout, `python -m` finds that checkout's package before PYTHONPATH's.

    /work/venv/bin/python bench/bench_ab.py [--rounds N] [--journaled-fs] REV [REV ...]
    e.g.  bench/bench_ab.py HEAD~3 WORKTREE
          bench/bench_ab.py --instructions --rounds 3 --workload big main WORKTREE
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_patch  # noqa: E402 - the workload and the journaled file system

REPO = bench_patch.REPO


def export(rev: str, into: Path) -> Path:
    """`rev` of the package (or the worktree as it is) as a folder to put on PYTHONPATH."""
    into.mkdir(parents=True)
    if rev == "WORKTREE":
        shutil.copytree(REPO / "lsp_server", into / "lsp_server")
    elif (Path(rev) / "lsp_server").is_dir():
        shutil.copytree(Path(rev) / "lsp_server", into / "lsp_server")
    else:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", rev, "lsp_server"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    compileall.compile_dir(str(into / "lsp_server"), quiet=1)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("revs", nargs="+", help="git revisions, WORKTREE, or folders")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--journaled-fs", action="store_true", help="as in bench_patch.py")
    ap.add_argument(
        "--instructions", action="store_true", help="count instructions (valgrind) instead"
    )
    ap.add_argument(
        "--workload",
        choices=("many", "big"),
        default="many",
        help="bench_patch's 1,000-file patch (default) or its 1,000 chunks on one 100k-line file",
    )
    args = ap.parse_args()
    with bench_patch.work_dir(args.journaled_fs) as work:
        run(args, work)


def run(args: argparse.Namespace, work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        base = Path(scratch)
        repos = {rev: export(rev, base / f"rev{i}") for i, rev in enumerate(args.revs)}
        make = bench_patch.make_big if args.workload == "big" else bench_patch.make_many
        patch = make(base / "template").encode()
        trees = bench_patch.Trees(base / "template", old_harness=False)
        walls: dict[str, list[float]] = {rev: [] for rev in repos}
        cpus: dict[str, list[float]] = {rev: [] for rev in repos}
        counts: dict[str, list[int]] = {rev: [] for rev in repos}
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; trees in {work}")
        try:
            for _ in range(args.rounds):
                for rev, path in repos.items():
                    env = dict(
                        os.environ, PYTHONPATH=str(path), AGENT_EDIT_STATE_DIR=str(base / "state")
                    )
                    tree = trees.fresh()
                    if args.instructions:
                        from bench_startup import _callgrind  # it imports this module

                        argv = [sys.executable, "-m", "lsp_server", "apply-patch", "-"]
                        counts[rev].append(_callgrind(argv, tree, env, patch))
                        continue
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    t0 = time.perf_counter()
                    subprocess.run(
                        [sys.executable, "-m", "lsp_server", "apply-patch", "-"],
                        cwd=tree,
                        input=patch,
                        stdout=subprocess.DEVNULL,
                        env=env,
                        check=True,
                    )
                    walls[rev].append(time.perf_counter() - t0)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpus[rev].append(
                        after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                    )
        finally:
            trees.remove()
        for rev in repos:
            if args.instructions:
                n = ", ".join(f"{x / 1e6:.0f}" for x in sorted(counts[rev]))
                print(
                    f"{rev:>12}: median {statistics.median(counts[rev]) / 1e6:.1f} M instructions"
                    f"   (runs: {n})"
                )
                continue
            runs = ", ".join(f"{x * 1000:.0f}" for x in sorted(walls[rev]))
            print(
                f"{rev:>12}: median {statistics.median(walls[rev]) * 1000:.0f} ms wall, "
                f"{statistics.median(cpus[rev]) * 1000:.0f} ms CPU   (wall runs: {runs})"
            )
        if len(repos) == 2 and not args.instructions:
            # Each round's runs are neighbours in time, so their ratio cancels most of what a
            # loaded machine adds to both; its median is the figure to quote.
            a, b = walls.values()
            ratios = sorted(y / x for x, y in zip(a, b, strict=True))
            shown = ", ".join(f"{r:.2f}" for r in ratios)
            print(f"{'B/A':>12}: median {statistics.median(ratios):.3f} per round   ({shown})")


if __name__ == "__main__":
    main()
