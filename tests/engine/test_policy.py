"""The path policy against an attack corpus: every hostile path refused with the rule named.

Everything runs on real files, real symlinks, a real FIFO and a real hard link in a temporary tree
with two workspace folders, one outside folder and a fake home directory:

    tmp/ws/        root A (src/, secrets, .git, symlinks of every kind)
    tmp/ws2/       root B
    tmp/outside/   what an agent must never reach
    tmp/home/      $HOME for `~` expansion
    tmp/ws-evil/   a sibling whose name starts with "ws" (prefix confusion)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.policy import (
    DEFAULT_DENY,
    PathPolicy,
    ResolvedPath,
    Root,
    SettingsError,
    canonical_path,
    compile_glob,
    path_to_uri,
    uri_to_path,
)
from lsp_server.engine.policy import globs as globs_module

OUT = Code.OUTSIDE_WORKSPACE
DEN = Code.DENIED
INV = Code.INVALID_ARGUMENT


def _write(p: Path, text: str = "x\n") -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("policy")
    ws, ws2, out, home = tmp / "ws", tmp / "ws2", tmp / "outside", tmp / "home"
    for f in [
        "src/a.py",
        "src/with space.py",
        "README.md",
        "shared.txt",
        ".git/config",
        ".git/hooks/pre-commit",
        "vendor/lib/.git",
        ".env",
        ".env.local",
        "config/.env.production",
        "keys/server.pem",
        "deploy.key",
        "id_rsa",
        "id_ed25519.pub",
        "cert.p12",
        "cert.pfx",
        ".ssh/config",
        ".aws/credentials",
        ".npmrc",
        ".pypirc",
        ".netrc",
        ".vscode/settings.json",
        "project.code-workspace",
        "infra/terraform.tfstate",
        "secrets/token.txt",
        "environment.py",
        "src/git/config",
        "keyboard.py",
        ".env.example",
        "~name.txt",
    ]:
        _write(ws / f)
    _write(ws2 / "b.txt")
    _write(ws2 / "shared.txt")
    _write(out / "secret.txt", "TOP SECRET\n")
    _write(home / ".ssh/id_rsa")
    _write(tmp / "ws-evil/a.py")
    links = {
        "out_file": "../outside/secret.txt",
        "out_dir": "../outside",
        "dangling_out": "../outside/not-yet.txt",
        "dangling_abs": str(out / "newdir/new.txt"),
        "to_env": ".env",
        "to_git": ".git",
        "loop1": "loop2",
        "loop2": "loop1",
        "self_loop": "self_loop",
        "out_and_back": "../outside/back",
        "to_parent": "..",
        "to_slash": "/",
        "inside_link": "src/a.py",
        "inside_dir_link": "src",
        "dangling_inside": "src/created-later.py",
        "to_ws2": "../ws2/b.txt",
    }
    for name, target in links.items():
        os.symlink(target, ws / name)
    os.symlink("../ws/src/a.py", out / "back")
    os.mkfifo(ws / "fifo")
    os.link(out / "secret.txt", ws / "hard")
    return {"tmp": str(tmp), "ws": str(ws), "ws2": str(ws2), "out": str(out), "home": str(home)}


@pytest.fixture
def policy(tree: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> PathPolicy:
    monkeypatch.setenv("HOME", tree["home"])
    return PathPolicy.from_settings([tree["ws"]], {"deny": ["secrets/**"]})


@pytest.fixture
def multi(tree: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> PathPolicy:
    monkeypatch.setenv("HOME", tree["home"])
    return PathPolicy.from_settings([tree["ws"], path_to_uri(tree["ws2"])])


# (path template, code, rule, why it is dangerous). `{ws}`, `{ws2}`, `{out}`, `{tmp}` are filled
# in from the tree; `{wsu}` is the workspace as a file URI prefix.
ATTACKS: list[tuple[Any, Code, str, str]] = [
    # --- escaping the workspace by name
    ("../outside/secret.txt", OUT, "outside-workspace", "`..` climbs out of the workspace"),
    ("src/../../outside/secret.txt", OUT, "outside-workspace", "`..` after a real directory"),
    ("missing/../../outside/secret.txt", OUT, "outside-workspace", "`..` after a missing dir"),
    ("{out}/secret.txt", OUT, "outside-workspace", "absolute path outside"),
    ("/etc/passwd", OUT, "outside-workspace", "system file"),
    ("{ws}/../outside/secret.txt", OUT, "outside-workspace", "absolute path that climbs out"),
    ("{tmp}/ws-evil/a.py", OUT, "outside-workspace", "sibling sharing the root's name prefix"),
    ("//etc/passwd", OUT, "outside-workspace", "double-slash absolute path"),
    ("~/.ssh/id_rsa", OUT, "outside-workspace", "`~` expands to the home directory"),
    ("~/../outside/secret.txt", OUT, "outside-workspace", "`~` plus `..`"),
    # --- URIs
    ("file://{out}/secret.txt", OUT, "outside-workspace", "file URI outside"),
    ("file:///etc/passwd", OUT, "outside-workspace", "file URI of a system file"),
    ("FILE:///etc/passwd", OUT, "outside-workspace", "scheme in upper case"),
    ("file://localhost/etc/shadow", OUT, "outside-workspace", "localhost authority"),
    ("{wsu}/%2e%2e/outside/secret.txt", OUT, "outside-workspace", "percent-encoded `..`"),
    ("{wsu}/..%2Foutside%2Fsecret.txt", OUT, "outside-workspace", "percent-encoded slashes"),
    ("https://example.com/a.py", OUT, "uri-scheme", "remote resource"),
    ("untitled:Untitled-1", OUT, "uri-scheme", "editor-internal document"),
    ("vscode-remote://ssh-remote+h/etc/passwd", OUT, "uri-scheme", "another machine's files"),
    ("file://evil-host/share/a.py", OUT, "uri-authority", "UNC share via a file URI"),
    # --- Windows-style paths on POSIX (would otherwise become odd relative names)
    ("C:\\Windows\\System32\\drivers\\etc\\hosts", OUT, "drive-path", "Windows drive path"),
    ("C:/Users/x/.ssh/id_rsa", OUT, "drive-path", "drive path with forward slashes"),
    ("c:relative.txt", OUT, "drive-path", "drive-relative path"),
    ("\\\\server\\share\\a.py", OUT, "unc-path", "network share"),
    ("..\\..\\etc\\passwd", INV, "backslash", "Windows separators hiding `..`"),
    # --- symlinks pointing out
    ("out_file", OUT, "symlink-outside", "file symlink pointing out"),
    ("out_dir/secret.txt", OUT, "symlink-outside", "directory symlink pointing out"),
    ("out_dir", OUT, "symlink-outside", "the directory symlink itself"),
    ("dangling_out", OUT, "symlink-outside", "dangling symlink: a write would create outside"),
    ("dangling_abs", OUT, "symlink-outside", "absolute dangling symlink to a new dir"),
    ("out_and_back", OUT, "symlink-outside", "chain leaving and re-entering (TOCTOU)"),
    ("to_parent/outside/secret.txt", OUT, "symlink-outside", "symlink to `..`"),
    ("to_slash/etc/passwd", OUT, "symlink-outside", "symlink to `/`"),
    ("{wsu}/out_file", OUT, "symlink-outside", "URI through a symlink"),
    ("src/../out_file", OUT, "symlink-outside", "`..` then a symlink"),
    ("missing/../out_file", OUT, "symlink-outside", "missing dir then `..` then a symlink"),
    # --- deny rules
    (".git/config", DEN, "**/.git/**", "repo config (remotes with tokens)"),
    (".git/hooks/pre-commit", DEN, "**/.git/**", "hook: runs code on the next commit"),
    ("vendor/lib/.git", DEN, "**/.git/**", "submodule gitdir file redirects git"),
    (".GIT/config", DEN, "**/.git/**", "case variant (case-insensitive file systems)"),
    ("src/../.git/config", DEN, "**/.git/**", "`..` into .git"),
    ("to_git/config", DEN, "**/.git/**", "directory symlink into .git"),
    (".env", DEN, "**/.env", "environment secrets"),
    (".ENV", DEN, "**/.env", "case variant"),
    ("{ws}/.env", DEN, "**/.env", "absolute path to .env"),
    ("{wsu}/%2Eenv", DEN, "**/.env", "percent-encoded name"),
    ("to_env", DEN, "**/.env", "innocent name, symlink to .env"),
    (".env.local", DEN, "**/.env.*", "environment variant"),
    ("config/.env.production", DEN, "**/.env.*", "nested environment file"),
    ("keys/server.pem", DEN, "**/*.pem", "TLS private key"),
    ("deploy.key", DEN, "**/*.key", "private key"),
    ("id_rsa", DEN, "**/id_rsa*", "SSH key"),
    ("id_ed25519.pub", DEN, "**/id_ed25519*", "SSH key pair"),
    ("cert.p12", DEN, "**/*.p12", "PKCS#12 keystore"),
    ("cert.pfx", DEN, "**/*.pfx", "PKCS#12 keystore"),
    (".ssh/config", DEN, "**/.ssh/**", "SSH config (ProxyCommand runs code)"),
    (".aws/credentials", DEN, "**/.aws/credentials", "cloud credentials"),
    (".npmrc", DEN, "**/.npmrc", "registry token"),
    (".pypirc", DEN, "**/.pypirc", "registry token"),
    (".netrc", DEN, "**/.netrc", "machine passwords"),
    ("infra/terraform.tfstate", DEN, "**/*.tfstate", "infrastructure state holds secrets"),
    (".vscode/settings.json", DEN, "**/.vscode/settings.json", "could widen this policy"),
    ("project.code-workspace", DEN, "**/*.code-workspace", "could widen this policy"),
    ("secrets/token.txt", DEN, "secrets/**", "the user's own deny glob"),
    ("loop1", DEN, "symlink-loop", "symlink loop"),
    ("self_loop", DEN, "symlink-loop", "symlink to itself"),
    ("fifo", DEN, "special-file", "reading a FIFO blocks the server forever"),
    ("hard", DEN, "hard-link", "hard link to a file outside: saves write through"),
    # --- malformed names
    ("", INV, "empty-path", "empty path would mean the root"),
    ("   ", INV, "empty-path", "blank path"),
    ("src/a\0.py", INV, "nul-byte", "NUL truncates the name in C APIs"),
    ("{wsu}/a%00.py", INV, "nul-byte", "NUL smuggled in a URI"),
    ("src/a.py\n+++ b/x", INV, "control-character", "newline forges diff headers"),
    ("src/\u202egnp.py", INV, "control-character", "bidi override shows another name"),
    ("src/a\u2028.py", INV, "control-character", "line separator splits log lines"),
    ("\ud800.py", INV, "invalid-unicode", "lone surrogate crashes encoders"),
    ("a" * 300, INV, "name-too-long", "over NAME_MAX"),
    ("a/" * 2100 + "b", INV, "path-too-long", "over PATH_MAX"),
    ("x" * 10_000, INV, "path-too-long", "huge string"),
    ("src/", INV, "directory", "names a directory"),
    ("src", INV, "directory", "an existing directory"),
    (".", INV, "directory", "the root"),
    ("{ws}", INV, "directory", "the root, absolute"),
    ("{wsu}/a.py#frag", INV, "bad-uri", "fragment in a file URI"),
    ("{wsu}/a.py?x=1", INV, "bad-uri", "query in a file URI"),
    ("{wsu}/%ff.py", INV, "bad-uri", "percent-escape that is not UTF-8"),
    ("file:a.py", INV, "bad-uri", "relative file URI"),
    ("file://[::1/a.py", INV, "bad-uri", "malformed URI authority"),
    (123, INV, "not-a-string", "wrong type"),
    (None, INV, "not-a-string", "missing path"),
    (["a.py"], INV, "not-a-string", "list instead of a string"),
]


def _fill(template: Any, tree: dict[str, str]) -> Any:
    if not isinstance(template, str) or "{" not in template:
        return template
    return template.format(wsu=path_to_uri(tree["ws"]), **tree)


def test_corpus_is_big_enough() -> None:
    assert len(ATTACKS) >= 40
    assert all(why for *_, why in ATTACKS)


@pytest.mark.parametrize(
    ("template", "code", "rule", "why"),
    ATTACKS,
    ids=[f"{i:02d}-{a[3]}" for i, a in enumerate(ATTACKS)],
)
def test_attack_refused(
    policy: PathPolicy, tree: dict[str, str], template: Any, code: Code, rule: str, why: str
) -> None:
    path = _fill(template, tree)
    with pytest.raises(EditError) as info:
        policy.resolve(path)
    err = info.value
    assert (err.code, err.details.get("rule")) == (code, rule), why
    assert rule in err.message
    # Nothing in the refusal tells the agent how to loosen the policy.
    text = (err.message + " " + err.hint).replace(str(path), "").replace(rule, "").lower()
    for leak in ("defaultdeny", "allow", "setting", "maxfilebytes", "disable"):
        assert leak not in text
    assert "TOP SECRET" not in str(err.to_result())


def test_move_destination_is_checked_like_any_path(policy: PathPolicy) -> None:
    with pytest.raises(EditError) as info:
        policy.resolve("config/.env", argument="moveTo")
    assert info.value.code == DEN
    assert info.value.details == {"rule": "**/.env", "path": "config/.env", "argument": "moveTo"}
    assert info.value.message.startswith("moveTo ")


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        (".env.", "**/.env"),  # Windows drops trailing dots: this is .env
        (".env ", "**/.env"),  # ... and trailing spaces
        (".git./config", "**/.git/**"),
        ("CON", "windows-device-name"),
        ("src/aux.c", "windows-device-name"),
        ("nul.txt", "windows-device-name"),
        ("COM1", "windows-device-name"),
    ],
)
def test_windows_name_rules(tree: dict[str, str], path: str, rule: str) -> None:
    # Windows resolves these names to other files or devices; the rules are string-level so they
    # are checked here on any host with the Windows rules switched on.
    policy = PathPolicy.from_settings([tree["ws"]])
    policy = PathPolicy(roots=policy.roots, windows_names=True)
    with pytest.raises(EditError) as info:
        policy.resolve(path)
    assert info.value.details["rule"] == rule


def test_windows_alternate_data_stream(tree: dict[str, str]) -> None:
    policy = PathPolicy(roots=(Root.of(tree["ws"]),), windows_names=True)
    with pytest.raises(EditError) as info:
        policy.resolve("README.md::$DATA")
    # On POSIX the colon already makes it look like a URI scheme; both refuse it.
    assert info.value.details["rule"] in ("windows-stream", "uri-scheme")
    with pytest.raises(EditError) as info:
        policy.resolve("src/a.py:hidden")
    assert info.value.details["rule"] == "windows-stream"


# --- allowed ---------------------------------------------------------------------------------

ALLOWED: list[tuple[str, str, bool]] = [
    # (path template, expected rel_path, exists)
    ("src/a.py", "src/a.py", True),
    ("./src/a.py", "src/a.py", True),
    ("src//a.py", "src/a.py", True),
    ("src/./a.py", "src/a.py", True),
    ("src/../README.md", "README.md", True),
    ("{ws}/src/a.py", "src/a.py", True),
    ("{wsu}/src/a.py", "src/a.py", True),
    ("{wsu}/src/with%20space.py", "src/with space.py", True),
    ("file://localhost{ws}/README.md", "README.md", True),
    ("src/with space.py", "src/with space.py", True),
    ("inside_link", "src/a.py", True),
    ("inside_dir_link/a.py", "src/a.py", True),
    ("dangling_inside", "src/created-later.py", False),
    ("src/new_file.py", "src/new_file.py", False),
    ("newdir/sub/new.py", "newdir/sub/new.py", False),
    ("~name.txt", "~name.txt", True),
    ("environment.py", "environment.py", True),
    ("src/git/config", "src/git/config", True),
    ("keyboard.py", "keyboard.py", True),
    ("to_ws2", "b.txt", True),
]


@pytest.mark.parametrize(("template", "rel", "exists"), ALLOWED)
def test_allowed(
    policy: PathPolicy, tree: dict[str, str], template: str, rel: str, exists: bool
) -> None:
    path = _fill(template, tree)
    if template == "to_ws2":
        # A link into another workspace folder is fine only when that folder is a root too.
        policy = PathPolicy.from_settings([tree["ws"], tree["ws2"]])
    r = policy.resolve(path)
    assert r.rel_path == rel
    assert r.exists is exists
    assert r.abs_path == os.path.join(r.root, rel)
    assert r.uri == path_to_uri(r.abs_path)
    assert uri_to_path(r.uri) == r.abs_path
    assert r.via_symlink == ("link" in template or template in ("to_ws2", "dangling_inside"))


def test_a_shared_walk_memo_decides_exactly_as_without(
    policy: PathPolicy, tree: dict[str, str]
) -> None:
    """One memo across the whole corpus (what the CLI does for a patch) changes no decision."""

    def outcome(path: Any, memo: dict[str, Any] | None) -> Any:
        try:
            return policy.resolve(path, memo=memo)
        except EditError as err:
            return (err.code, err.details.get("rule"), err.message)

    paths = [_fill(t, tree) for t, *_ in ATTACKS + ALLOWED if t != "to_ws2"]
    memo: dict[str, Any] = {}
    for _ in range(2):  # the second round answers from the memo
        for path in paths:
            assert outcome(path, memo) == outcome(path, None), path
    assert memo


def test_symlink_into_other_root_refused_when_not_a_root(policy: PathPolicy) -> None:
    with pytest.raises(EditError) as info:
        policy.resolve("to_ws2")
    assert info.value.details["rule"] == "symlink-outside"


# --- multi-root ------------------------------------------------------------------------------


def test_multi_root_relative_picks_the_folder_that_has_it(
    multi: PathPolicy, tree: dict[str, str]
) -> None:
    assert multi.resolve("b.txt").root == tree["ws2"]
    assert multi.resolve("src/a.py").root == tree["ws"]
    # A new file where only one folder has the directory.
    assert multi.resolve("src/new.py").root == tree["ws"]
    assert multi.resolve(f"{tree['ws2']}/b.txt").rel_path == "b.txt"
    assert multi.resolve(path_to_uri(tree["ws2"]) + "/new.txt").exists is False
    # Names in results must resolve back to the same file, even where a relative one is ambiguous.
    shared = multi.resolve(f"{tree['ws']}/shared.txt")
    assert multi.resolve(multi.name_of(shared)) == shared


@pytest.mark.parametrize("path", ["shared.txt", "brand-new.txt", "newdir/x.py"])
def test_multi_root_ambiguous_relative_is_refused(multi: PathPolicy, path: str) -> None:
    with pytest.raises(EditError) as info:
        multi.resolve(path)
    assert info.value.code == INV
    assert info.value.details["rule"] == "ambiguous-root"
    assert len(info.value.details["roots"]) == 2


def test_multi_root_still_refuses_outside_and_denied(
    multi: PathPolicy, tree: dict[str, str]
) -> None:
    for path, rule in [
        ("../outside/secret.txt", "outside-workspace"),
        (f"{tree['ws2']}/../outside/secret.txt", "outside-workspace"),
        (f"{tree['ws2']}/.env", "**/.env"),
        (f"{tree['ws']}/.git/config", "**/.git/**"),
    ]:
        with pytest.raises(EditError) as info:
            multi.resolve(path)
        assert info.value.details["rule"] == rule, path


def test_nested_roots_deny_relative_to_the_inner_root(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "outer/pkg"
    _write(inner / "git/x")
    _write(inner / "ok.py")
    policy = PathPolicy.from_settings([str(outer), str(inner)])
    assert policy.resolve(str(inner / "ok.py")).root == str(inner)
    single = PathPolicy.from_settings([str(outer)])
    assert single.name_of(single.resolve(str(inner / "ok.py"))) == "pkg/ok.py"
    # An anchored user glob applies relative to whichever root contains the file.
    policy = PathPolicy.from_settings([str(outer), str(inner)], {"deny": ["/git/**"]})
    with pytest.raises(EditError) as info:
        policy.resolve(str(inner / "git/x"))
    assert info.value.details["rule"] == "/git/**"


def test_no_workspace_refuses_everything(tree: dict[str, str]) -> None:
    policy = PathPolicy.from_settings([])
    for path in ["a.py", f"{tree['ws']}/src/a.py"]:
        with pytest.raises(EditError) as info:
            policy.resolve(path)
        assert info.value.details["rule"] == "no-workspace"


def test_case_insensitive_root(tree: dict[str, str]) -> None:
    # A root named in a different case, as a client on macOS/Windows may send it. On this host the
    # file system is case-sensitive, so the detected flag is forced to simulate one that is not.
    other_case = tree["ws"].swapcase()
    sensitive = PathPolicy(roots=(Root(other_case, other_case, False),))
    with pytest.raises(EditError) as info:
        sensitive.resolve(f"{tree['ws']}/src/a.py")
    assert info.value.code == OUT
    insensitive = PathPolicy(roots=(Root(other_case, other_case, True),))
    r = insensitive.resolve(f"{tree['ws']}/src/a.py")
    assert r.rel_path == "src/a.py"
    with pytest.raises(EditError) as info:
        insensitive.resolve(f"{tree['ws'].upper()}/.Git/CONFIG")
    assert info.value.details["rule"] == "**/.git/**"
    assert Root.of(tree["ws"]).case_insensitive is False


def test_root_behind_a_symlink(tmp_path: Path) -> None:
    # macOS: /tmp is a symlink to /private/tmp; clients name the root through the link.
    real = tmp_path / "private/ws"
    _write(real / "a.py")
    (tmp_path / "tmp").symlink_to(tmp_path / "private")
    policy = PathPolicy.from_settings([str(tmp_path / "tmp/ws")])
    r = policy.resolve(str(tmp_path / "tmp/ws/a.py"))
    assert (r.abs_path, r.rel_path, r.root) == (str(real / "a.py"), "a.py", str(real))
    assert policy.resolve("a.py").abs_path == str(real / "a.py")
    with pytest.raises(EditError):
        policy.resolve(str(tmp_path / "tmp/other.py"))


def test_workspace_opened_inside_a_protected_folder(tmp_path: Path) -> None:
    # A user opens ~/.ssh (or a .git directory) as the workspace: its files are still protected.
    for folder, rule in [(".ssh", "**/.ssh/**"), ("repo/.git", "**/.git/**")]:
        root = tmp_path / folder
        _write(root / "config")
        policy = PathPolicy.from_settings([str(root)])
        with pytest.raises(EditError) as info:
            policy.resolve("config")
        assert info.value.details["rule"] == rule
    # Anchored or relative user globs stay relative to the root.
    root = tmp_path / "src"
    _write(root / "a.py")
    assert PathPolicy.from_settings([str(root)], {"deny": ["src/**"]}).resolve("a.py").exists


def test_symlink_created_after_policy_is_seen(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _write(ws / "a.py")
    policy = PathPolicy.from_settings([str(ws)])
    assert policy.resolve("late").exists is False
    (ws / "late").symlink_to("/etc/passwd")
    with pytest.raises(EditError) as info:
        policy.resolve("late")
    assert info.value.details["rule"] == "symlink-outside"


# --- settings --------------------------------------------------------------------------------


def test_defaults(tree: dict[str, str]) -> None:
    policy = PathPolicy.from_settings([tree["ws"]])
    assert policy.max_file_bytes == 10 * 1024 * 1024
    assert policy.default_deny and policy.deny == () and policy.allow == ()
    for glob in ("**/.git/**", "**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/id_rsa*"):
        assert glob in DEFAULT_DENY


def test_settings_section_and_other_keys(tree: dict[str, str]) -> None:
    p = PathPolicy.from_settings(
        [tree["ws"]],
        {"agentEdit": {"maxFileBytes": 1000, "requireRead": True, "deny": None}},
        other_keys={"requireRead", "maxFileBytes"},
    )
    assert p.max_file_bytes == 1000 and p.deny == ()
    p.check_size("a.py", 1000)
    with pytest.raises(EditError) as info:
        p.check_size("a.py", 1001)
    assert info.value.code == Code.TOO_LARGE
    assert info.value.details == {"path": "a.py", "size": 1001, "cap": 1000}


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"maxFileBytes": "10"}, "maxFileBytes"),
        ({"maxFileBytes": True}, "maxFileBytes"),
        ({"maxFileBytes": 0}, "maxFileBytes"),
        ({"maxFileBytes": -5}, "maxFileBytes"),
        ({"maxFileBytes": 10.5}, "maxFileBytes"),
        ({"maxFileBytes": 2**40}, "maxFileBytes"),
        ({"deny": "**/.env"}, "deny"),
        ({"deny": [1]}, "deny"),
        ({"deny": [""]}, "deny"),
        ({"deny": ["a\0b"]}, "deny"),
        ({"deny": ["{a,b"]}, "deny"),
        ({"deny": ["x" * 2000]}, "deny"),
        ({"deny": ["x"] * 1001}, "deny"),
        ({"allow": {"a": 1}}, "allow"),
        ({"defaultDeny": "false"}, "defaultDeny"),
        ({"defaultDeny": 0}, "defaultDeny"),
        ({"followSymlinks": True}, "followSymlinks"),
        ({"agentEdit": []}, "agentEdit"),
        (["deny"], "settings"),
    ],
)
def test_invalid_settings_rejected(tree: dict[str, str], settings: Any, key: str) -> None:
    with pytest.raises(SettingsError) as info:
        PathPolicy.from_settings([tree["ws"]], settings)
    assert info.value.key == key
    assert info.value.message


def test_invalid_roots_rejected() -> None:
    for root in ["relative/dir", "https://example.com/ws"]:
        with pytest.raises(SettingsError) as info:
            PathPolicy.from_settings([root])
        assert info.value.key == "roots"


def test_allow_exempts_from_defaults_only(tree: dict[str, str]) -> None:
    p = PathPolicy.from_settings([tree["ws"]], {"allow": ["**/.env.example", "secrets/**"]})
    assert p.resolve(".env.example").rel_path == ".env.example"
    with pytest.raises(EditError):
        p.resolve(".env")
    p = PathPolicy.from_settings([tree["ws"]], {"allow": ["secrets/**"], "deny": ["secrets/**"]})
    with pytest.raises(EditError) as info:
        p.resolve("secrets/token.txt")
    assert info.value.details["rule"] == "secrets/**"


def test_default_deny_off_keeps_containment(tree: dict[str, str]) -> None:
    p = PathPolicy.from_settings([tree["ws"]], {"defaultDeny": False})
    assert p.resolve(".env").rel_path == ".env"
    for path in ["../outside/secret.txt", "out_file", "fifo", "loop1"]:
        with pytest.raises(EditError):
            p.resolve(path)


def test_reconfigure_tightens_but_never_widens(tree: dict[str, str]) -> None:
    base = PathPolicy.from_settings(
        [tree["ws"]], {"deny": ["secrets/**"], "allow": ["**/.env.example"]}
    )
    tighter = base.reconfigure(
        {"deny": ["secrets/**", "**/*.lock"], "allow": [], "maxFileBytes": 1024}
    )
    assert tighter.deny == ("secrets/**", "**/*.lock") and tighter.max_file_bytes == 1024
    assert tighter.roots == base.roots
    for widening, key in [
        ({"deny": []}, "deny"),
        ({"allow": ["**/.env.example", "**/.env"]}, "allow"),
        ({"defaultDeny": False}, "defaultDeny"),
        ({"maxFileBytes": 20 * 1024 * 1024}, "maxFileBytes"),
        ({"deny": [], "maxFileBytes": 20 * 1024 * 1024}, "settings"),
    ]:
        with pytest.raises(SettingsError) as info:
            tighter.reconfigure(widening)
        assert "restart" in info.value.message
        assert info.value.key == key
    # Omitted keys keep their current values (a client may send only what changed).
    assert tighter.reconfigure({}).deny == tighter.deny


def test_with_roots_keeps_rules(tree: dict[str, str]) -> None:
    p = PathPolicy.from_settings([tree["ws"]], {"deny": ["secrets/**"]}).with_roots([tree["ws2"]])
    assert p.deny == ("secrets/**",)
    assert p.resolve("b.txt").root == tree["ws2"]
    assert p.describe()["roots"] == [tree["ws2"]]


def test_policy_is_immutable(tree: dict[str, str]) -> None:
    p = PathPolicy.from_settings([tree["ws"]])
    with pytest.raises(AttributeError):
        p.deny = ()  # type: ignore[misc]


# --- globs and helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("**/.git/**", ".git", True),
        ("**/.git/**", "a/b/.git/HEAD", True),
        ("**/.git/**", ".gitignore", False),
        ("**/.git/**", "x.git/y", False),
        ("*.pem", "deep/dir/k.pem", True),  # no slash: any depth, as in .gitignore
        ("/top.txt", "top.txt", True),
        ("/top.txt", "sub/top.txt", False),
        ("build/", "build/out/x", True),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/sub/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("{a,b}.txt", "b.txt", True),
        ("{a,b}.txt", "c.txt", False),
        ("file[0-9].txt", "file7.txt", True),
        ("file[!0-9].txt", "file7.txt", False),
        ("file[!0-9].txt", "filex.txt", True),
        ("a?c", "a/c", False),
        ("**/.ENV", ".env", True),
        ("caf\u00e9/**", "cafe\u0301/x", False),  # NFD path is normalised by the matcher, below
    ],
)
def test_compile_glob(glob: str, path: str, matches: bool) -> None:
    assert bool(compile_glob(glob).fullmatch(path)) is matches


def test_deny_matching_is_nfc_normalised(tree: dict[str, str]) -> None:
    p = PathPolicy.from_settings([tree["ws"]], {"deny": ["caf\u00e9/**"]})
    assert p.denied_by("cafe\u0301/menu.txt") == "caf\u00e9/**"


def test_uri_helpers(tree: dict[str, str]) -> None:
    path = f"{tree['ws']}/src/with space.py"
    uri = path_to_uri(path)
    assert uri.endswith("/src/with%20space.py")
    assert uri_to_path(uri) == path
    assert uri_to_path("untitled:Untitled-1") is None
    assert uri_to_path("file://host/x") is None
    assert canonical_path(path_to_uri(f"{tree['ws']}/inside_link")) == f"{tree['ws']}/src/a.py"
    assert canonical_path("relative") is None
    assert canonical_path("https://x/y") is None


def test_deny_alternation_decides_as_each_glob_would(tree: dict[str, str]) -> None:
    """`denied_by` tries all globs as one regex first; it must name what the globs one by one
    (user globs first, then the defaults unless allowed) would."""
    policy = PathPolicy.from_settings(
        [tree["ws"]], {"deny": ["build/**", "*.secret", "/top.txt"], "allow": ["**/.env.example"]}
    )

    def reference(rel: str, anywhere_only: bool) -> str | None:
        for glob in policy.deny:
            if (not anywhere_only or glob.startswith("**/")) and compile_glob(glob).fullmatch(rel):
                return glob
        for glob in DEFAULT_DENY:
            if (
                (not anywhere_only or glob.startswith("**/"))
                and compile_glob(glob).fullmatch(rel)
                and not any(compile_glob(a).fullmatch(rel) for a in policy.allow)
            ):
                return glob
        return None

    names = [".git", ".GIT", ".env", ".env.example", ".env.local", "id_rsa.pub", "a.pem", "x.py"]
    names += ["build", "top.txt", "k.secret", ".ssh", "settings.json", "w.code-workspace", ""]
    dirs = ["", "src/", "a/.git/", ".vscode/", "build/", "deep/er/.ssh/", ".aws/", "x.pem/"]
    for d in dirs:
        for n in names:
            rel = f"{d}{n}".rstrip("/") or "f"
            for anywhere_only in (False, True):
                got = policy.denied_by(rel, anywhere_only=anywhere_only)
                assert got == reference(rel, anywhere_only), (rel, anywhere_only)


def test_the_two_alternations_are_one_pattern_when_every_glob_holds_at_any_depth(
    tree: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defaults all start with `**/`: the alternation of the `**/` globs is the alternation
    of all of them, each glob's source written once (a short CLI run's start-up), compiled
    once; a user glob without `**/` makes them two."""
    written: list[str] = []
    real = globs_module.glob_regex
    monkeypatch.setattr(globs_module, "glob_regex", lambda g: written.append(g) or real(g))
    defaults = PathPolicy.from_settings([tree["ws"]]).compiled()
    assert sorted(written) == sorted(DEFAULT_DENY)
    assert all(g.startswith("**/") for g in DEFAULT_DENY)
    assert defaults._any_rule[True] is defaults._any_rule[False] is not None
    mixed = PathPolicy.from_settings([tree["ws"]], {"deny": ["build/**"]})
    assert mixed._any_rule[True] is not mixed._any_rule[False]
    assert mixed._any_rule[False] is not None and mixed._any_rule[False].fullmatch("build/x")
    assert mixed._any_rule[True] is not None and not mixed._any_rule[True].fullmatch("build/x")
    none = PathPolicy.from_settings([tree["ws"]], {"defaultDeny": False})
    assert none._any_rule == {False: None, True: None}
    assert none.denied_by(".git/config") is None


