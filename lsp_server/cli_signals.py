"""How a headless `agent-edit` command stops on a signal: Ctrl-C (SIGINT), SIGTERM (what a
harness sends a command it times out, `timeout`, `kill`), SIGHUP (the terminal closed, an ssh
connection dropped) and SIGQUIT (Ctrl-\\).

Each is taken as a KeyboardInterrupt (`on_signal`), so an apply under way is rolled back and its
history entry finished on the way out (actions/execute.py); the command then exits 128 + the
signal's number (130, 143, 129, 131) with a line on stderr (`stopped`). With a default action
the process died mid-apply (SIGTERM, SIGHUP, SIGQUIT), leaving up to all but one of the patch's
files new on disk, and nothing to say so, until the next agent-edit command rolled them back:
no longer all or nothing for whoever looked (git, a build) in between.
tests/cli/test_cli_sigterm.py, tests/cli/test_cli_stop_signals.py.

Past the edit's commit point (`hold`, engine/files.py's BEFORE_COMMIT) there is nothing left to
stop: the first such signal is held, the edit's entry is finished and its result printed, and
the exit status is the command's own (0: the edit landed), with a line on stderr (`held_note`).
Raised there, it had the landed edit recorded UNVERIFIED ("may have changed") or, once recorded
applied, the success report replaced by "interrupted ... see history" and exit 130/143: an agent
would take an edit that landed for one that did not, and send it again. A second signal is not
held (a report blocked on a full pipe must still be stoppable).
tests/cli/test_cli_signal_after_commit.py.

An edit sent to an editor's server (cli._through_editor) passes its point of no return as the
request goes out (`sent_to`): the editor applies it whatever becomes of this process. A signal
from then on is held, and the answer awaited EDITOR_GRACE_S more (`cut`, asked by
lsp_server/discovery.py's `request`), so the edit's own result is reported when it comes; a
second signal, or no answer in time, reports UNVERIFIED (`gave_up`). It exited 130 there, and
an agent resent an edit that had landed. No KeyboardInterrupt is raised from the moment the
request goes out until its answer is in hand: one raised as `recv` returned would lose the
answer. tests/cli/test_cli_signal_editor.py.

A signal the command was started with ignored (`nohup`, a background job of a script: `cmd &`
has SIGINT ignored) stays ignored, and every handler is put back as it was once the command is
done (`install`, `restore`).

Only `_signal` is imported (loaded at start-up; `signal` would load enum).
"""

from __future__ import annotations

import _signal
import sys
import time

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# The signals that stop a command, with their names for a person.
NAMES = {
    _signal.SIGINT: "Ctrl-C (SIGINT)",
    _signal.SIGTERM: "SIGTERM",
    **{
        num: name
        for name in ("SIGHUP", "SIGQUIT")
        if (num := getattr(_signal, name, None)) is not None  # (not on Windows)
    },
}
# How long an edit sent to an editor's server is still waited for once a signal came: the
# editor answers in milliseconds; a harness that sent SIGTERM may send SIGKILL seconds later.
EDITOR_GRACE_S = 3.0

_STOPPED: list[int] = []  # the signals `on_signal` raised as KeyboardInterrupt, in order
_HOLDING: list[str] = []  # past the point of no return: what the signal then came after
_HELD: list[int] = []  # the signal that came then, taken as no interrupt
# An edit sent to an editor (`sent_to`): its answer awaited until `_ANSWERED`; `_CUT`, the time
# (time.monotonic) by which the wait gives up, once a signal came; `_TOLD`, stderr said so.
_EDITOR: list[str] = []
_ANSWERED: list[bool] = []
_CUT: list[float] = []
_TOLD: list[bool] = []


def install() -> dict[int, Any]:
    """`on_signal` for each stopping signal not ignored; the handlers it replaced (`restore`)."""
    saved = {}
    for num in NAMES:
        old = _signal.getsignal(num)
        if old == _signal.SIG_IGN:
            continue
        saved[num] = old
        _signal.signal(num, on_signal)
    return saved


def restore(saved: dict[int, Any]) -> None:
    for num, old in saved.items():
        _signal.signal(num, _signal.SIG_DFL if old is None else old)


