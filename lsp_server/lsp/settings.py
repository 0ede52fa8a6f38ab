"""Server settings (`agentEdit.*`) from initializationOptions and workspace/didChangeConfiguration.

Settings come only from the editor's configuration, never from a command an agent sends, so an
agent cannot loosen them. Clients send more than the server's keys (VS Code's extension sends its
whole `agentEdit` section, client-only `server` and `trace` included): an unknown key, or one bad
value, is logged and skipped, never a reason to drop the rest, so a deny rule the user adds is
applied whatever else the payload holds. While the server runs, settings only tighten.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import Any

from lsp_server.engine.policy import SECTION, SETTING_KEYS, PathPolicy, SettingsError

log = logging.getLogger(__name__)


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

    def updated(self, options: Any, *, running: bool = False) -> Settings:
        """These settings with `options` (camelCase, optionally under `agentEdit`) applied.

        Values of the wrong type are ignored rather than trusted. While `running`, switching
        requireRead off (a loosening) is ignored until a restart.
        """
        options = section(options)
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
                if running and attr == "require_read" and self.require_read and not value:
                    log.warning("agent-edit: requireRead off takes effect after a restart")
                    continue
                changes[attr] = value
        return replace(self, **changes)


def section(payload: Any) -> dict[str, Any]:
    """The `agentEdit` section of a settings payload (or the payload itself), {} if none."""
    if not isinstance(payload, dict):
        return {}
    inner = payload.get(SECTION)
    if isinstance(inner, dict):
        return inner
    return payload if SECTION not in payload else {}


def policy_values(payload: Any) -> dict[str, Any]:
    """The path-policy keys of a payload; every other key is ignored with one log line."""
    values = section(payload)
    unknown = sorted(str(k)[:80] for k in values if k not in SETTING_KEYS and k not in _OWN)
    if unknown:
        log.warning("agent-edit: ignoring settings the server does not use: %s", ", ".join(unknown))
    return {k: v for k, v in values.items() if k in SETTING_KEYS}


_OWN = frozenset(Settings._NAMES)


def initial_policy(roots: Iterable[str], payload: Any) -> tuple[PathPolicy, list[str]]:
    """The policy at `initialize`: each valid key applies; each invalid one is skipped and said."""
    roots = list(roots)
    good: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in policy_values(payload).items():
        value = _valid_globs(roots, key, value, problems)
        try:
            PathPolicy.from_settings(roots, {key: value})
        except SettingsError as exc:
            problems.append(exc.message)
            continue
        good[key] = value
    return PathPolicy.from_settings(roots, good), problems


def reconfigured(policy: PathPolicy, payload: Any) -> tuple[PathPolicy, list[str]]:
    """The policy after a configuration change: every tightening key applies at once, each
    widening or invalid one is refused on its own (and said), so one does not block another.

    A deny list that drops globs still adds its new ones: the dropped ones stay until a restart.
    """
    problems: list[str] = []
    new = policy
    roots = [r.named for r in policy.roots]
    for key, value in policy_values(payload).items():
        value = _valid_globs(roots, key, value, problems)
        if key == "deny" and isinstance(value, list):
            dropped = [g for g in new.deny if g not in value]
            if dropped:
                problems.append(
                    f"removing deny globs ({', '.join(dropped)}) takes effect after a restart "
                    "of the server"
                )
            value = list(new.deny) + [g for g in value if g not in new.deny]
        try:
            new = new.reconfigure({key: value})
        except SettingsError as exc:
            problems.append(exc.message)
    return new, problems


def _valid_globs(roots: list[str], key: str, value: Any, problems: list[str]) -> Any:
    """A deny or allow list without its invalid globs (each said): one bad entry must not drop
    the user's other deny rules (fewer allow globs only tighten). Other values as they are."""
    if key not in ("deny", "allow") or not isinstance(value, list):
        return value
    kept = []
    for glob in value:
        try:
            PathPolicy.from_settings(roots, {key: [glob]})
        except SettingsError as exc:
            problems.append(exc.message)
            continue
        kept.append(glob)
    return kept
