"""The LSP layer: the only code that imports pygls and lsprotocol."""
