"""The README's first screen (also the package's long description) says what the tool does for the
user, then how to install it, before anything about how it works inside; the install it shows is
the one tests/packaging proves (a wheel into an environment of its own)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_first_section_is_install_after_one_paragraph_of_what_it_does() -> None:
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "Install"
    intro = text.split("\n## ", 1)[0]
    assert "editor" in intro and "done only when a check" in intro  # what it does, and the promise
    assert len(intro.splitlines()) <= 12  # one paragraph under the title, not a page


def test_install_shows_the_wheel_in_its_own_environment_and_the_demo() -> None:
    install = README.read_text(encoding="utf-8").split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    assert "pipx install ./lsp_agent-" in install and "lsp-agent demo" in install
    assert "pip install -e" not in install  # a developer's build is the quick start of a checkout, later
