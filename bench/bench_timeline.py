"""Benchmark: where one whole CLI apply of the 1,000-file bench patch spends its time, by phase.

Runs `python -m lsp_server apply-patch -` on fresh, flushed copies of bench_patch's "many"
tree (from inside each copy, as bench_patch runs it), with a wrapper that marks the end of
each phase (imports, recovery, reading and planning, the apply's steps, the flushes and
renames, the result) and prints the milliseconds between marks, one line per run
(`--workload big`: bench_patch's 1,000 chunks on one 100k-line file).

It patches private functions by name (files._steps, patching.plan_hunks, ...): a phase that
was renamed simply stops being marked.

    /work/venv/bin/python bench/bench_timeline.py [--runs N] [--journaled-fs]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_patch  # noqa: E402 - the workload and the journaled file system

REPO = bench_patch.REPO

# Runs in the measured process: marks phases, then runs the CLI as `python -m lsp_server`.
WRAPPER = r"""
import sys, time
T0 = time.perf_counter()
marks = []
def mark(name):
    marks.append((name, time.perf_counter()))
# As cli.main starts a headless command: dataclasses with their code cache, lean pathlib
# (imported here first, `main` would find dataclasses loaded and run without the cache).
from lsp_server import startup
if startup.lean_dataclasses():
    from lsp_server import cli
    cache = cli._code_cache_path(["apply-patch", "-"])
    if cache is not None:
        startup.cache_dataclass_code(cache)
startup.lean_pathlib()
from lsp_server import cli
from lsp_server.engine import files, patching, results
mark("imports")
def wrap(owner, name, label=None):
    fn = getattr(owner, name, None)
    if fn is None:
        return
    def marked(*args, **kwargs):
        got = fn(*args, **kwargs)
        mark(label or name)
        return got
    setattr(owner, name, marked)
from lsp_server.actions import execute
from lsp_server.engine.history import History
wrap(files, "recover_locked", "recovery")
wrap(patching, "parse_patch", "parse")
wrap(patching, "plan_hunks", "plan")
wrap(History, "begin", "history-begin")
wrap(execute, "plan_diff", "diff")  # made during the writer's first flush (16 files or more)
for name in ("_check_unchanged", "_steps", "_begin"):
    wrap(files, name)
wrap(files._Flusher, "flush", "flush")
wrap(files, "_each", "each")
wrap(results, "success", "result")
wrap(execute, "success", "result")  # its own name, bound at its import above
code = cli.main(["apply-patch", "-"])
mark("end")
prev, out = T0, []
for name, t in marks:
    out.append(f"{name} {1000 * (t - prev):.0f}")
    prev = t
sys.stderr.write("TIMELINE " + " | ".join(out) + f" || {1000 * (prev - T0):.0f} ms\n")
sys.exit(code)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--journaled-fs", action="store_true", help="as in bench_patch.py")
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
    import compileall

    compileall.compile_dir(str(REPO / "lsp_server"), quiet=1)
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        base = Path(scratch)
        make = bench_patch.make_big if args.workload == "big" else bench_patch.make_many
        patch = make(base / "template").encode()
        trees = bench_patch.Trees(base / "template", old_harness=False)
        env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(base / "state"))
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; trees in {work}")
        print("phase durations in ms, in the order they end (one line per run):")
        try:
            for _ in range(args.runs):
                proc = subprocess.run(
                    [sys.executable, "-c", WRAPPER],
                    cwd=trees.fresh(),
                    input=patch,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env=env,
                    check=True,
                )
                for line in proc.stderr.decode().splitlines():
                    if line.startswith("TIMELINE "):
                        print(" ", line[len("TIMELINE ") :], flush=True)
        finally:
            trees.remove()


if __name__ == "__main__":
    main()
