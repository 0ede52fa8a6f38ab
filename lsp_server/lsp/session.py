"""One editor connection's session: what the agent last saw of each file (read-before-edit).

Edit ids come from the workspace history (engine/history.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Session:
    # Last content the agent is known to have seen per path: from agentEdit.read, or its own edit.
    reads: dict[str, dict[str, Any]] = field(default_factory=dict)

    def saw(self, path: str, version: int | None, sha256: str) -> None:
        self.reads[path] = {"version": version, "sha256": sha256}

    def forget(self, path: str) -> None:
        self.reads.pop(path, None)
