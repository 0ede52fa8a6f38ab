"""One editor connection's session: the agent's reads (read-before-edit) and edit ids."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Session:
    # Last content the agent is known to have seen per path: from agentEdit.read, or its own edit.
    reads: dict[str, dict[str, Any]] = field(default_factory=dict)
    _next_id: int = 1

    def new_edit_id(self) -> int:
        edit_id = self._next_id
        self._next_id += 1
        return edit_id

    def saw(self, path: str, version: int | None, sha256: str) -> None:
        self.reads[path] = {"version": version, "sha256": sha256}

    def forget(self, path: str) -> None:
        self.reads.pop(path, None)
