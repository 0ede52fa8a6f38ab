"""Test launcher: the real agent-edit server with the syntax-diagnostics hooks wired in.

Until `lsp_server/lsp/server.py` calls the hooks itself, this wires them the way the server will:
`publish_after_edit` after a verified edit (its list becomes the result's `diagnostics`),
`document_opened` in didOpen and `document_changed` in didChange. Each hook is wired here only
if the server's source does not call it already, so this becomes the plain server once it does.
Run as `python -m tests.diagnostics_server` with the repository root on PYTHONPATH.
"""

from __future__ import annotations

import inspect
from typing import Any

from lsprotocol import types as t
from pygls.protocol.language_server import lsp_method

from lsp_server.lsp import server as server_module
from lsp_server.lsp.diagnostics import document_changed, document_opened, publish_after_edit

Protocol = server_module.AgentEditProtocol
_did_open = Protocol.lsp_text_document__did_open
_did_change = Protocol.lsp_text_document__did_change


@lsp_method(t.TEXT_DOCUMENT_DID_OPEN)
def _open(self: Any, params: t.DidOpenTextDocumentParams) -> Any:
    yield from _did_open(self, params)
    document_opened(self._server, params.text_document.uri)


@lsp_method(t.TEXT_DOCUMENT_DID_CHANGE)
def _change(self: Any, params: t.DidChangeTextDocumentParams) -> Any:
    yield from _did_change(self, params)
    document_changed(self._server, params.text_document.uri)


_SERVER_SOURCE = inspect.getsource(server_module)
if "document_opened(" not in _SERVER_SOURCE:
    Protocol.lsp_text_document__did_open = _open  # type: ignore[method-assign]
if "document_changed(" not in _SERVER_SOURCE:
    Protocol.lsp_text_document__did_change = _change  # type: ignore[method-assign]


def main() -> None:
    server = server_module.create_server()
    carry_out = server.carry_out

    async def carry_out_with_diagnostics(
        action: str, changes: list[Any], where: dict[str, Any], dry_run: bool
    ) -> dict[str, Any]:
        result = await carry_out(action, changes, where, dry_run)
        if result.get("ok") and result.get("status") == "applied":
            locations = {p: server.location(r) for p, r in where.items()}
            versions = {f["path"]: f.get("version") for f in result["files"]}
            result["diagnostics"] = await publish_after_edit(server, changes, locations, versions)
        return result

    if "publish_after_edit(" not in _SERVER_SOURCE:
        server.carry_out = carry_out_with_diagnostics  # type: ignore[method-assign]
    server.start_io()


if __name__ == "__main__":
    main()
