"""A server started with the disk writer's test hook set, so a test can change a file at an
exact step of the server's own disk apply (no sleeps).

The test writes a JSON control file (its path in AGENT_EDIT_TEST_CONTROL) before sending the
edit: `{"point": "written", "path": "/abs/file", "text": "..."}`. The first time the writer
reaches that point, the hook saves `text` into `path` (as a user's save would) and removes the
control file: one shot. `{"point": "written", "raise": 5}` raises `OSError(5)` there instead (an
OS error the writer did not expect at that step); `{"point": ..., "raise": "unicode"}` raises a
UnicodeEncodeError there (an exception that is not an OSError at all).
"""

from __future__ import annotations

import json
import os

from lsp_server.engine import files


def _hook(point: str, _path: str) -> None:
    control = os.environ["AGENT_EDIT_TEST_CONTROL"]
    try:
        with open(control, encoding="utf-8") as f:
            order = json.load(f)
    except FileNotFoundError:
        return
    if order["point"] != point:
        return
    os.unlink(control)
    if order.get("raise") == "unicode":
        raise UnicodeEncodeError("utf-8", "x", 0, 1, "injected")
    if "raise" in order:
        raise OSError(order["raise"], f"{os.strerror(order['raise'])} (injected)")
    with open(order["path"], "w", encoding="utf-8") as f:
        f.write(order["text"])


def serve() -> None:
    files.TEST_HOOK = _hook
    from lsp_server.lsp.server import serve as real_serve

    real_serve()


if __name__ == "__main__":
    serve()
