"""Where an editor-query tool points, and how its answers read.

The model names a place by symbol name or by 1-based line/column; the editor wants a 0-based position.
A name is looked up in the editor's document symbols when it answers them, else by whole-word text
search; a name found in several places is never guessed: the places are listed. Answers are shown as
workspace-relative `path:line:column` with that line's text, bounded by count and characters.
"""

from __future__ import annotations

import re

from pydantic import Field, PositiveInt

from lsp_agent.core.editor_queries import (
    EditorQueries,
    EditorQueryError,
    QueryFailure,
    QueryKind,
    Spot,
    SpotPosition,
)
from lsp_agent.core.paths import PathDenied, resolve_in_root
from lsp_agent.core.tools import RelPath, StrictArgs, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind

#: A context line is cut to this many characters (minified files have enormous lines).
CONTEXT_CHARS = 200
#: Most candidate places listed when a name is ambiguous.
CANDIDATES_SHOWN = 10
_DEFINING = r"(?:def|class|function|fn|func|struct|enum|interface|trait|type|const|let|var|module)\s+"


class SymbolAtArgs(StrictArgs):
    path: RelPath = Field(description="File path relative to the workspace root, e.g. 'src/app.py'.")
    symbol: str | None = Field(
        None, description="Name of the symbol, e.g. 'parse_config' or 'Config.load'. Found in the file; when it "
                          "occurs in several places they are listed and you pass `line` too.")
    line: PositiveInt | None = Field(None, description="1-based line of the symbol (with `symbol` or `column`).")
    column: PositiveInt | None = Field(None, description="1-based column (characters) on `line`; default: the "
                                                          "symbol's start on that line, else the first non-blank.")


def failed(error: EditorQueryError) -> ToolResult:
    kind = {QueryFailure.NO_ANSWER: ErrorKind.TIMEOUT,
            QueryFailure.CANCELLED: ErrorKind.CANCELLED}.get(error.failure, ErrorKind.TOOL_FAILURE)
    return ToolResult.failure(kind, f"{error.message} [{error.failure.value}]", editor_failure=error.failure.value)


def no_editor() -> ToolResult:
    return ToolResult.failure(ErrorKind.TOOL_FAILURE, "no editor answers queries in this session; use search_code "
                                                      "and read_file")


async def _lines(ctx: ToolContext, path: str) -> list[str] | None:
    try:
        resolve_in_root(ctx.root, path)
        document = await ctx.documents.read(path)
    except (PathDenied, OSError, ValueError):
        return None
    return document.text.splitlines() if document is not None else None


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")


async def resolve(args: SymbolAtArgs, ctx: ToolContext, editor: EditorQueries) -> SpotPosition | ToolResult:
    """The 0-based position the model means, or a failure that says what to pass instead."""
    lines = await _lines(ctx, args.path)
    if lines is None:
        return ToolResult.failure(ErrorKind.TOOL_FAILURE, f"{args.path} does not exist or cannot be read")
    name = args.symbol.strip().rsplit(".", 1)[-1] if args.symbol else ""
    if args.line is not None:
        if args.line > len(lines):
            return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH, f"line {args.line} is past the end of {args.path} "
                                                                    f"({len(lines)} lines)")
        text = lines[args.line - 1]
        if args.column is not None:
            return SpotPosition(args.line - 1, min(args.column - 1, len(text)))
        if name:
            found = _word(name).search(text)
            if found is None:
                return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH,
                                          f"{name!r} does not occur on line {args.line} of {args.path}: "
                                          f"{text.strip()[:CONTEXT_CHARS]!r}")
            return SpotPosition(args.line - 1, found.start())
        return SpotPosition(args.line - 1, len(text) - len(text.lstrip()))
    if not name:
        return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH, "pass `symbol` (a name in the file) or `line`")
    places = await _by_symbols(args, editor, name) or _by_text(lines, name)
    if not places:
        return ToolResult.failure(ErrorKind.TOOL_FAILURE, f"{args.symbol!r} does not occur in {args.path}")
    if len(places) == 1:
        return places[0]
    listed = "\n".join(f"  {args.path}:{p.line + 1}:{p.column + 1}: {lines[p.line].strip()[:CONTEXT_CHARS]}"
                       for p in places[:CANDIDATES_SHOWN])
    more = f"\n  ... {len(places) - CANDIDATES_SHOWN} more" if len(places) > CANDIDATES_SHOWN else ""
    return ToolResult.failure(ErrorKind.PARAMETER_MISMATCH,
                              f"{args.symbol!r} matches {len(places)} places in {args.path}; call again with `line` "
                              f"(and `column`) of the one you mean:\n{listed}{more}")


