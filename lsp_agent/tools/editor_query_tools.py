"""The editor's language intelligence as tools: definitions, references, hover, symbols, diagnostics.

Each asks the editor the user already runs (its language servers, with the project's own configuration)
through the EditorQueries port; they exist only where an editor declared it answers that kind. All read
only, so they share the gate with other reads. See editor_locate.py for naming places and bounds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field

from lsp_agent.core.editor_queries import (
    DiagnosticFact,
    EditorQueries,
    EditorQueryError,
    QueryKind,
    Spot,
    SpotPosition,
)
from lsp_agent.core.tools import Access, RelPath, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind
from lsp_agent.tools.editor_locate import (
    SymbolAtArgs,
    bounded,
    failed,
    no_editor,
    render_spots,
    resolve,
    shown_spot,
    signature_line,
)

_AT = ("Name the place by `path` and `symbol` (a name in that file), or by `path` and 1-based `line` (and "
       "`column`).")


async def _signature(editor: EditorQueries, path: str, spots: list[Spot], at: SpotPosition) -> str:
    """For locations outside the workspace: the hover's signature at the asked place, never the file."""
    if all(s.path for s in spots) or QueryKind.HOVER not in editor.kinds:
        return ""
    try:
        return signature_line((await editor.query(QueryKind.HOVER, path, at)).hover)
    except EditorQueryError:
        return ""


class _Locating(Tool[SymbolAtArgs]):
    access = Access.READ
    args_model = SymbolAtArgs
    kind: QueryKind
    noun: str

    async def run(self, args: SymbolAtArgs, ctx: ToolContext) -> ToolResult:
        editor = ctx.editor
        if editor is None:
            return no_editor()
        at = await resolve(args, ctx, editor)
        if isinstance(at, ToolResult):
            return at
        try:
            answer = await editor.query(self.kind, args.path, at)
        except EditorQueryError as exc:
            return failed(exc)
        place = f"{args.path}:{at.line + 1}:{at.column + 1}"
        if not answer.spots:
            return ToolResult.success(f"no {self.noun} found for {place}")
        lines = await render_spots(answer.spots, ctx, await _signature(editor, args.path, answer.spots, at))
        return ToolResult.success(bounded(f"{len(lines)} {self.noun} for {place}:", lines, ctx))


class FindDefinition(_Locating):
    name = "find_definition"
    kind = QueryKind.DEFINITION
    noun = "definition(s)"
    summary = ("Where a symbol is defined, as the editor's language server knows it (imports, the project's "
               f"configuration and environment included). {_AT} Returns path:line:column and that line.")
    use_when = "you need the definition of a name used in a file, to read or change it."
    avoid_when = "you only know a name, not a file that uses it: use workspace_symbols or search_code."


class FindReferences(_Locating):
    name = "find_references"
    kind = QueryKind.REFERENCES
    noun = "reference(s)"
    summary = (f"Every use of a symbol across the workspace, as the editor's language server resolves it. {_AT} "
               "Returns one path:line:column with its line per use (bounded; the declaration included).")
    use_when = "before renaming or changing a function, class or field: to find every caller to update."
    avoid_when = "you search for text that is not a symbol (a message, a comment): use search_code."


class Hover(Tool[SymbolAtArgs]):
    name = "hover"
    access = Access.READ
    args_model = SymbolAtArgs
    summary = f"The editor's hover for a symbol: its type, signature and documentation. {_AT}"
    use_when = "you need a symbol's inferred type or signature without reading its definition."
    avoid_when = "you need the whole implementation: use find_definition then read_file."

    async def run(self, args: SymbolAtArgs, ctx: ToolContext) -> ToolResult:
        editor = ctx.editor
        if editor is None:
            return no_editor()
        at = await resolve(args, ctx, editor)
        if isinstance(at, ToolResult):
            return at
        try:
            answer = await editor.query(QueryKind.HOVER, args.path, at)
        except EditorQueryError as exc:
            return failed(exc)
        place = f"{args.path}:{at.line + 1}:{at.column + 1}"
        text = answer.hover.strip()
        if not text:
            return ToolResult.success(f"no hover information at {place}")
        return ToolResult.success(bounded(f"hover at {place}:", text.splitlines(), ctx))


class DocumentSymbolsArgs(StrictArgs):
    path: RelPath = Field(description="File path relative to the workspace root, e.g. 'src/app.py'.")


