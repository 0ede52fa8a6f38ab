"""Review of the overlapped apply (branch rpipeline): the main thread stopped between the
history's `begin` and `WritingApply.finish`, while the worker still writes.

`DiskAttempt.apply` rolls back what the writer left (`recover_locked`) on any exception it
does not turn into a result. Before `finish` has joined the worker, that rollback ran beside
it: it removed `TEMPS` and the temporary files written so far, and the worker went on writing
the rest, which nothing named any more (left in the workspace for good).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from lsp_server.engine import files
from lsp_server.engine.history import History
from tests.actions.test_overlapped_apply import apply, left_behind, state, ws
from tests.actions.test_recorded_apply import make_tree, tree

__all__ = ["state", "ws"]  # fixtures, used by name below


@pytest.mark.parametrize("exc", [KeyboardInterrupt, MemoryError])
def test_stopped_before_finish_joins_the_worker(
    ws: Path, monkeypatch: pytest.MonkeyPatch, exc: type[BaseException]
) -> None:
    old, patch = make_tree(ws)
    release = threading.Event()
    stopped: list[int] = []
    real_temp, real_join, real_recover = (
        files._write_temp,
        files.WritingApply.join,
        files.recover_locked,
    )

    def slow(*args: Any) -> None:
        assert release.wait(30)  # the worker waits until the main thread joins or rolls back
        real_temp(*args)

    def join(self: files.WritingApply) -> BaseException | None:
        release.set()
        return real_join(self)

    def recover(root: str, sdir: str) -> list[dict[str, Any]]:
        try:
            return real_recover(root, sdir)
        finally:
            if stopped:  # (not the one `headless.open` runs first)
                release.set()

    def pack_of(self: History, entry_id: int) -> Any:
        stopped.append(1)
        raise exc  # the signal arrives after `begin`, before `finish` is entered

    monkeypatch.setattr(files, "_write_temp", slow)
    monkeypatch.setattr(files.WritingApply, "join", join)
    monkeypatch.setattr(files, "recover_locked", recover)
    monkeypatch.setattr(History, "pack_of", pack_of)
    before, switch = threading.active_count(), sys.getswitchinterval()
    if exc is KeyboardInterrupt:
        with pytest.raises(KeyboardInterrupt):
            apply(ws, patch)
    else:
        result = apply(ws, patch)
        assert not result["ok"], result
    release.set()
    for t in threading.enumerate():
        if t is not threading.main_thread():
            t.join(30)
    assert threading.active_count() == before
    assert sys.getswitchinterval() == switch
    assert tree(ws) == old
    assert left_behind(ws) == []
