"""Planning a large patch on two cores (`parallel_plan.SplitPlanner`): the same plan, or the
same refusal, as planning it in order (`patching.plan_patch`), whatever either half holds."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from lsp_server.engine import parallel_plan
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import Plan
from lsp_server.engine.parallel_plan import SplitPlanner
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.text import Snapshot, absent

N_FILES = 40


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    # Test patches of a few kilobytes take the two-core path too.
    monkeypatch.setattr(parallel_plan, "PARALLEL_FROM_BYTES", 1000)


def contents() -> dict[str, str]:
    return {f"pkg/m{i}.py": "".join(f"v{i}_{j} = {j}\n" for j in range(30)) for i in range(N_FILES)}


def section(i: int, *, at: int = 10, old: str | None = None) -> str:
    old = old if old is not None else f"v{i}_{at} = {at}"
    return (
        f"*** Update File: pkg/m{i}.py\n@@\n v{i}_{at - 1} = {at - 1}\n-{old}\n"
        f"+v{i}_{at} = {at * 100}\n v{i}_{at + 1} = {at + 1}\n"
    )


def patch(sections: list[str]) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


def getter(files: dict[str, str]) -> Callable[[str], Snapshot]:
    made: dict[str, Snapshot] = {}

    def get(path: str) -> Snapshot:
        if path not in made:
            made[path] = Snapshot(path, files[path], "disk") if path in files else absent(path)
        return made[path]

    return get


def summary_of(plan: Plan) -> list[tuple[str, str, str | None, list[tuple[object, ...]]]]:
    return [
        (c.change, c.path, c.moved_to, [(e.start, e.end, e.new_lines, e.offsets) for e in c.edits])
        for c in plan.changes
    ]


def both(text: str, files: dict[str, str] | None = None) -> tuple[Plan, SplitPlanner, Plan]:
    files = files if files is not None else contents()
    get = getter(files)
    with SplitPlanner(text, get) as planner:
        split = planner.plan(get)
    return split, planner, plan_patch(text, getter(files))


def refusals(text: str, files: dict[str, str] | None = None) -> tuple[EditError, EditError]:
    files = files if files is not None else contents()
    get = getter(files)
    with pytest.raises(EditError) as split, SplitPlanner(text, get) as planner:
        planner.plan(get)
    with pytest.raises(EditError) as ordered:
        plan_patch(text, getter(files))
    return split.value, ordered.value


def test_large_patch_is_planned_in_two_halves_as_in_order() -> None:
    text = patch([section(i) for i in range(N_FILES)])
    split, planner, ordered = both(text)
    assert planner.joined  # the child's half was used, not re-planned
    assert summary_of(split) == summary_of(ordered)
    assert split.summary == ordered.summary
    assert [c.new_text for c in split.changes] == [c.new_text for c in ordered.changes]
    # The parent's own snapshots, not copies from the child.
    get = getter(contents())
    assert all(c.before.text == get(c.path).text for c in split.changes)


def test_lenient_matches_in_the_second_half_keep_their_patch_lines() -> None:
    files = contents()
    last = N_FILES - 1
    files[f"pkg/m{last}.py"] = files[f"pkg/m{last}.py"].replace(
        f"v{last}_10 = 10\n", f"v{last}_10 = 10   \n"
    )
    text = patch([section(i) for i in range(N_FILES)])
    split, planner, ordered = both(text, files)
    assert planner.joined
    assert split.summary["lenient"] == ordered.summary["lenient"]
    (entry,) = ordered.summary["lenient"]  # type: ignore[attr-defined]
    assert text.split("\n")[entry["patchLine"] - 1] == "@@"


def test_no_match_in_the_second_half_is_the_ordered_refusal() -> None:
    sections = [section(i) for i in range(N_FILES)]
    sections[-3] = section(N_FILES - 3, old="not in the file")
    split, ordered = refusals(patch(sections))
    assert split.code == Code.NO_MATCH
    assert split.to_result() == ordered.to_result()


def test_a_parse_error_in_the_second_half_wins_over_a_plan_error_in_the_first() -> None:
    sections = [section(i) for i in range(N_FILES)]
    sections[1] = section(1, old="not in the file")
    sections[-2] = sections[-2].replace(" v", "?v", 1)
    split, ordered = refusals(patch(sections))
    assert split.code == Code.PARSE_ERROR
    assert split.to_result() == ordered.to_result()


def test_a_path_in_both_halves_is_the_ordered_refusal() -> None:
    sections = [section(i) for i in range(N_FILES)]
    sections[-1] = section(0, at=20)
    split, ordered = refusals(patch(sections))
    assert split.code == Code.INVALID_ARGUMENT
    assert split.to_result() == ordered.to_result()


def test_moves_adds_and_deletes_after_the_cut_are_planned_in_order() -> None:
    files = contents()
    sections = [section(i) for i in range(N_FILES)]
    sections[-1] = sections[-1].replace(
        f"*** Update File: pkg/m{N_FILES - 1}.py\n",
        f"*** Update File: pkg/m{N_FILES - 1}.py\n*** Move to: pkg/moved.py\n",
    )
    sections.append("*** Add File: pkg/new.py\n+x = 1\n*** Delete File: pkg/m0.py\n")
    sections[0] = ""
    split, planner, ordered = both(patch(sections), files)
    assert planner.child is None and not planner.joined  # never forked
    assert summary_of(split) == summary_of(ordered)


def test_a_file_read_differently_by_the_child_is_planned_again() -> None:
    """The child reads its files itself: if one changed before the parent read it, the plan is
    made from what the parent read."""
    files = contents()
    text = patch([section(i) for i in range(N_FILES)])
    changed = dict(files)
    last = f"pkg/m{N_FILES - 1}.py"
    changed[last] = "# a line the child never saw\n" + files[last]
    with SplitPlanner(text, getter(files)) as planner:
        split = planner.plan(getter(changed))
    assert not planner.joined
    assert summary_of(split) == summary_of(plan_patch(text, getter(changed)))


def test_a_child_that_dies_is_replaced_by_planning_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def die(text: str, get: Callable[[str], Snapshot]) -> None:
        os._exit(3)

    monkeypatch.setattr(parallel_plan, "_child_answer", die)
    text = patch([section(i) for i in range(N_FILES)])
    split, planner, ordered = both(text)
    assert not planner.joined
    assert summary_of(split) == summary_of(ordered)


def test_leaving_without_planning_stops_the_child() -> None:
    text = patch([section(i) for i in range(N_FILES)])
    with SplitPlanner(text, getter(contents())) as planner:
        assert planner.child is not None
        pid = planner.child[0]
    assert planner.child is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped


def test_small_patches_and_crlf_patches_are_not_split(monkeypatch: pytest.MonkeyPatch) -> None:
    text = patch([section(i) for i in range(N_FILES)])
    assert parallel_plan._cut(text.replace("\n", "\r\n")) is None
    monkeypatch.setattr(parallel_plan, "PARALLEL_FROM_BYTES", len(text) + 1)
    assert parallel_plan._cut(text) is None


def test_the_cut_is_a_column_0_update_header_after_the_childs_share() -> None:
    text = patch([section(i) for i in range(N_FILES)])
    cut = parallel_plan._cut(text)
    assert cut is not None and cut >= len(text) * (1 - parallel_plan.CHILD_SHARE)
    assert text[cut:].startswith("*** Update File: ")
    assert text[cut - 1] == "\n"
    # A padded header is read as a header too, but is never a cut: the first column-0 one is.
    padded = text[:cut] + "  " + text[cut:]
    cut2 = parallel_plan._cut(padded)
    assert cut2 is not None and cut2 > cut + 2


def test_an_interrupted_first_half_still_stops_the_child() -> None:
    text = patch([section(i) for i in range(N_FILES)])
    files = contents()
    get = getter(files)

    def interrupted(path: str) -> Snapshot:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), SplitPlanner(text, get) as planner:
        assert planner.child is not None
        pid = planner.child[0]
        planner.plan(interrupted)
    assert planner.child is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped


# --- review: the split plan against the ordered one, over generated patches -----------------

_ALIASES = {"alias": "pkg"}  # `alias/x` names `pkg/x` (as a symlinked folder would)


def resolving_getter(files: dict[str, str]) -> Callable[[str], Snapshot]:
    """Like `getter`, but the path is resolved as the CLI's policy would: `./`, `a//b`,
    `a/./b` and an aliased folder name the same file, whose snapshot has the canonical path."""
    import posixpath

    made: dict[str, Snapshot] = {}

    def get(path: str) -> Snapshot:
        if path not in made:
            canonical = posixpath.normpath(path)
            head, _, rest = canonical.partition("/")
            canonical = f"{_ALIASES.get(head, head)}/{rest}" if rest else canonical
            if canonical.startswith(".."):
                raise EditError(Code.OUTSIDE_WORKSPACE, "outside", "inside", {"path": path})
            made[path] = (
                Snapshot(canonical, files[canonical], "disk")
                if canonical in files
                else absent(canonical)
            )
        return made[path]

    return get


def outcome(plan: Callable[[], Plan]) -> object:
    try:
        got = plan()
    except EditError as err:
        return ("refused", err.to_result())
    return ("planned", summary_of(got), got.summary, [c.new_text for c in got.changes])


def generated(seed: int) -> tuple[str, dict[str, str]]:
    """A patch of ~40 file sections and the files it is planned against, with what models
    send (padded or differently written paths, bare first chunks, anchors, lenient context,
    End of File chunks, pure additions, blank lines) and, now and then, what is refused."""
    import random

    rnd = random.Random(seed)
    n = rnd.randint(30, 45)
    files = {}
    for i in range(n):
        body = [f"v{i}_{j} = {j}" for j in range(30)]
        eol = "\r\n" if rnd.random() < 0.1 else "\n"
        text = eol.join(body) + ("" if rnd.random() < 0.1 else eol)
        files[f"pkg/m{i}.py"] = "" if rnd.random() < 0.03 else text
    files["pkg/dup.py"] = "same\nsame\nother\n"

    def spelled(i: int) -> str:
        return rnd.choice(
            [f"pkg/m{i}.py"] * 6 + [f"./pkg/m{i}.py", f"pkg//m{i}.py", f"alias/m{i}.py"]
        )

    def update(i: int) -> str:
        header = f"*** Update File: {spelled(i)}\n"
        if rnd.random() < 0.001:
            header = "  " + header  # after a chunk: a context line (a refusal)
        if rnd.random() < 0.05:
            header = header.replace(": ", ":")
        if not files[f"pkg/m{i}.py"]:
            return header + "@@\n+appended\n"
        out = []
        at = rnd.randint(2, 8)
        for k in range(rnd.randint(1, 3)):
            kind = rnd.random()
            if k == 0 and kind < 0.15:
                head = ""  # a bare first chunk
            elif kind < 0.25:
                head = f"@@ v{i}_{at - 2} = {at - 2}\n"
            elif kind < 0.3:
                head = f"@@ -{at},3 +{at},3 @@\n"
            else:
                head = "@@\n"
            pad = "  " if rnd.random() < 0.1 else ""
            old = f"v{i}_{at} = {at}"
            if rnd.random() < 0.002:
                old = "not in the file"
            out.append(
                f"{head} v{i}_{at - 1} = {at - 1}{pad}\n-{old}\n+v{i}_{at} = {at * 100}\n"
                f" v{i}_{at + 1} = {at + 1}\n"
            )
            at += rnd.randint(4, 6)
        if rnd.random() < 0.1:
            out.append(f"@@\n-v{i}_29 = 29\n+last\n*** End of File\n")
        elif rnd.random() < 0.05:
            out.append("@@\n+appended\n")
        return header + "".join(out)

    sections = []
    order = list(range(n))
    if rnd.random() < 0.05:
        order[rnd.randrange(n)] = order[rnd.randrange(n)]  # a file named twice
    added = deleted = False
    for pos, i in enumerate(order):
        sections.append(update(i))
        gap = rnd.random()
        if gap < 0.002:
            sections.append("\n")  # after a chunk: an empty context line
        elif gap < 0.003:
            sections.append("  \n")
        if pos < n // 3 and not added and rnd.random() < 0.03:
            sections.append("*** Add File: pkg/new.py\n+x = 1\n\n+y = 2\n")
            added = True
        if pos < n // 3 and not deleted and rnd.random() < 0.03:
            sections.append("*** Delete File: pkg/dup.py\n")
            deleted = True
    r = rnd.random()
    if r < 0.02:
        sections.append("*** Update File: pkg/dup.py\n@@\n-same\n+SAME\n")  # ambiguous
    elif r < 0.04:
        sections.append("*** Update File: pkg/missing.py\n@@\n-x\n+y\n")
    elif r < 0.06:
        sections[rnd.randrange(len(sections))] += "?not a patch line\n"
    elif r < 0.08:
        sections.append("*** Update File: ../outside.py\n@@\n-x\n+y\n")
    elif r < 0.1:
        sections.append("*** Update File: pkg/m0.py\n")  # no chunk
    text = patch(sections)
    r = rnd.random()
    if r < 0.05:
        text = "\n\n  \n" + text + "\n \n"
    elif r < 0.08:
        text = "apply_patch <<'EOF'\n" + text + "EOF\n"
    elif r < 0.1:
        text = text.replace("*** End Patch\n", "")
    return text, files


@pytest.mark.parametrize("seed", range(300))
def test_generated_patches_plan_as_in_order(seed: int) -> None:
    text, files = generated(seed)
    with SplitPlanner(text, resolving_getter(files)) as planner:
        split = outcome(lambda: planner.plan(resolving_getter(files)))
    assert split == outcome(lambda: plan_patch(text, resolving_getter(files)))


def test_an_empty_file_deleted_after_the_childs_read_is_refused_as_in_order() -> None:
    """The child read an empty file that was deleted before the parent read it: the parent's
    snapshot is absent, whose text ("") has the same length and hash as the child's. In order,
    the update is NOT_FOUND; a merged plan would be an update of a file that does not exist,
    which `apply_plan` carries out by creating it."""
    files = contents()
    last = f"pkg/m{N_FILES - 1}.py"
    files[last] = ""
    sections = [section(i) for i in range(N_FILES)]
    sections[-1] = f"*** Update File: {last}\n@@\n+appended\n"
    text = patch(sections)
    gone = dict(files)
    del gone[last]
    with pytest.raises(EditError) as split, SplitPlanner(text, getter(files)) as planner:
        planner.plan(getter(gone))
    with pytest.raises(EditError) as ordered:
        plan_patch(text, getter(gone))
    assert split.value.to_result() == ordered.value.to_result()
    assert ordered.value.code == Code.NOT_FOUND


def test_a_file_the_parent_cannot_read_but_the_child_could_is_the_ordered_refusal() -> None:
    """The child read a file of its half that the parent's read then refused (it became
    binary, say): the merge meets the parent's error where planning in order meets it."""
    files = contents()
    refused = f"pkg/m{N_FILES - 2}.py"
    text = patch([section(i) for i in range(N_FILES)])
    parent = getter(files)

    def get(path: str) -> Snapshot:
        if path == refused:
            raise EditError(Code.BINARY, f"{path} looks binary", "no", {"path": path})
        return parent(path)

    with pytest.raises(EditError) as split, SplitPlanner(text, getter(files)) as planner:
        planner.plan(get)
    with pytest.raises(EditError) as ordered:
        plan_patch(text, get)
    assert split.value.to_result() == ordered.value.to_result()