class DocumentSymbols(Tool[DocumentSymbolsArgs]):
    name = "document_symbols"
    access = Access.READ
    args_model = DocumentSymbolsArgs
    summary = ("The outline of one file from the editor's language server: classes, functions, methods, fields, "
               "nested, each with its line.")
    use_when = "you need a file's structure, or the line of a definition in it, without reading it whole."
    avoid_when = "you look for a name across files: use workspace_symbols."

    async def run(self, args: DocumentSymbolsArgs, ctx: ToolContext) -> ToolResult:
        if ctx.editor is None:
            return no_editor()
        try:
            answer = await ctx.editor.query(QueryKind.DOCUMENT_SYMBOLS, args.path)
        except EditorQueryError as exc:
            return failed(exc)
        if not answer.symbols:
            return ToolResult.success(f"no symbols in {args.path}")
        lines = [f"{'  ' * s.depth}{s.kind} {s.name} (line {s.spot.start.line + 1})" for s in answer.symbols]
        return ToolResult.success(bounded(f"{len(lines)} symbol(s) in {args.path}:", lines, ctx))


class WorkspaceSymbolsArgs(StrictArgs):
    query: str = Field(min_length=1, max_length=200, description="The symbol name, or the start of it.")


class WorkspaceSymbols(Tool[WorkspaceSymbolsArgs]):
    name = "workspace_symbols"
    access = Access.READ
    args_model = WorkspaceSymbolsArgs
    summary = "Symbols named like `query` anywhere in the workspace, from the editor's language servers."
    use_when = "you know a class or function name but not the file it is defined in."
    avoid_when = "you search for text that is not a symbol name: use search_code."

    async def run(self, args: WorkspaceSymbolsArgs, ctx: ToolContext) -> ToolResult:
        if ctx.editor is None:
            return no_editor()
        try:
            answer = await ctx.editor.query(QueryKind.WORKSPACE_SYMBOLS, None, query=args.query)
        except EditorQueryError as exc:
            return failed(exc)
        inside = sorted((s for s in answer.symbols if s.spot.path),
                        key=lambda s: (s.spot.path or "", s.spot.start.line, s.name))
        lines = [f"{s.kind} {s.name}{f' in {s.container}' if s.container else ''}: "
                 f"{s.spot.path}:{s.spot.start.line + 1}:{s.spot.start.column + 1}" for s in inside]
        outside = len(answer.symbols) - len(inside)
        if outside:
            lines.append(f"({outside} more outside the workspace, not shown)")
        if not lines:
            return ToolResult.success(f"no symbols match {args.query!r}")
        return ToolResult.success(bounded(f"{len(inside)} symbol(s) match {args.query!r}:", lines, ctx))


class EditorDiagnosticsArgs(StrictArgs):
    path: RelPath | None = Field(None, description="One file, relative to the workspace root; omit for every file "
                                                   "the editor has diagnostics for.")
    errors_only: bool = Field(False, description="Only errors (no warnings, hints).")


class EditorDiagnostics(Tool[EditorDiagnosticsArgs]):
    name = "editor_diagnostics"
    access = Access.READ
    args_model = EditorDiagnosticsArgs
    summary = ("The problems the editor's language servers report now (type errors, undefined names, lint), per "
               "file and line. It never counts as verification: only verify_project verifies.")
    use_when = "after edits, to catch type errors quickly before running verify_project."
    avoid_when = "you need to know the tests pass: use verify_project."

    def paths(self, args: EditorDiagnosticsArgs) -> Iterable[str]:
        # Optional, so not found by the default (which reads plain RelPath fields); checked the same way.
        return [args.path] if args.path is not None else []

    async def run(self, args: EditorDiagnosticsArgs, ctx: ToolContext) -> ToolResult:
        if ctx.editor is None:
            return no_editor()
        try:
            answer = await ctx.editor.query(QueryKind.DIAGNOSTICS, args.path)
        except EditorQueryError as exc:
            return failed(exc)
        found = [d for d in answer.diagnostics if d.spot.path and (not args.errors_only or d.severity == "error")]
        found.sort(key=lambda d: (d.spot.path or "", d.spot.start.line, d.spot.start.column, d.message))
        where = args.path or "the workspace"
        if not found:
            # Some language servers (TypeScript's in VS Code) check only the files open in the editor:
            # an empty answer is not a clean bill of health, and the model should not read it as one.
            return ToolResult.success(f"the editor reports no {'errors' if args.errors_only else 'problems'} in "
                                      f"{where} (some language servers check only the files open in the editor; "
                                      "verify_project runs the project's own checks)")
        lines = [diagnostic_line(d) for d in found]
        return ToolResult.success(bounded(f"{len(found)} problem(s) in {where}:", lines, ctx))


