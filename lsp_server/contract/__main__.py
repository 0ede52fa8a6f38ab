"""`python -m lsp_server.contract`: print the contract as JSON, or write/check the generated files.

python -m lsp_server.contract            # schemas, results, the VS Code tools block (JSON)
python -m lsp_server.contract --check    # exit 1 naming each generated file that drifted
python -m lsp_server.contract --write    # regenerate them (package.json, Neovim docs, README)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lsp_server.contract.export import export, render

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lsp_server.contract", description=__doc__)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="fail if a generated file drifted")
    what.add_argument("--write", action="store_true", help="regenerate the generated files")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    if not (args.check or args.write):
        sys.stdout.write(json.dumps(export(), indent=2, ensure_ascii=False) + "\n")
        return 0
    try:
        rendered = render(args.repo)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"{args.repo} is not a checkout this can render: {exc}\n")
        return 2
    drifted = []
    for rel, (now, wanted) in rendered.items():
        if now != wanted:
            drifted.append(rel)
            if args.write:
                (args.repo / rel).write_text(wanted, encoding="utf-8")
    verb = "rewrote" if args.write else "differs from the contract (run with --write)"
    for rel in drifted:
        sys.stderr.write(f"{rel}: {verb}\n")
    return 1 if drifted and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
