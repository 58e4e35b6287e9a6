"""The editor's language intelligence, as the core sees it: a port a front end with an editor fills.

The core knows no LSP: it asks for a kind of query about a workspace path and gets neutral answers
back. Positions are 0-based lines and 0-based columns counted in code points (the adapters convert
to and from LSP's UTF-16: server/editor_queries.py asks the editor, langserver/queries.py a language
server the headless CLI started itself). A location's `path` is workspace-relative when
it lies inside the workspace; otherwise `path` is None and `outside` names it as the editor did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol


class QueryKind(StrEnum):
    DEFINITION = "definition"
    REFERENCES = "references"
    HOVER = "hover"
    DOCUMENT_SYMBOLS = "documentSymbols"
    WORKSPACE_SYMBOLS = "workspaceSymbols"
    DIAGNOSTICS = "diagnostics"
    TYPE_DEFINITION = "typeDefinition"
    IMPLEMENTATION = "implementation"
    CALL_HIERARCHY = "callHierarchy"


class QueryFailure(StrEnum):
    """Why a query has no answer, in classes the model (and the user) can act on."""

    NO_ANSWER = "no_answer"  # the editor did not answer in time
    NO_LANGUAGE_SERVER = "no_language_server"  # no language server for this file type
    NOT_SUPPORTED = "not_supported"  # the editor does not answer this kind
    FAILED = "failed"  # the editor or its language server reported an error
    MALFORMED = "malformed"  # the answer did not have the agreed shape
    CANCELLED = "cancelled"  # the run was cancelled while the editor was asked


class EditorQueryError(Exception):
    def __init__(self, failure: QueryFailure, message: str) -> None:
        super().__init__(message)
        self.failure = failure
        self.message = message


@dataclass(frozen=True)
class SpotPosition:
    line: int  # 0-based
    column: int  # 0-based, code points


@dataclass(frozen=True)
class Spot:
    """One place the editor named: a workspace path, or something outside it (a library)."""

    path: str | None
    outside: str
    start: SpotPosition
    end: SpotPosition


@dataclass(frozen=True)
class SymbolFact:
    name: str
    kind: str  # LSP SymbolKind name, e.g. "Function"
    spot: Spot
    container: str = ""
    depth: int = 0  # nesting in a document's symbol tree


@dataclass(frozen=True)
class DiagnosticFact:
    spot: Spot
    severity: str  # error, warning, information, hint
    message: str
    source: str = ""
    code: str = ""


@dataclass
class QueryAnswer:
    spots: list[Spot] = field(default_factory=list)
    hover: str = ""
    symbols: list[SymbolFact] = field(default_factory=list)
    diagnostics: list[DiagnosticFact] = field(default_factory=list)


class EditorQueries(Protocol):
    """Implemented by a front end with an editor, or by language servers the headless CLI starts;
    absent (None) everywhere else."""

    @property
    def kinds(self) -> tuple[QueryKind, ...]:
        """The kinds the editor declared it answers."""
        ...

    async def query(self, kind: QueryKind, path: str | None, position: SpotPosition | None = None,
                    query: str | None = None) -> QueryAnswer:
        """Ask the editor; raises EditorQueryError for every expected failure."""
        ...
