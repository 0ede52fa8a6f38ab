"""How journal.jsonl and blobs/ here were made: by main's code at 0941b12 (the format before
the pre-image pack), read by tests/engine/test_journal_previous_format.py.

    git archive 0941b12 lsp_server | tar -x -C /tmp/main
    AGENT_EDIT_STATE_DIR=/tmp/state PYTHONPATH=/tmp/main python make_journal.py /tmp/ws history.json

then copy the workspace's state folder's journal.jsonl and blobs/ here.
"""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from lsp_server import actions
from lsp_server.actions import headless

ws = Path(sys.argv[1])
ws.mkdir()
# ~90 KB: its baseline is a `$blob`
big = "".join(f"value_{j} = compute({j}, {j * 7})  # line {j}\n" for j in range(2000))
(ws / "big.py").write_text(big)
(ws / "a.txt").write_text("alpha\nbeta\ngamma\n")
(ws / "b.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")


def run(name: str, args: dict[str, Any]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(ws)) as ctx:
            return await actions.run(ctx, name, args)

    return asyncio.run(go())


PATCH = (
    "*** Begin Patch\n*** Update File: big.py\n@@\n-value_7 = compute(7, 49)  # line 7\n"
    "+value_seven = 7\n*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n"
    "*** Add File: new.txt\n+fresh\n*** End Patch\n"
)
r1 = run("applyPatch", {"patch": PATCH})
assert r1["ok"], r1
r2 = run("replace", {"path": "b.txt", "oldText": "two", "newText": "TWO"})
assert r2["ok"], r2
r3 = run("replace", {"path": "a.txt", "oldText": "gamma", "newText": "GAMMA"})
r4 = run("undo", {"editId": r3["editId"]})
assert r4["ok"], r4
r5 = run("replace", {"path": "a.txt", "oldText": "nope", "newText": "x"})  # refused
assert not r5["ok"]
with open(sys.argv[2], "w") as out:
    json.dump(run("history", {}), out, indent=1, sort_keys=True)