def test_a_child_answer_cut_short_is_replaced_by_planning_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hand-over is `marshal` data: a child that dies halfway through writing it (here it
    writes the first half of its real answer) is no answer, never a wrong plan."""
    import marshal
    from types import SimpleNamespace

    def half(value: object) -> bytes:
        data = marshal.dumps(value)
        return data[: len(data) // 2]

    monkeypatch.setattr(parallel_plan, "marshal", SimpleNamespace(dumps=half, loads=marshal.loads))
    text = patch([section(i) for i in range(N_FILES)])
    split, planner, ordered = both(text)
    assert not planner.joined
    assert summary_of(split) == summary_of(ordered)


def test_a_child_answer_holding_a_str_subclass_is_replaced_by_planning_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """marshal takes exact types only: an answer it cannot write (a str subclass, such as the
    parser's tokens) leaves the child silent and the parent plans in order."""
    answer = parallel_plan._child_answer

    class Name(str):
        pass

    def with_subclass(text: str, get: Callable[[str], Snapshot]) -> object:
        files, lenient, chunks = answer(text, get)  # type: ignore[misc]
        return [(Name(f[0]), *f[1:]) for f in files], lenient, chunks

    monkeypatch.setattr(parallel_plan, "_child_answer", with_subclass)
    text = patch([section(i) for i in range(N_FILES)])
    split, planner, ordered = both(text)
    assert not planner.joined
    assert summary_of(split) == summary_of(ordered)


def test_a_split_apply_does_not_import_pickle(tmp_path: os.PathLike[str]) -> None:
    """The child's answer comes back as marshal data: a headless apply of a large patch loads
    no `pickle` (nor `struct`), ~1.5 ms of its start-up (bench/bench_startup.py)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(tmp_path) / "ws"
    for i in range(N_FILES):
        (root / "pkg").mkdir(parents=True, exist_ok=True)
        (root / f"pkg/m{i}.py").write_text(contents()[f"pkg/m{i}.py"])
    (root.parent / "p").write_text(patch([section(i) for i in range(N_FILES)]))
    code = (
        "import sys\n"
        "from lsp_server.engine import parallel_plan\n"
        "parallel_plan.PARALLEL_FROM_BYTES = 1000\n"
        "made = []\n"
        "real = parallel_plan.SplitPlanner.plan\n"
        "def plan(self, get):\n"
        "    out = real(self, get); made.append(self.joined); return out\n"
        "parallel_plan.SplitPlanner.plan = plan\n"
        "from lsp_server.cli import main\n"
        f"rc = main(['apply-patch', '--root', {str(root)!r}, {str(root.parent / 'p')!r}])\n"
        "assert rc == 0, rc\n"
        "assert made == [True], made\n"
        "assert 'pickle' not in sys.modules, 'pickle was imported'\n"
    )
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(repo), AGENT_EDIT_STATE_DIR=str(root.parent / "st"))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "v0_10 = 1000" in (root / "pkg/m0.py").read_text()
