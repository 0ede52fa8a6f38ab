"""`agent-edit mcp`: the edit actions as MCP tools, through the editor's server when one runs.

tools.py   the tools, their schemas and what the model reads of a result
router.py  through the editor's language server (discovery) or headless on the disk
disk.py    the headless server the disk side runs in (the one adapter to the command handlers)
server.py  the MCP SDK server on stdio
handshake.py  the CLI's entry: answers `initialize` while the SDK loads, then hands it the wire

The `mcp` SDK is imported only here (server.py, after handshake.py has taken the wire), never
by the CLI's other commands or the language server.
"""
