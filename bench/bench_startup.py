"""Benchmark: what a small `agent-edit apply-patch` pays before it does any work (imports), A/B.

Each revision given (as bench_ab.py reads them: a git revision, `WORKTREE`, or a folder holding
an `lsp_server` package) is exported and byte-compiled; then rounds alternate between them. One
run is one fresh process applying a one-chunk patch to a one-file tree (a fresh copy each run),
the way the console script starts (`from lsp_server.cli import main`), under `-X importtime`.
Per revision it prints the medians of: the imports (the sum of the top-level cumulative times
from the first `lsp_server` import on: everything the CLI's path loads, the stdlib included,
interpreter start and `site` excluded), how many modules that is, and the whole process's wall
and CPU time (`-X importtime` adds a little to each import); then, for the last revision, the
modules that cost the most by their own (self) time. Issue 18's bar: imports <= 10 ms.

`--instructions` counts instead of timing: each run under valgrind's callgrind (~4 s a run), the
instructions the whole process executed, and those of an interpreter that only starts (`-c
pass`), so the difference is what the CLI's run costs past start-up. Counts do not move with the
machine's load (a shared 2-core machine's timings do, by tens of percent), so a few rounds
decide an A/B of a few percent.

    /work/venv/bin/python bench/bench_startup.py [--rounds N] [--top K] REV [REV ...]
    /work/venv/bin/python bench/bench_startup.py --instructions [--rounds N] REV [REV ...]
    e.g.  bench/bench_startup.py HEAD WORKTREE
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_ab  # noqa: E402 - the export of revisions

FILE = "".join(f"value_{j} = compute({j})\n" for j in range(200))
PATCH = (
    "*** Begin Patch\n*** Update File: mod.py\n@@\n value_9 = compute(9)\n"
    "-value_10 = compute(10)\n+value_10 = compute(10)  # changed\n value_11 = compute(11)\n"
    "*** End Patch\n"
)
RUN = "import sys\nfrom lsp_server.cli import main\nsys.exit(main(['apply-patch', '-']))\n"


def parse_importtime(stderr: str) -> tuple[float, int, dict[str, float]]:
    """Milliseconds of the imports from the first `lsp_server` one on, their module count, and
    each module's self time (ms)."""
    total_us = 0
    selfs: dict[str, float] = {}
    started = False
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|", 2)
        module = name.strip()
        started = started or module == "lsp_server"
        if not started:
            continue
        selfs[module] = int(self_us) / 1000
        if not name.startswith("  "):  # a top-level import: its cumulative time holds the rest
            total_us += int(cumulative_us)
    return total_us / 1000, len(selfs), selfs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("revs", nargs="+", help="git revisions, WORKTREE, or folders")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--top", type=int, default=15, help="modules listed by self time")
    ap.add_argument(
        "--instructions", action="store_true", help="count instructions (valgrind) instead"
    )
    args = ap.parse_args()
    if args.instructions:
        instructions(args)
        return
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        repos = {rev: bench_ab.export(rev, base / f"rev{i}") for i, rev in enumerate(args.revs)}
        imports: dict[str, list[float]] = defaultdict(list)
        counts: dict[str, list[int]] = defaultdict(list)
        walls: dict[str, list[float]] = defaultdict(list)
        cpus: dict[str, list[float]] = defaultdict(list)
        selfs: dict[str, list[float]] = defaultdict(list)
        last = list(repos)[-1]
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
        for _ in range(args.rounds):
            for rev, path in repos.items():
                tree = base / "tree"
                shutil.rmtree(tree, ignore_errors=True)
                tree.mkdir()
                (tree / "mod.py").write_text(FILE)
                env = dict(
                    os.environ, PYTHONPATH=str(path), AGENT_EDIT_STATE_DIR=str(base / "state")
                )
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, "-X", "importtime", "-c", RUN],
                    cwd=tree,
                    input=PATCH.encode(),
                    capture_output=True,
                    env=env,
                )
                walls[rev].append(time.perf_counter() - t0)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                cpus[rev].append(cpu)
                if proc.returncode != 0 or "changed" not in (tree / "mod.py").read_text():
                    raise SystemExit(f"{rev}: the apply failed: {proc.stderr.decode()[-2000:]}")
                ms, n, own = parse_importtime(proc.stderr.decode())
                imports[rev].append(ms)
                counts[rev].append(n)
                if rev == last:
                    for module, t in own.items():
                        selfs[module].append(t)
        for rev in repos:
            print(
                f"{rev:>12}: imports median {statistics.median(imports[rev]):.1f} ms "
                f"(min {min(imports[rev]):.1f}) for {statistics.median(counts[rev]):.0f} modules; "
                f"whole process {statistics.median(walls[rev]) * 1000:.1f} ms wall, "
                f"{statistics.median(cpus[rev]) * 1000:.1f} ms CPU"
            )
        print(f"most expensive by self time in {last} (median ms):")
        ranked = sorted(selfs.items(), key=lambda kv: -statistics.median(kv[1]))
        for module, times in ranked[: args.top]:
            print(f"  {statistics.median(times):6.2f}  {module}")


def _callgrind(argv: list[str], cwd: Path, env: dict[str, str], stdin: bytes) -> int:
    """The instructions `argv` executed, as valgrind's callgrind counts them."""
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env=env,
    )
    err = proc.stderr.decode()
    found = [line for line in err.splitlines() if "Collected :" in line]
    if proc.returncode != 0 or not found:
        raise SystemExit(f"{argv}: failed under valgrind: {err[-2000:]}")
    return int(found[-1].rsplit(":", 1)[1].replace(",", ""))


def instructions(args: argparse.Namespace) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")
    rounds = min(args.rounds, 5) if args.rounds == 21 else args.rounds  # 21: the timing default
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        repos = {rev: bench_ab.export(rev, base / f"rev{i}") for i, rev in enumerate(args.revs)}
        counts: dict[str, list[int]] = defaultdict(list)
        env0 = dict(os.environ, PYTHONHASHSEED="0", AGENT_EDIT_STATE_DIR=str(base / "state"))
        bare = [_callgrind([sys.executable, "-c", "pass"], base, env0, b"") for _ in range(2)]
        for _ in range(rounds):
            for rev, path in repos.items():
                tree = base / "tree"
                shutil.rmtree(tree, ignore_errors=True)
                tree.mkdir()
                (tree / "mod.py").write_text(FILE)
                env = dict(env0, PYTHONPATH=str(path))
                n = _callgrind([sys.executable, "-c", RUN], tree, env, PATCH.encode())
                if "changed" not in (tree / "mod.py").read_text():
                    raise SystemExit(f"{rev}: the apply failed")
                counts[rev].append(n)
        start = min(bare)
        print(f"interpreter start (-c pass): {start / 1e6:.1f} M instructions")
        for rev in repos:
            med = statistics.median(counts[rev])
            print(
                f"{rev:>12}: {med / 1e6:.1f} M instructions (median of {rounds}), "
                f"{(med - start) / 1e6:.1f} M past start-up"
            )


if __name__ == "__main__":
    main()
