"""Whether a process id names a running process: one probe for the history (is the process that
began an unfinished plan still carrying it out?), discovery (does an announced server still run?)
and the MCP router (does a lost server's editor still run?).

`os.kill(pid, 0)` asks the kernel without signalling, but only for a pid it can take: 0 and below
name process groups (a group answers, so a hand-edited entry would count as running for ever),
and past the C int it raises OverflowError (which crashed `agent-edit history`, discovery and the
router on one such number). On Windows it would terminate the process, so nothing is probed there.
"""

from __future__ import annotations

import os

NONE, OURS, OTHER = "none", "ours", "other"


def probe(pid: int) -> str:
    """NONE (no such process, or a pid no process can have, or Windows), OURS (it runs, and we
    may signal it: the same user) or OTHER (it runs as another user)."""
    if pid <= 0 or os.name == "nt":
        return NONE
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return NONE
    except PermissionError:
        return OTHER
    return OURS
