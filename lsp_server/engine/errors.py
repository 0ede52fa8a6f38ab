"""The stable error codes of product.md 2.1 and the one exception type that carries them.

Every refusal or failure in the engine is an `EditError`: a code an agent can branch on, a message
saying why, a hint saying what to do next, and `details` with stable field names. Each code is
defined exactly once, here.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from enum import StrEnum

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from lsp_server.engine.results import Refusal


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


# The failure codes after which nothing was changed: refused before anything was sent or
# written, or checked afterwards to have left every file as it was. Any other (TIMEOUT,
# UNVERIFIED, PARTIAL, IO_ERROR, one added later) may follow a change that landed, and a client
# must not tell a person "nothing was changed" after it. The editor clients keep this list as
# their own (tests/clients/test_contract_drift.py checks them against it).
NOTHING_CHANGED = frozenset(
    {
        Code.PARSE_ERROR,
        Code.INVALID_ARGUMENT,
        Code.NOT_FOUND,
        Code.ALREADY_EXISTS,
        Code.OUTSIDE_WORKSPACE,
        Code.DENIED,
        Code.BINARY,
        Code.TOO_LARGE,
        Code.INVALID_ENCODING,
        Code.STALE,
        Code.NO_MATCH,
        Code.AMBIGUOUS,
        Code.CLIENT_REJECTED,
        Code.NOT_APPLIED,
        Code.PARTIAL_ROLLED_BACK,
        Code.CONFLICT,
        Code.UNSUPPORTED,
    }
)


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

    def refusal(self) -> Refusal:
        """The failure as the answer a front sends (`results.wire` makes its JSON)."""
        from lsp_server.engine.results import Refusal  # results imports Code from here

        return Refusal(
            code=str(self.code),
            message=self.message,
            hint=self.hint,
            details=self.details,
            committed=self.committed,
        )

    def to_result(self) -> dict[str, Any]:
        """The refusal's JSON object."""
        from lsp_server.engine.results import wire

        return wire(self.refusal())

    def __repr__(self) -> str:
        return f"EditError({self.code}, {self.message!r})"


# -- one named constructor per code ------------------------------------------------------------
# `errors.stale(message, hint, path=..., expected=..., current=...)` instead of an inline
# `EditError(Code.STALE, ...)`: the call site reads as what happened, and the keyword-only
# parameters are the `details` fields product.md 2.1 promises for that code, so a refusal
# cannot leave them out. Extra keywords become further details under their own (stable) names.


def parse_error(
    message: str, hint: str, *, patchLine: int, line: str, expected: list[str], **details: Any
) -> EditError:
    """The patch does not parse: the patch line number, the offending line, what was expected."""
    return EditError(
        Code.PARSE_ERROR,
        message,
        hint,
        {"patchLine": patchLine, "line": line, "expected": expected, **details},
    )


def invalid_argument(message: str, hint: str, *, argument: str, **details: Any) -> EditError:
    """A well-formed request whose value cannot be used (`oldText` empty, NO_CHANGE...)."""
    return EditError(Code.INVALID_ARGUMENT, message, hint, {"argument": argument, **details})


def not_found(message: str, hint: str, *, path: str | None, **details: Any) -> EditError:
    """The file (or folder) the request names is not there: the resolved path."""
    return EditError(Code.NOT_FOUND, message, hint, {"path": path, **details})


def already_exists(message: str, hint: str, *, path: str, **details: Any) -> EditError:
    """Creating or moving onto a file that exists."""
    return EditError(Code.ALREADY_EXISTS, message, hint, {"path": path, **details})


def outside_workspace(message: str, hint: str, *, rule: str, **details: Any) -> EditError:
    """The path policy: the path resolves outside every workspace folder."""
    return EditError(Code.OUTSIDE_WORKSPACE, message, hint, {"rule": rule, **details})


def denied(message: str, hint: str, *, path: str | None, **details: Any) -> EditError:
    """A deny rule, or a file the writer may not change as it must (mode, owner, xattr)."""
    return EditError(Code.DENIED, message, hint, {"path": path, **details})


def binary(message: str, hint: str, *, path: str, size: int, **details: Any) -> EditError:
    """A NUL byte in the first 8 KiB."""
    return EditError(Code.BINARY, message, hint, {"path": path, "size": size, **details})


def too_large(
    message: str, hint: str, *, path: str, size: int, cap: int, **details: Any
) -> EditError:
    """Over the size cap: the size and the cap."""
    return EditError(
        Code.TOO_LARGE, message, hint, {"path": path, "size": size, "cap": cap, **details}
    )


def invalid_encoding(
    message: str, hint: str, *, path: str, offset: int, **details: Any
) -> EditError:
    """Not UTF-8: the offset of the first bad byte."""
    return EditError(
        Code.INVALID_ENCODING, message, hint, {"path": path, "offset": offset, **details}
    )


def stale(message: str, hint: str, **details: Any) -> EditError:
    """The text changed since the agent saw it (`expected`/`current` when a token was given)."""
    return EditError(Code.STALE, message, hint, details)


def no_match(
    message: str, hint: str, *, path: str, candidates: list[Any], **details: Any
) -> EditError:
    """`oldText` or a chunk is nowhere: the closest candidates `[{line, text, why}]`."""
    return EditError(
        Code.NO_MATCH, message, hint, {"path": path, "candidates": candidates, **details}
    )


def ambiguous(message: str, hint: str, *, path: str, lines: list[int], **details: Any) -> EditError:
    """More than one match: every matching line."""
    return EditError(Code.AMBIGUOUS, message, hint, {"path": path, "lines": lines, **details})


