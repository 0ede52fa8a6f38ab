"""Server settings (`agentEdit.*`) from initializationOptions and workspace/didChangeConfiguration.

Settings come only from the editor's configuration, never from a command an agent sends, so an
agent cannot loosen them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Settings:
    # Whole-file overwrites need a read (or `expect`) of the current content first.
    require_read: bool = True
    # How long to wait for the editor's answer to workspace/applyEdit (a user may be asked).
    apply_timeout_ms: int = 30_000
    # How long to wait, after the answer, for the didChange/didOpen that shows the edit.
    verify_timeout_ms: int = 2_000
    save_after_edit: bool = False

    _NAMES = {
        "requireRead": "require_read",
        "applyTimeoutMs": "apply_timeout_ms",
        "verifyTimeoutMs": "verify_timeout_ms",
        "saveAfterEdit": "save_after_edit",
    }

    def updated(self, options: Any) -> Settings:
        """These settings with `options` (camelCase, optionally under `agentEdit`) applied.

        Values of the wrong type are ignored rather than trusted.
        """
        if not isinstance(options, dict):
            return self
        if isinstance(options.get("agentEdit"), dict):
            options = options["agentEdit"]
        changes: dict[str, Any] = {}
        types = {f.name: f.type for f in fields(self)}
        for key, attr in self._NAMES.items():
            if key not in options:
                continue
            value = options[key]
            want = bool if types[attr] in ("bool", bool) else int
            if isinstance(value, want) and (want is bool or not isinstance(value, bool)):
                if want is int and value <= 0:
                    continue
                changes[attr] = value
        return replace(self, **changes)
