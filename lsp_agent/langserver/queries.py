"""The core's EditorQueries port over language servers the harness starts itself (no editor).

`editorQueries.languageServers` names them, each for some file extensions. They are started
together at the start of a run, before the model's first request: the tools offered come from the
kinds each server's capabilities declare, and the tool list is part of the cached prefix, so it
must be known before the first request (and a server indexes the project meanwhile). A server that
could not start keeps its tools (the kinds its entry names, else the common ones) and each query
says why it has no answer, so a run with a broken setting goes on with the other tools.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound

from lsp_agent.core.editor_queries import (
    EditorQueryError,
    QueryAnswer,
    QueryFailure,
    QueryKind,
    SpotPosition,
)
from lsp_agent.domain.ports import DocumentSource
from lsp_agent.langserver.answers import AnswerReader, wire_position
from lsp_agent.langserver.connection import (
    LanguageServerConnection,
    QueryCancelled,
    QueryTimeout,
    ServerUnavailable,
)
from lsp_agent.protocol.editor_query_models import EditorQueryResult
from lsp_agent.settings.config import EDITOR_QUERY_KINDS, EditorQuerySettings

#: A server's capability for each kind (diagnostics: every server publishes them).
_CAPABILITY = {"definition": "definition_provider", "references": "references_provider", "hover": "hover_provider",
               "documentSymbols": "document_symbol_provider", "workspaceSymbols": "workspace_symbol_provider",
               "typeDefinition": "type_definition_provider", "implementation": "implementation_provider",
               "callHierarchy": "call_hierarchy_provider"}
#: The kinds of a server that could not start and whose entry names none (its queries say why).
_COMMON_KINDS = ("definition", "references", "hover", "documentSymbols", "workspaceSymbols", "diagnostics")
_LOCATION_METHODS = {QueryKind.DEFINITION: types.TEXT_DOCUMENT_DEFINITION,
                     QueryKind.TYPE_DEFINITION: types.TEXT_DOCUMENT_TYPE_DEFINITION,
                     QueryKind.IMPLEMENTATION: types.TEXT_DOCUMENT_IMPLEMENTATION}
_ZERO_RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}


def server_kinds(connection: LanguageServerConnection) -> tuple[str, ...]:
    """The kinds one server answers: declared by its capabilities, narrowed by its entry's `kinds`."""
    chosen = connection.spec.kinds
    if connection.capabilities is None:
        declared: tuple[str, ...] = tuple(chosen) if chosen is not None else _COMMON_KINDS
    else:
        caps = connection.capabilities
        declared = tuple(k for k in EDITOR_QUERY_KINDS
                         if k == "diagnostics" or getattr(caps, _CAPABILITY[k], None) not in (None, False))
    return tuple(k for k in EDITOR_QUERY_KINDS if k in declared and (chosen is None or k in chosen))


def _location(item: Any) -> dict[str, Any]:
    if isinstance(item, dict) and "targetUri" in item:  # a LocationLink: the name's own range
        return {"uri": item["targetUri"], "range": item.get("targetSelectionRange") or item.get("targetRange")}
    return item if isinstance(item, dict) else {}


def _hover_text(contents: Any) -> str:
    if isinstance(contents, str):
        return contents
    if isinstance(contents, dict):
        value = str(contents.get("value", ""))
        language = contents.get("language")
        return f"```{language}\n{value}\n```" if language else value
    if isinstance(contents, list):
        return "\n\n".join(_hover_text(part) for part in contents)
    return ""


