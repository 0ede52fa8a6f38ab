"""Real-looking source files for every shipped grammar, and random edits of them.

Shared by tests/engine/test_syntax_region.py (the differential property in CI) and
bench/bench_diagnostics_equivalence.py (the same property over thousands of edits).
"""

from __future__ import annotations

import random

from lsp_server.engine.model import LineEdit, minimal_edit
from lsp_server.engine.text import split_lines

# One unit per language; `{n}` makes names unique when a file repeats it.
UNITS: dict[str, str] = {
    "python": '''import os


@cache
def load_{n}(path, *, strict=False):
    """Read a file; strict raises on a missing one."""
    if not os.path.exists(path):
        if strict:
            raise FileNotFoundError(path)
        return None
    with open(path) as f:
        data = [line.rstrip("\\n") for line in f if line.strip()]
    return {{"path": path, "lines": data, "n": {n}}}


class Store{n}(Base):
    limit = {n} * 2

    def __init__(self, items=None):
        self.items = list(items or [])

    async def get(self, key: str) -> int | None:
        try:
            return self.items[int(key)]
        except (IndexError, ValueError) as e:
            log.warning("no %s: %s", key, e)
            return None
''',
    "javascript": """const path{n} = require("path");

function load{n}(file, opts = {{}}) {{
  if (!file) {{
    throw new Error(`no file ${{file}}`);
  }}
  const parts = file.split("/").map((p) => p.trim());
  for (let i = 0; i < parts.length; i++) {{
    if (parts[i] === "..") return null;
  }}
  return {{ file, parts, n: {n} }};
}}

class Store{n} extends Base {{
  constructor(items) {{
    super();
    this.items = items || [];
  }}
  get(key) {{
    return this.items[key] ?? null;
  }}
}}
""",
    "typescript": """import {{ Base }} from "./base";

export interface Item{n} {{
  id: number;
  name?: string;
}}

export function load{n}(file: string, strict = false): Item{n}[] {{
  if (!file) {{
    throw new Error(`no file ${{file}}`);
  }}
  const items: Item{n}[] = file.split(",").map((s, i) => ({{ id: i + {n}, name: s }}));
  return strict ? items.filter((x) => x.name !== undefined) : items;
}}

export class Store{n}<T> extends Base {{
  private items: T[] = [];
  get(i: number): T | undefined {{
    return this.items[i];
  }}
}}
""",
    "tsx": """import React from "react";

type Props{n} = {{ title: string; count?: number }};

export function Card{n}({{ title, count = {n} }}: Props{n}) {{
  const [open, setOpen] = React.useState(false);
  return (
    <div className="card" onClick={{() => setOpen(!open)}}>
      <h2>{{title}}</h2>
      {{open && <span>{{count}}</span>}}
    </div>
  );
}}
""",
    "rust": """use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct Store{n} {{
    items: HashMap<String, i64>,
    limit: usize,
}}

impl Store{n} {{
    pub fn new(limit: usize) -> Self {{
        Store{n} {{ items: HashMap::new(), limit }}
    }}

    pub fn get(&self, key: &str) -> Option<i64> {{
        match self.items.get(key) {{
            Some(v) if *v > {n} => Some(*v),
            Some(_) => None,
            None => None,
        }}
    }}
}}

fn load{n}(path: &str) -> Result<Vec<String>, std::io::Error> {{
    let text = std::fs::read_to_string(path)?;
    Ok(text.lines().map(|l| l.to_string()).collect())
}}
""",
    "go": """
type Store{n} struct {{
	items map[string]int
	limit int
}}

func NewStore{n}(limit int) *Store{n} {{
	return &Store{n}{{items: map[string]int{{}}, limit: limit}}
}}

func (s *Store{n}) Get(key string) (int, error) {{
	v, ok := s.items[key]
	if !ok {{
		return 0, fmt.Errorf("no %s", key)
	}}
	for i := 0; i < {n}; i++ {{
		v += i
	}}
	return v, nil
}}
""",
    "java": """
class Store{n} extends Base {{
    private final Map<String, Integer> items = new HashMap<>();
    private int limit = {n};

    public Store{n}(int limit) {{
        this.limit = limit;
    }}

    public Integer get(String key) {{
        if (key == null) {{
            throw new IllegalArgumentException("no key");
        }}
        for (int i = 0; i < limit; i++) {{
            items.put(key + i, i * {n});
        }}
        return items.getOrDefault(key, -1);
    }}
}}
""",
    "c": """
struct store_{n} {{
    int *items;
    size_t len;
}};

static int get_{n}(const struct store_{n} *s, size_t i)
{{
    if (i >= s->len) {{
        return -1;
    }}
    for (size_t k = 0; k < i; k++) {{
        printf("%zu %d\\n", k, s->items[k]);
    }}
    return s->items[i] + {n};
}}
""",
    "cpp": """
namespace store{n} {{

template <typename T>
class Store {{
 public:
  explicit Store(std::size_t limit) : limit_(limit) {{}}
  std::optional<T> get(const std::string& key) const {{
    auto it = items_.find(key);
    if (it == items_.end()) {{
      return std::nullopt;
    }}
    return it->second + {n};
  }}

 private:
  std::map<std::string, T> items_;
  std::size_t limit_;
}};

}}  // namespace store{n}
""",
    "json": """  "item{n}": {{
    "id": {n},
    "name": "store {n}",
    "tags": ["a", "b", "c"],
    "limits": {{"max": 10, "min": 0, "ratio": 0.5}},
    "enabled": true,
    "parent": null
  }},
""",
    "yaml": """item{n}:
  id: {n}
  name: "store {n}"
  tags: [a, b, c]
  limits:
    max: 10
    min: 0
  steps:
    - run: make test
    - run: echo "done {n}"
""",
    "toml": """[store{n}]
id = {n}
name = "store {n}"
tags = ["a", "b", "c"]
limits = {{ max = 10, min = 0 }}
enabled = true

[[store{n}.step]]
run = "make test"
""",
    "bash": """load_{n}() {{
  local file="$1"
  if [ ! -f "$file" ]; then
    echo "no file: $file" >&2
    return 1
  fi
  for line in $(cat "$file"); do
    case "$line" in
      \\#*) continue ;;
      *) echo "{n}: $line" ;;
    esac
  done
}}

COUNT_{n}=$(( {n} + 1 ))
""",
    "html": """<section id="s{n}" class="card">
  <h2 title="item {n}">Item {n}</h2>
  <ul>
    <li><a href="/items/{n}">open</a></li>
    <li><img src="/i/{n}.png" alt="item"></li>
  </ul>
  <p>Some <em>text</em> for {n}.</p>
</section>
""",
    "css": """.card-{n} > h2,
.card-{n}:hover {{
  color: #33{n:02d}aa;
  margin: 0 auto;
  font: 12px/1.5 "Helvetica", sans-serif;
}}

@media (max-width: 600px) {{
  .card-{n} {{ display: none; }}
}}
""",
}

