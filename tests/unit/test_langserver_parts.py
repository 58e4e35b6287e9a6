"""The pieces of the harness's own language-server client that need no process: LSP answer shapes
turned into the agreed ones, the kinds a server's capabilities declare, the setting's validation and
gate, the program lookup, and the eval arm that carries the setting to the agent."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from lsp_agent.eval.manifest import Arm
from lsp_agent.eval.runner import config_pairs
from lsp_agent.langserver.connection import LanguageServerConnection
from lsp_agent.langserver.program import resolve_program
from lsp_agent.langserver.queries import _hover_text, _location, server_kinds
from lsp_agent.settings import workspace_gate
from lsp_agent.settings.config import SANDBOX_KEYS, ConfigError, LanguageServerSettings, load_settings

RANGE = {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 6}}
WIDE = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}
SERVERS = [{"command": ["basedpyright-langserver", "--stdio"], "extensions": [".py"]}]


def test_a_location_link_becomes_its_targets_name_range() -> None:
    link = {"targetUri": "file:///w/a.py", "targetRange": WIDE, "targetSelectionRange": RANGE,
            "originSelectionRange": WIDE}
    assert _location(link) == {"uri": "file:///w/a.py", "range": RANGE}
    plain = {"uri": "file:///w/b.py", "range": RANGE}
    assert _location(plain) is plain


@pytest.mark.parametrize(("contents", "text"), [
    ({"kind": "markdown", "value": "**x**"}, "**x**"),
    ("plain", "plain"),
    ({"language": "python", "value": "def f() -> int"}, "```python\ndef f() -> int\n```"),
    (["a", {"language": "py", "value": "b"}], "a\n\n```py\nb\n```"),
])
def test_every_hover_shape_becomes_one_text(contents: Any, text: str) -> None:
    assert _hover_text(contents) == text


def connection(capabilities: types.ServerCapabilities | None, kinds: list[str] | None = None
               ) -> LanguageServerConnection:
    spec = LanguageServerSettings.model_validate({**SERVERS[0], "kinds": kinds})
    made = LanguageServerConnection(spec, Path("/w"), documents=None)  # type: ignore[arg-type]
    made.capabilities = capabilities
    return made


def test_kinds_come_from_the_capabilities_in_the_fixed_order_narrowed_by_the_entry() -> None:
    caps = types.ServerCapabilities(hover_provider=True, definition_provider=types.DefinitionOptions(),
                                    references_provider=False, call_hierarchy_provider=True)
    assert server_kinds(connection(caps)) == ("definition", "hover", "diagnostics", "callHierarchy")
    assert server_kinds(connection(caps, ["hover", "references"])) == ("hover",)
    # Not started: the entry's kinds, else the common ones (their queries say why there is no answer).
    assert server_kinds(connection(None)) == ("definition", "references", "hover", "documentSymbols",
                                              "workspaceSymbols", "diagnostics")
    assert server_kinds(connection(None, ["diagnostics"])) == ("diagnostics",)


@pytest.mark.parametrize("entry", [
    {"command": [], "extensions": [".py"]},
    {"command": ["x"], "extensions": ["py"]},
    {"command": ["x"], "extensions": [".py"], "kinds": ["rename"]},
    {"command": ["x"]},
])
def test_a_malformed_entry_is_a_config_error(entry: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        load_settings(None, {"editorQueries": {"languageServers": [entry]}})


def test_no_workspace_config_names_a_language_server_trusted_or_not() -> None:
    raw = {"editorQueries": {"languageServers": SERVERS, "timeoutS": 1}}
    split = workspace_gate.split(raw, never=SANDBOX_KEYS, limit_defaults={"editorQueries.timeoutS": 5.0,
                                                                           "editorQueries.languageServers": []},
                                 max_steps_default=40)
    assert split.refused == ["editorQueries.languageServers"]
    assert split.trusted == {"editorQueries": {"timeoutS": 1}}
    assert split.safe == {"editorQueries": {"timeoutS": 1}}
    # And were it not on the never-list: a list that adds servers is not a turn-down.
    assert not workspace_gate._turns_down("languageServers", [], SERVERS)
    assert workspace_gate._turns_down("disabledKinds", [], ["hover"])


def test_a_program_is_found_on_path_else_beside_the_running_python() -> None:
    beside = Path(sys.executable)
    assert resolve_program(beside.name, path_env="") == str(beside.parent / beside.name)
    assert resolve_program("lsp-agent-no-such-program", path_env="") is None
    assert resolve_program(str(beside)) == str(beside)


def test_an_eval_arm_passes_the_list_to_the_agent_as_toml_the_cli_reads_back() -> None:
    from lsp_agent.cli.main import _override

    arm = Arm.model_validate({"name": "on", "config": {"editorQueries": {"languageServers": SERVERS,
                                                                          "timeoutS": 30}}})
    pairs = [p for p in config_pairs(arm, "/m") if p.startswith("editorQueries.")]
    assert pairs == ['editorQueries.languageServers=[{"command" = ["basedpyright-langserver", "--stdio"], '
                     '"extensions" = [".py"]}]', "editorQueries.timeoutS=30"]
    layer = _override(pairs)
    assert layer == {"editorQueries": {"languageServers": SERVERS, "timeoutS": 30}}
    assert tomllib.loads(f"v = {pairs[0].split('=', 1)[1]}")["v"] == SERVERS
