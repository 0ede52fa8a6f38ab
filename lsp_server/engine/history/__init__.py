"""The edit history of a workspace: every action's entry, and the agent's net diff per file.

Every action gets an entry (id, time, action, argument summary, files, outcome, its own diff, and
for failures the committed list). Actions that reach the editor or the disk are journaled in two
steps: `begin` writes the plan with its pre-images (fsynced) *before* anything is sent, `finish`
writes the outcome. Refused actions are one `record`.

The history is event-sourced: the in-memory state is what replaying the journal gives, so the
server, a restarted server and the CLI (which all read the same journal) agree. Other writers'
records are picked up whenever this process writes or calls `refresh()`.

The net diff compares, per file, the content before the agent first touched it (the baseline) with
the content after the agent's latest edit. It is kept as a list of changed regions over the
baseline and composed with each edit, so showing it costs what the changes cost, not a diff of two
100k-line files. User edits made between agent edits are folded into the baseline (not the agent's
doing) unless they land inside lines the agent changed, which is said in a note. A file whose live
content moved on after the agent's last edit is flagged, never diffed as if the agent did it.

What lives where:

- `entries.py`: `Entry` (one action), argument summaries, an entry's own diff and which of its
  files landed;
- `netdiff.py`: the net-diff algebra (`compose`, `NetIndex`, `map_spans`), pure list arithmetic;
- `tracked.py`: `Tracked`, one file the agent touched (baseline, net regions, rendering);
- `budgets.py`: what a long session keeps in memory (pre-images, diffs), oldest dropped first;
- `replay.py`: `Replay`, the state the journal's records give;
- `compaction.py`: that state written back as a shorter journal (the entries it keeps, a
  checkpoint of the net diff);
- `recording.py`: `History` (a `Replay` with a journal): begin/finish/record, recovery, undo
  plans, `open_history`;
- `rendering.py`: the `agentEdit.history` answers (JSON, diff text) as generators (`drive`), and
  where the undoable edits sit in a file (code-lens titles are the LSP layer's).

Everything other modules import is re-exported here; import from `lsp_server.engine.history`.
"""

from lsp_server.engine.history.budgets import DEFAULT_UNDO_WINDOW, DIFF_BUDGET, PREIMAGE_BUDGET
from lsp_server.engine.history.entries import (
    ARG_LIST_CAP,
    ARG_STRING_CAP,
    ENTRY_DIFF_CAP,
    Entry,
    now_iso,
    summarize_args,
)
from lsp_server.engine.history.netdiff import MAX_SPANS, NetIndex, compose, map_spans
from lsp_server.engine.history.recording import History, open_history
from lsp_server.engine.history.rendering import (
    ENTRY_FILES,
    LIVE_CHANGED,
    NET_FILES,
    Iterator_,
    Live,
    drive,
)
from lsp_server.engine.history.replay import Replay
from lsp_server.engine.history.tracked import Tracked

__all__ = [
    "ARG_LIST_CAP",
    "ARG_STRING_CAP",
    "DEFAULT_UNDO_WINDOW",
    "DIFF_BUDGET",
    "ENTRY_DIFF_CAP",
    "ENTRY_FILES",
    "LIVE_CHANGED",
    "MAX_SPANS",
    "NET_FILES",
    "PREIMAGE_BUDGET",
    "Entry",
    "History",
    "Iterator_",
    "Live",
    "NetIndex",
    "Replay",
    "Tracked",
    "compose",
    "drive",
    "map_spans",
    "now_iso",
    "open_history",
    "summarize_args",
]