class LanguageServerQueries:
    def __init__(self, root: Path, documents: DocumentSource, settings: EditorQuerySettings,
                 connections: list[LanguageServerConnection]) -> None:
        self.root = root
        self.settings = settings
        self.connections = connections
        self.answers = AnswerReader(root, documents)
        #: each server's kinds, fixed at start (the tool list does not change during a run)
        self._kinds = {id(c): server_kinds(c) for c in connections}

    @property
    def declared(self) -> tuple[str, ...]:
        """Every kind some server answers, in the fixed order."""
        return tuple(k for k in EDITOR_QUERY_KINDS if any(k in self._kinds[id(c)] for c in self.connections))

    @property
    def kinds(self) -> tuple[QueryKind, ...]:
        return tuple(QueryKind(k) for k in self.settings.offered(self.declared))

    def problems(self) -> list[str]:
        """Why each server that should run does not, one line each (for the run's stderr)."""
        return [f"{reason}; queries about {', '.join(c.spec.extensions)} files will say so"
                for c in self.connections if (reason := c.unavailable()) is not None]

    async def aclose(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections))

    def _for(self, path: str) -> LanguageServerConnection:
        suffix = Path(path).suffix
        for connection in self.connections:
            if suffix and suffix.lower() in (e.lower() for e in connection.spec.extensions):
                return connection
        raise EditorQueryError(QueryFailure.NO_LANGUAGE_SERVER,
                               f"no language server for {suffix or path} (editorQueries.languageServers names "
                               "none for it)")

    async def query(self, kind: QueryKind, path: str | None, position: SpotPosition | None = None,
                    query: str | None = None) -> QueryAnswer:
        if kind not in self.kinds:
            raise EditorQueryError(QueryFailure.NOT_SUPPORTED, f"no language server answers {kind.value} queries")
        if path is None:
            asked = [c for c in self.connections if kind.value in self._kinds[id(c)]]
        else:
            connection = self._for(path)
            if kind.value not in self._kinds[id(connection)]:
                raise EditorQueryError(QueryFailure.NOT_SUPPORTED,
                                       f"the language server {connection.name} does not answer {kind.value} queries")
            asked = [connection]
        merged: dict[str, list[Any]] = {}
        failures: list[EditorQueryError] = []
        for connection in asked:
            try:
                plain = await self._ask(connection, kind, path, position, query)
            except EditorQueryError as exc:
                if path is not None:
                    raise
                failures.append(exc)  # one of several servers: the others still answer
                continue
            for key, value in plain.items():
                if value is not None:
                    merged.setdefault(key, []).extend(value if isinstance(value, list) else [value])
        if failures and len(failures) == len(asked):
            raise failures[0]
        if "contents" in merged:
            merged["contents"] = merged["contents"][0]
        try:
            answer = EditorQueryResult.model_validate(merged)
        except ValidationError as exc:
            raise EditorQueryError(QueryFailure.MALFORMED, f"the language server's answer to {kind.value} was "
                                                           f"malformed ({exc.error_count()} problems)") from exc
        return await self.answers.neutral(answer, (self.root / path).as_uri() if path is not None else "")

    async def _ask(self, connection: LanguageServerConnection, kind: QueryKind, path: str | None,
                   position: SpotPosition | None, query: str | None) -> dict[str, Any]:
        what = f"{kind.value} of {path}" if path else kind.value
        limit = self.settings.timeout_s
        try:
            reason = connection.unavailable()
            if reason is not None:
                raise ServerUnavailable(reason)
            await connection.sync(path)
            return await self._request(connection, kind, path, position, query, limit)
        except ServerUnavailable as exc:
            raise EditorQueryError(QueryFailure.FAILED, f"{exc} (asked {what})") from None
        except QueryTimeout:
            raise EditorQueryError(QueryFailure.NO_ANSWER, f"the language server {connection.name} did not answer "
                                                           f"({what}) within {limit:g}s") from None
        except QueryCancelled:
            raise EditorQueryError(QueryFailure.CANCELLED, f"the run was cancelled while the language server was "
                                                           f"asked ({what})") from None
        except JsonRpcMethodNotFound:
            raise EditorQueryError(QueryFailure.NOT_SUPPORTED, f"the language server {connection.name} does not "
                                                               f"implement {what}") from None
        except JsonRpcException as exc:
            detail = str(getattr(exc, "message", "") or exc).strip()[:200]
            raise EditorQueryError(QueryFailure.FAILED, f"the language server {connection.name} failed on {what}: "
                                                        f"{detail}") from None
        except (ValueError, TypeError, KeyError, AttributeError, RuntimeError) as exc:
            # An answer pygls could not read into LSP's types, or one of an unexpected shape: the
            # model is told, the run goes on.
            raise EditorQueryError(QueryFailure.MALFORMED, f"the language server {connection.name}'s answer to "
                                                           f"{what} could not be read: {str(exc)[:200]}") from None

    async def _request(self, connection: LanguageServerConnection, kind: QueryKind, path: str | None,
                       position: SpotPosition | None, query: str | None, limit: float) -> dict[str, Any]:
        if kind is QueryKind.DIAGNOSTICS:
            paths = [path] if path is not None else connection.opened()
            published = await connection.diagnostics(paths, limit)
            return {"diagnostics": [{"uri": uri, "diagnostics": items} for uri, items in published.items()]}
        if kind is QueryKind.WORKSPACE_SYMBOLS:
            found = await connection.request(types.WORKSPACE_SYMBOL, types.WorkspaceSymbolParams(query=query or ""),
                                             limit)
            symbols = [connection.plain(s) for s in found or []]
            for symbol in symbols:  # a WorkspaceSymbol may name only its file
                symbol.get("location", {}).setdefault("range", _ZERO_RANGE)
            return {"symbols": symbols}
        assert path is not None
        document = types.TextDocumentIdentifier(uri=connection.uri(path))
        if kind is QueryKind.DOCUMENT_SYMBOLS:
            found = await connection.request(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
                                             types.DocumentSymbolParams(text_document=document), limit)
            return {"symbols": [connection.plain(s) for s in found or []]}
        at = wire_position(await self.answers.lines(path), position or SpotPosition(0, 0))
        spot = types.Position(line=at.line, character=at.character)
        if kind is QueryKind.HOVER:
            hover = await connection.request(types.TEXT_DOCUMENT_HOVER,
                                             types.HoverParams(text_document=document, position=spot), limit)
            text = _hover_text(connection.plain(hover.contents)) if hover is not None else ""
            return {"contents": {"kind": "markdown", "value": text} if text else None}
        if kind is QueryKind.REFERENCES:
            found = await connection.request(types.TEXT_DOCUMENT_REFERENCES, types.ReferenceParams(
                text_document=document, position=spot, context=types.ReferenceContext(include_declaration=True)),
                limit)
            return {"locations": [connection.plain(f) for f in found or []]}
        if kind is QueryKind.CALL_HIERARCHY:
            items = await connection.request(types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY,
                                             types.CallHierarchyPrepareParams(text_document=document, position=spot),
                                             limit)
            if not items:
                return {"calls": []}
            calls = await connection.request(types.CALL_HIERARCHY_INCOMING_CALLS,
                                             types.CallHierarchyIncomingCallsParams(item=items[0]), limit)
            return {"calls": [connection.plain(c) for c in calls or []]}
        method = _LOCATION_METHODS[kind]
        found = await connection.request(method, types.DefinitionParams(text_document=document, position=spot), limit)
        listed = found if isinstance(found, list) else [found] if found is not None else []
        return {"locations": [_location(connection.plain(f)) for f in listed]}


async def start_language_servers(root: Path, documents: DocumentSource,
                                 settings: EditorQuerySettings) -> LanguageServerQueries:
    """Start every configured server (together: their start-up overlaps); one that fails is kept,
    with its reason."""
    connections = [LanguageServerConnection(spec, root, documents) for spec in settings.language_servers]
    await asyncio.gather(*(c.start() for c in connections))
    return LanguageServerQueries(root, documents, settings, connections)
