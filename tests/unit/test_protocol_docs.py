"""docs/protocol.md is generated from lsp_agent/protocol/ and must not drift from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lsp_agent.protocol.schema import render_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def test_protocol_doc_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == render_markdown(), (
        "docs/protocol.md is out of date: run `lsp-agent schema --markdown > docs/protocol.md`")


def test_schema_markdown_command_prints_the_document() -> None:
    out = subprocess.run([sys.executable, "-m", "lsp_agent", "schema", "--markdown"], capture_output=True,
                         text=True, check=True).stdout
    assert out == render_markdown()

