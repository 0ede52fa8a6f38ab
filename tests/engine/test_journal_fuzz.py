"""A hostile journal (any bytes, any JSON, real records with fields swapped for any value) never
stops a history from loading, `history` from answering, or `undo` from giving a clear result;
replay skips what it cannot use and says how many. The CLI and a server start on one too."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as t

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import History
from lsp_server.engine.journal import Journal
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.planner import plan_replace
from lsp_server.engine.state import workspace_state_path
from lsp_server.engine.text import absent
from tests.cli.test_cli_atomic import cli
from tests.history_helpers import FS, apply_plan, snap

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 21))
HOSTILE = [
    b'{"t":"record","id":1e400,"action":"replace","outcome":"applied"}',
    b'{"t":"begin","id":NaN}',
    b'{"t":"record","id":' + b"9" * 5000 + b"}",
    b'{"t":"record","id":' + str(2**80).encode() + b',"outcome":"applied"}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"t":"record","id":2,"changes":[{"path":"f.py","change":"update","hunks":[[9,1,0,[],[],[],[]]]}]}',
    b'{"t":"checkpoint","tracked":[{"origin":"f.py","path":"f.py","base":"a\\n","net":[[5,9,["x"]]]}]}',
    b'{"t":"finish","id":3,"committed":"nope"}',
    b"\xff\xfe not utf-8 \xc3",
    b'{"t":"record","id":4,"action":"replace","outcome":"applied","files":[{"path":"x"}]',
]
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def _session(ws: Path, state: Path) -> tuple[list[bytes], FS]:
    """A real journal: two edits, a refused one, an add, an unfinished plan and a checkpoint."""
    history = History(Journal(ws, state_dir=state, max_bytes=4_000))
    fs: FS = {"f.py": ORIGINAL}
    for old, new in (("line 3\n", "three\n"), ("line 9\n", "nine\nnine b\n")):
        plan = Plan("replace", (plan_replace(snap(fs, "f.py"), old, new),))
        entry_id = history.begin(plan, {"path": "f.py"})
        fs = apply_plan(fs, plan)
        history.finish(entry_id, "applied")
    history.record("replace", {"path": "f.py"}, error=EditError(Code.NO_MATCH, "no", "read"))
    add = Plan("write", (FileChange("add", absent("g.py"), new_text_override="g\n"),))
    history.finish(history.begin(add, {"path": "g.py"}), "applied")
    fs["g.py"] = "g\n"
    history.begin(Plan("replace", (plan_replace(snap(fs, "f.py"), "line 1\n", "one\n"),)), {})
    assert history.journal is not None
    return history.journal.path.read_bytes().splitlines(), fs


_SESSION: list[tuple[list[bytes], FS]] = []


def _cached_session(tmp: Path) -> tuple[list[bytes], FS]:
    """`_session`'s lines, made once (they do not name the workspace): a copy to mutate."""
    if not _SESSION:
        (tmp / "seed").mkdir()
        _SESSION.append(_session(tmp / "seed", tmp / "seed-state"))
    lines, fs = _SESSION[0]
    return list(lines), dict(fs)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _set(value[path[0]], path[1:], new)
    return value


