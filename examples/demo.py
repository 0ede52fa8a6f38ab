"""See an agent edit happen: a real agent-edit server, an editor-like client, an example file.

Run from the repository root: `python examples/demo.py`. The example workspace is copied to a
temporary folder first, so the repository is never changed.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.mini_editor import MiniEditor  # noqa: E402


def show(title: str, result: dict) -> None:
    print(f"\n== {title}")
    if result.get("ok"):
        print(f"ok: {result.get('status', 'read')}", end="")
        if "editId" in result:
            print(f" (edit #{result['editId']})")
            print(result["diff"], end="")
        else:
            print(f" version {result['version']} sha256 {result['sha256'][:12]}…")
    else:
        print(f"refused: {result['code']}: {result['message']}")
        print(f"hint: {result['hint']}")


async def main() -> int:
    with tempfile.TemporaryDirectory(prefix="agent-edit-demo-") as tmp:
        root = Path(tmp) / "workspace"
        shutil.copytree(Path(__file__).parent / "workspace", root)
        editor = MiniEditor(root)
        await editor.start(state_dir=str(Path(tmp) / "state"))
        try:
            editor.open("app.py", "python")
            show(
                "agent reads app.py (the open buffer)",
                await editor.command("agentEdit.read", {"path": "app.py"}),
            )
            show(
                "agent replaces the port",
                await editor.command(
                    "agentEdit.replace",
                    {"path": "app.py", "oldText": "PORT = 8080", "newText": "PORT = 9090"},
                ),
            )
            show(
                "agent replaces text that occurs twice",
                await editor.command(
                    "agentEdit.replace",
                    {"path": "app.py", "oldText": 'return f"', "newText": "return f'"},
                ),
            )
            editor.type("app.py", 4, 0, "# the user typed this line\n")
            show(
                "the user typed in the buffer; the agent edits from its old view",
                await editor.command(
                    "agentEdit.replace",
                    {"path": "app.py", "oldText": '"localhost"', "newText": '"0.0.0.0"'},
                ),
            )
            print("\n== the buffer now (the user's line is intact):")
            print(editor.docs[editor.uri("app.py")].text, end="")
        finally:
            await editor.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
