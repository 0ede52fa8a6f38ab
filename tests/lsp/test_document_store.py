"""The server's document store: incremental changes, the change watch, the line index and the
resumable hash all agree with recomputing from the whole text."""

from __future__ import annotations

import hashlib
import random

import pytest

from lsp_server.engine.text import hash_with_marks, split_lines
from lsp_server.lsp import documents
from lsp_server.lsp.documents import Document
from lsp_server.lsp.positions import to_index

ALPHABET = ["a", "b", "\n", "\r", "\r\n", "😀", "é", " "]


def reference_apply(text: str, start, end, new: str, enc: str) -> str:
    lines = split_lines(text)

    def off(p):
        line, col = p
        if line >= len(lines):
            return len(text)
        return sum(len(x) for x in lines[:line]) + to_index(lines[line], col, enc)

    a, b = sorted((off(start), off(end)))
    return text[:a] + new + text[b:]


@pytest.mark.parametrize("seed", range(4))
def test_incremental_changes_match_a_full_resplit(seed, monkeypatch):
    monkeypatch.setattr(documents, "BLOCK", 3)  # many blocks even in small documents
    rnd = random.Random(seed)
    for _ in range(2000):
        text = "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 14)))
        orig = split_lines(text)
        doc = Document("u", "p", "x", 0, list(orig))
        watch = doc.watch()
        for _ in range(3):
            n = len(doc.lines)
            s = (rnd.randint(0, n), rnd.randint(0, 4))
            e = (rnd.randint(0, n), rnd.randint(0, 4))
            s, e = min(s, e), max(s, e)
            new = "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 4)))
            enc = rnd.choice(["utf-16", "utf-8", "utf-32"])
            want = reference_apply(doc.text, s, e, new, enc)
            doc.replace_range(s, e, new, enc)
            assert doc.lines == split_lines(want)
            starts, pos = [], 0
            for line in doc.lines:
                starts.append(pos)
                pos += len(line)
            for offset in range(len(want) + 1):
                holder = max(i for i, st in enumerate(starts) if st <= offset or i == 0)
                if offset == len(want):
                    holder = len(doc.lines) - 1
                assert doc.line_of_offset(offset) == holder
        # Outside the watched ranges every line is the very same object as before.
        prev_c = prev_o = 0
        cur = doc.lines
        for cs, ce, os_, oe in [*watch.ranges, [len(cur), len(cur), len(orig), len(orig)]]:
            assert all(a is b for a, b in zip(cur[prev_c:cs], orig[prev_o:os_], strict=True))
            prev_c, prev_o = ce, oe


def test_resumed_hash_equals_a_fresh_one(monkeypatch):
    monkeypatch.setattr("lsp_server.engine.text.HASH_MARK_EVERY", 1000)
    rnd = random.Random(7)
    text = "".join(f"line {i} {'é' * (i % 3)}\n" for i in range(3000))
    doc = Document("u", "p", "x", 1, split_lines(text))
    assert doc.sha256 == hashlib.sha256(text.encode()).hexdigest()
    for _ in range(50):
        line = rnd.randrange(len(doc.lines) - 1)
        doc.replace_range((line, 0), (line, 2), "XY😀", "utf-16")
        new_text = "".join(doc.lines)
        first = len("".join(doc.lines[:line]))
        start, state = doc.hash_start(first)
        digest, marks = hash_with_marks(new_text, start, state)
        assert digest == hashlib.sha256(new_text.encode()).hexdigest()
        doc.set_known_text(new_text, digest, marks)
        assert all(m[0] <= len(new_text) for m in doc._marks)
        assert doc.sha256 == digest


def test_change_through_the_cr_of_a_crlf_line_as_neovim_sends_it():
    # Neovim (and Emacs) show a CRLF line of a file with mixed endings as "c" plus a CR
    # character and place positions by that line: its end is one column past the content.
    assert to_index("c\r\n", 1, "utf-16") == 1
    assert to_index("c\r\n", 2, "utf-16") == 2  # between the CR and the LF
    assert to_index("c\r\n", 3, "utf-16") == 1  # further: clamped to the content (LSP rule)
    assert to_index("c\n", 2, "utf-16") == 1
    doc = Document("u", "p", "x", 0, split_lines("a\r\nb\nc\r\nd\r\n"))
    # "b" replaced by two lines: Neovim's didChange reaches to the end of its line "c\r".
    doc.replace_range((1, 0), (2, 2), "B\nB2\nc\r", "utf-8")
    assert doc.text == "a\r\nB\nB2\nc\r\nd\r\n"
    # A line opened below "d\r" (`o`): the change starts past the CR.
    doc.replace_range((4, 2), (4, 2), "\n", "utf-8")
    assert doc.text == "a\r\nB\nB2\nc\r\nd\r\n\n"


