"""Settings in an editor session: config files < initializationOptions < the client's
`lspAgent` configuration section.

An editor must keep working with a typo in its settings, so invalid values are dropped (their
defaults apply) and each problem is reported to the user once, not on every change.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lsp_agent.settings.config import ConfigError, Settings, load_settings
from lsp_agent.settings.workspace_trust import WorkspaceView

_MAX_ROUNDS = 50


def _drop(layer: dict[str, Any], loc: tuple[int | str, ...]) -> bool:
    """Remove the value at `loc` from `layer`. Inside a list the whole list setting goes (its
    default applies), since deleting one element would shift the others."""
    node: Any = layer
    parent: tuple[dict[str, Any], Any] | None = None
    for depth, part in enumerate(loc):
        if not isinstance(node, dict) or part not in node:
            # A missing required key: the incomplete object it belongs to goes.
            if parent is None:
                return False
            del parent[0][parent[1]]
            return True
        if depth == len(loc) - 1 or not isinstance(node[part], dict):
            del node[part]
            return True
        parent = (node, part)
        node = node[part]
    return False


def _prune(layer: dict[str, Any], label: str) -> tuple[dict[str, Any], list[str]]:
    """The layer without the values Settings rejects, and one line per rejected value."""
    pruned = copy.deepcopy(layer)
    problems: list[str] = []
    for _ in range(_MAX_ROUNDS):
        try:
            Settings.model_validate(pruned)
            return pruned, problems
        except ValidationError as exc:
            dropped = False
            for error in exc.errors(include_url=False):
                loc = tuple(error["loc"])
                name = ".".join(str(p) for p in loc) or "(root)"
                if _drop(pruned, loc):
                    dropped = True
                    problems.append(f"{label} {name}: {error['msg']}")
            if not dropped:
                return {}, [*problems, f"{label}: ignored ({exc.error_count()} invalid values)"]
    return {}, [*problems, f"{label}: ignored"]


def resolve(root: Path | None, init_options: Any, client_section: Any,
            view: WorkspaceView | None = None) -> tuple[Settings, list[str]]:
    """The effective settings and the problems found on the way (empty when all is valid). `view`:
    the workspace's config as inspected (what of it applies depends on the user's trust)."""
    layers: list[tuple[str, dict[str, Any]]] = []
    problems: list[str] = []
    for label, layer in (("initializationOptions", init_options), ("lspAgent setting", client_section)):
        if layer is None or layer == {}:
            continue
        if not isinstance(layer, dict):
            problems.append(f"{label}: expected an object, got {type(layer).__name__}; ignored")
            continue
        layers.append((label, layer))
    try:
        return load_settings(root, *(layer for _, layer in layers), view=view), problems
    except ConfigError:
        pass
    cleaned: list[dict[str, Any]] = []
    for label, layer in layers:
        pruned, found = _prune(layer, label)
        cleaned.append(pruned)
        problems += found
    try:
        return load_settings(root, *cleaned, view=view), problems
    except ConfigError as exc:
        # The files themselves are invalid: the editor's own layers on the defaults.
        problems.append(f"config files ignored: {' '.join(str(exc).split())[:300]}")
    try:
        return load_settings(None, *cleaned), problems
    except ConfigError:
        return Settings(), problems


class OnceReporter:
    """Remembers what the user was told, so a repeated problem is not shown again."""

    def __init__(self) -> None:
        self._told: set[str] = set()

    def fresh(self, problems: list[str]) -> list[str]:
        new = [p for p in problems if p not in self._told]
        self._told.update(new)
        return new
