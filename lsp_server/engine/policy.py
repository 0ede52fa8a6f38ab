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
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.text import DEFAULT_MAX_BYTES

# Globs are matched against the root-relative path with `/` separators. A glob without a `/` (or
# with only a trailing one) matches at any depth, as in .gitignore.
DEFAULT_DENY: tuple[str, ...] = (
    # Version-control internals: hooks run code, config holds remotes with tokens. `.git` is also a
    # file in worktrees and submodules (`gitdir: ...`), which `/**` matching itself covers.
    "**/.git/**",
    "**/.hg/**",
    "**/.svn/**",
    # Environment files and credentials.
    "**/.env",
    "**/.env.*",
    "**/.envrc",
    "**/.netrc",
    "**/_netrc",
    "**/.npmrc",
    "**/.pypirc",
    "**/.git-credentials",
    "**/.aws/credentials",
    "**/.docker/config.json",
    "**/.kube/config",
    "**/.config/gh/hosts.yml",
    "**/*.tfstate",
    "**/*.tfstate.*",
    # Keys and keystores.
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/*.jks",
    "**/*.keystore",
    "**/*.kdbx",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/.ssh/**",
    "**/.gnupg/**",
    # Files that configure agent-edit itself (or the editor that starts it): an agent that could
    # edit them could widen this policy for the next session.
    "**/.vscode/settings.json",
    "**/*.code-workspace",
    "**/.nvim.lua",
    "**/.nvimrc",
    "**/.exrc",
)

SETTING_KEYS = frozenset({"deny", "allow", "defaultDeny", "maxFileBytes"})
# The LSP settings section these live in, when a client sends `{"agentEdit": {...}}`.
SECTION = "agentEdit"

MAX_INPUT_CHARS = 8192  # longer "paths" are refused before any work is done on them
MAX_PATH_BYTES = 4095  # PATH_MAX - 1 on Linux
MAX_NAME_BYTES = 255  # NAME_MAX on Linux, macOS and NTFS
MAX_SYMLINK_HOPS = 40  # Linux MAXSYMLINKS
MAX_GLOBS = 1000
MAX_GLOB_CHARS = 1000
MAX_FILE_BYTES_LIMIT = 1024 * 1024 * 1024

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
# A relative path of plain names (no `.`/`..`, no empty, hidden, over-long or odd name): the
# string checks of `resolve` all pass for it, so it takes a shorter way (`_simple_prefix`).
_SIMPLE_RELATIVE = re.compile(
    r"(?:[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,254}/)*[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,254}"
)
# _DRIVE, _WINDOWS_DEVICE and _CONTROL are compiled on first use (`re`'s cache keeps them), not on
# import: a CLI run whose paths are all plain relative names never needs them (~0.8 ms).
_DRIVE = r"^[A-Za-z]:"
_WINDOWS_DEVICE = r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$"
# Bidi embedding/override/isolate controls: a name using them displays as a different name
# ("Trojan Source"), so the user reviewing a diff would see something other than what changed.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# C0 and C1 controls (Unicode category Cc), line and paragraph separators, bidi controls.
_CONTROL = f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]"


