"""`History.begin` writes its pre-image pack in a thread (history/recording.py `_PackWriter`, a
speed trick), started before the journal's lock with the pre-images it expects to pack. Whatever
happens to that thread's file (a compaction's clean-up removing it, a write error, another
process tracking one of the files meanwhile, an error in `begin` itself), the pack the record
names must hold exactly the record's pre-images, be durable before `begin` returns, and leave no
temporary file or thread behind."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from lsp_server.engine import files
from lsp_server.engine.blobs import Blobs
from lsp_server.engine.errors import EditError
from lsp_server.engine.history import History, recording
from lsp_server.engine.journal import Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.patching import plan_patch


def make_plan(root: Path, count: int = 3, first: int = 0) -> Plan:
    """`count` files of 40 kB (a pack of a few large files: `_PackWriter`'s case)."""
    patch = ["*** Begin Patch\n"]
    for i in range(first, first + count):
        path = root / f"f{i}.py"
        if not path.exists():
            path.write_text("".join(f"row {i} {j} {'z' * 40}\n" for j in range(800)))
        patch += [f"*** Update File: f{i}.py\n", "@@\n", f"-row {i} 30 {'z' * 40}\n", "+thirty\n"]
    patch.append("*** End Patch\n")
    return plan_patch("".join(patch), lambda rel: files.read_snapshot(str(root), rel))


@pytest.fixture(autouse=True)
def writers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every `_PackWriter` made: none may still be working when `begin` returns."""
    made: list[Any] = []
    real = recording._PackWriter.__init__

    def init(self: Any, *a: Any, **k: Any) -> None:
        made.append(self)
        real(self, *a, **k)

    monkeypatch.setattr(recording._PackWriter, "__init__", init)
    return made


def done(writers: list[Any]) -> None:
    assert not [w for w in writers if w._done.locked()]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def journal(root: Path) -> Journal:
    return Journal(root, root.parent / "state")


def check_pack(root: Path, plan: Plan) -> None:
    """The journal's begin record for `plan` replays with every baseline from its pack, the
    pack's bytes are the files' pre-images, and no temporary file is left."""
    j = journal(root)
    again = History.load(j)
    assert again.skipped == 0, again.skipped_note()
    (entry,) = [e for e in again.entries if len(e.changes) == len(plan.changes)]
    assert entry.pack is not None
    data = j.blobs.get(entry.pack)
    want = b"".join(c.before.disk.data for c in plan.changes if c.path in entry._baselines)
    assert data == want
    assert not [n for n in os.listdir(j.blobs.dir) if n.endswith(".tmp")]


def test_the_staged_file_removed_before_it_is_named(
    root: Path, monkeypatch: pytest.MonkeyPatch, writers: list[Any]
) -> None:
    """A compaction of another process (under the lock `begin` waits for) removes the staged
    temporary file as a crash's leftover: `begin` writes the pack itself, and the record names
    a pack that is there and whole."""
    plan = make_plan(root)
    real = Blobs.stage

    def stage_then_collected(self: Blobs, *a: Any, **k: Any) -> Any:
        staged = real(self, *a, **k)
        assert self.collect(set()) == 1  # the staged file, as a clean-up sees it
        return staged

    monkeypatch.setattr(Blobs, "stage", stage_then_collected)
    h = History.load(journal(root))
    h.begin(plan, {}, sync=True)
    check_pack(root, plan)
    assert len(writers) == 1
    done(writers)


def test_a_write_error_in_the_thread(
    root: Path, monkeypatch: pytest.MonkeyPatch, writers: list[Any]
) -> None:
    """The thread's write fails (ENOSPC): `begin` writes the pack itself; when that fails too,
    the plan is refused (nothing sent) with the journal's error, no file left behind."""
    plan = make_plan(root)

    def full(self: Blobs, *a: Any, **k: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Blobs, "stage", full)
    History.load(journal(root)).begin(plan, {}, sync=True)
    check_pack(root, plan)

    other = make_plan(root, first=100)
    monkeypatch.setattr(Blobs, "put_parts", lambda self, *a, **k: full(self))
    h = History.load(journal(root))
    with pytest.raises(EditError) as err:
        h.begin(other, {}, sync=True)
    assert "undo record could not be written" in err.value.message
    blobs = journal(root).blobs
    assert not [n for n in os.listdir(blobs.dir) if n.endswith(".tmp")]
    assert len(writers) == 2
    done(writers)


def test_another_process_tracked_a_file_meanwhile(root: Path, writers: list[Any]) -> None:
    """This history read the journal before another process edited one of the plan's files:
    the thread packs that file too, but under the lock the file is tracked (not a baseline),
    so the pack is written again without it and the thread's file removed."""
    plan = make_plan(root)
    h = History.load(journal(root))
    other = History.load(journal(root))
    first = make_plan(root, count=1)
    other.finish(other.begin(first, {}), "applied")
    h.begin(plan, {}, sync=True)
    check_pack(root, plan)
    again = History.load(journal(root))
    (entry,) = [e for e in again.entries if len(e.changes) == len(plan.changes)]
    assert "f0.py" not in entry._baselines and "f1.py" in entry._baselines
    assert len(writers) == 1  # (the other process's one-file plan has no pack)
    done(writers)


def test_an_error_in_begin_leaves_no_file_nor_thread(
    root: Path, monkeypatch: pytest.MonkeyPatch, writers: list[Any]
) -> None:
    plan = make_plan(root)

    def broken(*a: Any, **k: Any) -> Any:
        raise ValueError("a bug")

    monkeypatch.setattr(recording, "record_change", broken)
    with pytest.raises(ValueError):
        History.load(journal(root)).begin(plan, {}, sync=True)
    blobs = journal(root).blobs
    assert not [n for n in os.listdir(blobs.dir) if n.endswith(".tmp")]
    assert len(writers) == 1
    done(writers)


def test_no_thread_for_a_small_plan(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small edit (no pack) pays for no thread."""
    (root / "small.py").write_text("one\ntwo\n")
    small = plan_patch(
        "*** Begin Patch\n*** Update File: small.py\n@@\n-one\n+ONE\n*** End Patch\n",
        lambda rel: files.read_snapshot(str(root), rel),
    )
    monkeypatch.setattr(recording._PackWriter, "__init__", None)  # would raise if called
    h = History.load(journal(root))
    h.finish(h.begin(small, {}), "applied")


def test_a_pack_of_many_small_files_is_written_in_the_thread_in_a_few_pieces(
    root: Path, monkeypatch: pytest.MonkeyPatch, writers: list[Any]
) -> None:
    """A pack of many files (1,000 pre-images of a few KB in bench_patch) is written by the
    thread too: hashed and written as a few joined groups, so the thread needs the GIL back
    a few times, not once a file (each such wait is a switch interval while `begin` runs
    Python); the pack holds the same bytes."""
    from lsp_server.engine import blobs

    many = make_plan(root, count=60, first=10)
    hashed: list[int] = []
    real = blobs.sha256_for

    class Counting:
        def __init__(self, size: int) -> None:
            self.inner = real(size)

        def update(self, data: bytes) -> None:
            hashed.append(len(data))
            self.inner.update(data)

        def hexdigest(self) -> str:
            return self.inner.hexdigest()

    monkeypatch.setattr(blobs, "sha256_for", Counting)
    h = History.load(journal(root))
    h.begin(many, {}, sync=False)
    monkeypatch.setattr(blobs, "sha256_for", real)
    assert len(writers) == 1
    assert sum(hashed) == sum(len(c.before.disk.data) for c in many.changes)
    assert len(hashed) <= 4, hashed  # 60 x ~37 kB: 3 groups of about 1 MiB
    done(writers)
    check_pack(root, many)