def _check(lines: list[bytes], fs: FS, ws: Path, state: Path) -> History:
    state.mkdir(exist_ok=True)
    (state / "journal.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    history = History.load(Journal(ws, state_dir=state))
    live = {p: snap(fs, p) for p in fs}
    history.to_json(live=live)
    history.to_json(live=live, limit=2, diffs=False)
    history.to_diff_text(live)
    for path in fs:
        history.lenses(path, live[path])
    for entry in history.entries:
        history.to_json(edit_id=entry.id)
        history.to_diff_text(edit_id=entry.id)
        try:
            current = {p: live.get(p) or absent(p) for p in history.undo_paths(entry.id)}
            history.plan_undo(entry.id, current)
        except EditError:
            pass
    # And it still takes new edits.
    plan = Plan("replace", (plan_replace(snap(fs, "f.py"), "line 20\n", "twenty\n"),))
    history.finish(history.begin(plan, {}), "applied")
    return history


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_journal_never_crashes_replay_history_or_undo(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws, state = Path(tmp, "ws"), Path(tmp, "state")
        ws.mkdir()
        lines, fs = _cached_session(Path(tmp))
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(lines) - 1))
            how = data.draw(st.sampled_from(["field", "field", "cut", "bytes", "json", "hostile"]))
            if how == "field":
                try:
                    rec = json.loads(lines[i])
                except (ValueError, RecursionError):
                    continue  # cut or replaced by an earlier step
                if not isinstance(rec, dict | list) or not rec:
                    continue
                path = data.draw(st.sampled_from(_paths(rec)[1:]))
                rec = _set(rec, path, data.draw(JSON))
                lines[i] = json.dumps(rec).encode()
            elif how == "cut":
                lines[i] = lines[i][: data.draw(st.integers(0, max(0, len(lines[i]) - 1)))]
            elif how == "bytes":
                lines.insert(i, data.draw(st.binary(max_size=40)).replace(b"\n", b""))
            elif how == "json":
                lines.insert(i, json.dumps(data.draw(JSON)).encode())
            else:
                lines.insert(i, data.draw(st.sampled_from(HOSTILE)))
        _check(lines, fs, ws, state)


def test_each_hostile_line_is_skipped_and_counted(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    lines, fs = _session(ws, state)
    history = _check([*HOSTILE, *lines], fs, ws, state)
    assert history.skipped == len(HOSTILE)
    assert f"skipped {len(HOSTILE)} journal record(s)" in (history.skipped_note() or "")
    assert history.to_json()["skipped"] == len(HOSTILE)
    assert [e.action for e in History.load(Journal(ws, state_dir=state)).entries][:4] == [
        "replace",
        "replace",
        "replace",
        "write",
    ]


def _hostile_workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, base = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "f.py").write_text(ORIGINAL)
    sdir = Path(workspace_state_path(ws, str(base)))
    sdir.mkdir(parents=True)
    (sdir / "journal.jsonl").write_bytes(b"\n".join(HOSTILE) + b"\n")
    return ws, base


def test_the_cli_history_and_undo_skip_a_hostile_journal(tmp_path: Path) -> None:
    ws, base = _hostile_workspace(tmp_path)
    proc = cli("history", "--root", str(ws), "--json", state=base)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["skipped"] == len(HOSTILE)
    assert f"skipped {len(HOSTILE)} journal record(s)" in proc.stderr
    proc = cli("undo", "--root", str(ws), "--json", "1", state=base)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1 and json.loads(proc.stdout)["code"] == "INVALID_ARGUMENT"


@pytest.mark.asyncio
async def test_a_server_starts_on_a_hostile_journal_and_says_what_it_skipped(
    tmp_path: Path,
) -> None:
    from tests.editor_client import server_config, start_session

    ws, base = _hostile_workspace(tmp_path)
    config = server_config()
    config.server_env = dict(config.server_env or {}, AGENT_EDIT_STATE_DIR=str(base))
    client = await config.start()
    try:
        ed = await start_session(client, "visual-studio-code", ws)
        shown = await asyncio.wait_for(client.wait_for_notification(t.WINDOW_SHOW_MESSAGE), 10)
        assert f"skipped {len(HOSTILE)} journal record(s)" in shown.message
        ed.open("f.py", ORIGINAL)
        done = await ed.command(
            "agentEdit.replace", {"path": "f.py", "oldText": "line 2\n", "newText": "two\n"}
        )
        assert done["ok"], done
        hist = await ed.command("agentEdit.history", {"format": "json"})
        assert hist["ok"] and hist["entries"][-1]["action"] == "replace"
    finally:
        await client.shutdown_session()
        await client.stop()
