"""Resolution: `PathPolicy.resolve`, the single gate every path an agent names goes through.

A path (workspace-relative, absolute, `~/...` or a `file://` URI) is checked as a string
(names.py), resolved the way the operating system would resolve it (walk.py), and only then
checked against the workspace folders (roots.py) and the deny globs (globs.py); what passes is a
`ResolvedPath`. Plain relative names, as patches give them, take a shorter way (`_simple_prefix`,
`_in_known_folder`) that gives the same answer as the general one.

Why this module is over 500 lines: `PathPolicy` is one frozen value whose cached, lazily built
state (compiled rules, the shorter way's prefixes) every step of `resolve` shares; its steps that
need none of that state live in the modules named above.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from lsp_server.engine import errors
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.policy.globs import DEFAULT_DENY, any_rules, compile_glob, nfc
from lsp_server.engine.policy.names import (
    DRIVE,
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    check_lengths,
    check_string,
    check_windows_names,
    parts,
    refuse,
    show,
)
from lsp_server.engine.policy.roots import Root, rel_to
from lsp_server.engine.policy.settings import SettingsError, parse_settings
from lsp_server.engine.policy.uris import SCHEME, decode_file_uri, path_to_uri
from lsp_server.engine.policy.walk import (
    Walk,
    WalkMemo,
    check_file_type,
    lstat,
    walk_path,
)
from lsp_server.engine.text import DEFAULT_MAX_BYTES

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

# A relative path of plain names (no `.`/`..`, no empty, hidden, over-long or odd name): the
# string checks of `resolve` all pass for it, so it takes a shorter way (`_simple_prefix`).
# Compiled at import: every path `resolve` is given is tested against it first.
_SIMPLE_RELATIVE = re.compile(
    r"(?:[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,254}/)*[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,254}"
)


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
        values = parse_settings(settings, frozenset(other_keys))
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
        values = parse_settings(settings, frozenset(other_keys))
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
        """One alternation of every user and default glob (and of the `**/` ones only), built
        on first use; see `globs.any_rules`."""
        return any_rules([*self.deny, *(DEFAULT_DENY if self.default_deny else ())])

    # -- checks --

    def check_size(self, path: str, size: int) -> None:
        """Refuse content over the cap (for text an edit would write, not only files read)."""
        if size > self.max_file_bytes:
            raise errors.too_large(
                f"{path} would be {size:,} bytes, over the {self.max_file_bytes:,}-byte cap for "
                "edits.",
                "Keep files edited through agent-edit under the cap.",
                path=path,
                size=size,
                cap=self.max_file_bytes,
            )

    def denied_by(self, rel_path: str, *, anywhere_only: bool = False) -> str | None:
        """The glob that refuses a root-relative path, or None.

        `anywhere_only` checks only globs that start with `**/` (they mean "at any depth", so
        they also hold for an absolute path: a workspace opened at ~/.ssh is still inside .ssh).
        """
        subject = nfc(rel_path)
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
            raise errors.invalid_argument(
                f"{argument} must be a string (path policy rule: not-a-string).",
                f"Send `{argument}` as a workspace-relative or absolute file path.",
                rule="not-a-string",
                argument=argument,
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
            walk = walk_path(named, given, argument, memo, self._inside_real)
            return self._check_walk(walk, given, named, [given], argument)
        s = check_string(given, given, argument)
        if SCHEME.match(s):
            s = check_string(decode_file_uri(s, argument), given, argument)
        elif re.match(DRIVE, s) and os.name != "nt":
            raise refuse(
                Code.OUTSIDE_WORKSPACE,
                "drive-path",
                given,
                "is a Windows drive path, which names no file in these workspace folders",
                argument,
            )
        if s.startswith(("\\\\", "//?/", "//./")) or (os.name != "nt" and "\\" in s):
            if s.startswith("\\\\"):
                raise refuse(
                    Code.OUTSIDE_WORKSPACE,
                    "unc-path",
                    given,
                    "is a network (UNC) path, outside the workspace folders",
                    argument,
                )
            raise refuse(
                Code.INVALID_ARGUMENT,
                "backslash",
                given,
                "contains a backslash, which is not a path separator here",
                argument,
            )
        if os.name == "nt":
            s = s.replace("\\", "/")
        if s.endswith("/") or s.endswith("/.") or s in (".", ".."):
            raise refuse(
                Code.INVALID_ARGUMENT, "directory", given, "names a directory, not a file", argument
            )
        if s == "~" or s.startswith("~/"):
            s = os.path.expanduser(s)
        if not os.path.isabs(s):
            s = os.path.join(self._root_for_relative(s, given, argument), s)
        check_lengths(s, given, argument)
        if self.windows_names:
            check_windows_names(s, given, argument)
        named = os.path.normpath(s)
        if not self.roots:
            raise refuse(
                Code.OUTSIDE_WORKSPACE,
                "no-workspace",
                given,
                "cannot be checked: the server has no workspace folder, so nothing is inside it",
                argument,
            )
        named_rels = self._rels(named, lexical=True)
        if not named_rels:
            raise refuse(
                Code.OUTSIDE_WORKSPACE,
                "outside-workspace",
                given,
                "is outside the workspace folders",
                argument,
            )
        walk = walk_path(s, given, argument, memo, self._inside_real)
        return self._check_walk(walk, given, named, named_rels, argument)

    def _check_walk(
        self, walk: Walk, given: str, named: str, named_rels: list[str], argument: str
    ) -> ResolvedPath:
        """The rest of `resolve`, once the path is walked: inside, not denied, a regular file."""
        real_rels = self._rels(walk.real, lexical=False)
        if not real_rels or walk.left_workspace:
            raise refuse(
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
                raise refuse(
                    Code.DENIED, glob, given, f"is protected by the path policy{via}", argument
                )
        glob = self.denied_by(walk.real.lstrip("/"), anywhere_only=True)
        if glob is not None:
            raise refuse(
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
            root, rel = max(containing, key=lambda x: len(parts(x[0].real)))
        if rel == "":
            raise refuse(
                Code.INVALID_ARGUMENT,
                "directory",
                given,
                "names a workspace folder, not a file",
                argument,
            )
        exists = walk.st is not None
        if walk.st is not None:
            check_file_type(walk.st, given, argument)
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
        if any(len(p.encode("utf-8")) > MAX_NAME_BYTES for p in parts(root.named)):
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
        st = lstat(named)
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
        return nfc(prefix[0].lstrip("/"))

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
            g = nfc(glob.strip())  # as glob_regex reads it
            rest = g[3:] + ("**" if g.endswith("/") else "")
            first, slash, _ = rest.partition("/")
            if "[" in rest or "{" in rest or "**" in first or not first or first != first.strip():
                return True
            if slash and any(compile_glob(first).fullmatch(n) for n in names):
                return True
        return False

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
        raise errors.invalid_argument(
            f"{argument} {show(given)} is relative and could name a file in more than one "
            "workspace folder (path policy rule: ambiguous-root).",
            "Give the path as an absolute path inside the workspace folder you mean.",
            rule="ambiguous-root",
            path=given[:1024],
            argument=argument,
            roots=[r.named for r in (having or self.roots)],
        )

    def _rels(self, path: str, *, lexical: bool) -> list[str]:
        """`path` relative to every root containing it (nested roots give several)."""
        out: list[str] = []
        for r in self.roots:
            forms = (r.named, r.real) if lexical else (r.real,)
            for form in forms:
                rel = rel_to(path, form, r.case_insensitive)
                if rel is not None and rel not in out:
                    out.append(rel)
        return out

    def _rel_real(self, path: str, root: Root) -> str | None:
        return rel_to(path, root.real, root.case_insensitive)

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
