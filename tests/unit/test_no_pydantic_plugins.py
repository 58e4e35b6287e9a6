"""The lsp-agent process does not search for pydantic plugins (it costs peak RSS and start-up time): no
`importlib.metadata` (with email, zipfile, csv, ...), no scan of every installed distribution; models
still validate, and any other name pydantic asks of the stand-in loads the real loader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.unit.test_cli_startup import scripted_run_lines

#: the plugin search's imports; what only an .ini, a near miss, a missing file, an edit or a check needs
HEAVY = ("importlib.metadata", "zipfile", "csv", "configparser", "difflib", "lsp_agent.tools.patch_match",
         "lsp_agent.tools.verify_parsers")

RUN_PROBE = """
import sys
from lsp_agent.cli.main import main
code = main(sys.argv[1:])
loader = sys.modules.get("pydantic.plugin._loader")
print("STAND-IN:" + str(getattr(loader, "lsp_agent_stand_in", False)), file=sys.stderr)
print("HEAVY:" + ",".join(m for m in HEAVY if m in sys.modules), file=sys.stderr)
print("EXIT:" + str(code), file=sys.stderr)
""".replace("HEAVY if", repr(HEAVY) + " if")

FALLBACK_PROBE = """
import sys
from lsp_agent._startup import pydantic_plugins as no_pydantic_plugins
assert no_pydantic_plugins.install()
assert not no_pydantic_plugins.install()  # once is enough
from pydantic import BaseModel
class M(BaseModel):
    x: int
assert M(x="1").x == 1
from pydantic.plugin import _loader
assert _loader.get_plugins() == ()
assert "importlib.metadata" not in sys.modules
group = _loader.PYDANTIC_ENTRY_POINT_GROUP  # a name the stand-in lacks: the real loader answers
assert group == "pydantic" and "importlib.metadata" in sys.modules
print("OK")
"""


def test_a_headless_run_searches_no_pydantic_plugins(tmp_path: Path) -> None:
    lines = scripted_run_lines(tmp_path, RUN_PROBE)
    assert "STAND-IN:True" in lines, lines
    assert "HEAVY:" in lines, lines


def test_the_stand_in_defers_to_the_real_loader_for_anything_else() -> None:
    done = subprocess.run([sys.executable, "-c", FALLBACK_PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "OK", done.stderr
