"""The pure edit engine: snapshots, matching, planning and diffs, with no editor or LSP imports.

Everything here works on values (text snapshots in, plans and result objects out) so the same code
serves the language server, the headless CLI and the unit tests.

What lives where (each module's and package's docstring says more):

- values: `text` (snapshots, line splitting, BOM, content tokens), `model` (plans as line
  edits), `errors` (the error codes), `results` (the success result);
- planning: `matching` (finding `oldText`), `planner` (replace, write, preconditions),
  `v4a` / `v4a_tables` (the patch format), `patching` (a patch over snapshots),
  `parallel_plan` (a large patch on two cores), `diffing` (git-style diffs);
- paths: `policy/` (which files an agent may touch: resolution, names, the symlink walk, roots,
  URIs, globs, settings);
- history: `undo/` (change records, undo, rollback), `journal` and `blobs` (the crash-safe
  journal and its large values), `records` (what a usable record is), `history/` (entries,
  replay, the net diff, rendering), `edit_texts` (whole before/after texts for a diff editor);
- disk: `files` (the atomic disk writer), `folders` (its folder descriptors), `state` (the
  per-workspace state folder), `recovery` (rolling back an interrupted disk apply);
- `syntax/`: syntax errors by tree-sitter, parsed incrementally per document.
"""
