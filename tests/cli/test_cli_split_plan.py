"""A large headless patch planned in two processes (lsp_server/split_plan.py) gives exactly what
planning it in order gives: a differential test through the real CLI over hostile patches, a
child killed mid-plan, a Ctrl-C in the parent, and no child process left behind.

Each case runs `apply-patch --json` twice on two identical copies of a tree, once as the CLI
runs (a patch over the split threshold is planned in two halves) and once with the split turned
off, and compares the exit code, the JSON result and the tree each run leaves. The split's test
hook (`split_plan.TEST_HOOK`) logs what the planner decided, so a case that must be planned in
two halves (a clean patch, CRLF and BOM files, a lenient match) is seen to be, and it orders the
races (a child killed, a file changed, a Ctrl-C) without sleeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.editor_client import REPO

# The CLI in a fresh process (`program`, which leaves by os._exit as the console script does),
# with the split planner's test hook logging to SPLIT_EVENTS and acting as SPLIT_MODE says.
RUN = r"""
import atexit, json, os, signal, sys
mode = os.environ.get("SPLIT_MODE", "")
log = os.environ["SPLIT_EVENTS"]
def event(*what):
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(list(what)) + "\n")
if mode == "sequential":
    from lsp_server.actions import headless
    headless.SPLIT_PLAN_FROM_CHARS = 1 << 62  # never split: the reference run
else:
    from lsp_server import split_plan
    children = []
    def hook(point, detail):
        event(point, detail, os.getpid())
        if point == "forked":
            children.append(detail)
            if mode == "change":  # a user's save while the two halves are planned
                path, text = os.environ["SPLIT_CHANGE"].split("=", 1)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            if mode == "interrupt":
                raise KeyboardInterrupt
        if point == "child" and mode == "kill-child":
            os.kill(os.getpid(), signal.SIGKILL)
        if point == "child" and mode == "hang-child":
            signal.pause()  # never answers: the parent's patience runs out
    split_plan.TEST_HOOK = hook
    from lsp_server.engine.history import recording
    prestage = recording.History.prestage
    def prestaged(self, path, data):
        had = self._early
        prestage(self, path, data)
        if self._early is not None and self._early is not had:
            event("prestaged", path, os.getpid())
    recording.History.prestage = prestaged
    if mode == "thread":  # another thread running: a fork would copy only this one
        import threading
        stop = threading.Event()
        threading.Thread(target=stop.wait, daemon=True).start()
    def survivors():
        # At the parent's exit: is any child it forked still a process (or a zombie)?
        for pid in children:
            event("exit", os.path.exists(f"/proc/{pid}"), pid)
    atexit.register(survivors)
