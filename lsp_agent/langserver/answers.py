"""An LSP answer about the workspace, as the core's neutral facts.

Shared by both adapters of the EditorQueries port: the one that asks the editor (server/
editor_queries.py) and the one that asks a language server the harness started (langserver/
queries.py). Both speak UTF-16 positions (the encoding each negotiates); the core counts code points,
so every position is converted here against the file's current text. A location is named by its
workspace-relative path when it lies inside the workspace (never through a symlink pointing out).
"""

from __future__ import annotations

from pathlib import Path

from pygls.uris import to_fs_path

from lsp_agent.core.editor_queries import (
    DiagnosticFact,
    QueryAnswer,
    Spot,
    SpotPosition,
    SymbolFact,
)
from lsp_agent.core.paths import PathDenied, resolve_in_root
from lsp_agent.domain.edits import utf16_len
from lsp_agent.domain.ports import DocumentSource
from lsp_agent.protocol.editor_query_models import (
    DocumentSymbol,
    EditorQueryResult,
    LspPosition,
    LspRange,
    SymbolInformation,
)

_SEVERITY = {1: "error", 2: "warning", 3: "information", 4: "hint"}
_SYMBOL_KINDS = ["File", "Module", "Namespace", "Package", "Class", "Method", "Property", "Field", "Constructor",
                 "Enum", "Interface", "Function", "Variable", "Constant", "String", "Number", "Boolean", "Array",
                 "Object", "Key", "Null", "EnumMember", "Struct", "Event", "Operator", "TypeParameter"]


def symbol_kind_name(kind: int) -> str:
    return _SYMBOL_KINDS[kind - 1] if 1 <= kind <= len(_SYMBOL_KINDS) else "Symbol"


def relative_path(root: Path, uri: str) -> str | None:
    """The workspace-relative path of a file URI, or None when it lies outside the root."""
    fs = to_fs_path(uri)
    if fs is None:
        return None
    path = Path(fs)
    for base in (root, root.resolve()):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def code_points(line: str, units: int) -> int:
    """The code-point column of a UTF-16 column in `line` (past its end: clamped to it)."""
    if line.isascii():
        return min(units, len(line))
    seen = 0
    for index, char in enumerate(line):
        if seen >= units:
            return index
        seen += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def wire_position(lines: list[str], position: SpotPosition) -> LspPosition:
    """A code-point position as LSP's UTF-16 one."""
    line = lines[position.line] if position.line < len(lines) else ""
    return LspPosition(line=position.line, character=utf16_len(line[:position.column]))


class AnswerReader:
    """Reads one workspace's LSP answers: positions against the files' current text."""

    def __init__(self, root: Path, documents: DocumentSource) -> None:
        self.root = root
        self.documents = documents

    def confined(self, rel: str) -> bool:
        try:
            resolve_in_root(self.root, rel)
        except PathDenied:
            return False
        return True

    async def lines(self, path: str) -> list[str]:
        try:
            document = await self.documents.read(path)
        except (OSError, ValueError):  # not a regular file, unreadable: no text to convert columns with
            return []
        return document.text.splitlines() if document is not None else []

    async def spot(self, uri: str, span: LspRange, cache: dict[str, list[str]]) -> Spot:
        rel = relative_path(self.root, uri)
        if rel is not None and not self.confined(rel):
            rel = None  # a symlink inside the workspace pointing out of it: never read through it
        if rel is None:
            return Spot(None, uri, SpotPosition(span.start.line, span.start.character),
                        SpotPosition(span.end.line, span.end.character))
        if rel not in cache:
            cache[rel] = await self.lines(rel)
        lines = cache[rel]

        def column(pos: LspPosition) -> int:
            return code_points(lines[pos.line], pos.character) if pos.line < len(lines) else pos.character

        return Spot(rel, uri, SpotPosition(span.start.line, column(span.start)),
                    SpotPosition(span.end.line, column(span.end)))

    async def neutral(self, answer: EditorQueryResult, asked_uri: str) -> QueryAnswer:
        cache: dict[str, list[str]] = {}
        out = QueryAnswer()
        for location in answer.locations or []:
            out.spots.append(await self.spot(location.uri, location.range, cache))
        if answer.contents is not None:
            out.hover = answer.contents.value
        for symbol in answer.symbols or []:
            if isinstance(symbol, SymbolInformation):
                spot = await self.spot(symbol.location.uri, symbol.location.range, cache)
                out.symbols.append(SymbolFact(symbol.name, symbol_kind_name(symbol.kind), spot,
                                              symbol.container_name or ""))
        document_symbols = [s for s in answer.symbols or [] if isinstance(s, DocumentSymbol)]
        if document_symbols:
            out.symbols.extend(await self.tree(document_symbols, asked_uri, cache))
        for per_document in answer.diagnostics or []:
            for item in per_document.diagnostics:
                spot = await self.spot(per_document.uri, item.range, cache)
                out.diagnostics.append(DiagnosticFact(spot, _SEVERITY.get(item.severity or 1, "error"),
                                                      item.message, item.source or "",
                                                      "" if item.code is None else str(item.code)))
        for call in answer.calls or []:
            ranges = call.from_ranges or [call.caller.selection_range]
            for span in ranges:
                spot = await self.spot(call.caller.uri, span, cache)
                out.symbols.append(SymbolFact(call.caller.name, symbol_kind_name(call.caller.kind), spot))
        return out

    async def tree(self, symbols: list[DocumentSymbol], uri: str,
                   cache: dict[str, list[str]]) -> list[SymbolFact]:
        """A DocumentSymbol tree, depth first; its nodes carry no URI: they are the asked document's."""
        flat: list[SymbolFact] = []
        stack: list[tuple[DocumentSymbol, str, int]] = [(node, "", 0) for node in reversed(symbols)]
        while stack:
            node, container, depth = stack.pop()
            spot = await self.spot(uri, node.selection_range, cache)
            flat.append(SymbolFact(node.name, symbol_kind_name(node.kind), spot, container, depth))
            stack.extend((child, node.name, depth + 1) for child in reversed(node.children))
        return flat