# Wrappers for grammars whose file is one top-level node.
_HEAD = {"json": "{\n", "html": "<!DOCTYPE html>\n<html>\n<body>\n", "go": "package main\n\n",
         "c": "#include <stdio.h>\n\n", "cpp": "#include <map>\n\n",
         "java": "import java.util.*;\n\n"}  # fmt: skip
_TAIL = {"json": '  "end": 0\n}\n', "html": "</body>\n</html>\n"}

# Lines an agent might put anywhere: some keep the file valid in some places, most break it.
_FRAGMENTS = [
    "",
    "\n",
    "(\n",
    ")\n",
    "}\n",
    "{\n",
    "]\n",
    '"\n',
    "'\n",
    "x = 1\n",
    "  return 0;\n",
    "// note\n",
    "# note\n",
    "/* open comment\n",
    "*/\n",
    "<div>\n",
    "</div>\n",
    "a: b\n",
]
_CHARS = "()[]{};:,.\"'`<>=+-*/#\\ \tx1_"


def real_file(language: str, units: int) -> str:
    """A file of `units` copies of the language's unit, with distinct names."""
    body = "".join(UNITS[language].format(n=n) for n in range(units))
    return _HEAD.get(language, "") + body + _TAIL.get(language, "")


def random_edit(rnd: random.Random, lines: list[str]) -> LineEdit:
    """One edit of the kinds agents make: value changes (mostly harmless), line copies, moves,
    deletions, inserted fragments and single characters added or removed."""
    n = len(lines)
    k = rnd.randrange(n)
    line = lines[k]
    body = line.rstrip("\r\n")
    eol = line[len(body) :]
    kind = rnd.random()
    if kind < 0.4:  # change a value or a name: a digit or a letter for another
        spots = [i for i, ch in enumerate(body) if ch.isalnum()]
        if spots:
            i = rnd.choice(spots)
            ch = str(rnd.randrange(10)) if body[i].isdigit() else rnd.choice("abcxyz")
            return LineEdit(k, k + 1, (body[:i] + ch + body[i + 1 :] + eol,))
    if kind < 0.45:  # copy another line here (or over this one)
        other = lines[rnd.randrange(n)]
        if not other.endswith("\n"):
            other += "\n"
        return LineEdit(k, k + rnd.randrange(2), (other,))
    if kind < 0.55:  # delete a few lines
        return LineEdit(k, min(n, k + 1 + rnd.randrange(3)), ())
    if kind < 0.65:  # insert a fragment
        return LineEdit(k, k, (rnd.choice(_FRAGMENTS),))
    if kind < 0.8 and body:  # delete a character
        i = rnd.randrange(len(body))
        return LineEdit(k, k + 1, (body[:i] + body[i + 1 :] + eol,))
    i = rnd.randrange(len(body) + 1)  # insert a character
    return LineEdit(k, k + 1, (body[:i] + rnd.choice(_CHARS) + body[i:] + eol,))


