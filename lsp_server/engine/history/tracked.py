"""One file the agent touched: its baseline, the agent's net regions over it, and its rendering.

`Tracked` holds what the net diff of one file needs (the baseline, the regions of `netdiff`, what
the agent last wrote and whether the file exists or has a BOM then), takes agent and user edits in,
and renders the file's git-style net diff (cached until the next change). `fits` and `unsure` are
the guards replay uses for journal records that do not fit the file they name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lsp_server.engine.diffing import blob_sha1, file_diff
from lsp_server.engine.eol_views import same_lines
from lsp_server.engine.history.netdiff import (
    MAX_SPANS,
    NetIndex,
    compose,
    edits_from,
    edits_json,
    map_spans,
)
from lsp_server.engine.model import FileChange, LineEdit, apply_line_edits
from lsp_server.engine.text import Snapshot, absent, split_lines
from lsp_server.engine.undo import ChangeRecord

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


@dataclass(slots=True)
class Tracked:
    """One file the agent touched: its baseline, the agent's net regions over it, and what the
    agent last wrote (the baseline with the regions applied, built only when asked for)."""

    origin: str
    path: str
    base: list[str]
    base_exists: bool
    base_bom: bool
    net: list[LineEdit] = field(default_factory=list)
    last_exists: bool = False
    last_bom: bool = False
    # The buffer version the editor reported after the agent's last edit: when the next edit's
    # snapshot has it, nobody else changed the file and no comparison is needed.
    last_version: int | None = None
    notes: list[str] = field(default_factory=list)
    uncertain: bool = False
    # Lines each recent agent edit left, in the last text's coordinates: where code lenses go.
    spans: list[tuple[int, int, int]] = field(default_factory=list)
    _last: list[str] | None = field(default=None, repr=False)
    _index: NetIndex | None = field(default=None, repr=False)
    _rendered: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def start(
        cls, path: str, text: str | None, bom: bool, exists: bool, lines: list[str] | None = None
    ) -> Tracked:
        return cls(
            origin=path,
            path=path,
            base=lines if lines is not None else split_lines(text or ""),
            base_exists=exists,
            base_bom=bom,
            last_exists=exists,
            last_bom=bom,
        )

    @property
    def last(self) -> list[str]:
        if self._last is None:
            self._last = apply_line_edits(self.base, self.net) if self.net else self.base
        return self._last

    def last_len(self) -> int:
        if self._index is None:
            self._index = NetIndex.build(self.net)
        return len(self.base) + self._index.cum[-1]

    def _changed(self) -> None:
        self._last = None
        self._rendered = None

    def note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def shows(self, snap: Snapshot) -> bool:
        """Whether `snap` is exactly what the agent last wrote."""
        if snap.exists != self.last_exists:
            return False
        if not snap.exists:
            return True
        if snap.bom != self.last_bom:
            return False
        if (
            snap.source == "buffer"
            and snap.version is not None
            and snap.version == self.last_version
            and len(snap.lines) == self.last_len()
        ):
            return True
        if snap.lines == self.last:
            return True
        # The same lines in the file's other shape: Emacs's LF buffer of a CRLF file the agent
        # edited on disk, or that file on disk once the buffer it was edited in is closed
        # (engine/eol_views.py); "changed since the agent's last edit" was said of it.
        return same_lines(snap, self.last)

    def user_edits(self, edits: Sequence[LineEdit], entry_id: int) -> None:
        self.spans = map_spans(self.spans, edits)
        self.base, self.net, mixed, self._index = compose(
            self.base, self.net, edits, fold=True, index=self._index
        )
        if mixed:
            self.note(
                f"lines the agent had changed were edited by someone else before edit "
                f"#{entry_id}; those edits are shown as part of the agent's change"
            )
        self.uncertain = False
        self.last_version = None
        self._changed()

    def rebase(self, text: str | None, bom: bool, exists: bool, entry_id: int) -> None:
        """The file appeared or vanished outside the agent: start its net diff over from here."""
        self.origin = self.path
        self.base = split_lines(text or "")
        self.base_exists = self.last_exists = exists
        self.base_bom = self.last_bom = bom
        self.net = []
        self._index = None
        self.spans = []
        self.last_version = None
        self.note(
            f"the file was {'created' if exists else 'deleted'} outside the agent before edit "
            f"#{entry_id}; its net diff starts there"
        )
        self._changed()

    def agent_change(self, rec: ChangeRecord, version: int | None, entry_id: int) -> None:
        n = self.last_len()
        if rec.change == "add":
            new = tuple(split_lines(rec.after_text or ""))
            edits = [LineEdit(0, n, new)]
            self.spans = [(0, len(new) - 1 if new[-1] == "" else len(new), entry_id)]
        elif rec.change == "delete":
            edits = [LineEdit(0, n, ("",))]
            self.spans = []
        else:
            edits = rec.edits()
            mine = [(h.after_start, h.after_start + len(h.after), entry_id) for h in rec.hunks]
            self.spans = sorted(map_spans(self.spans, edits) + mine)[-MAX_SPANS:]
        self.base, self.net, _, self._index = compose(
            self.base, self.net, edits, fold=False, index=self._index
        )
        self.last_exists = rec.change != "delete"
        self.last_bom = rec.new_bom
        self.last_version = version
        if rec.moved_to:
            self.path = rec.moved_to
        self._changed()

    def kind(self) -> str | None:
        if self.base_exists and self.last_exists:
            return "move" if self.path != self.origin else "update"
        if self.last_exists:
            return "add"
        if self.base_exists:
            return "delete"
        return None

    def render(self) -> dict[str, Any] | None:
        """This file's net change: kind, paths, blob ids and the git-style diff (cached)."""
        if self._rendered is not None:
            return self._rendered
        kind = self.kind()
        if kind is None:
            return None
        if kind == "update" and self.base_bom == self.last_bom:
            # Regions can cancel out across each other (lines deleted here, the same added next
            # to it): the content is what counts.
            if not self.net or self.last == self.base:
                return None
        base_text = "".join(self.base)
        before = Snapshot(
            self.origin,
            base_text,
            source="disk" if self.base_exists else "absent",
            bom=self.base_bom,
            given_lines=self.base,
        )
        if kind == "add":
            fc = FileChange(
                "add",
                absent(self.path),
                new_text_override="".join(self.last),
                new_bom=self.last_bom,
            )
        elif kind == "delete":
            fc = FileChange("delete", before)
        else:
            fc = FileChange(
                kind,  # type: ignore[arg-type]
                before,
                tuple(self.net),
                moved_to=self.path if kind == "move" else None,
                new_bom=self.last_bom,
            )
        out: dict[str, Any] = {"path": self.path, "change": kind}
        if kind == "move":
            out["movedFrom"] = self.origin
        out["baseBlob"] = blob_sha1(base_text, self.base_bom) if self.base_exists else None
        out["agentBlob"] = (
            blob_sha1("".join(self.last), self.last_bom) if self.last_exists else None
        )
        diff = file_diff(fc, with_index=True)
        out["diff"] = diff
        at = diff.find("\n@@")
        body = diff[at + 1 :].splitlines() if at >= 0 else []  # the hunks, not the headers
        out["added"] = sum(1 for x in body if x.startswith("+"))
        out["removed"] = sum(1 for x in body if x.startswith("-"))
        self._rendered = out
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "origin": self.origin,
            "path": self.path,
            "base": "".join(self.base) if self.base_exists else None,  # null: it did not exist
            "baseBom": self.base_bom,
            "net": edits_json(self.net),
            "lastExists": self.last_exists,
            "lastBom": self.last_bom,
            "lastVersion": self.last_version,
            "notes": self.notes,
            "uncertain": self.uncertain,
            "spans": [list(x) for x in self.spans],
        }
        if not self.base_exists and self.base != [""]:
            # The file did not exist at the baseline, yet its base has lines: someone else's
            # edits to the file the agent created went into it (`user_edits`), so that the net
            # diff's regions (which count those lines) are the agent's alone. Without them the
            # net diff would not fit its base, and replay would leave the file out.
            out["absentBase"] = "".join(self.base)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tracked:
        base_text = data.get("base")
        if base_text is None:
            base_text = data.get("absentBase")  # see `to_json`
        return cls(
            origin=str(data["origin"]),
            path=str(data["path"]),
            base=split_lines(base_text or ""),
            base_exists=data.get("base") is not None,
            base_bom=bool(data.get("baseBom")),
            net=edits_from(data.get("net", [])),
            last_exists=bool(data.get("lastExists")),
            last_bom=bool(data.get("lastBom")),
            last_version=data.get("lastVersion"),
            notes=list(data.get("notes", [])),
            uncertain=bool(data.get("uncertain")),
            spans=[(int(a), int(b), int(c)) for a, b, c in data.get("spans", [])],
        )


def fits(edits: Sequence[LineEdit], length: int) -> bool:
    """Whether sorted `edits` lie inside a text of `length` lines (a journal record from a
    file that is not this one, or a hand-edited one, may not)."""
    return not edits or edits[-1].end <= length


def unsure(tr: Tracked, entry_id: int) -> None:
    tr.uncertain = True
    tr.note(
        f"edit #{entry_id}'s journal record does not fit this file; its net diff is shown as "
        "the agent last knew it"
    )
