"""The path policy: which files an agent may read or edit, decided before any byte is touched.

An agent is an untrusted writer. Every path it names (workspace-relative, absolute, `~/...` or a
`file://` URI) is resolved the way the operating system would resolve it, symlinks to files and
directories followed (dangling ones too), and only then checked:

- both the path as named and the file it really is must lie inside a workspace folder
  (`OUTSIDE_WORKSPACE`), and a symlink chain may not leave the workspace and come back;
- neither may match a deny glob (`DENIED`, `details.rule` is the glob): VCS internals, secrets and
  keys, and the editor config files that could widen this very policy;
- malformed names (empty, NUL, control or bidi characters, lone surrogates, over-long names,
  backslashes, Windows drive paths on POSIX) are refused as `INVALID_ARGUMENT` or
  `OUTSIDE_WORKSPACE`, never "cleaned up" into some other file.

Refusals name the rule in `details.rule` and in the message, and never say how to get around it.

Settings (`deny`, `allow`, `defaultDeny`, `maxFileBytes`) come only from the editor
(initializationOptions, `workspace/didChangeConfiguration`) or the CLI, never from an agent's
command. A policy is immutable; `reconfigure` refuses any change that would widen it while the
server runs, so an agent that manages to edit a settings file still cannot loosen the rules it is
held to until the user restarts the server.

Decisions worth knowing:

- `~` and `~/...` are expanded to the home directory (agents mean that), then checked like any
  absolute path, so they are refused unless the workspace contains them. `~user` is not a shell
  form here: `~name` is an ordinary relative name.
- Deny globs match case-insensitively and NFC-normalised on every platform. On a case-sensitive
  file system that may refuse `.GIT/x` needlessly; on a case-insensitive one it is what stops
  `.GIT/config` or `.ENV` from slipping past. Workspace containment compares case-insensitively
  only for roots detected to live on a case-insensitive file system.
- A relative path in a multi-root workspace is resolved in the one folder that has it; if several
  do (or none does and several could take a new file) it is refused as ambiguous rather than
  guessed.
- Hard-linked regular files (link count > 1) are refused: an in-place save would write through
  to the other name, which may be outside the workspace. FIFOs, sockets and devices are refused
  (reading a FIFO would hang the server).
- The writer must still open without following a final symlink swapped in after this check
  (time-of-check vs time-of-use); this module only decides.

What lives where (everything other modules import is re-exported here):

- `resolution.py`: `PathPolicy` (its `resolve`, deny checks, construction and tightening) and
  `ResolvedPath`;
- `names.py`: the string checks on a path before any file is looked at, and `refuse`, the
  refusal every check gives;
- `walk.py`: the symlink walk as the kernel resolves a path, and the file-type checks;
- `roots.py`: `Root`, a workspace folder as named and as it really is;
- `uris.py`: `file://` URIs to paths and back, `canonical_path`;
- `globs.py`: `DEFAULT_DENY`, globs as regexes and their one-regex alternation (built on first
  use by each policy, never at import);
- `settings.py`: the policy's settings, checked (`SettingsError`).
"""

from lsp_server.engine.policy.globs import DEFAULT_DENY, compile_glob, glob_regex
from lsp_server.engine.policy.names import MAX_INPUT_CHARS, MAX_NAME_BYTES, MAX_PATH_BYTES
from lsp_server.engine.policy.resolution import PathPolicy, ResolvedPath
from lsp_server.engine.policy.roots import Root
from lsp_server.engine.policy.settings import (
    MAX_FILE_BYTES_LIMIT,
    MAX_GLOB_CHARS,
    MAX_GLOBS,
    SECTION,
    SETTING_KEYS,
    SettingsError,
)
from lsp_server.engine.policy.uris import canonical_path, path_to_uri, uri_to_path
from lsp_server.engine.policy.walk import MAX_SYMLINK_HOPS, WalkMemo

__all__ = [
    "DEFAULT_DENY",
    "MAX_FILE_BYTES_LIMIT",
    "MAX_GLOBS",
    "MAX_GLOB_CHARS",
    "MAX_INPUT_CHARS",
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_SYMLINK_HOPS",
    "SECTION",
    "SETTING_KEYS",
    "PathPolicy",
    "ResolvedPath",
    "Root",
    "SettingsError",
    "WalkMemo",
    "canonical_path",
    "compile_glob",
    "glob_regex",
    "path_to_uri",
    "uri_to_path",
]
