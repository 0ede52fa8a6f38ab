"""Code lenses over the lines the agent's edits left: their titles and the commands they run.

The engine says where each still-undoable agent edit sits in a file (`History.lenses`: line spans
with the edit's id and action, moved along with user edits); what an editor shows there is
presentation and lives here: above each span a lens titled `agent edit #N` (it shows the edit's
diff), an `undo` lens and a `diff` lens. Clients run these commands through
`workspace/executeCommand` like any agentEdit command.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lsprotocol import types as t


def lens_title(edit_id: int) -> str:
    """The title of the lens that names an agent edit."""
    return f"agent edit #{edit_id}"


def code_lenses(spans: Iterable[Mapping[str, Any]]) -> list[t.CodeLens]:
    """The lenses for `History.lenses` spans (`{line, endLine, editId}`, 0-based, end exclusive)."""
    lenses: list[t.CodeLens] = []
    for span in spans:
        rng = t.Range(
            start=t.Position(line=span["line"], character=0),
            end=t.Position(line=span["endLine"], character=0),
        )
        edit = {"editId": span["editId"]}
        for title, command, arg in (
            (lens_title(span["editId"]), "agentEdit.history", {"format": "diff", **edit}),
            ("undo", "agentEdit.undo", edit),
            ("diff", "agentEdit.history", {"format": "diff", **edit}),
        ):
            lenses.append(
                t.CodeLens(
                    range=rng, command=t.Command(title=title, command=command, arguments=[arg])
                )
            )
    return lenses
