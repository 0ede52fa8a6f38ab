"""`python -m lsp_server` is the same program as the `agent-edit` console script."""

from lsp_server.cli import program

program()