def canonical(lines: list[str]) -> list[str]:
    return split_lines("".join(lines))


def _fields(problems: object) -> list[tuple[object, ...]]:
    return [(p.message, p.kind, p.start, p.end, p.span_end_line) for p in problems]  # type: ignore[attr-defined]


def differential(language: str, seed: int, edits: int, units: int = 6) -> dict[str, int]:
    """Random edits of a real-looking file, each checked the region way and by a full parse.

    The region way is what the server does on a large file (here forced on with region_above=0):
    `check()` after each edit; when that is not a clean region, the whole parse it falls back
    to (`parse_detached`, as the server runs it off the request path). Asserts that
    - a clean region means the full parse finds no error (never a false "clean"), and
    - after a fallback, the document's errors are exactly the full parse's,
    so the errors the edit introduced (`introduced_errors` of the same before/after lists) are
    the same set. Returns counts per outcome, and how often the provisional region errors
    already equal the full parse's.
    """
    from lsp_server.engine.syntax import DocumentSyntax, introduced_errors, syntax_problems

    rnd = random.Random(seed)
    text = real_file(language, units)
    lines = canonical(split_lines(text))
    syn = DocumentSyntax(language, text, region_above=0)
    before = syn.problems()
    stats = {"edits": 0, "clean": 0, "region_errors": 0, "region_errors_same": 0,
             "region_errors_false": 0, "pending": 0}  # fmt: skip
    clean_lines: list[str] | None = None  # the last clean text, while the file is broken
    for _ in range(edits):
        # A broken file is mostly put back next (an agent fixing its mistake): break/fix pairs.
        fix = None if clean_lines is None else minimal_edit(lines, clean_lines)
        edit = fix if fix is not None and rnd.random() < 0.8 else random_edit(rnd, lines)
        syn.apply_line_edits(lines, [edit])
        old_lines = lines
        lines = canonical(lines[: edit.start] + list(edit.new_lines) + lines[edit.end :])
        new_text = "".join(lines)
        check = syn.check()
        full = syntax_problems(language, new_text)
        truth = introduced_errors(before, full, [edit])
        stats["edits"] += 1
        if not full:
            clean_lines = None
        elif not before:
            clean_lines = old_lines
        if check.status == "region" and not check.problems:
            stats["clean"] += 1
            assert full == [], (language, seed, new_text, _fields(full))
            assert truth == []
            before = full
            continue
        if check.status == "region":
            stats["region_errors"] += 1
            stats["region_errors_same"] += _fields(check.problems) == _fields(truth)
            # Provisional errors where the file is in fact clean (the published list corrects it).
            stats["region_errors_false"] += not full
        else:
            stats["pending"] += 1
        after, current = syn.parse_detached()
        assert current
        assert _fields(after) == _fields(full), (language, seed, new_text)
        assert _fields(introduced_errors(before, after, [edit])) == _fields(truth)
        before = after
    return stats
