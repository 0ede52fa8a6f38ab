"""The `agent-edit` command line: `serve` starts the language server; the rest work on disk.

The LSP layer is imported lazily inside `serve`, so headless commands start fast and never load
pygls.
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-edit",
        description="Apply coding agents' edits safely: a language server and a headless CLI.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the language server on stdio (what editors start)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        from lsp_server.lsp.server import serve

        serve()
        return 0
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
