"""Soak: 2,000 agent edits interleaved with a user typing, through one real server session.

Three open documents (LF, CRLF, and one full of astral characters) take random keystrokes at
valid positions (insertions, deletions, new lines) between agent edits. Each agent edit reads the
file, picks a token that occurs once, and replaces it; when the user typed between the read and
the edit, the edit must be `STALE` and change nothing, otherwise it must apply. Every 250 edits
and at the end the server's copy of every document must equal the editor's, and the server's
resident memory may not grow by 50 MB or more after warm-up.
"""

from __future__ import annotations

import random
import re

import pytest
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session

EDITS = 2000
WARMUP = 200
CHECK_EVERY = 250
MAX_RSS_GROWTH = 50 * 1024 * 1024
TOKEN = re.compile(r"T\d{6}")


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class Tokens:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"T{self.n:06d}"


def units(s: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(s.encode("utf-8"))
    if encoding == "utf-16":
        return len(s.encode("utf-16-le")) // 2
    return len(s)


def random_position(rng: random.Random, text: str, encoding: str) -> tuple[int, int]:
    """A valid position (never inside a character's code units) in `text`."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]*$", text)
    line = rng.randrange(len(lines))
    body = lines[line].rstrip("\r\n")
    col = rng.randint(0, len(body))
    return line, units(body[:col], encoding)


def keystroke(rng: random.Random, ed: Editor, rel: str) -> None:
    text = ed.text(rel)
    line, ch = random_position(rng, text, ed.encoding)
    kind = rng.random()
    if kind < 0.6:
        ed.type(rel, line, ch, rng.choice(["a", "b ", "x", "😀", "é", "\t", "q"]))
    elif kind < 0.8:
        ed.type(rel, line, ch, "\n" if rel != "crlf.txt" else "\r\n")
    else:
        end_line, end_ch = random_position(rng, text, ed.encoding)
        if (end_line, end_ch) < (line, ch):
            line, ch, end_line, end_ch = end_line, end_ch, line, ch
        if end_line - line <= 1 and (end_line, end_ch) != (line, ch):
            ed.type(rel, line, ch, "", end=(end_line, end_ch))


async def same_copies(ed: Editor, files: list[str]) -> None:
    for rel in files:
        got = await ed.command("agentEdit.read", {"path": rel})
        assert got["ok"] and got["text"] == ed.text(rel), f"{rel}: server and editor differ"


@pytest.mark.asyncio
async def test_soak_edits_and_typing(client: LanguageClient, tmp_path) -> None:
    rng = random.Random(20261130)
    tok = Tokens()
    ed = await start_session(client, "visual-studio-code", tmp_path)
    bodies = {
        "lf.txt": "".join(f"line {tok()} {tok()}\n" for _ in range(40)),
        "crlf.txt": "".join(f"row {tok()}\r\n" for _ in range(40)),
        "astral.md": "".join(f"😀 {tok()} 👍🏽 {tok()} 🎉\n" for _ in range(40)),
    }
    files = list(bodies)
    for rel, body in bodies.items():
        ed.write_file(rel, body)
        ed.open(rel)
    pid = client._server.pid  # type: ignore[union-attr]
    outcomes = {"applied": 0, "stale": 0, "no token": 0}
    base_rss = 0
    for i in range(EDITS):
        for _ in range(rng.randint(0, 3)):
            keystroke(rng, ed, rng.choice(files))
        rel = rng.choice(files)
        read = await ed.command("agentEdit.read", {"path": rel})
        assert read["ok"] and read["text"] == ed.text(rel)
        counts: dict[str, int] = {}
        for m in TOKEN.findall(read["text"]):
            counts[m] = counts.get(m, 0) + 1
        unique = sorted(k for k, v in counts.items() if v == 1)
        if not unique:
            outcomes["no token"] += 1
            continue
        old = rng.choice(unique)
        new = tok() if rng.random() < 0.8 else f"{tok()}\nline {tok()}"
        typed = rng.random() < 0.15
        if typed:
            keystroke(rng, ed, rel)
            typed = ed.text(rel) != read["text"]
        before = ed.text(rel)
        args = {"path": rel, "oldText": old, "newText": new}
        if rng.random() < 0.5:
            args["expect"] = {"version": read["version"]}
        result = await ed.command("agentEdit.replace", args)
        if typed:
            assert result["ok"] is False and result["code"] == "STALE", result
            assert ed.text(rel) == before
            outcomes["stale"] += 1
        else:
            assert result["ok"] is True, result
            eol = "\r\n" if rel == "crlf.txt" else "\n"
            assert ed.text(rel) == before.replace(old, new.replace("\n", eol), 1)
            outcomes["applied"] += 1
        if i + 1 == WARMUP:
            base_rss = rss_bytes(pid)
        if (i + 1) % CHECK_EVERY == 0:
            await same_copies(ed, files)
    await same_copies(ed, files)
    growth = rss_bytes(pid) - base_rss
    # The figure, for `pytest tests/lsp/test_soak.py -s`.
    print(
        f"soak: {outcomes}, server RSS {base_rss / 2**20:.1f} MB after warm-up, growth "
        f"{growth / 2**20:+.1f} MB over {EDITS - WARMUP} edits"
    )
    assert growth < MAX_RSS_GROWTH, f"server RSS grew {growth / 2**20:.1f} MB after warm-up"
    assert outcomes["applied"] > EDITS * 0.7, outcomes
    assert outcomes["stale"] > 0, outcomes
