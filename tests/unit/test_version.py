"""One version, everywhere it is stated: lsp_agent/_version.py is the source; pyproject.toml reads
it when the package is built, `--version`, the server's `initialize` (early answer and pygls' own)
and the ACP agent info import it, and the VS Code extension states the same number (the two are
compared at `initialize`). scripts/bump_version.py moves them all; this test fails when one is left
behind."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from lsp_agent._version import __version__

REPO = Path(__file__).resolve().parents[2]


def _bump_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bump_version", REPO / "scripts" / "bump_version.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_version_is_a_release_number_both_pip_and_the_marketplace_read_alike() -> None:
    assert _bump_script().VERSION.match(__version__), __version__


def test_pyproject_reads_the_version_from_the_module_and_states_none_of_its_own() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "lsp_agent._version.__version__"}


def test_setuptools_finds_the_same_version_without_importing_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    # what the build backend does with the attr: it parses the module (and would import it only
    # when parsing fails; an import would drag in whatever the package imports at its top)
    from setuptools.config.expand import read_attr

    monkeypatch.delitem(sys.modules, "lsp_agent._version")
    assert read_attr("lsp_agent._version.__version__", root_dir=REPO) == __version__
    assert "lsp_agent._version" not in sys.modules


def test_the_package_exposes_it() -> None:
    import lsp_agent

    assert lsp_agent.__version__ == __version__


def test_version_flag_prints_the_constant(capsys: pytest.CaptureFixture[str]) -> None:
    from lsp_agent.cli.main import main

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"lsp-agent {__version__}\n"


def test_the_servers_initialize_answers_both_carry_it() -> None:
    from lsp_agent.server.app import create_server
    from lsp_agent.server.boot import RESULT_FILE

    assert create_server().protocol.server_info.version == __version__  # pygls' own answer
    with open(RESULT_FILE, encoding="utf-8") as file:  # the answer boot.py sends before pygls loads
        assert json.load(file)["serverInfo"] == {"name": "lsp-agent", "version": __version__}


async def test_the_acp_agent_info_carries_it() -> None:
    from lsp_agent.acp.server import LspAgentAcp

    answer = await LspAgentAcp().initialize(1)
    assert answer.agent_info is not None and answer.agent_info.version == __version__


def test_the_vscode_extension_states_the_same_version() -> None:
    package = json.loads((REPO / "vscode-client" / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((REPO / "vscode-client" / "package-lock.json").read_text(encoding="utf-8"))
    assert package["version"] == __version__
    assert lock["version"] == lock["packages"][""]["version"] == __version__


def test_the_neovim_plugin_states_the_same_version() -> None:
    plugin = REPO / "editors" / "nvim" / "lua" / "lsp_agent" / "version.lua"
    assert re.search(rf'^return "{re.escape(__version__)}"$', plugin.read_text(encoding="utf-8"), re.M)


def test_the_install_docs_name_the_current_wheel() -> None:
    bump = _bump_script()
    for doc in (REPO / rel for rel in bump.INSTALL_DOCS):
        for name in bump.WHEEL_NAME.findall(doc.read_text(encoding="utf-8")):
            assert name == f"lsp_agent-{__version__}-py3-none-any.whl", doc.name


def test_bump_moves_every_copy_and_refuses_a_version_the_marketplace_cannot_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # on a copy of the files it edits, so the checkout stays as it is
    (tmp_path / "docs").mkdir()
    for rel in ("lsp_agent/_version.py", "lsp_agent/server/initialize_result.json",
                "vscode-client/package.json", "vscode-client/package-lock.json", "README.md", "docs/install.md",
                "docs/troubleshooting.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    bump = _bump_script()
    monkeypatch.setattr(bump, "REPO", tmp_path)
    assert bump.main(["1.0rc1"]) == 2 and "is not MAJOR.MINOR.PATCH" in capsys.readouterr().err
    assert (tmp_path / "lsp_agent/_version.py").read_text() == (REPO / "lsp_agent/_version.py").read_text()

    assert bump.main(["9.8.7"]) == 0
    assert re.search(r'^__version__ = "9\.8\.7"$', (tmp_path / "lsp_agent/_version.py").read_text(), re.M)
    package = json.loads((tmp_path / "vscode-client/package.json").read_text())
    lock = json.loads((tmp_path / "vscode-client/package-lock.json").read_text())
    answer = json.loads((tmp_path / "lsp_agent/server/initialize_result.json").read_text())
    assert package["version"] == lock["version"] == lock["packages"][""]["version"] == "9.8.7"
    assert answer["serverInfo"]["version"] == "9.8.7"
    # nothing else in the files moved: the engines and dependencies keep their versions
    before = json.loads((REPO / "vscode-client/package.json").read_text())
    assert {**package, "version": before["version"]} == before
    assert (tmp_path / "vscode-client/package.json").read_text().count("9.8.7") == 1
    assert "pipx install ./lsp_agent-9.8.7-py3-none-any.whl" in (tmp_path / "README.md").read_text()
    assert "lsp_agent-9.8.7-py3-none-any.whl" in (tmp_path / "docs/install.md").read_text()
