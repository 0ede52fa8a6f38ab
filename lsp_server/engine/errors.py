"""The stable error codes of product.md 2.1 and the one exception type that carries them.

Every refusal or failure in the engine is an `EditError`: a code an agent can branch on, a message
saying why, a hint saying what to do next, and `details` with stable field names. Each code is
defined exactly once, here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Code(StrEnum):
    PARSE_ERROR = "PARSE_ERROR"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    OUTSIDE_WORKSPACE = "OUTSIDE_WORKSPACE"
    DENIED = "DENIED"
    BINARY = "BINARY"
    TOO_LARGE = "TOO_LARGE"
    INVALID_ENCODING = "INVALID_ENCODING"
    STALE = "STALE"
    NO_MATCH = "NO_MATCH"
    AMBIGUOUS = "AMBIGUOUS"
    CLIENT_REJECTED = "CLIENT_REJECTED"
    NOT_APPLIED = "NOT_APPLIED"
    PARTIAL_ROLLED_BACK = "PARTIAL_ROLLED_BACK"
    PARTIAL = "PARTIAL"
    CONFLICT = "CONFLICT"
    TIMEOUT = "TIMEOUT"
    UNVERIFIED = "UNVERIFIED"
    UNSUPPORTED = "UNSUPPORTED"
    IO_ERROR = "IO_ERROR"


class EditError(Exception):
    """A domain failure that becomes a `{ok: false, ...}` result, never a crash."""

    def __init__(
        self,
        code: Code,
        message: str,
        hint: str = "",
        details: dict[str, Any] | None = None,
        committed: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.details: dict[str, Any] = details or {}
        self.committed: list[dict[str, Any]] = committed or []

    def to_result(self) -> dict[str, Any]:
        return {
            "ok": False,
            "code": str(self.code),
            "message": self.message,
            "hint": self.hint,
            "details": self.details,
            "committed": self.committed,
        }

    def __repr__(self) -> str:
        return f"EditError({self.code}, {self.message!r})"