def diagnostic_line(d: DiagnosticFact) -> str:
    tag = " ".join(t for t in (d.source, d.code) if t)
    return (f"{shown_spot(d.spot, None)}: {d.severity}: {d.message.splitlines()[0][:300] if d.message else ''}"
            f"{f' [{tag}]' if tag else ''}")


Relation = Literal["typeDefinition", "implementation", "callHierarchy"]
_RELATIONS = (QueryKind.TYPE_DEFINITION, QueryKind.IMPLEMENTATION, QueryKind.CALL_HIERARCHY)


class FindImplementationsArgs(SymbolAtArgs):
    relation: Relation = Field(
        "implementation", description="implementation: classes/methods implementing it; typeDefinition: the "
                                      "definition of its type; callHierarchy: the functions that call it.")


class FindImplementations(Tool[FindImplementationsArgs]):
    name = "find_implementations"
    access = Access.READ
    args_model = FindImplementationsArgs
    summary = (f"Related places of a symbol from the editor's language server: implementations, its type's "
               f"definition, or its callers (`relation`). {_AT}")
    use_when = "you change an interface or base method, need a value's type definition, or who calls a function."
    avoid_when = "you need every textual use: use find_references."

    async def run(self, args: FindImplementationsArgs, ctx: ToolContext) -> ToolResult:
        editor = ctx.editor
        if editor is None:
            return no_editor()
        kind = QueryKind(args.relation)
        if kind not in editor.kinds:
            offered = ", ".join(k.value for k in editor.kinds if k in _RELATIONS)
            return ToolResult.failure(
                ErrorKind.PARAMETER_MISMATCH, f"the editor does not answer {args.relation}; it answers: {offered}")
        at = await resolve(args, ctx, editor)
        if isinstance(at, ToolResult):
            return at
        try:
            answer = await editor.query(kind, args.path, at)
        except EditorQueryError as exc:
            return failed(exc)
        place = f"{args.path}:{at.line + 1}:{at.column + 1}"
        if kind is QueryKind.CALL_HIERARCHY:
            # Each call site with its caller's name; a library caller as the setting says.
            calls = sorted(answer.symbols, key=lambda c: (c.spot.path is None, c.spot.path or c.spot.outside,
                                                          c.spot.start.line, c.spot.start.column))
            lines = list(dict.fromkeys([f"{c.name}: {line}" for c in calls
                                        for line in await render_spots([c.spot], ctx, "")]))
            noun = "caller(s)"
        else:
            lines = await render_spots(answer.spots, ctx, await _signature(editor, args.path, answer.spots, at))
            noun = "implementation(s)" if kind is QueryKind.IMPLEMENTATION else "type definition(s)"
        if not lines:
            return ToolResult.success(f"no {noun} found for {place}")
        return ToolResult.success(bounded(f"{len(lines)} {noun} for {place}:", lines, ctx))


# The one tool per kind, in the fixed order of the kinds (the tool list is part of the cached prefix).
_FOR_KIND: dict[QueryKind, type[Tool[Any]]] = {
    QueryKind.DEFINITION: FindDefinition, QueryKind.REFERENCES: FindReferences, QueryKind.HOVER: Hover,
    QueryKind.DOCUMENT_SYMBOLS: DocumentSymbols, QueryKind.WORKSPACE_SYMBOLS: WorkspaceSymbols,
    QueryKind.DIAGNOSTICS: EditorDiagnostics, QueryKind.TYPE_DEFINITION: FindImplementations,
    QueryKind.IMPLEMENTATION: FindImplementations, QueryKind.CALL_HIERARCHY: FindImplementations,
}


def editor_query_tools(kinds: tuple[str, ...]) -> list[Tool[Any]]:
    """The tools for the offered kinds (already in the fixed order); the related kinds share one tool."""
    made: dict[str, Tool[Any]] = {}
    for name in kinds:
        cls = _FOR_KIND[QueryKind(name)]
        if cls.name not in made:
            made[cls.name] = cls()
    return list(made.values())
