"""agent-edit: a language server that applies coding agents' edits to editor buffers safely."""

__version__ = "0.1.0"