class SettingsError(ValueError):
    """A policy setting the server must not accept; the previous (or default) policy stays."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


@dataclass(frozen=True)
class ResolvedPath:
    """A path the policy accepted.

    `abs_path` is the file itself (symlinks resolved): read and write that. `named_path` is the
    path as the agent named it (absolute, `..` collapsed lexically), which differs when a symlink
    was followed; an editor may have the file open under either name.
    """

    abs_path: str
    root: str
    rel_path: str
    named_path: str
    exists: bool

    @classmethod
    def _made(
        cls, abs_path: str, root: str, rel_path: str, named_path: str, exists: bool
    ) -> ResolvedPath:
        """`ResolvedPath(...)` without the frozen dataclass's `__init__` (one `__setattr__` a
        field): a CLI patch resolves thousands of paths."""
        made = object.__new__(cls)
        made.__dict__.update(
            abs_path=abs_path, root=root, rel_path=rel_path, named_path=named_path, exists=exists
        )
        return made

    @cached_property
    def uri(self) -> str:
        # Computed on use: the CLI never needs it (and urllib's import is a CLI run's 1%).
        return path_to_uri(self.abs_path)

    @property
    def via_symlink(self) -> bool:
        return self.named_path != self.abs_path


@dataclass(frozen=True)
class Root:
    """A workspace folder: as the client named it and as it really is on disk."""

    named: str
    real: str
    case_insensitive: bool = False

    @property
    def casefold_real(self) -> str:
        return self.real.casefold()

    @staticmethod
    def of(path_or_uri: str) -> Root:
        path = _root_path(path_or_uri)
        real = os.path.realpath(path)
        return Root(named=path, real=real, case_insensitive=_detect_case_insensitive(real))


# --- globs -----------------------------------------------------------------------------------


_GLOB_FLAGS = re.IGNORECASE | re.DOTALL


def compile_glob(glob: str) -> re.Pattern[str]:
    """A deny/allow glob as a regex over root-relative `/` paths.

    `**/` is any number of leading directories, a trailing `/**` is the thing itself and
    everything under it, `*` and `?` never cross `/`, `[...]` and `{a,b}` as in VS Code globs.
    """
    return re.compile(glob_regex(glob), _GLOB_FLAGS)


def glob_regex(glob: str) -> str:
    """The source of `compile_glob(glob)` (compiled with `_GLOB_FLAGS`)."""
    g = unicodedata.normalize("NFC", glob.strip())
    anchored = g.startswith("/")
    if anchored:
        g = g[1:]
    anywhere = not anchored and "/" not in g.rstrip("/")
    if g.endswith("/"):
        g += "**"
    if anywhere:
        g = "**/" + g
    out: list[str] = []
    i, n = 0, len(g)
    depth = 0  # inside {...}
    while i < n:
        c = g[i]
        if g.startswith("**/", i) and (i == 0 or g[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif g.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif g.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = g.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = g[i + 1 : j]
            neg = body[:1] in ("!", "^")
            if neg:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
            out.append(f"[^/{body}]" if neg else f"(?!/)[{body}]")
            i = j + 1
        elif c == "{":
            out.append("(?:")
            depth += 1
            i += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
            i += 1
        elif c == "," and depth:
            out.append("|")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    if depth:
        raise re.error(f"unclosed '{{' in {glob!r}")
    return "".join(out)


# A leading piece of a glob's regex that `_alternation` may write once for several globs: a
# literal character (escaped or not), `[^/]*` or `[^/]`, each a whole item of the concatenation
# (never followed by a quantifier; glob_regex writes none after these anyway).
_PIECE = re.compile(r"(?:\[\^/\]\*|\[\^/\]|\\.|[^\\\[\](){}?*+|^$.])(?![*+?{])", re.DOTALL)


def _alternation(patterns: Sequence[str]) -> str:
    """The alternation of regexes `patterns` (each without a top-level `|`, as glob_regex
    writes them), with the leading pieces several share written once: `\\.(?:git|env)` for
    `\\.git|\\.env`. The same strings match (`a(?:b|c)` is `ab|ac`), but the regex engine
    compares a path with a shared piece once instead of once per glob: the default globs
    start with `\\.` or `[^/]*\\.` or `id_`, and most paths fail right there (a third of
    the time of the plain alternation, which also takes longer to compile)."""
    items = []
    for p in dict.fromkeys(patterns):
        pieces: list[str] = []
        pos = 0
        while len(pieces) < 64 and (m := _PIECE.match(p, pos)) is not None:
            pieces.append(m.group())
            pos = m.end()
        items.append((pieces, p[pos:]))
    return _trie(items)


def _trie(items: list[tuple[list[str], str]]) -> str:
    """`_alternation` of patterns cut into (leading pieces, the rest)."""
    out: list[str] = []
    groups: dict[str, list[tuple[list[str], str]]] = {}
    for pieces, rest in items:
        if pieces:
            groups.setdefault(pieces[0], []).append((pieces[1:], rest))
        else:
            out.append(rest)  # (no `|` at its top level: it needs no group)
    for first, members in groups.items():
        head = first
        while len(members) > 1 and all(ps and ps[0] == members[0][0][0] for ps, _ in members):
            head += members[0][0][0]
            members = [(ps[1:], rest) for ps, rest in members]
        if len(members) == 1:
            out.append(head + "".join(members[0][0]) + members[0][1])
        else:
            out.append(f"{head}(?:{_trie(members)})")
    return "|".join(out)


# --- URIs and paths --------------------------------------------------------------------------


def path_to_uri(path: str) -> str:
    """The `file://` URI of an absolute path (percent-encoded as VS Code does)."""
    from urllib.parse import quote

    p = path.replace("\\", "/") if os.name == "nt" else path
    if re.match(_DRIVE, p):
        p = "/" + p[0].lower() + p[1:]
    return "file://" + quote(p, safe="/")


def uri_to_path(uri: str) -> str | None:
    """The decoded local path of a `file://` URI, or None for any other scheme or a malformed URI.

    For the document store: key open documents by `canonical_path(uri)` so a buffer is found
    whichever spelling (encoding, case of the drive letter, symlink) the client used.
    """
    try:
        return _decode_file_uri(uri)
    except EditError:
        return None


def canonical_path(path_or_uri: str) -> str | None:
    """The physical path (symlinks resolved) of a file URI or absolute path, unchecked."""
    p = uri_to_path(path_or_uri) if _SCHEME.match(path_or_uri) else path_or_uri
    if not p or "\0" in p or not os.path.isabs(p):
        return None
    try:
        return os.path.realpath(p)
    except (OSError, ValueError):
        return None


def _decode_file_uri(uri: str, argument: str = "path") -> str:
    m = _SCHEME.match(uri)
    if not m or m.group(1).lower() != "file":
        raise _refuse(
            Code.OUTSIDE_WORKSPACE,
            "uri-scheme",
            uri,
            "names a non-file URI scheme; only files in the workspace folders can be edited",
            argument,
        )
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(uri)
    except ValueError:
        raise _refuse(
            Code.INVALID_ARGUMENT, "bad-uri", uri, "is not a valid URI", argument
        ) from None
    if parts.netloc not in ("", "localhost"):
        raise _refuse(
            Code.OUTSIDE_WORKSPACE,
            "uri-authority",
            uri,
            f"names a file on another host ({parts.netloc[:60]!r}), outside the workspace folders",
            argument,
        )
    if parts.query or parts.fragment or "#" in uri or "?" in uri:
        raise _refuse(
            Code.INVALID_ARGUMENT,
            "bad-uri",
            uri,
            "has a query or fragment; a file URI must encode '?' and '#' in names as %3F and %23",
            argument,
        )
    try:
        path = unquote(parts.path, errors="strict")
    except UnicodeDecodeError:
        raise _refuse(
            Code.INVALID_ARGUMENT,
            "bad-uri",
            uri,
            "has percent-escapes that are not UTF-8",
            argument,
        ) from None
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
        path = path[1:]
    if not path.startswith("/") and not (os.name == "nt" and re.match(_DRIVE, path)):
        raise _refuse(
            Code.INVALID_ARGUMENT, "bad-uri", uri, "does not hold an absolute path", argument
        )
    return path


def _root_path(path_or_uri: str) -> str:
    p = _decode_file_uri(path_or_uri) if _SCHEME.match(path_or_uri) else path_or_uri
    p = os.path.expanduser(p) if p == "~" or p.startswith("~/") else p
    if not os.path.isabs(p):
        raise SettingsError("roots", f"workspace folder {p!r} is not an absolute path")
    return os.path.normpath(p)


def _detect_case_insensitive(real_root: str) -> bool:
    alt = real_root.swapcase()
    if alt == real_root:
        return False
    try:
        return os.path.samestat(os.stat(real_root), os.stat(alt))
    except (OSError, ValueError):
        return False


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p]


def _rel_to(path: str, root: str, case_insensitive: bool) -> str | None:
    """`path` relative to `root` ('' for the root itself), or None when it is not inside."""
    if not case_insensitive and "//" not in path and not path.endswith("/"):
        # The common case without splitting: no empty components, so a plain prefix is the
        # same test as comparing components (anything else takes the general way below).
        r = root.rstrip("/")
        if "//" not in r:
            if path.startswith(r + "/"):
                return path[len(r) + 1 :]
            if path == r and r:
                return ""
    pp, rp = _parts(path), _parts(root)
    if len(pp) < len(rp):
        return None
    head = pp[: len(rp)]
    if case_insensitive:
        if [x.casefold() for x in head] != [x.casefold() for x in rp]:
            return None
    elif head != rp:
        return None
    return "/".join(pp[len(rp) :])


def _show(given: str) -> str:
    return repr(given if len(given) <= 120 else given[:100] + "..." + given[-17:])


def _refuse(code: Code, rule: str, given: str, why: str, argument: str = "path") -> EditError:
    hints = {
        Code.OUTSIDE_WORKSPACE: "Only files inside the workspace folders can be read or edited.",
        Code.DENIED: "This file is off limits to agent edits; leave it alone.",
    }
    hint = hints.get(code, f"Send `{argument}` as a workspace-relative or absolute file path.")
    return EditError(
        code,
        f"{argument} {_show(given)} {why} (path policy rule: {rule}).",
        hint,
        {"rule": rule, "path": given[:1024], "argument": argument},
    )


# --- the policy ------------------------------------------------------------------------------


class _Walk:
    """Where a walk ended: the real path, and the lstat of what is there (None if nothing)."""

    __slots__ = ("real", "st", "followed_link", "left_workspace")

    def __init__(
        self, real: str, st: os.stat_result | None, followed_link: bool, left_workspace: bool
    ) -> None:
        self.real = real
        self.st = st
        self.followed_link = followed_link
        self.left_workspace = left_workspace

    @property
    def exists(self) -> bool:
        return self.st is not None


# The state of a walk between two components: (current real path, symlinks followed, whether the
# walk has entered the workspace, whether a link chain left it again).
_WalkState = tuple[str, int, bool, bool]
# What `resolve` may remember between calls of one batch: each folder's walk state.
WalkMemo = dict[str, _WalkState]


@dataclass(frozen=True)
class PathPolicy:
    """Workspace folders plus deny rules and the size cap; `resolve` is the single gate."""

    roots: tuple[Root, ...] = ()
    deny: tuple[str, ...] = ()  # the user's own globs, always applied
    allow: tuple[str, ...] = ()  # exemptions from the default globs only
    default_deny: bool = True
    max_file_bytes: int = DEFAULT_MAX_BYTES
    windows_names: bool = field(default=os.name == "nt")

    # -- construction --

    @staticmethod
    def from_settings(
        roots: Iterable[str],
        settings: Mapping[str, Any] | None = None,
        *,
        other_keys: Iterable[str] = (),
    ) -> PathPolicy:
        """A policy for `roots` (paths or file URIs) from the editor's or CLI's settings.

        `settings` may be the `agentEdit` section itself or an object holding it under
        "agentEdit". Keys other than the policy's own and `other_keys` (the server's other
        settings) are refused, as are values of the wrong type: `SettingsError` says which.
        """
        values = _parse_settings(settings, frozenset(other_keys))
        try:
            root_objs = tuple(Root.of(r) for r in roots)
        except EditError as exc:
            raise SettingsError("roots", exc.message) from None
        return PathPolicy(roots=root_objs, **values)

    def with_folders(self, *, added: Iterable[str] = (), removed: Iterable[str] = ()) -> PathPolicy:
        """The policy after the editor's workspace folders changed (paths or file URIs).

        A folder that no longer exists on disk is still removed by the name it had; an added one
        that cannot be a root is left out (the editor shows it, the policy refuses it).
        """
        gone: set[str] = set()
        for r in removed:
            try:
                old = Root.of(r)
            except (EditError, SettingsError):
                continue
            gone.update((old.named, old.real))
        roots = [r for r in self.roots if r.real not in gone and r.named not in gone]
        for a in added:
            try:
                root = Root.of(a)
            except (EditError, SettingsError):
                continue
            if all(r.real != root.real for r in roots):
                roots.append(root)
        return replace(self, roots=tuple(roots))

    def reconfigure(
        self, settings: Mapping[str, Any] | None, *, other_keys: Iterable[str] = ()
    ) -> PathPolicy:
        """The policy after `workspace/didChangeConfiguration`, which may tighten but not widen.

        A widening change (a deny glob dropped, an allow glob added, defaults switched off, a
        larger cap) raises `SettingsError` and the current policy stays until a restart.
        """
        values = _parse_settings(settings, frozenset(other_keys))
        new = replace(self, **values)
        wider: dict[str, str] = {}
        if not set(self.deny) <= set(new.deny):
            dropped = ", ".join(sorted(set(self.deny) - set(new.deny)))
            wider["deny"] = f"removes deny globs {dropped}"
        if not set(new.allow) <= set(self.allow):
            wider["allow"] = "adds allow globs " + ", ".join(
                sorted(set(new.allow) - set(self.allow))
            )
        if self.default_deny and not new.default_deny:
            wider["defaultDeny"] = "switches defaultDeny off"
        if new.max_file_bytes > self.max_file_bytes:
            wider["maxFileBytes"] = f"raises maxFileBytes to {new.max_file_bytes}"
        if wider:
            raise SettingsError(
                next(iter(wider)) if len(wider) == 1 else "settings",
                "agent-edit settings change refused: it would widen the path policy while the "
                f"server runs ({'; '.join(wider.values())}); it takes effect after a restart of "
                "the server.",
            )
        return new

    def with_roots(self, roots: Iterable[str]) -> PathPolicy:
        """The same rules over new workspace folders (`workspace/didChangeWorkspaceFolders`)."""
        return replace(self, roots=tuple(Root.of(r) for r in roots))

    def name_of(self, resolved: ResolvedPath) -> str:
        """The name results and the session use for a file, one that `resolve` maps back to it.

        With one workspace folder that is the root-relative path. With several, a relative name
        could be ambiguous (the same name in two folders), so it is the absolute path.
        """
        return resolved.rel_path if len(self.roots) == 1 else resolved.abs_path

    def compiled(self) -> PathPolicy:
        """This policy with its deny globs compiled now rather than on the first `resolve` (~2 ms
        of regex compiling): for a caller about to fork, so the child inherits them."""
        self._any_rule  # noqa: B018 (a cached property, computed for its side effect)
        return self

    def describe(self) -> dict[str, Any]:
        return {
            "roots": [r.real for r in self.roots],
            "deny": list(self.deny),
            "allow": list(self.allow),
            "defaultDeny": self.default_deny,
            "maxFileBytes": self.max_file_bytes,
        }

    @cached_property
    def _user_rules(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(g, compile_glob(g)) for g in self.deny]

    @cached_property
    def _default_rules(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(g, compile_glob(g)) for g in DEFAULT_DENY] if self.default_deny else []

    @cached_property
    def _allow_rules(self) -> list[re.Pattern[str]]:
        return [compile_glob(g) for g in self.allow]

    @cached_property
    def _any_rule(self) -> dict[bool, re.Pattern[str] | None]:
        """One alternation of every user and default glob (and of the `**/` ones only).

        Most paths match no glob: one C-level match of the alternation tells that, instead of
        ~40 `fullmatch` calls from Python; only a path it matches goes through the rules one
        by one (to name the glob and apply the allow list). Same flags as `compile_glob`.
        """
        # From the globs' sources: compiling ~40 globs one by one would cost more than the
        # alternation (milliseconds of a short CLI run); they are compiled only on a match.
        # Each glob's source is written once for both alternations, and when every glob
        # starts with `**/` (the defaults all do) the two are one pattern, compiled once
        # (0.4 ms of a short CLI run, bench/bench_startup.py).
        globs = [*self.deny, *(DEFAULT_DENY if self.default_deny else ())]
        sources = [(g.startswith("**/"), glob_regex(g)) for g in globs]
        every = self._alternation_of([src for _, src in sources])
        if all(deep for deep, _ in sources):
            return {False: every, True: every}
        return {False: every, True: self._alternation_of([src for deep, src in sources if deep])}

    @staticmethod
    def _alternation_of(patterns: list[str]) -> re.Pattern[str] | None:
        """One regex matching what any of `patterns` (glob_regex sources) matches, or None."""
        any_depth = "(?:.*/)?"  # how compile_glob starts a glob that holds at any depth
        # The any-depth prefix is factored out: one walk over the path's folders instead of
        # one per glob (`P(a|b)` matches exactly what `Pa|Pb` does).
        deep = [p[len(any_depth) :] for p in patterns if p.startswith(any_depth)]
        other = [p for p in patterns if not p.startswith(any_depth)]
        parts = [_alternation(other)] if other else []
        if deep:
            parts.append(any_depth + "(?:" + _alternation(deep) + ")")
        return re.compile("|".join(parts), _GLOB_FLAGS) if parts else None

    # -- checks --

    def check_size(self, path: str, size: int) -> None:
        """Refuse content over the cap (for text an edit would write, not only files read)."""
        if size > self.max_file_bytes:
            raise EditError(
                Code.TOO_LARGE,
                f"{path} would be {size:,} bytes, over the {self.max_file_bytes:,}-byte cap for "
                "edits.",
                "Keep files edited through agent-edit under the cap.",
                {"path": path, "size": size, "cap": self.max_file_bytes},
            )

    def denied_by(self, rel_path: str, *, anywhere_only: bool = False) -> str | None:
        """The glob that refuses a root-relative path, or None.

        `anywhere_only` checks only globs that start with `**/` (they mean "at any depth", so
        they also hold for an absolute path: a workspace opened at ~/.ssh is still inside .ssh).
        """
        subject = unicodedata.normalize("NFC", rel_path)
        if self.windows_names:
            # Windows ignores trailing dots and spaces and reads `name:stream` as `name`.
            subject = "/".join(p.split(":")[0].rstrip(". ") for p in subject.split("/"))
        any_rule = self._any_rule[anywhere_only]
        if any_rule is None or not any_rule.fullmatch(subject):
            return None
        for glob, rx in self._user_rules:
            if (not anywhere_only or glob.startswith("**/")) and rx.fullmatch(subject):
                return glob
        for glob, rx in self._default_rules:
            if (
                (not anywhere_only or glob.startswith("**/"))
                and rx.fullmatch(subject)
                and not any(a.fullmatch(subject) for a in self._allow_rules)
            ):
                return glob
        return None

    def resolve(
        self, path_or_uri: object, *, argument: str = "path", memo: WalkMemo | None = None
    ) -> ResolvedPath:
        """Resolve what an agent named and check it, or raise the `EditError` that refuses it.

        Use it for every path of every action: read, replace, write, each file of a patch, and
        a Move's destination (`argument="moveTo"`).

        `memo` (a dict the caller keeps for one batch of paths, e.g. one patch in a short-lived
        CLI process) remembers how each folder resolved, so a thousand files in twenty folders
        cost twenty folder walks, not a thousand. The file itself is always looked at again.
        Only share a memo across paths resolved at about the same moment: a folder replaced by
        a symlink afterwards would not be noticed.
        """
        if not isinstance(path_or_uri, str):
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"{argument} must be a string (path policy rule: not-a-string).",
                f"Send `{argument}` as a workspace-relative or absolute file path.",
                {"rule": "not-a-string", "argument": argument},
            )
        given = path_or_uri
        simple = self._simple_prefix
        if simple is not None and _SIMPLE_RELATIVE.fullmatch(given) and len(given) <= simple[1]:
            # A plain relative path, as patches name files: every check below on the string
            # itself holds by construction (`_simple_prefix`), and `named` is the joined path.
            # What is on disk (the walk, symlinks, deny rules, the file type) is checked as for
            # any path.
            named = simple[0] + given
            if memo is not None:
                known = self._in_known_folder(given, named, memo)
                if known is not None:
                    return known
            walk = self._walk(named, given, argument, memo)
            return self._check_walk(walk, given, named, [given], argument)
        s = self._check_string(given, given, argument)
        if _SCHEME.match(s):
            s = self._check_string(_decode_file_uri(s, argument), given, argument)
        elif re.match(_DRIVE, s) and os.name != "nt":
            raise _refuse(
                Code.OUTSIDE_WORKSPACE,
                "drive-path",
                given,
                "is a Windows drive path, which names no file in these workspace folders",
                argument,
            )
        if s.startswith(("\\\\", "//?/", "//./")) or (os.name != "nt" and "\\" in s):
            if s.startswith("\\\\"):
                raise _refuse(
                    Code.OUTSIDE_WORKSPACE,
                    "unc-path",
                    given,
                    "is a network (UNC) path, outside the workspace folders",
                    argument,
                )
            raise _refuse(
                Code.INVALID_ARGUMENT,
                "backslash",
                given,
                "contains a backslash, which is not a path separator here",
                argument,
            )
        if os.name == "nt":
            s = s.replace("\\", "/")
        if s.endswith("/") or s.endswith("/.") or s in (".", ".."):
            raise _refuse(
                Code.INVALID_ARGUMENT, "directory", given, "names a directory, not a file", argument
            )
        if s == "~" or s.startswith("~/"):
            s = os.path.expanduser(s)
        if not os.path.isabs(s):
            s = os.path.join(self._root_for_relative(s, given, argument), s)
        self._check_lengths(s, given, argument)
        if self.windows_names:
            self._check_windows_names(s, given, argument)
        named = os.path.normpath(s)
        if not self.roots:
            raise _refuse(
                Code.OUTSIDE_WORKSPACE,
                "no-workspace",
                given,
                "cannot be checked: the server has no workspace folder, so nothing is inside it",
                argument,
            )
        named_rels = self._rels(named, lexical=True)
        if not named_rels:
            raise _refuse(
                Code.OUTSIDE_WORKSPACE,
                "outside-workspace",
                given,
                "is outside the workspace folders",
                argument,
            )
        walk = self._walk(s, given, argument, memo)
        return self._check_walk(walk, given, named, named_rels, argument)

    def _check_walk(
        self, walk: _Walk, given: str, named: str, named_rels: list[str], argument: str
    ) -> ResolvedPath:
        """The rest of `resolve`, once the path is walked: inside, not denied, a regular file."""
        real_rels = self._rels(walk.real, lexical=False)
        if not real_rels or walk.left_workspace:
            raise _refuse(
                Code.OUTSIDE_WORKSPACE,
                "symlink-outside" if walk.followed_link else "outside-workspace",
                given,
                "resolves through a symbolic link to a location outside the workspace folders"
                if walk.followed_link
                else "is outside the workspace folders",
                argument,
            )
        for each in dict.fromkeys([*named_rels, *real_rels]):
            glob = self.denied_by(each)
            if glob is not None:
                via = "" if each in named_rels else " (its symbolic-link target is)"
                raise _refuse(
                    Code.DENIED, glob, given, f"is protected by the path policy{via}", argument
                )
        glob = self.denied_by(walk.real.lstrip("/"), anywhere_only=True)
        if glob is not None:
            raise _refuse(
                Code.DENIED,
                glob,
                given,
                "is protected by the path policy (its folder is)",
                argument,
            )
        # Nested folders: the deepest one containing the file is its root.
        containing = [
            (r, rel) for r in self.roots if (rel := self._rel_real(walk.real, r)) is not None
        ]
        if len(containing) == 1:
            root, rel = containing[0]
        else:
            root, rel = max(containing, key=lambda x: len(_parts(x[0].real)))
        if rel == "":
            raise _refuse(
                Code.INVALID_ARGUMENT,
                "directory",
                given,
                "names a workspace folder, not a file",
                argument,
            )
        exists = walk.st is not None
        if walk.st is not None:
            self._check_file_type(walk.st, given, argument)
        return ResolvedPath(
            abs_path=walk.real,
            root=root.real,
            rel_path=rel,
            named_path=named,
            exists=exists,
        )

    # -- helpers --

    @cached_property
    def _simple_prefix(self) -> tuple[str, int] | None:
        """For `resolve`'s plain relative paths: the root and `/` they are joined to, and the
        longest such path that stays within MAX_PATH_BYTES; None where the general way must
        decide (several roots, a root reached through a symlink, case-insensitive or Windows
        names, the file system root)."""
        if len(self.roots) != 1 or self.windows_names or os.name == "nt":
            return None
        root = self.roots[0]
        if root.case_insensitive or root.named != root.real or root.named in ("", "/"):
            return None
        if any(len(p.encode("utf-8")) > MAX_NAME_BYTES for p in _parts(root.named)):
            return None
        prefix = root.named + "/"
        return prefix, MAX_PATH_BYTES - len(prefix.encode("utf-8"))

    def _in_known_folder(self, given: str, named: str, memo: WalkMemo) -> ResolvedPath | None:
        """A plain relative path (`_simple_prefix`) accepted with the least work, or None for
        `resolve` to decide the general way (which also gives every refusal).

        It answers only when the general way could answer nothing else: the folder was walked
        before in this batch (`memo`) and reached no symbolic link, so it is the named folder
        itself, inside the one root, and `given` is the root-relative path of both the named
        and the real file; the name is a regular file with one link, not a symlink; and no
        deny glob matches either path `_check_walk` checks (the real path only where a glob
        could match it from the root's own names, `_root_in_reach`: elsewhere a match on it is
        a match on `given` too). Any match at all, even one an allow glob would exempt, leaves
        the decision to the general way. The result is the one `_check_walk` builds.
        """
        head, _, _ = named.rpartition("/")
        state = memo.get(head)
        if state is None or state[1] or state[3] or state[0] != head:
            return None
        st = _lstat(named)
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return None
        deny = self._any_rule[False]
        # `given` is ASCII (`_SIMPLE_RELATIVE`), so NFC leaves it as it is, and normalising the
        # root's part alone is the same as normalising the whole: an ASCII name after `/`
        # never composes with what precedes it.
        if deny is not None and deny.fullmatch(given):
            return None
        if self._root_in_reach:
            anywhere = self._any_rule[True]
            if anywhere is not None and anywhere.fullmatch(self._anywhere_prefix + given):
                return None
        return ResolvedPath._made(named, self.roots[0].real, given, named, True)

    @cached_property
    def _anywhere_prefix(self) -> str:
        """What `denied_by(..., anywhere_only=True)` matches a plain relative path's real path
        as, up to the path itself (see `_in_known_folder`)."""
        prefix = self._simple_prefix
        assert prefix is not None
        return unicodedata.normalize("NFC", prefix[0].lstrip("/"))

    @cached_property
    def _root_in_reach(self) -> bool:
        """Whether a `**/` deny glob could match a plain relative path's real path from a name
        of the root's own path on (a root inside `.ssh/`, or at `.aws` for `.aws/credentials`).

        When not, such a match starts at a name of the relative path, so the glob matches that
        path too: `denied_by(rel)` has refused it already, and `_in_known_folder` does not
        match the real path again. A match from a name of the root needs the glob's first name
        to match that name whole (a glob's name matches no `/`); a name with `**`, `[` or `{`
        (which could hold a `/`) is taken to match anything. A glob of one name only matches
        the last name of a path: never a name of the root, which a file's path goes on from.
        """
        names = [n for n in self._anywhere_prefix.split("/") if n]
        for glob in (*self.deny, *(DEFAULT_DENY if self.default_deny else ())):
            if not glob.startswith("**/"):
                continue  # not in `denied_by(..., anywhere_only=True)`
            g = unicodedata.normalize("NFC", glob.strip())  # as glob_regex reads it
            rest = g[3:] + ("**" if g.endswith("/") else "")
            first, slash, _ = rest.partition("/")
            if "[" in rest or "{" in rest or "**" in first or not first or first != first.strip():
                return True
            if slash and any(compile_glob(first).fullmatch(n) for n in names):
                return True
        return False

    def _check_string(self, s: str, given: str, argument: str) -> str:
        if len(s) > MAX_INPUT_CHARS:
            raise _refuse(
                Code.INVALID_ARGUMENT,
                "path-too-long",
                given,
                f"is {len(s):,} characters long, more than any real path",
                argument,
            )
        if not s.strip():
            raise _refuse(Code.INVALID_ARGUMENT, "empty-path", given, "is empty", argument)
        if "\0" in s:
            raise _refuse(
                Code.INVALID_ARGUMENT, "nul-byte", given, "contains a NUL character", argument
            )
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise _refuse(
                Code.INVALID_ARGUMENT,
                "invalid-unicode",
                given,
                "contains a lone surrogate, which no file name can hold",
                argument,
            ) from None
        bad = re.search(_CONTROL, s)
        if bad:
            raise _refuse(
                Code.INVALID_ARGUMENT,
                "control-character",
                given,
                f"contains the control character U+{ord(bad.group(0)):04X}, which would make the "
                "name display as something else in diffs and messages",
                argument,
            )
        return s

    def _check_lengths(self, s: str, given: str, argument: str) -> None:
        if len(s.encode("utf-8")) > MAX_PATH_BYTES:
            raise _refuse(
                Code.INVALID_ARGUMENT,
                "path-too-long",
                given,
                f"is longer than {MAX_PATH_BYTES} bytes once resolved",
                argument,
            )
        for part in _parts(s):
            if len(part.encode("utf-8")) > MAX_NAME_BYTES:
                raise _refuse(
                    Code.INVALID_ARGUMENT,
                    "name-too-long",
                    given,
                    f"has a name longer than {MAX_NAME_BYTES} bytes",
                    argument,
                )

    def _check_windows_names(self, s: str, given: str, argument: str) -> None:
        for part in _parts(s)[1 if re.match(_DRIVE, s) else 0 :]:
            if ":" in part:
                raise _refuse(
                    Code.INVALID_ARGUMENT,
                    "windows-stream",
                    given,
                    "names an alternate data stream (':' in a name)",
                    argument,
                )
            if re.match(_WINDOWS_DEVICE, part.rstrip(". ").lower()):
                raise _refuse(
                    Code.DENIED,
                    "windows-device-name",
                    given,
                    "names a Windows device, not a file",
                    argument,
                )

    def _root_for_relative(self, rel: str, given: str, argument: str) -> str:
        if len(self.roots) <= 1:
            return self.roots[0].named if self.roots else os.sep
        joined = [(r, os.path.join(r.named, rel)) for r in self.roots]
        having = [r for r, p in joined if os.path.lexists(p)]
        if not having:
            having = [r for r, p in joined if os.path.isdir(os.path.dirname(p))]
        # `../x` from sibling folders names one file: not ambiguous (and checked as usual).
        if len({os.path.realpath(os.path.join(r.named, rel)) for r in having}) == 1:
            return having[0].named
        raise EditError(
            Code.INVALID_ARGUMENT,
            f"{argument} {_show(given)} is relative and could name a file in more than one "
            "workspace folder (path policy rule: ambiguous-root).",
            "Give the path as an absolute path inside the workspace folder you mean.",
            {
                "rule": "ambiguous-root",
                "path": given[:1024],
                "argument": argument,
                "roots": [r.named for r in (having or self.roots)],
            },
        )

    def _rels(self, path: str, *, lexical: bool) -> list[str]:
        """`path` relative to every root containing it (nested roots give several)."""
        out: list[str] = []
        for r in self.roots:
            forms = (r.named, r.real) if lexical else (r.real,)
            for form in forms:
                rel = _rel_to(path, form, r.case_insensitive)
                if rel is not None and rel not in out:
                    out.append(rel)
        return out

    def _rel_real(self, path: str, root: Root) -> str | None:
        return _rel_to(path, root.real, root.case_insensitive)

    @cached_property
    def _prefixes(self) -> list[tuple[str, str, bool]]:
        out = []
        for r in self.roots:
            real = r.casefold_real if r.case_insensitive else r.real
            out.append((real, real.rstrip("/") + "/", r.case_insensitive))
        return out

    def _inside_real(self, path: str) -> bool:
        # Called for every path component on the walk: plain string prefixes, no splitting.
        folded = None
        for real, prefix, ci in self._prefixes:
            p = path
            if ci:
                folded = folded if folded is not None else path.casefold()
                p = folded
            if p == real or p.startswith(prefix):
                return True
        return False

    def _walk(self, path: str, given: str, argument: str, memo: WalkMemo | None = None) -> _Walk:
        """Resolve `path` as the kernel would, following every symlink, even dangling ones.

        Missing components are taken literally (a file to be created), but the walk goes on
        checking what exists after a `..`, so `missing/../link` still follows `link`.
        """
        if os.name == "nt":
            real = os.path.realpath(path)
            st = _lstat(real)
            return _Walk(real, st, real != os.path.normpath(path), False)
        state: _WalkState = ("/", 0, False, False)
        head, sep, name = path.rpartition("/")
        if memo is not None and sep:
            # The components are taken from a stack and a symlink's target is pushed on top, so
            # the folder's components (and every link they lead through) are done before the
            # last name is looked at: walking the folder, then the name, is the same walk.
            cached = memo.get(head)
            if cached is None:
                cached = memo[head] = self._walk_steps(state, head.split("/"), given, argument)
            if name not in ("", ".", ".."):
                # The last step inline, when it is a plain name: its lstat is the answer.
                folder, hops, _, left = cached
                nxt = os.path.join(folder, name)
                st = _lstat(nxt)
                if st is None or not stat.S_ISLNK(st.st_mode):
                    return _Walk(nxt, st, hops > 0, left)
            state = self._walk_steps(cached, [name], given, argument)
        else:
            state = self._walk_steps(state, path.split("/"), given, argument)
        cur, hops, _, left = state
        return _Walk(cur, _lstat(cur), hops > 0, left)

    def _walk_steps(
        self, state: _WalkState, components: list[str], given: str, argument: str
    ) -> _WalkState:
        """Continue a walk from `state` through `components` (see `_walk`)."""
        cur, hops, entered, left = state
        todo = components[::-1]
        while todo:
            comp = todo.pop()
            if comp in ("", "."):
                continue
            if comp == "..":
                cur = os.path.dirname(cur)
                continue
            nxt = os.path.join(cur, comp)
            try:
                st = os.lstat(nxt)
            except (OSError, ValueError):
                cur = nxt
                continue
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise _refuse(
                        Code.DENIED,
                        "symlink-loop",
                        given,
                        f"goes through more than {MAX_SYMLINK_HOPS} symbolic links (a loop)",
                        argument,
                    )
                # A chain that enters the workspace, steps outside through a link and comes back
                # could be re-pointed from outside between this check and the write.
                if entered and not self._inside_real(nxt):
                    left = True
                try:
                    target = os.readlink(nxt)
                except OSError:
                    cur = nxt
                    continue
                if target.startswith("/"):
                    cur = "/"
                todo.extend(reversed(target.split("/")))
                continue
            cur = nxt
            if self._inside_real(cur):
                entered = True
        return cur, hops, entered, left

    def _check_file_type(self, st: os.stat_result, given: str, argument: str) -> None:
        if stat.S_ISDIR(st.st_mode):
            raise _refuse(
                Code.INVALID_ARGUMENT, "directory", given, "names a directory, not a file", argument
            )
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(
                Code.DENIED,
                "special-file",
                given,
                "is not a regular file (a FIFO, socket or device)",
                argument,
            )
        if st.st_nlink > 1:
            raise _refuse(
                Code.DENIED,
                "hard-link",
                given,
                "is a hard link shared with another name, which an edit would change too",
                argument,
            )


def _lstat(path: str) -> os.stat_result | None:
    """What is at `path` (a symlink itself, not its target), or None if nothing is."""
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


def _parse_settings(
    settings: Mapping[str, Any] | None, other_keys: frozenset[str]
) -> dict[str, Any]:
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise SettingsError("settings", "agent-edit settings must be an object")
    section = settings.get(SECTION)
    if isinstance(section, Mapping):
        settings = section
    elif section is not None:
        raise SettingsError(SECTION, f"setting {SECTION} must be an object")
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if key not in SETTING_KEYS:
            if key in other_keys:
                continue  # the server's own setting (a key both use, e.g. maxFileBytes, is ours)
            raise SettingsError(
                str(key),
                f"unknown agent-edit setting {str(key)[:80]!r}; known: "
                + ", ".join(sorted(SETTING_KEYS | other_keys)),
            )
        if value is None:
            continue  # unset in the client: keep the default
        if key in ("deny", "allow"):
            out[key] = _parse_globs(key, value)
        elif key == "defaultDeny":
            if not isinstance(value, bool):
                raise SettingsError(key, "setting defaultDeny must be true or false")
            out["default_deny"] = value
        elif key == "maxFileBytes":
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= MAX_FILE_BYTES_LIMIT
            ):
                raise SettingsError(
                    key,
                    f"setting maxFileBytes must be a whole number of bytes from 1 to "
                    f"{MAX_FILE_BYTES_LIMIT}",
                )
            out["max_file_bytes"] = value
    return out


def _parse_globs(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise SettingsError(key, f"setting {key} must be a list of glob strings")
    if len(value) > MAX_GLOBS:
        raise SettingsError(key, f"setting {key} has more than {MAX_GLOBS} globs")
    globs: list[str] = []
    for g in value:
        if not isinstance(g, str) or not g.strip() or len(g) > MAX_GLOB_CHARS or "\0" in g:
            raise SettingsError(
                key, f"setting {key} must hold non-empty glob strings, got {str(g)[:80]!r}"
            )
        try:
            compile_glob(g)
        except re.error as exc:
            raise SettingsError(key, f"setting {key}: glob {g[:80]!r} is invalid ({exc})") from None
        if g not in globs:
            globs.append(g)
    return tuple(globs)
