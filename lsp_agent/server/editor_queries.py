"""The core's EditorQueries port over `agent/editorQuery`: workspace paths become URIs, code-point
columns become UTF-16 (the encoding this server always negotiates), the editor's LSP answer becomes
neutral facts, and every way it can go wrong becomes a classified EditorQueryError."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.lsp.server import LanguageServer

from lsp_agent.core.cancel import cancel_signal
from lsp_agent.core.editor_queries import (
    DiagnosticFact,
    EditorQueryError,
    QueryAnswer,
    QueryFailure,
    QueryKind,
    Spot,
    SpotPosition,
    SymbolFact,
)
from lsp_agent.core.paths import PathDenied, resolve_in_root
from lsp_agent.domain.edits import utf16_len
from lsp_agent.domain.ports import DocumentSource
from lsp_agent.protocol.editor_query_models import (
    AGENT_EDITOR_QUERY,
    DocumentSymbol,
    EditorQueryErrorData,
    EditorQueryParams,
    EditorQueryResult,
    LspPosition,
    LspRange,
    SymbolInformation,
)
from lsp_agent.server.convert import to_plain
from lsp_agent.server.documents import relative_path
from lsp_agent.settings.config import EditorQuerySettings

_SEVERITY = {1: "error", 2: "warning", 3: "information", 4: "hint"}
_SYMBOL_KINDS = ["File", "Module", "Namespace", "Package", "Class", "Method", "Property", "Field", "Constructor",
                 "Enum", "Interface", "Function", "Variable", "Constant", "String", "Number", "Boolean", "Array",
                 "Object", "Key", "Null", "EnumMember", "Struct", "Event", "Operator", "TypeParameter"]
_FAILURE_OF = {"noLanguageServer": QueryFailure.NO_LANGUAGE_SERVER, "notSupported": QueryFailure.NOT_SUPPORTED,
               "failed": QueryFailure.FAILED}


def symbol_kind_name(kind: int) -> str:
    return _SYMBOL_KINDS[kind - 1] if 1 <= kind <= len(_SYMBOL_KINDS) else "Symbol"


def _code_points(line: str, units: int) -> int:
    """The code-point column of a UTF-16 column in `line` (past its end: clamped to it)."""
    if line.isascii():
        return min(units, len(line))
    seen = 0
    for index, char in enumerate(line):
        if seen >= units:
            return index
        seen += 2 if ord(char) > 0xFFFF else 1
    return len(line)


class LspEditorQueries:
    def __init__(self, ls: LanguageServer, root: Path, documents: DocumentSource, declared: tuple[str, ...],
                 settings: Callable[[], EditorQuerySettings]) -> None:
        self.ls = ls
        self.root = root
        self.documents = documents
        #: what the client declared in `initialize`: fixed for the session
        self.declared = declared
        self._settings = settings

    @property
    def kinds(self) -> tuple[QueryKind, ...]:
        """The declared kinds the settings leave on (a kind switched off is never asked)."""
        return tuple(QueryKind(k) for k in self._settings().offered(self.declared))

    async def query(self, kind: QueryKind, path: str | None, position: SpotPosition | None = None,
                    query: str | None = None) -> QueryAnswer:
        if kind not in self.kinds:
            raise EditorQueryError(QueryFailure.NOT_SUPPORTED, f"the editor does not answer {kind.value} queries")
        lines = await self._lines(path) if path is not None else []
        params = EditorQueryParams(
            kind=kind.value, uri=(self.root / path).as_uri() if path is not None else None,
            position=self._wire_position(lines, position) if position is not None else None, query=query)
        raw = await self._ask(params, path)
        try:
            answer = EditorQueryResult.model_validate(to_plain(raw) or {})
        except ValidationError as exc:
            raise EditorQueryError(QueryFailure.MALFORMED, f"the editor's answer to {kind.value} was malformed "
                                                           f"({exc.error_count()} problems)") from exc
        return await self._neutral(answer, (self.root / path).as_uri() if path is not None else "")

    async def _ask(self, params: EditorQueryParams, path: str | None) -> Any:
        limit = self._settings().timeout_s
        what = f"{params.kind} of {path}" if path else params.kind
        request = asyncio.ensure_future(self.ls.protocol.send_request_async(AGENT_EDITOR_QUERY, params.wire()))
        cancel = cancel_signal.get()
        # A cancelled run must not wait for an editor that may never answer.
        stopper = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        try:
            done, _ = await asyncio.wait({request, *([stopper] if stopper else [])}, timeout=limit,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            if stopper is not None:
                stopper.cancel()
        if request not in done:
            request.cancel()
            if stopper is not None and stopper in done:
                raise EditorQueryError(QueryFailure.CANCELLED, f"the run was cancelled while the editor was asked "
                                                               f"({what})")
            raise EditorQueryError(QueryFailure.NO_ANSWER, f"the editor did not answer ({what}) within {limit:g}s")
        try:
            return request.result()
        except JsonRpcMethodNotFound:
            raise EditorQueryError(QueryFailure.NOT_SUPPORTED,
                                   f"the editor does not implement {AGENT_EDITOR_QUERY}") from None
        except JsonRpcException as exc:
            raise self._classified(exc, what, path) from None

    @staticmethod
    def _classified(exc: JsonRpcException, what: str, path: str | None) -> EditorQueryError:
        data = exc.data if isinstance(getattr(exc, "data", None), dict) else {}
        try:
            failure = _FAILURE_OF[EditorQueryErrorData.model_validate(data).kind]
        except ValidationError:
            failure = QueryFailure.FAILED
        detail = str(exc.message or "").strip()[:200] if hasattr(exc, "message") else ""
        if failure is QueryFailure.NO_LANGUAGE_SERVER:
            suffix = Path(path).suffix if path else ""
            text = f"no language server for {suffix or 'this file'} in the editor"
        elif failure is QueryFailure.NOT_SUPPORTED:
            text = f"the editor cannot answer {what}"
        else:
            text = f"the editor's language server failed on {what}"
        return EditorQueryError(failure, f"{text}: {detail}" if detail else text)

    # --- positions --------------------------------------------------------------------------------

    def _confined(self, rel: str) -> bool:
        try:
            resolve_in_root(self.root, rel)
        except PathDenied:
            return False
        return True

    async def _lines(self, path: str) -> list[str]:
        try:
            document = await self.documents.read(path)
        except (OSError, ValueError):  # not a regular file, unreadable: no text to convert columns with
            return []
        return document.text.splitlines() if document is not None else []

    @staticmethod
    def _wire_position(lines: list[str], position: SpotPosition) -> LspPosition:
        line = lines[position.line] if position.line < len(lines) else ""
        return LspPosition(line=position.line, character=utf16_len(line[:position.column]))

    async def _spot(self, uri: str, span: LspRange, cache: dict[str, list[str]]) -> Spot:
        rel = relative_path(self.root, uri)
        if rel is not None and not self._confined(rel):
            rel = None  # a symlink inside the workspace pointing out of it: never read through it
        if rel is None:
            return Spot(None, uri, SpotPosition(span.start.line, span.start.character),
                        SpotPosition(span.end.line, span.end.character))
        if rel not in cache:
            cache[rel] = await self._lines(rel)
        lines = cache[rel]

        def column(pos: LspPosition) -> int:
            return _code_points(lines[pos.line], pos.character) if pos.line < len(lines) else pos.character

        return Spot(rel, uri, SpotPosition(span.start.line, column(span.start)),
                    SpotPosition(span.end.line, column(span.end)))

    # --- answers ----------------------------------------------------------------------------------

    async def _neutral(self, answer: EditorQueryResult, asked_uri: str) -> QueryAnswer:
        cache: dict[str, list[str]] = {}
        out = QueryAnswer()
        for location in answer.locations or []:
            out.spots.append(await self._spot(location.uri, location.range, cache))
        if answer.contents is not None:
            out.hover = answer.contents.value
        for symbol in answer.symbols or []:
            if isinstance(symbol, SymbolInformation):
                spot = await self._spot(symbol.location.uri, symbol.location.range, cache)
                out.symbols.append(SymbolFact(symbol.name, symbol_kind_name(symbol.kind), spot,
                                              symbol.container_name or ""))
        document_symbols = [s for s in answer.symbols or [] if isinstance(s, DocumentSymbol)]
        if document_symbols:
            out.symbols.extend(await self._tree(document_symbols, asked_uri, cache))
        for per_document in answer.diagnostics or []:
            for item in per_document.diagnostics:
                spot = await self._spot(per_document.uri, item.range, cache)
                out.diagnostics.append(DiagnosticFact(spot, _SEVERITY.get(item.severity or 1, "error"),
                                                      item.message, item.source or "",
                                                      "" if item.code is None else str(item.code)))
        for call in answer.calls or []:
            ranges = call.from_ranges or [call.caller.selection_range]
            for span in ranges:
                spot = await self._spot(call.caller.uri, span, cache)
                out.symbols.append(SymbolFact(call.caller.name, symbol_kind_name(call.caller.kind), spot))
        return out

    async def _tree(self, symbols: list[DocumentSymbol], uri: str,
                    cache: dict[str, list[str]]) -> list[SymbolFact]:
        """A DocumentSymbol tree, depth first; its nodes carry no URI: they are the asked document's."""
        flat: list[SymbolFact] = []
        stack: list[tuple[DocumentSymbol, str, int]] = [(node, "", 0) for node in reversed(symbols)]
        while stack:
            node, container, depth = stack.pop()
            spot = await self._spot(uri, node.selection_range, cache)
            flat.append(SymbolFact(node.name, symbol_kind_name(node.kind), spot, container, depth))
            stack.extend((child, node.name, depth + 1) for child in reversed(node.children))
        return flat