async def _by_symbols(args: SymbolAtArgs, editor: EditorQueries, name: str) -> list[SpotPosition]:
    """The declarations of `name` in the file, as the editor's language server lists them."""
    if QueryKind.DOCUMENT_SYMBOLS not in editor.kinds:
        return []
    try:
        answer = await editor.query(QueryKind.DOCUMENT_SYMBOLS, args.path)
    except EditorQueryError:
        return []  # the text search below still finds it
    wanted = args.symbol.strip() if args.symbol else name
    container = wanted.rsplit(".", 1)[0] if "." in wanted else None
    return [s.spot.start for s in answer.symbols
            if s.name == name and (container is None or s.container == container)]


def _by_text(lines: list[str], name: str) -> list[SpotPosition]:
    """Whole-word occurrences; where some of them declare the name, those alone."""
    pattern = _word(name)
    defining = re.compile(rf"{_DEFINING}{re.escape(name)}(?![\w$])|^\s*{re.escape(name)}\s*[:=]")
    hits = [SpotPosition(n, m.start()) for n, text in enumerate(lines) for m in pattern.finditer(text)]
    declared = [h for h in hits if defining.search(lines[h.line])]
    return declared or hits


def shown_spot(spot: Spot, lines: list[str] | None) -> str:
    where = f"{spot.path}:{spot.start.line + 1}:{spot.start.column + 1}"
    if lines is None or spot.start.line >= len(lines):
        return where
    return f"{where}: {lines[spot.start.line].strip()[:CONTEXT_CHARS]}"


def outside_name(spot: Spot) -> str:
    """A library location named by its last two path parts, never read."""
    parts = [p for p in spot.outside.replace("\\", "/").split("/") if p]
    return "/".join(parts[-2:]) if parts else spot.outside


async def render_spots(spots: list[Spot], ctx: ToolContext, signature: str) -> list[str]:
    """One line per location, workspace files first in path order; outside ones per the setting."""
    policy = ctx.settings.editor_queries.outside_workspace
    inside = sorted({s for s in spots if s.path},
                    key=lambda s: (s.path or "", s.start.line, s.start.column))
    outside = sorted({s for s in spots if not s.path}, key=lambda s: (s.outside, s.start.line, s.start.column))
    cache: dict[str, list[str] | None] = {}
    out: list[str] = []
    for spot in inside:
        assert spot.path is not None
        if spot.path not in cache:
            cache[spot.path] = await _lines(ctx, spot.path)
        out.append(shown_spot(spot, cache[spot.path]))
    for spot in outside:
        if policy == "refuse":
            out.append("(a location outside the workspace, not shown)")
        else:
            shown = f": {signature}" if signature else ""
            out.append(f"{outside_name(spot)}:{spot.start.line + 1} (outside the workspace, read-only){shown}")
    return list(dict.fromkeys(out))  # refused outside locations collapse into one line


def bounded(header: str, lines: list[str], ctx: ToolContext) -> str:
    """At most `editorQueries.maxResults` lines and `resultChars` characters, saying what was left out."""
    limits = ctx.settings.editor_queries
    kept: list[str] = []
    size = len(header)
    for line in lines[:limits.max_results]:
        if size + len(line) + 1 > limits.result_chars:
            break
        kept.append(line)
        size += len(line) + 1
    left = len(lines) - len(kept)
    tail = f"\n... {left} more not shown (narrow the question)" if left else ""
    return "\n".join([header, *kept]) + tail


def signature_line(hover: str) -> str:
    """The first line of code in a hover text (its signature), else its first line."""
    body = [line.strip() for line in hover.splitlines() if line.strip() and not line.strip().startswith("```")]
    return body[0][:CONTEXT_CHARS] if body else ""