sys.argv = ["agent-edit", *sys.argv[1:]]
from lsp_server.cli import program
program()
"""

N_FILES = 150
N_LINES = 120


def _lines(i: int) -> list[str]:
    pad = "x" * 20
    return [
        f"value_{i}_{j} = compute({j}, {j * 7})  # line {j} of module {i} {pad}"
        for j in range(N_LINES)
    ]


def _rel(i: int) -> str:
    return f"pkg{i % 7}/mod{i}.py"


def _section(i: int, path: str | None = None, lines: list[str] | None = None) -> str:
    lines = lines or _lines(i)
    out = [f"*** Update File: {path or _rel(i)}\n"]
    for c in range(5):
        at = 10 + c * 20
        out.append("@@\n")
        out.extend(f" {lines[k]}\n" for k in range(at - 3, at))
        out.append(f"-{lines[at]}\n")
        out.append(f"+{lines[at]}  # changed\n")
        out.extend(f" {lines[k]}\n" for k in range(at + 1, at + 4))
    return "".join(out)


def make_tree(root: Path) -> None:
    for i in range(N_FILES):
        target = root / _rel(i)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(_lines(i)) + "\n")


def make_patch(sections: list[str]) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


def plain_sections() -> list[str]:
    return [_section(i) for i in range(N_FILES)]


def run_cli(
    ws: Path, state: Path, patch: str, mode: str, events: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    full.update(SPLIT_MODE=mode, SPLIT_EVENTS=str(events), **(env or {}))
    return subprocess.run(
        [sys.executable, "-c", RUN, "apply-patch", "--root", str(ws), "--json", "-"],
        input=patch,
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
    )


def read_events(path: Path) -> list[list[Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def snapshot_tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = "link -> " + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes()
    return out


def both(
    tmp_path: Path, patch: str, setup: Any = None, mode: str = ""
) -> tuple[Any, list[list[Any]]]:
    """Run the patch split and in order on identical trees; assert the same outcome. Returns the
    split run's result and its hook events."""
    outcomes = []
    events: list[list[Any]] = []
    for name in ("sequential", mode or "split"):
        base = tmp_path / name
        ws = base / "ws"
        ws.mkdir(parents=True)
        make_tree(ws)
        if setup is not None:
            setup(ws)
        log = base / "events.jsonl"
        done = run_cli(ws, base / "state", patch, name, log)
        assert "Traceback" not in done.stderr, done.stderr
        result = json.loads(done.stdout) if done.stdout.strip() else None
        outcomes.append((done.returncode, result, done.stderr, snapshot_tree(ws)))
        events = read_events(log)
    (code_a, res_a, err_a, tree_a), (code_b, res_b, err_b, tree_b) = outcomes
    assert code_a == code_b, (err_a, err_b)
    assert res_a == res_b
    assert err_a == err_b
    assert tree_a == tree_b
    assert len(patch) >= 256 * 1024  # over the split threshold
    return res_b, events


def decisions(events: list[list[Any]]) -> list[str]:
    return [e[0] for e in events if e[0] in ("joined", "in order")]


def test_a_clean_large_patch_is_planned_in_two_halves_and_gives_the_same_result(
    tmp_path: Path,
) -> None:
    result, events = both(tmp_path, make_patch(plain_sections()))
    assert result["ok"] is True
    assert decisions(events) == ["joined"], events
    assert len(result["files"]) == N_FILES


def _at_end(sections: list[str], extra: str) -> list[str]:
    return [*sections, extra]


def _bad_chunk(i: int) -> str:
    lines = _lines(i)
    lines[30] = "this line is not in the file"
    return _section(i, lines=lines)


def _crlf(ws: Path) -> None:
    for i in (N_FILES - 3, N_FILES - 2):
        p = ws / _rel(i)
        p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))


def _bom(ws: Path) -> None:
    for i in (N_FILES - 4, N_FILES - 1):
        p = ws / _rel(i)
        p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())


def _link_to_last(ws: Path) -> None:
    (ws / "link.py").symlink_to(_rel(N_FILES - 1))


def _link_to_first(ws: Path) -> None:
    (ws / "link.py").symlink_to(_rel(0))


def _linked_folder(ws: Path) -> None:
    (ws / "linked").symlink_to(_rel(N_FILES - 4).split("/")[0])


def _env_file(ws: Path) -> None:
    (ws / ".env").write_text("SECRET=1\n")


def _outside(ws: Path) -> None:
    (ws.parent / "outside.py").write_text("\n".join(_lines(N_FILES - 1)) + "\n")


def _trailing_space(ws: Path) -> None:
    # The file's line 29 has trailing spaces the patch's context lacks: a lenient match.
    i = N_FILES - 2
    p = ws / _rel(i)
    lines = _lines(i)
    lines[29] += "   "
    p.write_text("\n".join(lines) + "\n")


def _twice(ws: Path) -> None:
    # Line 10's context appears twice in the last file: AMBIGUOUS.
    i = N_FILES - 1
    lines = _lines(i)
    p = ws / _rel(i)
    p.write_text("\n".join(lines + lines[7:14]) + "\n")


