"""Benchmark: CLI applies in a row in one workspace: does an apply slow down as its history grows?

bench_patch.py and bench_ab.py time the first apply in a fresh workspace. An agent applies patch
after patch to the same files, and every CLI run reads the workspace's history journal back
(`History.load`: each earlier edit replayed). Here each revision gets one workspace (a copy of
bench_patch's tree) and applies its patch, then the patch reversed, then the patch again...
(`--applies` in all), the revisions taking turns so that they share the machine's noise. It
prints each apply's wall time, and per revision the last apply's time over the first's (what
the earlier edits cost it); with two revisions, the per-apply ratio B/A.

`--workload small`: a one-line patch (and back) on one of 30 small files, the edit an agent
makes most; with `--applies 600` or more it shows what a long session's history costs every
command (the journal keeps a bounded number of entries: history/replay.py KEPT_ENTRIES).
Past 32 applies, the times are printed as medians of tenths of the run.

    .venv/bin/python bench/bench_history_seq.py [--applies N] [--workload big|many|small] REV...
    e.g.  bench/bench_history_seq.py HEAD~1 WORKTREE
          bench/bench_history_seq.py --workload small --applies 600 HEAD~1 HEAD
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_patch  # noqa: E402 - the workloads and the journaled file system
from bench_ab import export  # noqa: E402 - a revision as a folder for PYTHONPATH


def reversed_patch(patch: str) -> str:
    """`patch` undone: every chunk's removed and added lines swapped (an Update File patch)."""
    out = []
    for line in patch.split("\n"):
        if line.startswith("-"):
            out.append("+" + line[1:])
        elif line.startswith("+"):
            out.append("-" + line[1:])
        else:
            out.append(line)
    return "\n".join(out)


def make_small(root: Path) -> str:
    """30 files of 300 lines, and a patch changing one line of one of them."""
    root.mkdir(parents=True, exist_ok=True)
    for k in range(30):
        (root / f"f{k}.py").write_text("".join(f"line_{j} = {j}\n" for j in range(300)))
    return (
        "*** Begin Patch\n*** Update File: f7.py\n@@\n line_10 = 10\n-line_11 = 11\n"
        "+line_11 = 11  # changed\n line_12 = 12\n*** End Patch\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("revs", nargs="+", help="git revisions, WORKTREE, or folders")
    ap.add_argument("--applies", type=int, default=16)
    ap.add_argument("--journaled-fs", action="store_true", help="as in bench_patch.py")
    ap.add_argument(
        "--workload",
        choices=("many", "big", "small"),
        default="big",
        help="bench_patch's 1,000 chunks on one 100k-line file (default), its 1,000-file patch, "
        "or a one-line patch on a small file",
    )
    args = ap.parse_args()
    with bench_patch.work_dir(args.journaled_fs) as work:
        run(args, work)


def run(args: argparse.Namespace, work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        base = Path(scratch)
        repos = {rev: export(rev, base / f"rev{i}") for i, rev in enumerate(args.revs)}
        make = {
            "big": bench_patch.make_big,
            "many": bench_patch.make_many,
            "small": make_small,
        }[args.workload]
        text = make(base / "template")
        patches = [text.encode(), reversed_patch(text).encode()]
        trees = {}
        for i, rev in enumerate(repos):
            trees[rev] = base / f"tree{i}"
            shutil.copytree(base / "template", trees[rev])
        os.sync()
        walls: dict[str, list[float]] = {rev: [] for rev in repos}
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; trees in {work}")
        for k in range(args.applies):
            for rev, path in repos.items():
                env = dict(
                    os.environ,
                    PYTHONPATH=str(path),
                    # One state base per revision: each reads only the journal it wrote.
                    AGENT_EDIT_STATE_DIR=str(base / f"state-{path.name}"),
                )
                t0 = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "lsp_server", "apply-patch", "-"],
                    cwd=trees[rev],
                    input=patches[k % 2],
                    stdout=subprocess.DEVNULL,
                    env=env,
                    check=True,
                )
                walls[rev].append(time.perf_counter() - t0)
        for rev, ws in walls.items():
            how, shown = _shown([w * 1000 for w in ws], "{:.0f}")
            print(f"{rev:>12}: ms per apply, {how}: {shown}")
            first = statistics.median(ws[:2])
            last = statistics.median(ws[-2:])
            print(f"{'':>12}  last two / first two (medians): {last / first:.2f}")
        if len(walls) == 2:
            a, b = walls.values()
            ratios = [y / x for x, y in zip(a, b, strict=True)]
            how, shown = _shown(ratios, "{:.2f}")
            print(f"{'B/A':>12}: {how}: {shown}")
            print(f"{'':>12}  median {statistics.median(ratios):.3f}, last {ratios[-1]:.3f}")


def _shown(values: list[float], fmt: str) -> tuple[str, str]:
    """`values` as printed: each in order, or past 32 the medians of each tenth of the run."""
    if len(values) <= 32:
        return "in order", ", ".join(fmt.format(v) for v in values)
    tenth = len(values) // 10
    parts = [values[i * tenth : (i + 1) * tenth] for i in range(10)]
    return "medians of each tenth of the run", ", ".join(
        fmt.format(statistics.median(p)) for p in parts
    )


if __name__ == "__main__":
    main()