def test_lone_cr_positions_of_a_client_that_counts_lines_by_lf():
    # Neovim and Emacs show a lone CR as a character (^M) of its line and place positions by
    # lines split at LF alone; LSP counts the CR as a line break. Past it the two disagree.
    store = documents.DocumentStore(lambda uri: uri)
    store.lf_lines = documents.lf_lines_by_name("Neovim")
    assert not documents.lf_lines_by_name("Visual Studio Code")
    text = "x\ry😀\nc\nd\n"
    doc = store.open("u", "plaintext", 0, text)
    assert doc.lone_cr == 1
    # Their line 1 is "c" (LSP's line 2): replace it; then append after the emoji of line 0.
    store.change("u", 1, [((1, 0), (1, 1), "C")], "utf-16")
    assert doc.text == "x\ry😀\nC\nd\n"
    store.change("u", 2, [((0, 5), (0, 5), "!")], "utf-16")
    assert doc.text == "x\ry😀!\nC\nd\n"
    # The lone CR deleted: lines agree again, and changes take the fast path.
    store.change("u", 3, [((0, 1), (0, 2), "")], "utf-16")
    assert doc.text == "xy😀!\nC\nd\n" and doc.lone_cr == 0
    store.change("u", 4, [((2, 0), (2, 1), "D")], "utf-16")
    assert doc.text == "xy😀!\nC\nD\n"
    assert doc.lines == split_lines(doc.text)
    # A client that follows LSP: the same position is LSP's line 1, "y😀".
    lsp = documents.DocumentStore(lambda uri: uri)
    lsp.open("v", "plaintext", 0, text)
    lsp.change("v", 1, [((1, 0), (1, 1), "Y")], "utf-16")
    assert lsp.get("v").text == "x\rY😀\nc\nd\n"


def _lsp_position(text: str, offset: int) -> tuple[int, int]:
    """(line, utf-8 column) of `offset` in a text split at LF alone."""
    before = text[:offset]
    line = before.count("\n")
    return line, len(before[before.rfind("\n") + 1 :].encode())


@pytest.mark.parametrize("seed", range(40))
def test_neovim_changes_count_a_final_break_the_text_may_not_have(seed):
    # Neovim's didOpen sends lines + "\n" only with 'eol'; its changes are computed on lines as
    # if each, the last too, ended with "\n" (an empty buffer included). The store must hold the
    # text the file has: "\n" after the last line only with 'eol' and when the buffer is not
    # empty, whatever the order of the changes and the client's finalNewline declarations.
    rnd = random.Random(seed)
    store = documents.DocumentStore(lambda uri: uri)
    store.final_break_in_changes = documents.final_break_in_changes_by_name("Neovim")
    assert not documents.final_break_in_changes_by_name("Visual Studio Code")
    lines = [rnd.choice(["", "a", "bé"]) for _ in range(rnd.randint(1, 3))]
    # Any buffer: a 'noeol' one whose last line is empty too (sent as if it had a final newline).
    eol = rnd.random() < 0.5
    empty = seed % 4 == 0  # an empty file: one empty line with 'eol', sent as "\n"
    if empty:
        lines, eol = [""], True

    def model() -> str:  # the client's text, with the break it always counts
        return "\n".join(lines) + "\n"

    def truth() -> str:
        return "\n".join(lines) + ("\n" if eol and not empty else "")

    def did_open() -> documents.Document:
        # Neovim's didOpen (at attach, and again after a reload, a rename, a restarted client),
        # then the plugin's finalNewline with the buffer's line count.
        doc = store.open("u", "plaintext", 0, "\n".join(lines) + ("\n" if eol else ""))
        store.set_final_newline(doc, eol and not empty, len(lines))
        return doc

    doc = did_open()
    assert doc.text == truth()
    version = 0
    for _ in range(30):
        old = model()
        op = rnd.randrange(6)
        if op == 0:
            lines.insert(rnd.randint(0, len(lines)), rnd.choice(["", "x", "yé"]))
        elif op == 1 and len(lines) > 1:
            del lines[rnd.randrange(len(lines))]
        elif op == 2:
            i = rnd.randrange(len(lines))
            lines[i] = lines[i] + rnd.choice(["", "z", "é"])
        elif op == 3:
            lines[:] = [""]  # ggdG: Neovim's empty buffer
        elif op == 4:
            eol = not eol
        elif op == 5 and rnd.random() < 0.5:
            doc = did_open()
            assert doc.text == truth(), (seed, lines, eol, empty)
            continue
        new = model()
        empty = lines == [""] and (op == 3 or (empty and new == old))
        declare_first = rnd.random() < 0.5
        if declare_first:
            store.set_final_newline(doc, eol and not empty)
        if new != old:
            # The smallest change between the two models, as positions in the old one.
            p = 0
            while p < min(len(old), len(new)) and old[p] == new[p]:
                p += 1
            s = 0
            while s < min(len(old), len(new)) - p and old[-1 - s] == new[-1 - s]:
                s += 1
            if rnd.random() < 0.5 and s:
                s -= 1  # Neovim often reaches one further: through the line break
            version += 1
            start, end = _lsp_position(old, p), _lsp_position(old, len(old) - s)
            store.change("u", version, [(start, end, new[p : len(new) - s])], "utf-8")
        if not declare_first:
            store.set_final_newline(doc, eol and not empty)
        assert doc.text == truth(), (seed, lines, eol, empty)
        assert doc.lines == split_lines(doc.text)


def test_neovim_changes_past_a_noeol_text_holding_a_lone_cr_count_lines_by_lf():
    # Lines "" and "c\rd" ('noeol', 'fileformat' dos): Neovim counts two lines, LSP three, as
    # the lone CR is a character to Neovim. `J` came as "c\rd" inserted and line 1 deleted
    # through the break after it, the one the text does not have: the store took that line end
    # for a line of its own and kept a CRLF the buffer does not hold (then the CR of it).
    store = documents.DocumentStore(lambda uri: uri)
    store.lf_lines = store.final_break_in_changes = True
    doc = store.open("u", "plaintext", 0, "\r\nc\rd")
    doc.eol = "crlf"  # agentEdit/documentFormat, from 'fileformat'
    store.change("u", 1, [((0, 0), (0, 0), "c\rd"), ((1, 0), (2, 0), "")], "utf-8")
    assert doc.text == "c\rd"
