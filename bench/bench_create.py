"""Benchmark: the cost of creating 1,000 empty files, and how recent deletions change it.

agent-edit's atomic apply creates one temporary file per file it rewrites; Codex's apply_patch
writes in place and creates none. On ext4 *without* a journal, creating a file skips every
inode freed in the last minute or so (the kernel's `recently_deleted` check, made only when
there is no journal), so the cost depends on what was deleted just before. This times, in the
20 folders of a fresh copy of bench_patch's 1,000-file tree, the creation of 1,000 empty files
(O_CREAT | O_EXCL, as the apply does), first with nothing deleted for a while in this
run, then right after deleting the files of 1, 3 and 5 earlier copies.

    /work/venv/bin/python bench/bench_create.py [--journaled-fs]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_patch  # noqa: E402 - the workload and the journaled file system


def create_all(tree: Path) -> float:
    files = sorted(p for p in tree.rglob("*.py"))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    t0 = time.perf_counter()
    for p in files:
        os.close(os.open(f"{p.parent}/.{p.name}.tmp", flags, 0o600))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--journaled-fs", action="store_true", help="as in bench_patch.py")
    args = ap.parse_args()
    with bench_patch.work_dir(args.journaled_fs) as work:
        run(work)


def run(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        base = Path(scratch)
        template = base / "template"
        bench_patch.make_many(template)
        n = 0

        def copy() -> Path:
            nonlocal n
            n += 1
            tree = base / f"copy-{n}"
            shutil.copytree(template, tree)
            os.sync()
            return tree

        print(f"trees in {work}")
        ms = create_all(copy()) * 1000
        print(f"  nothing deleted by this run (earlier deletions may count): {ms:.0f} ms")
        for deleted in (1, 3, 5):
            victims = [copy() for _ in range(deleted)]
            tree = copy()
            for v in victims:
                shutil.rmtree(v)
            ms = create_all(tree) * 1000
            print(f"  right after deleting {deleted * 1000:,} files: {ms:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