def reset() -> None:
    """A new run (`main` may be called more than once in a process)."""
    for state in (_STOPPED, _HOLDING, _HELD, _EDITOR, _ANSWERED, _CUT, _TOLD):
        del state[:]


def on_signal(signum: int, frame: Any) -> None:
    if _HOLDING and not _HELD:
        _HELD.append(signum)
        if _EDITOR:
            _CUT[:] = [time.monotonic() + EDITOR_GRACE_S]
        return
    if _EDITOR and not _ANSWERED:
        _CUT[:] = [0.0]  # a second one: stop waiting now
        return
    _STOPPED.append(signum)
    raise KeyboardInterrupt("Ctrl-C" if signum == _signal.SIGINT else NAMES.get(signum, ""))


def hold(after: str = "past the edit's commit point") -> None:
    """engine/files.py's BEFORE_COMMIT: the apply is about to commit; from here a signal is
    held (`on_signal`)."""
    _HOLDING.append(after)


def sent_to(editor: str) -> Callable[[], None]:
    """discovery.request's `on_send` for an edit sent to `editor`: once it begins to go out,
    the first signal is held and cuts the wait for the answer to EDITOR_GRACE_S (`cut`), a
    second one cuts it now; only once the answer has come (`answered`) does a second one
    stop the command (a report blocked on a full pipe)."""

    def on_send() -> None:
        _EDITOR.append(editor)
        _HOLDING.append(f"after the edit was sent to {editor}")

    return on_send


def cut() -> float | None:
    """discovery.request's `cut`: when the wait for the editor's answer gives up (None: not
    before its timeout). The first time, stderr says why the command does not stop at once."""
    if not _CUT:
        return None
    if not _TOLD and _HELD and _CUT[0]:
        _TOLD.append(True)
        _say(
            f"agent-edit: {NAMES.get(_HELD[0], 'a signal')} came after the edit was sent to "
            f"{_EDITOR[0]}, which applies it regardless; waiting up to {EDITOR_GRACE_S:g} s "
            "for its answer (again to stop waiting)"
        )
    return _CUT[0]


def answered() -> None:
    """The editor's answer came: a second signal may stop the report."""
    _ANSWERED.append(True)


def gave_up(editor: str) -> str:
    """The wait for `editor`'s answer given up (discovery.Stopped): why, as a result's message
    says it. The held signal is not `held_note`'s any more: the result says it."""
    signum = _HELD[0] if _HELD else _signal.SIGINT
    del _HELD[:]
    name = NAMES.get(signum, f"signal {signum}")
    if _CUT and _CUT[0] == 0.0:
        return f"{name} came after the edit was sent to {editor}, then another before its answer"
    return (
        f"{name} came after the edit was sent to {editor}, and no answer came within "
        f"{EDITOR_GRACE_S:g} s"
    )


def stopped() -> int:
    """The exit status of a command a KeyboardInterrupt stopped, with a line on stderr that
    says so (the edit under way was settled, rolled back, on the way out)."""
    signum = _STOPPED[-1] if _STOPPED else _signal.SIGINT
    if _HOLDING:
        # Past the commit point (the second signal, the first being held): nothing was rolled
        # back for it; only the report was cut short.
        _say(
            f"agent-edit: interrupted {_HOLDING[0]} (the edit was not undone for it); "
            "see `agent-edit history` for what it did"
        )
    elif signum == _signal.SIGINT:
        _say("agent-edit: interrupted; see `agent-edit history` for what it left")
    elif signum == _signal.SIGTERM:
        _say("agent-edit: terminated (SIGTERM); see `agent-edit history` for what it left")
    else:
        _say(
            f"agent-edit: stopped ({NAMES.get(signum, signum)}); see `agent-edit history` for "
            "what it left"
        )
    return 128 + signum


def held_note() -> None:
    """The line on stderr for a signal held past the point of no return (`on_signal`)."""
    if _HELD:
        _say(
            f"agent-edit: {NAMES.get(_HELD[0], f'signal {_HELD[0]}')} came {_HOLDING[0]}, so "
            "it did not stop the edit; the result above says what it did"
        )


def _say(line: str) -> None:
    """A line on stderr, if it can still be written (after SIGHUP the terminal may be gone)."""
    if sys.stderr is None:
        return
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
