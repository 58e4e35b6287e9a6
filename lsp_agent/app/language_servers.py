"""The headless front ends' editor: language servers the harness starts (editorQueries.languageServers).

Where no editor answers the editor-query tools (the CLI, and so every eval attempt), the user may
name language servers to start instead; their kinds become the same tools, in the same order, as an
editor's would. Nothing is started when none is named, when the queries are switched off, or when an
editor already answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsp_agent.app.toolset import default_registry
from lsp_agent.core.session import Environment

if TYPE_CHECKING:
    from lsp_agent.langserver.queries import LanguageServerQueries


async def attach_language_servers(env: Environment) -> LanguageServerQueries | None:
    """Start the configured servers and make them the environment's editor (and its tools); the
    caller stops them with `aclose()` when the run ends. None: nothing to start."""
    queries = env.settings.editor_queries
    if env.editor is not None or not queries.enabled or not queries.language_servers:
        return None
    from lsp_agent.langserver.queries import start_language_servers  # pygls only when servers are named

    editor = await start_language_servers(env.root, env.documents, queries)
    env.editor = editor
    env.registry = default_registry(env.settings, editor.declared)
    return editor
