"""Deny and allow globs: the default deny list, globs as regexes, and their one-regex alternation.

Globs are VS Code / .gitignore style, matched case-insensitively and NFC-normalised against the
root-relative path with `/` separators (`compile_glob`). A policy asks every path whether any of
its globs matches; `any_rules` answers that with one alternation (shared leading pieces written
once) instead of ~40 matches from Python, built on first use by each policy (`PathPolicy` caches
it), never at import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

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


_GLOB_FLAGS = re.IGNORECASE | re.DOTALL


def nfc(text: str) -> str:
    """`text` in Unicode normal form C, the form globs and paths are matched in.

    An ASCII string is its own NFC form (no ASCII character composes or decomposes), so
    `unicodedata`, a C extension (~0.3 ms of a short CLI run), is imported only for a name that
    is not ASCII.
    """
    if text.isascii():
        return text
    import unicodedata

    return unicodedata.normalize("NFC", text)


def compile_glob(glob: str) -> re.Pattern[str]:
    """A deny/allow glob as a regex over root-relative `/` paths.

    `**/` is any number of leading directories, a trailing `/**` is the thing itself and
    everything under it, `*` and `?` never cross `/`, `[...]` and `{a,b}` as in VS Code globs.
    """
    return re.compile(glob_regex(glob), _GLOB_FLAGS)


def glob_regex(glob: str) -> str:
    """The source of `compile_glob(glob)` (compiled with `_GLOB_FLAGS`)."""
    g = nfc(glob.strip())
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
# (never followed by a quantifier; glob_regex writes none after these anyway). Compiled on first
# use: only a policy building its alternation needs it, not an import.
@cache
def _piece() -> re.Pattern[str]:
    return re.compile(r"(?:\[\^/\]\*|\[\^/\]|\\.|[^\\\[\](){}?*+|^$.])(?![*+?{])", re.DOTALL)


def _alternation(patterns: Sequence[str]) -> str:
    """The alternation of regexes `patterns` (each without a top-level `|`, as glob_regex
    writes them), with the leading pieces several share written once: `\\.(?:git|env)` for
    `\\.git|\\.env`. The same strings match (`a(?:b|c)` is `ab|ac`), but the regex engine
    compares a path with a shared piece once instead of once per glob: the default globs
    start with `\\.` or `[^/]*\\.` or `id_`, and most paths fail right there (a third of
    the time of the plain alternation, which also takes longer to compile)."""
    items = []
    piece = _piece()
    for p in dict.fromkeys(patterns):
        pieces: list[str] = []
        pos = 0
        while len(pieces) < 64 and (m := piece.match(p, pos)) is not None:
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


def any_rules(globs: Sequence[str]) -> dict[bool, re.Pattern[str] | None]:
    """One alternation of every glob of `globs` (and of the `**/` ones only), keyed by
    `anywhere_only` (None where there are none).

    Most paths match no glob: one C-level match of the alternation tells that, instead of
    ~40 `fullmatch` calls from Python; only a path it matches goes through the rules one
    by one (to name the glob and apply the allow list). Same flags as `compile_glob`.
    """
    # From the globs' sources: compiling ~40 globs one by one would cost more than the
    # alternation (milliseconds of a short CLI run); they are compiled only on a match.
    # Each glob's source is written once for both alternations, and when every glob
    # starts with `**/` (the defaults all do) the two are one pattern, compiled once
    # (0.4 ms of a short CLI run, bench/bench_startup.py).
    sources = [(g.startswith("**/"), glob_regex(g)) for g in globs]
    every = alternation_of([src for _, src in sources])
    if all(deep for deep, _ in sources):
        return {False: every, True: every}
    return {False: every, True: alternation_of([src for deep, src in sources if deep])}


def alternation_of(patterns: list[str]) -> re.Pattern[str] | None:
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
