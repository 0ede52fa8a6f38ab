"""Which tree-sitter grammar a document gets (by LSP languageId, else by file name), loaded lazily.

Grammars come from the per-language wheels (tree-sitter-python, -javascript, -typescript, -rust,
-go, -java, -c, -cpp, -json, -yaml, -toml, -bash, -html, -css); nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib
import re
from functools import cache

from tree_sitter import Language

# language name -> (module, function returning the grammar pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "rust": ("tree_sitter_rust", "language"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "json": ("tree_sitter_json", "language"),
    "yaml": ("tree_sitter_yaml", "language"),
    "toml": ("tree_sitter_toml", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "html": ("tree_sitter_html", "language"),
    "css": ("tree_sitter_css", "language"),
}

# LSP languageIds as VS Code, Neovim (its filetype) and Emacs eglot (major mode minus "-mode")
# send them.
LANGUAGE_IDS: dict[str, str] = {
    "python": "python",
    "javascript": "javascript",
    "javascriptreact": "javascript",
    "js": "javascript",
    "jsx": "javascript",
    "typescript": "typescript",
    "ts": "typescript",
    "typescriptreact": "tsx",
    "tsx": "tsx",
    "rust": "rust",
    "go": "go",
    "java": "java",
    "c": "c",
    "cpp": "cpp",
    "c++": "cpp",
    "cuda-cpp": "cpp",
    "json": "json",
    "yaml": "yaml",
    "toml": "toml",
    "conf-toml": "toml",
    "shellscript": "bash",
    "sh": "bash",
    "bash": "bash",
    "html": "html",
    "mhtml": "html",
    "css": "css",
}

# Ids that mean "no syntax diagnostics", whatever the file is called: an editor that says plain
# text is believed, and JSON with comments and trailing commas (VS Code's settings.json) must not
# meet the strict JSON grammar through its .json extension.
NO_SYNTAX_IDS = frozenset({"plaintext", "text", "txt", "jsonc", "json5"})

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".c": "c",
    # Headers go to C++: its grammar reads C headers, the C grammar flags every class/namespace.
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".sh": "bash",
    ".bash": "bash",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
}

FILE_NAMES: dict[str, str] = {
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".profile": "bash",
    "Cargo.lock": "toml",
}


def language_for(language_id: str | None, path: str | None = None) -> str | None:
    """The grammar name for a document, or None when it gets no syntax diagnostics."""
    if language_id:
        lid = language_id.lower()
        if lid in LANGUAGE_IDS:
            return LANGUAGE_IDS[lid]
        if lid in NO_SYNTAX_IDS:
            return None
    if not path:
        return None
    name = re.split(r"[\\/]", path)[-1]
    if name in FILE_NAMES:
        return FILE_NAMES[name]
    dot = name.rfind(".")
    if dot <= 0 and not name.startswith("."):
        return None
    return EXTENSIONS.get(name[dot:].lower()) if dot >= 0 else None


@cache
def load_language(name: str) -> Language:
    """The tree-sitter grammar `name` (a key of GRAMMARS), imported on first use and cached."""
    module_name, function = GRAMMARS[name]
    module = importlib.import_module(module_name)
    return Language(getattr(module, function)())
