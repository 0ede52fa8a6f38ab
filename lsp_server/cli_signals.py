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
request goes out: the editor applies it whatever becomes of this process. A signal from then on
makes the command wait a little longer for the answer (`editor_wait`; lsp_server/discovery.py's
`request`), so the edit's own result is reported when it comes; a second signal, or no answer
in time, reports UNVERIFIED. It exited 130 there, and an agent resent an edit that had landed.
tests/cli/test_cli_signal_editor.py.

A signal the command was started with ignored (`nohup`, a background job of a script: `cmd &`
has SIGINT ignored) stays ignored, and every handler is put back as it was once the command is
done (`install`, `restore`).

Only `_signal` is imported (loaded at start-up; `signal` would load enum).
"""

from __future__ import annotations

import _signal
import sys

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
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
    del _STOPPED[:], _HOLDING[:], _HELD[:]


def on_signal(signum: int, frame: Any) -> None:
    if _HOLDING and not _HELD:
        _HELD.append(signum)
        return
    _STOPPED.append(signum)
    raise KeyboardInterrupt("Ctrl-C" if signum == _signal.SIGINT else NAMES.get(signum, ""))


def hold(after: str = "past the edit's commit point") -> None:
    """engine/files.py's BEFORE_COMMIT: the apply is about to commit; from here a signal is
    held (`on_signal`)."""
    _HOLDING.append(after)


def editor_wait(editor: str) -> None:
    """discovery.request's `on_stop`: the signal that stopped the wait for `editor`'s answer
    came after the edit was sent. It is held from here (a second one ends the wait), and
    stderr says why the command does not stop at once."""
    if _STOPPED and not _HELD:
        _HELD.append(_STOPPED.pop())
    _HOLDING.append(f"after the edit was sent to {editor}")
    _say(
        f"agent-edit: {NAMES.get(_HELD[0], 'a signal')} came after the edit was sent to "
        f"{editor}, which applies it regardless; waiting up to {EDITOR_GRACE_S:g} s for its "
        "answer (again to stop waiting)"
    )


def unhold() -> int:
    """The held signal given up (the editor's answer did not come: the result says so rather
    than `held_note`); its number."""
    signum = _HELD[0] if _HELD else _signal.SIGINT
    del _HELD[:]
    return signum


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
