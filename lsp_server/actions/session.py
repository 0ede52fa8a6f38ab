"""One caller's session (an editor connection, a CLI run, an MCP client): what the agent last
saw of each file (read-before-edit).

A read token is a buffer version and a sha256. The version only means something within the open
(didOpen to didClose) it came from: editors count again after a reopen (VS Code from 1, Neovim
from 0), so across a reopen only the sha256 proves the agent saw the text. Each token remembers
its open (`DocumentStore` numbers them); `for_open` drops the version of a token from another.

Edit ids come from the workspace history (engine/history/).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lsp_server.engine import errors

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


@dataclass
class Session:
    """One caller's read tokens (and its own edits'), by workspace-relative path."""

    # Last content the agent is known to have seen per path: from agentEdit.read, or its own edit.
    reads: dict[str, dict[str, Any]] = field(default_factory=dict)

    def saw(self, path: str, version: int | None, sha256: str, opened: int | None = None) -> None:
        self.reads[path] = {"version": version, "sha256": sha256, "open": opened}

    def forget(self, path: str) -> None:
        self.reads.pop(path, None)

    def known(self, path: str, expect: dict[str, Any] | None) -> dict[str, Any] | None:
        """What the agent knew of `path` when it sent a request: its `expect`, else its last read.

        An `expect` version is tied to the open of the session's last read of the path when
        there is one (the agent most likely took it from that read).
        """
        seen = self.reads.get(path)
        if not expect:
            return dict(seen) if seen else None
        token = dict(expect)
        if seen is not None and token.get("version") is not None:
            token["open"] = seen.get("open")
        return token


def for_open(token: dict[str, Any] | None, opened: int | None) -> dict[str, Any] | None:
    """`token` as it may be checked against the buffer of open `opened` (None: not open).

    A version handed out in another open (or while the file was not open) proves nothing now:
    it is dropped, and the sha256, if any, decides.
    """
    if not token or token.get("version") is None or "open" not in token:
        return token
    if token["open"] == opened and opened is not None:
        return token
    out = {k: v for k, v in token.items() if k != "version"}
    out["reopened"] = True
    return out


def token_now(rel: str, token: dict[str, Any] | None, opened: int | None) -> dict[str, Any] | None:
    """`token` as it may be checked now against open `opened` of `rel` (`for_open`); a token
    left with nothing to prove is STALE, saying why."""
    fitted = for_open(token, opened)
    if fitted is not None and fitted.get("reopened") and fitted.get("sha256") is None:
        raise errors.stale(
            f"{rel} was closed (or opened) in the editor since version "
            f"{token.get('version') if token else None} was read, or the editor sent a change "
            "without a higher version; editors count versions again after a reopen, so that "
            "version proves nothing now.",
            "Read the file again with agentEdit.read, or pass expect: {sha256} from a read.",
            expected={
                "version": token.get("version") if token else None,
                "sha256": None,
            },
            path=rel,
            reason="REOPENED",
        )
    return fitted
