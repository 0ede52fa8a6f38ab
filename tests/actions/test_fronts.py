"""Each front adds no rule of its own: one table of requests gives the same result objects
through `actions.run` on a headless context, through the CLI (`--json`), and through the
language server with no open buffers (all three then work on the disk).

Each front runs the whole table in a fresh copy of the same workspace, with its own state
folder, so even the edit ids agree. What only a front has is set aside: the time of history
entries, and the per-file `saved` the server adds (it asks the editor to save buffers; on disk
there are none, the result's own `saved` says it). The CLI and each headless call are separate
sessions (no read carries over), so the table never leans on a session's earlier read.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire
from tests import result_schemas
from tests.editor_client import REPO, Editor, start_session

FILES = {"a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n", "dup.txt": "y\ny\n"}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


PATCH = (
    "*** Begin Patch\n"
    "*** Update File: a.txt\n@@\n one\n-TWO\n+two again\n"
    "*** Add File: c.txt\n+sea\n"
    "*** Delete File: dup.txt\n"
    "*** Update File: b.txt\n*** Move to: d.txt\n-bee\n+dee\n"
    "*** End Patch\n"
)

# (action, arguments); edit ids are the history's, the same in every front.
TABLE: list[tuple[str, dict[str, Any]]] = [
    ("read", {"path": "a.txt"}),
    ("read", {"path": "a.txt", "startLine": 2, "endLine": 3}),
    ("read", {"path": "missing.txt"}),
    ("read", {"path": "../outside.txt"}),
    ("replace", {"path": "a.txt", "oldText": "two", "newText": "TWO"}),  # 1
    ("replace", {"path": "a.txt", "oldText": "nope", "newText": "x"}),  # 2 NO_MATCH
    ("replace", {"path": "dup.txt", "oldText": "y", "newText": "z"}),  # 3 AMBIGUOUS
    (
        "replace",
        {"path": "a.txt", "oldText": "one", "newText": "1", "expect": {"sha256": "0" * 64}},
    ),
    ("replace", {"path": "a.txt", "oldText": "three  ", "newText": "3", "match": "lenient"}),
    ("replace", {"path": "a.txt", "oldText": "3", "newText": "\udcff"}),  # hostile text
    ("replace", {"path": "a.txt", "oldText": "3", "newText": "three", "dryRun": True}),
    ("write", {"path": "new.txt", "text": "x\n"}),
    ("write", {"path": "b.txt", "text": "overwritten\n"}),  # STALE: never read
    ("write", {"path": "new.txt", "text": "y\n", "expect": {"sha256": sha("x\n")}}),
    ("write", {"path": "new.txt", "text": "y\n", "expect": {"sha256": sha("y\n")}}),  # NO_CHANGE
    ("applyPatch", {"patch": PATCH, "dryRun": True}),
    ("applyPatch", {"patch": PATCH}),
    ("applyPatch", {"patch": PATCH}),  # again: the files moved on
    ("history", {}),
    ("undo", {"editId": 1}),  # its lines were changed again by the patch: CONFLICT
    ("undo", {"editId": 18, "dryRun": True}),
    ("undo", {"editId": 18}),
    ("undo", {"editId": 999}),
    ("history", {"format": "diff"}),
    ("history", {"editId": 18}),
    ("undo", {"editId": 2**60}),  # malformed: out of range
]


def normal(result: Any) -> Any:
    """`result` without what only one front has (see the module docstring)."""
    if isinstance(result, dict):
        out = {k: normal(v) for k, v in result.items() if k != "time"}
        if isinstance(out.get("files"), list) and "status" in out:
            out["files"] = [{k: v for k, v in f.items() if k != "saved"} for f in out["files"]]
        return out
    if isinstance(result, list):
        return [normal(v) for v in result]
    return result


def workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    for rel, text in FILES.items():
        (root / rel).write_text(text)
    (root.parent / "outside.txt").write_text("secret\n")
    return root


async def through_actions(root: Path) -> list[Any]:
    out: list[Any] = []
    for name, args in TABLE:
        async with headless.open(str(root)) as ctx:  # a context per request, as the CLI's
            try:
                out.append(wire(await actions.run(ctx, name, args)))
            except actions.InvalidArguments as exc:
                out.append(("malformed", exc.message))
    return out


CLI_NAMES = {"applyPatch": "apply-patch"}
POSITIONAL = {
    "read": ["path"],
    "replace": ["path", "oldText", "newText"],
    "write": ["path", "text"],
    "applyPatch": ["patch"],
    "undo": ["editId"],
    "history": [],
}


def cli_argv(name: str, args: dict[str, Any], tmp: Path) -> list[str]:
    argv = [CLI_NAMES.get(name, name), "--json"]
    for key, value in args.items():
        if key in POSITIONAL[name]:
            continue
        flag = "--" + "".join("-" + c.lower() if c.isupper() else c for c in key)
        if key == "expect":
            argv += ["--expect-sha256", value["sha256"]]
        elif value is True:
            argv.append(flag)
        else:
            argv += [flag, str(value)]
    for key in POSITIONAL[name]:
        value = args[key]
        if key == "patch":
            (tmp / "patch").write_text(value)
            value = str(tmp / "patch")
        argv.append(str(value))
    return argv


def through_cli(root: Path, state: Path) -> list[Any]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    out: list[Any] = []
    for name, args in TABLE:
        argv = cli_argv(name, args, root.parent)
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", *argv, "--root", str(root)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        if proc.returncode == 2:
            out.append(("malformed", proc.stderr.strip().removeprefix("agent-edit: error: ")))
            continue
        result = json.loads(proc.stdout)
        assert proc.returncode == (0 if result.get("ok", True) else 1), proc
        out.append(result)
    return out


async def through_server(editor: Editor) -> list[Any]:
    out: list[Any] = []
    for name, args in TABLE:
        try:
            out.append(await editor.command(f"agentEdit.{name}", args))
        except JsonRpcException as exc:
            out.append(("malformed", str(exc.message).removeprefix("Invalid Params: ")))
    return out


def as_json(results: list[Any]) -> list[Any]:
    """Results as a client receives them (JSON: tuples are lists)."""
    return [normal(json.loads(json.dumps(r))) for r in results]


@pytest.mark.asyncio
async def test_one_table_of_requests_gives_the_same_results_through_every_front(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session first: a client fixture whose session never started does not shut down.
    editor = await start_session(client, "visual-studio-code", workspace(tmp_path / "lsp" / "ws"))
    served = as_json(await through_server(editor))
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state-actions"))
    direct = as_json(await through_actions(workspace(tmp_path / "actions" / "ws")))
    cli = as_json(through_cli(workspace(tmp_path / "cli" / "ws"), tmp_path / "state-cli"))
    # The table covers what it claims to.
    codes = {r.get("code") for r in direct if isinstance(r, dict)}
    assert {"NO_MATCH", "AMBIGUOUS", "STALE", "CONFLICT", "INVALID_ARGUMENT"} <= codes, codes
    assert direct[-1][0] == "malformed" and "out of range" in direct[-1][1]
    for i, (name, args) in enumerate(TABLE):
        assert cli[i] == direct[i], (i, name, args)
        assert served[i] == direct[i], (i, name, args)
        if isinstance(direct[i], dict):  # not malformed: an answer, as the contract exports it
            for answer in (direct[i], cli[i], served[i]):
                result_schemas.check(name, answer)
