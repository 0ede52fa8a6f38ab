"""What the path policy costs a short CLI run before it decides anything: the policy package
builds its glob regexes on first use, not at import, and needs `unicodedata` (a C extension)
only for a name that is not ASCII (an ASCII string is its own NFC form)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, re, sys
import lsp_server.engine.policy as policy
from lsp_server.engine.errors import EditError
from lsp_server.engine.policy import globs

out = {"after_import": "unicodedata" in sys.modules}
out["piece_compiled"] = globs._piece.cache_info().currsize
pol = policy.PathPolicy.from_settings([sys.argv[1]], {"deny": ["**/secret*"]})
out["before_resolve"] = pol.__dict__.get("_any_rule") is not None
def outcome(name):
    try:
        return pol.resolve(name, memo={}).rel_path
    except EditError as err:
        return str(err.code) + " " + err.details.get("rule", "")
out["ascii"] = [outcome(n) for n in ("src/a.py", "src/secret.txt", ".env", "./src/../src/a.py")]
out["ascii_unicodedata"] = "unicodedata" in sys.modules
# Not ASCII: the NFD spelling of a denied folder is refused as its NFC one is.
pol = policy.PathPolicy.from_settings([sys.argv[1]], {"deny": ["**/caf\\u00e9/**"]})
out["nfd"] = outcome("cafe\\u0301/x.txt")
out["nfd_unicodedata"] = "unicodedata" in sys.modules
print(json.dumps(out))
"""


def test_ascii_paths_resolve_without_unicodedata_and_globs_compile_on_first_use(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x\n")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(ws)],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["after_import"] is False and out["piece_compiled"] == 0
    assert out["before_resolve"] is False
    assert out["ascii"] == [
        "src/a.py",
        "DENIED **/secret*",
        "DENIED **/.env",
        "src/a.py",
    ]
    assert out["ascii_unicodedata"] is False
    assert out["nfd"] == "DENIED **/caf\u00e9/**"
    assert out["nfd_unicodedata"] is True


def test_nfc_is_unicodedatas_nfc_for_any_text() -> None:
    import unicodedata

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from lsp_server.engine.policy.globs import nfc

    @settings(max_examples=500, deadline=None)
    @given(st.one_of(st.text(st.characters(max_codepoint=127)), st.text()))
    def check(text: str) -> None:
        assert nfc(text) == unicodedata.normalize("NFC", text)

    check()
    assert nfc("cafe\u0301") == "caf\u00e9"