def client_rejected(
    message: str,
    hint: str,
    *,
    files: list[dict[str, Any]],
    committed: list[dict[str, Any]] | None = None,
    **details: Any,
) -> EditError:
    """The editor answered `applied: false` or an error."""
    return EditError(Code.CLIENT_REJECTED, message, hint, {"files": files, **details}, committed)


def not_applied(
    message: str,
    hint: str,
    *,
    files: list[dict[str, Any]],
    committed: list[dict[str, Any]] | None = None,
    **details: Any,
) -> EditError:
    """The editor said applied, but the buffers do not show it."""
    return EditError(Code.NOT_APPLIED, message, hint, {"files": files, **details}, committed)


def partial_rolled_back(
    message: str,
    hint: str,
    *,
    files: list[dict[str, Any]],
    committed: list[dict[str, Any]] | None = None,
    **details: Any,
) -> EditError:
    """Some changes landed and were reverted: every file is as it was."""
    return EditError(
        Code.PARTIAL_ROLLED_BACK, message, hint, {"files": files, **details}, committed
    )


def partial(
    message: str,
    hint: str,
    *,
    files: list[dict[str, Any]] | list[str],
    committed: list[dict[str, Any]],
    **details: Any,
) -> EditError:
    """Some changes landed and could not be reverted: the exact committed list. (`files` is
    `[{path, state}]`, except from the disk writer's failed rollback: the paths alone.)"""
    return EditError(Code.PARTIAL, message, hint, {"files": files, **details}, committed)


def conflict(message: str, hint: str, *, lines: list[Any], **details: Any) -> EditError:
    """An undo whose lines changed since the edit: the lines that differ."""
    return EditError(Code.CONFLICT, message, hint, {"lines": lines, **details})


def timeout(
    message: str,
    hint: str,
    *,
    files: list[dict[str, Any]],
    committed: list[dict[str, Any]] | None = None,
    **details: Any,
) -> EditError:
    """The editor did not answer in time: the state as verified afterwards."""
    return EditError(Code.TIMEOUT, message, hint, {"files": files, **details}, committed)


def unverified(
    message: str,
    hint: str,
    *,
    files: list[dict[str, Any]],
    unconfirmed: list[str],
    committed: list[dict[str, Any]] | None = None,
    **details: Any,
) -> EditError:
    """The editor said applied but has not shown it yet: the unconfirmed files."""
    return EditError(
        Code.UNVERIFIED,
        message,
        hint,
        {"files": files, "unconfirmed": unconfirmed, **details},
        committed,
    )


def unsupported(message: str, hint: str, **details: Any) -> EditError:
    """The editor cannot do what the edit needs (a resource operation on an open buffer...)."""
    return EditError(Code.UNSUPPORTED, message, hint, details)


def io_error(message: str, hint: str, **details: Any) -> EditError:
    """The operating system refused (permissions, disk space, the state folder)."""
    return EditError(Code.IO_ERROR, message, hint, details)


# -- refusals that share a code but not its promised details --------------------------------
# Two families of refusal take their code from a situation product.md 2.1 does not describe,
# so the details it promises for that code are not there to give: each has its own constructor
# (and neither is in CONSTRUCTORS, which keeps one constructor per code).


def from_os_error(exc: BaseException, message: str, hint: str, **details: Any) -> EditError:
    """The operating system refused: DENIED for a permission or a read-only file system,
    NOT_FOUND for a file or folder that is gone, IO_ERROR otherwise (disk space, the disk, or
    `exc` not an OSError at all).

    `path` is a detail only where the caller knows which file it was: the disk writer's
    rollback sees the error of a whole apply, not the step that raised it."""
    number = exc.errno if isinstance(exc, OSError) else None
    if number in (errno.EACCES, errno.EPERM, errno.EROFS):
        code = Code.DENIED
    elif number in (errno.ENOENT, errno.ENOTDIR):
        code = Code.NOT_FOUND
    else:
        code = Code.IO_ERROR
    return EditError(code, message, hint, details)


def open_elsewhere(
    message: str, hint: str, *, reason: str, editor: str, pid: int, **details: Any
) -> EditError:
    """CONFLICT with another editor (through its agent-edit server) that has, or may have, the
    files open, so the disk is not what its user sees: which editor and its process. Not an
    undo's CONFLICT, so there are no differing `lines`."""
    return EditError(
        Code.CONFLICT, message, hint, {"reason": reason, "editor": editor, "pid": pid, **details}
    )


# Code -> its constructor: every code has exactly one (checked by tests/engine/test_errors.py).
CONSTRUCTORS: dict[Code, Callable[..., EditError]] = {
    Code.PARSE_ERROR: parse_error,
    Code.INVALID_ARGUMENT: invalid_argument,
    Code.NOT_FOUND: not_found,
    Code.ALREADY_EXISTS: already_exists,
    Code.OUTSIDE_WORKSPACE: outside_workspace,
    Code.DENIED: denied,
    Code.BINARY: binary,
    Code.TOO_LARGE: too_large,
    Code.INVALID_ENCODING: invalid_encoding,
    Code.STALE: stale,
    Code.NO_MATCH: no_match,
    Code.AMBIGUOUS: ambiguous,
    Code.CLIENT_REJECTED: client_rejected,
    Code.NOT_APPLIED: not_applied,
    Code.PARTIAL_ROLLED_BACK: partial_rolled_back,
    Code.PARTIAL: partial,
    Code.CONFLICT: conflict,
    Code.TIMEOUT: timeout,
    Code.UNVERIFIED: unverified,
    Code.UNSUPPORTED: unsupported,
    Code.IO_ERROR: io_error,
}
