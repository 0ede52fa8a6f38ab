"""Syntax errors of a document, found by tree-sitter and parsed incrementally per document.

This module owns: which grammar a document gets (by LSP languageId, else by file extension), the
lazily loaded grammars, one incremental parser per document, turning tree-sitter ERROR and MISSING
nodes into messages an agent can act on, and deciding which errors an edit introduced.

Grammars come from the per-language wheels (tree-sitter-python, -javascript, -typescript, -rust,
-go, -java, -c, -cpp, -json, -yaml, -toml, -bash, -html, -css); nothing is downloaded at run time.

API (everything an LSP or CLI front end needs):

- `language_for(language_id, path) -> str | None`: our language name ("python", "tsx", ...) or
  None when the document gets no syntax diagnostics (plain text, unknown languages). An explicit
  languageId we know wins; "plaintext" and "jsonc" mean none; otherwise the extension decides.
- `DocumentSyntax(language, text)`: one document's tree, parsed lazily. Its source is kept as
  row blocks (`rows.py`), so edits cost O(edit), not a copy of the file. Per change, without
  parsing:
    * `syntax.apply_line_edits(lines_before, edits)` with our `LineEdit`s (old line coordinates,
      sorted, non-overlapping); `lines_before` (the LSP line list) is only needed when the text
      may hold a lone CR (`lines_are_rows` is False), else None will do;
    * `syntax.replace(start_byte, old_end_byte, new_text)` for a byte range of the UTF-8 text;
    * `syntax.edit(...)`, tree-sitter's own form plus the whole new UTF-8 source;
    * `syntax.set_text(text)` with the whole new text: the byte difference becomes one edit.
  Then either
    * `syntax.check()` -> `Check`: right after edits, cheaply. Documents under `region_above`
      bytes (64 KiB) get a whole incremental reparse ("exact"); larger ones known clean get a
      region check (`region.py`: the edited top-level nodes and their neighbours parsed alone,
      ~0.1-1 ms at 100k lines): "region" with no problems means still clean, with problems
      they are the region's errors at file positions; "pending" means a whole parse must say
      (the file was broken, the edit could not be bounded, no tree yet); or
    * `syntax.problems()`: a whole (incremental) parse under the document's lock, cached; or
    * `syntax.parse_detached()`: the same for a worker thread, holding the lock only to copy
      the state and install the result (edits meanwhile are not waited for; the result says
      whether it is still current).
  Whole parses of large texts read them in 32 KiB chunks, so py-tree-sitter lets the GIL go
  between reads and the event loop keeps running. While the document is broken, reparses start
  from the last clean tree (tree-sitter reparses an error-bearing tree slowly); documents under
  `exact_below` bytes (64 KiB) that have errors get a fresh parse, so their errors never depend
  on the edit history.
- `syntax_problems(language, text)`: a one-shot full parse for files that are not open.
- `SyntaxProblem`: one error, capped per document (`max_problems`, default 20; what an unclosed
  bracket or string swallowed is not reported again, only its cause): `message`
  ("missing ')' to close '(' opened at 12:8", "unclosed string starting at 3:9",
  "unexpected 'foo'"), `kind` ("missing" | "unclosed" | "unexpected"), `line` / `column` (1-based,
  column in Unicode code points, as an agent counts characters), `start` / `end`
  (`TextPosition`: 0-based LSP line with the column as UTF-8 bytes, UTF-16 code units and code
  points; `lsp_range(encoding)` picks the one the client negotiated), `to_result()` for the edit
  result's `diagnostics`.
- `introduced_errors(before, after, edits)`: the problems in `after` that the edits introduced.
  Every new problem counts when the file was clean before; otherwise only new problems in or
  near (`near` lines) the edited ranges, with line shifts from the edits taken into account, so
  an already broken file does not blame an unrelated edit.
- `line_edit_to_byte_edit(lines, edit, source)`: a `LineEdit` as tree-sitter's byte/point edit
  (`ByteEdit`). Tree-sitter points are (row, UTF-8 byte column) with rows counted at `\\n` only.

Positions: rows in tree-sitter count `\\n`; LSP lines also end at a lone `\\r`. Positions reported
here are always LSP lines, computed from byte offsets. (The Python grammar itself does not end a
line at a lone `\\r`, so old-Mac Python files parse badly; other grammars take it as whitespace.)
"""

from lsp_server.engine.syntax.blame import introduced_errors
from lsp_server.engine.syntax.document import (
    EXACT_BELOW_BYTES,
    REGION_ABOVE_BYTES,
    ByteEdit,
    Check,
    DocumentSyntax,
    _common_prefix,
    _common_suffix,
    line_edit_to_byte_edit,
    syntax_problems,
)
from lsp_server.engine.syntax.grammars import (
    EXTENSIONS,
    FILE_NAMES,
    GRAMMARS,
    LANGUAGE_IDS,
    NO_SYNTAX_IDS,
    language_for,
    load_language,
)
from lsp_server.engine.syntax.problems import (
    DEFAULT_MAX_PROBLEMS,
    ProblemKind,
    SyntaxProblem,
    TextPosition,
    _Positions,
    extract_problems,
)

__all__ = [
    "DEFAULT_MAX_PROBLEMS",
    "EXACT_BELOW_BYTES",
    "EXTENSIONS",
    "REGION_ABOVE_BYTES",
    "Check",
    "FILE_NAMES",
    "GRAMMARS",
    "LANGUAGE_IDS",
    "NO_SYNTAX_IDS",
    "ByteEdit",
    "DocumentSyntax",
    "ProblemKind",
    "SyntaxProblem",
    "TextPosition",
    "_Positions",
    "_common_prefix",
    "_common_suffix",
    "extract_problems",
    "introduced_errors",
    "language_for",
    "line_edit_to_byte_edit",
    "load_language",
    "syntax_problems",
]