def test_plain_relative_paths_resolve_as_the_general_way_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`resolve` takes a shorter way for plain relative names (what patches name); it gives
    the same result or the same refusal as the general checks, through symlinks, into denied
    folders, onto directories, FIFOs and hard links."""
    import re

    from lsp_server.engine.policy import resolution as policy_mod

    ws, outside = tmp_path / "ws", tmp_path / "outside"
    for rel in ("src/a.py", "src/sub/b.txt", "keys/server.pem", "x-y_z.1/c", "n/d"):
        _write(ws / rel)
    _write(outside / "s.txt")
    (ws / "out").symlink_to(outside)
    (ws / "in").symlink_to(ws / "src")
    (ws / "file-link").symlink_to(ws / "src/a.py")
    (ws / "dangling").symlink_to(ws / "nowhere/f")
    os.mkfifo(ws / "fifo")
    os.link(ws / "n/d", ws / "n/hard")
    names = [
        "src/a.py", "src/sub/b.txt", "src/new.py", "new/dir/f.py", "keys/server.pem",
        "x-y_z.1/c", "out/s.txt", "out/new", "in/a.py", "in/sub/b.txt", "file-link",
        "dangling", "fifo", "n/hard", "src", "src/sub", "id_rsa", "a.key", "-dash/x",
        "src/a.py/x", "z" * 255, "z" * 256, "/".join(["d"] * 2000),
    ]  # fmt: skip
    pol = PathPolicy.from_settings([str(ws)])
    assert pol._simple_prefix is not None, "the shorter way applies here"

    def outcome(name: str) -> object:
        try:
            return pol.resolve(name, memo={})
        except EditError as err:
            return (err.code, err.message, err.details)

    fast = {n: outcome(n) for n in names}
    monkeypatch.setattr(policy_mod, "_SIMPLE_RELATIVE", re.compile(r"(?!)"))
    assert {n: outcome(n) for n in names} == fast


# Names of the tree below, joined into paths at random: plain names (the shorter ways), names
# that are links (to files, folders, outside, back in, dangling, a loop, a denied file), denied
# names and folders, special files, and the names (`.`, `..`, ``) only the general way takes.
_BATCH_NAMES = [
    "src", "sub", "a.py", "b.txt", "c.py", "secrets", "t.txt", "generated", "x.py", "build",
    "o.txt", "keys", "k.pem", "public.pem", "id_rsa", "credentials", "a.key", "link_file",
    "link_dir", "out_dir", "out_file", "s.txt", "dangling", "loop", "up", "deny_link",
    "to_secrets", "back", "fifo", "n", "d", "hard", "dir.py", "new.py", "missing", ".git",
    ".", "..", "",
]  # fmt: skip


def _batch_tree(ws: Path, outside: Path) -> None:
    for rel in (
        "src/a.py", "src/b.txt", "src/sub/c.py", "secrets/t.txt", "generated/x.py", "build/o.txt",
        "keys/k.pem", "keys/public.pem", "id_rsa", "credentials", "a.key", "n/d", "dir.py/x",
        ".git/config", "top.py",
    ):  # fmt: skip
        _write(ws / rel)
    _write(outside / "s.txt")
    _write(outside / "sub/c.py")
    os.link(ws / "n/d", ws / "n/hard")
    os.mkfifo(ws / "fifo")
    links = {
        "src/link_file": "a.py",
        "link_dir": "src",
        "out_dir": str(outside),
        "out_file": str(outside / "s.txt"),
        "dangling": "missing/new.py",
        "loop": "loop",
        "src/up": "..",
        "deny_link": "keys/k.pem",
        "to_secrets": "secrets",
        "back": str(outside / "back"),
    }
    for name, target in links.items():
        os.symlink(target, ws / name)
    if not (outside / "back").is_symlink():
        os.symlink(ws / "src", outside / "back")


def test_a_batch_with_a_memo_resolves_as_each_path_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of paths resolved with one memo (what the CLI does for a patch: a folder seen
    before takes the shortest way, `_in_known_folder`) gets, path for path, the result or the
    refusal the general checks give it alone, whatever the batch and its order. Roots: plain,
    non-ASCII (NFD, as macOS names), inside a protected folder (everything refused), and
    folders a glob spans the root's own name for (`.aws`: `credentials` refused; `generated`:
    `top.py` refused by the user's `**/generated/*.py`). The allow glob `keys/*.pem` exempts
    `keys/k.pem` by its relative path but not by its real one, which is still refused."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from lsp_server.engine.policy import resolution as policy_mod

    outside = tmp_path / "outside"
    roots = [
        tmp_path / "ws", tmp_path / "cafe\u0301/ws", tmp_path / ".ssh/ws", tmp_path / ".aws",
        tmp_path / "generated",
    ]  # fmt: skip
    policies = []
    for ws in roots:
        _batch_tree(ws, outside)
        pol = PathPolicy.from_settings(
            [str(ws)],
            {
                "deny": ["secrets/**", "**/generated/*.py", "/build/**"],
                "allow": ["**/public.pem", "keys/*.pem"],
            },
        )
        assert pol._simple_prefix is not None, "the shorter ways apply here"
        policies.append(pol)
    # Only where a glob spans the root's own names is a file's real path matched as well.
    assert [p._root_in_reach for p in policies] == [False, False, True, True, True]

    hits: list[ResolvedPath] = []
    in_known_folder = PathPolicy._in_known_folder

    def counted(self: PathPolicy, *args: Any) -> ResolvedPath | None:
        got = in_known_folder(self, *args)
        if got is not None:
            hits.append(got)
        return got

    monkeypatch.setattr(PathPolicy, "_in_known_folder", counted)

    def outcome(pol: PathPolicy, path: str, memo: dict[str, Any] | None) -> object:
        try:
            return pol.resolve(path, memo=memo)
        except EditError as err:
            return (err.code, err.message, err.details)

    # Files that exist, so that folders repeat and the shortest way has work, and any names.
    files = [
        "src/a.py", "src/b.txt", "src/sub/c.py", "a.key", "n/d", "keys/public.pem", "keys/k.pem",
        "credentials", "link_dir/a.py", "generated/x.py", "build/o.txt", "secrets/t.txt",
        "id_rsa", "to_secrets/t.txt", "src/up/credentials", "src/up/n/d", "src/link_file",
        "top.py", "src/up/top.py",
    ]  # fmt: skip
    paths = st.one_of(
        st.sampled_from(files),
        st.lists(st.sampled_from(_BATCH_NAMES), min_size=1, max_size=4).map("/".join),
    )

    @settings(max_examples=150, deadline=None)
    @given(st.sampled_from(policies), st.lists(paths, min_size=1, max_size=30))
    def check(pol: PathPolicy, batch: list[str]) -> None:
        memo: dict[str, Any] = {}
        # Twice: the second round finds every folder in the memo.
        got = [(p, outcome(pol, p, memo)) for p in batch + batch]
        with monkeypatch.context() as m:
            m.setattr(policy_mod, "_SIMPLE_RELATIVE", re.compile(r"(?!)"))
            want = [(p, outcome(pol, p, None)) for p in batch + batch]
        assert got == want

    check()
    assert hits, "the shortest way was taken"
    assert {h.root for h in hits} >= {str(roots[0]), str(roots[3]), str(roots[4])}


def test_compiled_policy_is_the_same_policy_with_its_globs_ready(tree: dict[str, str]) -> None:
    # The CLI compiles the deny globs before it forks (a child would compile them again).
    policy = PathPolicy.from_settings([tree["ws"]])
    assert "_any_rule" not in vars(policy)
    assert policy.compiled() is policy and "_any_rule" in vars(policy)
    assert policy.denied_by(".env") == "**/.env"


# Glob pieces: literals that share beginnings (so the alternation has something to factor),
# wildcards, classes, braces, `**`, anchors and separators.
_GLOB_BITS = [
    "a", "ab", "abc", "b", ".", ".g", ".git", "_", "-", "x.", "*", "?", "**", "/", "[ab]",
    "[!a]", "{a,ab}", "{.g,b/c}", "\\", "é", "E\u0301", "*.pem", "id_",
]  # fmt: skip
_PATH_BITS = ["a", "ab", "abc", "b", ".", ".g", ".git", "_", "-", "x", "/", "é", "E\u0301", ".pem"]


def test_deny_alternation_matches_what_its_globs_match() -> None:
    """`_any_rule` writes the globs' shared leading pieces once (`_alternation`); a path it
    matches is one some glob matches, and the other way round, for any set of globs."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    glob = st.lists(st.sampled_from(_GLOB_BITS), min_size=1, max_size=5).map("".join)
    path = st.lists(st.sampled_from(_PATH_BITS), min_size=1, max_size=7).map("".join)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(glob, min_size=1, max_size=8), st.lists(path, min_size=1, max_size=10))
    def check(globs: list[str], paths: list[str]) -> None:
        try:
            rules = [compile_glob(g) for g in globs]
        except re.error:
            return  # an invalid glob (unclosed brace): refused as a setting, never compiled
        policy = PathPolicy(deny=tuple(globs), default_deny=False)
        for anywhere_only in (False, True):
            rx = policy._any_rule[anywhere_only]
            chosen = [
                r
                for g, r in zip(globs, rules, strict=True)
                if not anywhere_only or g.startswith("**/")
            ]
            for p in paths:
                got = rx is not None and rx.fullmatch(p) is not None
                assert got == any(r.fullmatch(p) for r in chosen), (globs, p, anywhere_only)

    check()
