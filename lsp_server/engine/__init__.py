"""The pure edit engine: snapshots, matching, planning and diffs, with no editor or LSP imports.

Everything here works on values (text snapshots in, plans and result objects out) so the same code
serves the language server, the headless CLI and the unit tests.
"""
