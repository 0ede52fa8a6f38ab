"""The policy's settings: `deny`, `allow`, `defaultDeny`, `maxFileBytes`, checked and parsed.

They come only from the editor (initializationOptions, `workspace/didChangeConfiguration`) or the
CLI, never from an agent's command. A setting that is not the policy's own (or one of the server's
`other_keys`), or a value of the wrong type, is a `SettingsError` naming the key; the previous (or
default) policy stays.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from lsp_server.engine.policy.globs import compile_glob

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

SETTING_KEYS = frozenset({"deny", "allow", "defaultDeny", "maxFileBytes"})
# The LSP settings section these live in, when a client sends `{"agentEdit": {...}}`.
SECTION = "agentEdit"

MAX_GLOBS = 1000
MAX_GLOB_CHARS = 1000
MAX_FILE_BYTES_LIMIT = 1024 * 1024 * 1024


class SettingsError(ValueError):
    """A policy setting the server must not accept; the previous (or default) policy stays."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def parse_settings(
    settings: Mapping[str, Any] | None, other_keys: frozenset[str]
) -> dict[str, Any]:
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise SettingsError("settings", "agent-edit settings must be an object")
    section = settings.get(SECTION)
    if isinstance(section, Mapping):
        settings = section
    elif section is not None:
        raise SettingsError(SECTION, f"setting {SECTION} must be an object")
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if key not in SETTING_KEYS:
            if key in other_keys:
                continue  # the server's own setting (a key both use, e.g. maxFileBytes, is ours)
            raise SettingsError(
                str(key),
                f"unknown agent-edit setting {str(key)[:80]!r}; known: "
                + ", ".join(sorted(SETTING_KEYS | other_keys)),
            )
        if value is None:
            continue  # unset in the client: keep the default
        if key in ("deny", "allow"):
            out[key] = parse_globs(key, value)
        elif key == "defaultDeny":
            if not isinstance(value, bool):
                raise SettingsError(key, "setting defaultDeny must be true or false")
            out["default_deny"] = value
        elif key == "maxFileBytes":
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= MAX_FILE_BYTES_LIMIT
            ):
                raise SettingsError(
                    key,
                    f"setting maxFileBytes must be a whole number of bytes from 1 to "
                    f"{MAX_FILE_BYTES_LIMIT}",
                )
            out["max_file_bytes"] = value
    return out


def parse_globs(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise SettingsError(key, f"setting {key} must be a list of glob strings")
    if len(value) > MAX_GLOBS:
        raise SettingsError(key, f"setting {key} has more than {MAX_GLOBS} globs")
    globs: list[str] = []
    for g in value:
        if not isinstance(g, str) or not g.strip() or len(g) > MAX_GLOB_CHARS or "\0" in g:
            raise SettingsError(
                key, f"setting {key} must hold non-empty glob strings, got {str(g)[:80]!r}"
            )
        try:
            compile_glob(g)
        except re.error as exc:
            raise SettingsError(key, f"setting {key}: glob {g[:80]!r} is invalid ({exc})") from None
        if g not in globs:
            globs.append(g)
    return tuple(globs)
