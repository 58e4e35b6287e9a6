"""`editorQueries` settings: which kinds become tools, and what an untrusted repository may change
(only turn them down: off switches, fewer kinds, shorter waits, tighter bounds, refusing outside places)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from lsp_agent.app.toolset import default_tools
from lsp_agent.settings.config import EditorQuerySettings, Settings, inspect_workspace, load_settings


def _repo(root: Path, text: str) -> Path:
    (root / ".lsp-agent").mkdir(parents=True, exist_ok=True)
    (root / ".lsp-agent" / "config.toml").write_text(text, encoding="utf-8")
    return root


def test_the_declared_kinds_become_tools_in_the_fixed_order_after_the_defaults() -> None:
    names = [t.name for t in default_tools(Settings(), ("callHierarchy", "hover", "definition", "implementation"))]
    assert names[-3:] == ["find_definition", "hover", "find_implementations"]
    headless = [t.name for t in default_tools(Settings())]  # the CLI, ACP and eval: no editor, no such tools
    assert names[:-3] == headless  # the older tools' prefix is unchanged
    assert not {"find_definition", "hover", "find_implementations", "editor_diagnostics"} & set(headless)


def test_switched_off_kinds_and_the_master_switch_remove_tools() -> None:
    settings = EditorQuerySettings(disabledKinds=["hover"])
    assert settings.offered(["hover", "references"]) == ("references",)
    assert EditorQuerySettings(enabled=False).offered(["hover", "references"]) == ()
    with pytest.raises(ValidationError, match="unknown editor query kinds"):
        EditorQuerySettings(disabledKinds=["rename"])


def test_an_untrusted_workspace_may_only_turn_editor_queries_down(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSP_AGENT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = _repo(tmp_path / "ws", "[editorQueries]\nenabled = false\ntimeoutS = 1\nmaxResults = 5000\n"
                                  "disabledKinds = [\"hover\"]\noutsideWorkspace = \"refuse\"\n"
                                  "diagnosticsWaitS = 30\n")
    view = inspect_workspace(root)
    gated = {g.setting for g in view.gated}
    assert gated == {"editorQueries.maxResults", "editorQueries.diagnosticsWaitS"}  # the two it raises
    queries = load_settings(root).editor_queries
    assert (queries.enabled, queries.timeout_s, queries.disabled_kinds, queries.outside_workspace) == (
        False, 1, ["hover"], "refuse")
    assert (queries.max_results, queries.diagnostics_wait_s) == (50, 3.0)  # the defaults stand


def test_an_untrusted_workspace_cannot_turn_them_back_on_or_show_libraries(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSP_AGENT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = _repo(tmp_path / "ws", "[editorQueries]\nenabled = true\noutsideWorkspace = \"signature\"\n")
    assert {g.setting for g in inspect_workspace(root).gated} == {"editorQueries.enabled",
                                                                  "editorQueries.outsideWorkspace"}