def _hostile() -> list[tuple[str, list[str], Any, bool]]:
    """(id, sections, tree setup, whether it must be planned in two halves)."""
    s = plain_sections()
    last = N_FILES - 1
    return [
        ("no-match-in-child-half", [*s[:-1], _bad_chunk(last)], None, False),
        (
            "no-match-in-both-halves",
            [*s[:3], _bad_chunk(3), *s[4:-1], _bad_chunk(last)],
            None,
            False,
        ),
        ("no-match-in-parent-half", [*s[:3], _bad_chunk(3), *s[4:]], None, False),
        ("same-path-across-the-cut", _at_end(s, _section(5)), None, False),
        ("same-file-spelled-otherwise", _at_end(s, _section(5, "./" + _rel(5))), None, False),
        (
            "update-through-a-link-in-child-half",
            [*s[:-1], _section(last, "link.py")],
            _link_to_last,
            False,
        ),
        (
            "update-through-a-linked-folder-in-child-half",
            [*s[:-4], _section(N_FILES - 4, "linked/" + _rel(N_FILES - 4).split("/")[1]), *s[-3:]],
            _linked_folder,
            False,
        ),
        (
            "delete-link-then-update-its-file",
            ["*** Delete File: link.py\n", *s],
            _link_to_first,
            False,
        ),
        (
            "deny-listed-in-child-half",
            _at_end(s, "*** Update File: .env\n@@\n-SECRET=1\n+SECRET=2\n"),
            _env_file,
            False,
        ),
        ("outside-root-in-child-half", [*s[:-1], _section(last, "../outside.py")], _outside, False),
        ("crlf-files-in-child-half", s, _crlf, True),
        ("bom-files-in-child-half", s, _bom, True),
        ("lenient-match-in-child-half", s, _trailing_space, True),
        ("ambiguous-in-child-half", s, _twice, False),
        ("add-after-the-cut", _at_end(s, "*** Add File: new.py\n+x = 1\n"), None, False),
        ("delete-after-the-cut", _at_end(s[:-1], f"*** Delete File: {_rel(last)}\n"), None, False),
        (
            "move-after-the-cut",
            [*s[:-1], s[-1].replace("\n", f"\n*** Move to: moved/{last}.py\n", 1)],
            None,
            False,
        ),
        (
            "delete-before-the-cut-of-a-child-path",
            [f"*** Delete File: {_rel(last)}\n", *s],
            None,
            False,
        ),
        (
            "add-delete-move-before-the-cut",
            [
                f"*** Delete File: {_rel(0)}\n*** Add File: {_rel(0)}\n+rewritten\n",
                s[1].replace("\n", "\n*** Move to: moved/one.py\n", 1),
                "*** Add File: new.py\n+x = 1\n",
                *s[2:],
            ],
            None,
            True,
        ),
        ("missing-file-in-child-half", _at_end(s, _section(999)), None, False),
    ]


@pytest.mark.parametrize(
    ("sections", "setup", "joined"),
    [pytest.param(sec, setup, joined, id=name) for name, sec, setup, joined in _hostile()],
)
def test_hostile_patches_give_what_planning_in_order_gives(
    tmp_path: Path, sections: list[str], setup: Any, joined: bool
) -> None:
    result, events = both(tmp_path, make_patch(sections), setup)
    if sections[-4].startswith("*** Update File: linked/"):
        assert result["ok"] is True  # through the linked folder, as in order
    if joined:
        assert decisions(events) == ["joined"], events
    else:
        assert "joined" not in decisions(events), events


def test_cr_in_the_patch_is_planned_in_order(tmp_path: Path) -> None:
    s = plain_sections()
    s[-1] = s[-1].replace("\n", "\r\n")
    _, events = both(tmp_path, make_patch(s))
    assert "forked" not in [e[0] for e in events], events


def test_no_fork_while_another_thread_runs(tmp_path: Path) -> None:
    result, events = both(tmp_path, make_patch(plain_sections()), mode="thread")
    assert result["ok"] is True
    assert events == [], events  # planned in order: nothing forked, nothing decided


