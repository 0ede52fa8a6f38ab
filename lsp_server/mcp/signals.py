"""How `agent-edit mcp` stops on a signal: Ctrl-C (SIGINT), SIGTERM (what a harness or an MCP
client sends a server it shuts down, `timeout`, `kill`), SIGHUP (the terminal closed) and
SIGQUIT.

Found: SIGINT was asyncio's, which cancelled the server's main task; that then waited for its
stdin reader thread, so the server did not exit until the client closed stdin, and the answer
of a call under way was lost although its edit had landed. SIGTERM and SIGHUP killed the
process at once, in the middle of an apply too: the files renamed so far stayed new on disk (no
longer all or nothing, for whoever looked in between) until the next agent-edit command rolled
them back.

Now, as the CLI stops (lsp_server/cli_signals.py, whose names and stderr wording it shares):
- While a disk call holds the workspace lock (`busy`: its work runs in the main thread, the
  event loop waiting for it), before the apply's commit point (engine/files.py's BEFORE_COMMIT)
  the signal is raised there as KeyboardInterrupt: the disk writer rolls the apply back and the
  history entry is finished (actions/execute.py) before the server exits (`stopped`); past it,
  the signal is held: the edit has landed, its answer is written (`written`), then it exits.
- Anything else (idle, a call waiting for the lock, a call sent to the editor's server, which
  applies it whatever becomes of this process): it exits at once; nothing of this process is
  half done (but the rollback of an earlier interrupted apply that a call's `headless.open`
  may be running: the next command completes it, as after a crash).
It exits 128 + the signal's number with a line on stderr. A second signal while one is held
exits at once (an answer the client does not read must not keep it alive). A signal the server
was started with ignored (`nohup`) stays ignored.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from lsp_server.cli_signals import NAMES


class _State:
    busy = False  # a disk call holds the workspace lock, its work in the main thread
    committed = False  # that call's apply passed its commit point
    held: int | None = None  # the signal that came past it
    stopping: int | None = None  # the signal raised as KeyboardInterrupt
    owed: Any = None  # the request whose answer is written before a held signal exits
    owing = False
    reported = False  # lines written are reported (`written`): the server's own stdout


_state = _State()


def install() -> None:
    from lsp_server.engine import files

    for num in NAMES:
        if signal.getsignal(num) != signal.SIG_IGN:
            signal.signal(num, _on_signal)
    files.BEFORE_COMMIT = _committed


def _on_signal(signum: int, frame: Any) -> None:
    if _state.held is not None or _state.stopping is not None:
        _exit(signum, "came again before the server had stopped")
    if not _state.busy:
        _exit(signum, "came; nothing was under way in this process")
    if _state.committed:
        _state.held = signum
        return
    _state.stopping = signum
    raise KeyboardInterrupt(NAMES.get(signum, f"signal {signum}"))


def _committed() -> None:
    if _state.busy:
        _state.committed = True


@contextmanager
def busy() -> Iterator[None]:
    """A disk call's work under the workspace lock (mcp/disk.py)."""
    _state.busy, _state.committed = True, False
    try:
        yield
    finally:
        _state.busy = False


def stopped() -> None:
    """A disk call a signal stopped, once the call settled it: exits. Returns for a
    KeyboardInterrupt that is none of ours (this module not installed: a test's process)."""
    if _state.stopping is None:
        return
    _exit(
        _state.stopping or signal.SIGINT,
        "stopped the call under way (an edit not yet committed was rolled back)",
    )


def answered(request_id: Any, cancelled: bool) -> None:
    """A call ended (server.py); with a signal held, the server exits once its answer is
    written (`written`), at once if none will be (the client cancelled it)."""
    if _state.held is None:
        return
    if cancelled or not _state.reported:
        _exit(_state.held, "came past the edit's commit point; the edit landed")
    _state.owed, _state.owing = request_id, True


def reported() -> None:
    """The stdout in use reports each line it writes (`written`)."""
    _state.reported = True


def written(line: str) -> None:
    """A line written to the client (handshake.py's stdout): the held signal's exit, once it
    is the owed answer."""
    if not _state.owing:
        return
    try:
        ident = json.loads(line).get("id")
    except (ValueError, AttributeError):
        return
    if ident == _state.owed and type(ident) is type(_state.owed):
        assert _state.held is not None
        _exit(
            _state.held,
            "came past the edit's commit point; the edit landed and its answer was sent",
        )


def _exit(signum: int, what: str) -> NoReturn:
    try:
        sys.stderr.write(
            f"agent-edit mcp: {NAMES.get(signum, f'signal {signum}')} {what}; stopping. What "
            "each call did is in the history (agent-edit history).\n"
        )
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(128 + signum)
