"""Benchmark: what a user of the real server hits on Python buffers, over stdio (issue 18's bars).

With the server as `python -m lsp_server serve` (syntax diagnostics on) and an editor-like
client whose buffers are line lists (so the client's own cost stays O(change)), per size
(default 100 / 10,000 / 100,000 lines):
- replace: a one-line `agentEdit.replace` round trip (clean -> clean, toggling a value);
  bars: 100k <= 3x 100 lines, 10k <= 2x;
- open: from sending didOpen of the buffer to the answer of the first request after it (an
  `agentEdit.read` of its first 20 lines); bar: 100k <= 10x 100 lines;
- typing: 400 one-character didChange notifications, then a round trip (`agentEdit.read` of
  one line) that is answered after they are processed; bar: 100k <= 3x 100 lines.
Medians over --runs. `--package-dir DIR` runs the server from another checkout (a folder holding
`lsp_server`, e.g. `git archive REV lsp_server | tar -x -C DIR`), for before/after figures.

Run from the repository root: `.venv/bin/python bench/bench_diagnostics_lsp.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lsprotocol import types as t  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import make_test_lsp_client  # noqa: E402

from lsp_server.lsp.documents import Document  # noqa: E402
from tests.editor_client import Doc, Editor, capabilities  # noqa: E402


def python_buffer(n_lines: int) -> str:
    return "".join(
        f"def f{i}(a, b):\n    x = [a, b, {i}]\n    return g(x, a) + {i}\n\n"
        for i in range(max(1, n_lines // 4))
    )


class LineEditor(Editor):
    """The test editor with O(change) buffers: its reference `offset_of` is O(file)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.buffers: dict[str, Document] = {}

    def prepare(self, rel: str, text: str) -> None:
        """The client's own buffer for `rel`, made before the timed didOpen."""
        buf = Document(self.uri(rel), rel, "python", 1, [])
        buf.replace_all(text)
        self.buffers[buf.uri] = buf

    def _change(self, doc: Doc, edits: list[tuple[t.Range, str]]) -> None:
        buf = self.buffers[doc.uri]
        changes = []
        for rng, new in edits:
            buf.replace_range(
                (rng.start.line, rng.start.character),
                (rng.end.line, rng.end.character),
                new,
                self.encoding,
            )
            changes.append(t.TextDocumentContentChangePartial(range=rng, text=new))
        doc.version += 1
        self.client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
                content_changes=changes,
            )
        )


async def session(root: Path, package_dir: Path, state: Path) -> LineEditor:
    client = make_test_lsp_client()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(package_dir) + os.pathsep + str(REPO)
    env["AGENT_EDIT_STATE_DIR"] = str(state)
    await client.start_io(sys.executable, "-m", "lsp_server", "serve", env=env, cwd=str(root))
    editor = LineEditor(client, "visual-studio-code", root)
    await client.initialize_session(
        t.InitializeParams(
            capabilities=capabilities("visual-studio-code"),
            root_uri=from_fs_path(str(root)),
            workspace_folders=[t.WorkspaceFolder(uri=from_fs_path(str(root)) or "", name="ws")],
            initialization_options={"verifyTimeoutMs": 5000},
        )
    )
    return editor


async def measure(n_lines: int, runs: int, package_dir: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        "replace": [],
        "open": [],
        "open: client send": [],
        "typing": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        root, state = Path(tmp) / "ws", Path(tmp) / "state"
        root.mkdir()
        state.mkdir()
        editor = await session(root, package_dir, state)
        try:
            text = python_buffer(n_lines)
            target = (n_lines // 4) // 2
            for run in range(runs + 1):
                rel = f"m{run}.py"
                editor.write_file(rel, text)
                editor.prepare(rel, text)
                t0 = time.perf_counter()
                editor.open(rel, text, language_id="python")
                sent = time.perf_counter() - t0  # the client's JSON encoding and write
                first = await editor.command(
                    "agentEdit.read", {"path": rel, "startLine": 1, "endLine": 20}
                )
                opened = time.perf_counter() - t0
                assert first["ok"], first
                await asyncio.sleep(0.5 + n_lines / 40_000)  # let a parse on open finish
                trips = []
                for i in range(6):
                    old, new = (f"[a, b, {target}]", f"[a, b, -{target}]")
                    if i % 2:
                        old, new = new, old
                    t1 = time.perf_counter()
                    result = await editor.command(
                        "agentEdit.replace", {"path": rel, "oldText": old, "newText": new}
                    )
                    trips.append(time.perf_counter() - t1)
                    assert result["ok"] and not result["diagnostics"], result
                line = 4 * target + 3  # the blank line after f{target}
                t2 = time.perf_counter()
                for k in range(400):
                    editor.type(rel, line, k, "x")
                await editor.command("agentEdit.read", {"path": rel, "startLine": 1, "endLine": 1})
                typed = time.perf_counter() - t2
                editor.client.text_document_did_close(
                    t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(
                        uri=editor.uri(rel)))
                )  # fmt: skip
                if run:  # the first run warms imports and caches
                    out["open"].append(opened)
                    out["open: client send"].append(sent)
                    out["replace"].append(statistics.median(trips[1:]))
                    out["typing"].append(typed)
        finally:
            await editor.client.shutdown_session()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="100,10000,100000")
    ap.add_argument("--package-dir", type=Path, default=REPO)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    med: dict[int, dict[str, float]] = {}
    for n in sizes:
        got = asyncio.run(measure(n, args.runs, args.package_dir))
        med[n] = {k: statistics.median(v) * 1000 for k, v in got.items()}
        print(
            f"{n:>7,} lines: replace round trip {med[n]['replace']:7.1f} ms | first answer "
            f"after didOpen {med[n]['open']:7.1f} ms (of which the client's send "
            f"{med[n]['open: client send']:5.1f} ms) | 400 keystrokes + round trip "
            f"{med[n]['typing']:7.1f} ms",
            flush=True,
        )
    small = sizes[0]
    for n in sizes[1:]:
        ratios = ", ".join(f"{k} {med[n][k] / med[small][k]:.2f}x" for k in med[n])
        print(f"{n:,} / {small:,} lines: {ratios}")
    print("bars: replace 100k <= 3x, 10k <= 2x; open 100k <= 10x; typing 100k <= 3x")


if __name__ == "__main__":
    main()