def _big_last(ws: Path) -> None:
    # Past History.prestage's 1 MiB: reading it (before the fork) starts the pack's thread.
    p = ws / _rel(N_FILES - 1)
    p.write_text(
        p.read_text() + "".join(f"tail_{j} = {j}  # padding {'y' * 40}\n" for j in range(20_000))
    )


def test_no_pack_thread_is_started_before_the_fork(tmp_path: Path) -> None:
    """A large file after the cut is read by the parent before it forks: its pack is not
    written ahead in a thread then (History.prestage), which the fork would not copy."""
    result, events = both(tmp_path, make_patch(plain_sections()), setup=_big_last)
    assert result["ok"] is True
    assert decisions(events) == ["joined"], events
    assert "prestaged" not in [e[0] for e in events], events


def test_a_child_killed_mid_plan_falls_back_to_planning_in_order(tmp_path: Path) -> None:
    result, events = both(tmp_path, make_patch(plain_sections()), mode="kill-child")
    assert result["ok"] is True
    points = [e[0] for e in events]
    assert "child" in points and "forked" in points, events
    assert decisions(events) == ["in order"], events
    assert [e[1] for e in events if e[0] == "exit"] == [False], events  # reaped


def test_a_child_that_never_answers_is_killed_and_the_patch_planned_in_order(
    tmp_path: Path,
) -> None:
    result, events = both(tmp_path, make_patch(plain_sections()), mode="hang-child")
    assert result["ok"] is True
    assert decisions(events) == ["in order"], events
    assert "in time" in next(e[1] for e in events if e[0] == "in order")
    assert [e[1] for e in events if e[0] == "exit"] == [False], events  # killed and reaped


def test_a_file_saved_while_the_halves_are_planned_is_never_overwritten(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    make_tree(ws)
    target = ws / _rel(N_FILES - 1)  # in the child's half, read by the parent before the fork
    log = tmp_path / "events.jsonl"
    saved = "saved by the user\n"
    done = run_cli(
        ws,
        tmp_path / "state",
        make_patch(plain_sections()),
        "change",
        log,
        env={"SPLIT_CHANGE": f"{target}={saved}"},
    )
    assert "Traceback" not in done.stderr, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is False, result  # the plan was made from what it read before the save
    assert target.read_text() == saved
    assert (ws / _rel(0)).read_text() == "\n".join(_lines(0)) + "\n"  # all or nothing


def test_ctrl_c_in_the_parent_kills_and_reaps_the_child(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    make_tree(ws)
    log = tmp_path / "events.jsonl"
    done = run_cli(ws, tmp_path / "state", make_patch(plain_sections()), "interrupt", log)
    events = read_events(log)
    assert done.returncode != 0
    assert [e[1] for e in events if e[0] == "exit"] == [False], (events, done.stderr)
    assert snapshot_tree(ws) == snapshot_tree_of_fresh(tmp_path / "fresh")


def snapshot_tree_of_fresh(root: Path) -> dict[str, bytes | str]:
    root.mkdir()
    make_tree(root)
    return snapshot_tree(root)


def test_no_child_survives_a_split_apply(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    make_tree(ws)
    log = tmp_path / "events.jsonl"
    done = run_cli(ws, tmp_path / "state", make_patch(plain_sections()), "", log)
    assert done.returncode == 0, done.stderr
    events = read_events(log)
    assert decisions(events) == ["joined"], events
    # Reaped before the parent went on: gone at its exit, not left to init as a zombie.
    assert [e[1] for e in events if e[0] == "exit"] == [False], events
    # The child did nothing the hook sees after its start (its answer goes through the pipe).
    child_pids = {e[2] for e in events if e[0] == "child"}
    assert child_pids and all(e[0] == "child" for e in events[:-1] if e[2] in child_pids), events
