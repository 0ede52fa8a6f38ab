"""The history package imports only what its import needs: `difflib` (1.8-5 ms here) is loaded by
the first line diff whose middle needs it, not by `import lsp_server.engine.history` (which every
server start and every `agent-edit history` / `undo` pays)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import lsp_server.engine.history
from lsp_server.engine.undo import line_diff
out = {"after_import": "difflib" in sys.modules}
# Trimmed to nothing, or one side empty: no difflib needed.
out["simple"] = [(e.start, e.end, list(e.new_lines)) for e in line_diff(["a\\n", "b\\n"], ["a\\n"])]
out["simple_difflib"] = "difflib" in sys.modules
out["middle"] = [
    (e.start, e.end, list(e.new_lines))
    for e in line_diff(["a\\n", "b\\n", "c\\n", "d\\n"], ["a\\n", "B\\n", "c\\n", "D\\n"])
]
out["middle_difflib"] = "difflib" in sys.modules
print(json.dumps(out))
"""


def test_difflib_is_imported_by_the_first_diff_that_needs_it() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["after_import"] is False
    assert out["simple"] == [[1, 2, []]] and out["simple_difflib"] is False
    assert out["middle"] == [[1, 2, ["B\n"]], [3, 4, ["D\n"]]]
    assert out["middle_difflib"] is True
