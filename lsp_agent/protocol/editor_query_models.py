"""`agent/editorQuery`: the server asks the editor's own language intelligence (definitions,
references, hover, symbols, diagnostics) on the model's behalf.

A client that answers declares it in `initialize`:
`capabilities.experimental.lspAgent.editorQueries: ["definition", "references", ...]` (the kinds it
answers; unknown kinds are ignored). Only the declared kinds become tools. The answer is LSP's own
types, so a client passes through what its editor gives. A client that cannot answer replies with a
JSON-RPC error whose `data.kind` is one of `EDITOR_QUERY_ERROR_KINDS`, which the tool shows the model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lsp_agent.domain.wire import WireModel

AGENT_EDITOR_QUERY = "agent/editorQuery"

EditorQueryKind = Literal["definition", "references", "hover", "documentSymbols", "workspaceSymbols", "diagnostics",
                          "typeDefinition", "implementation", "callHierarchy"]

#: `data.kind` of an error answer: `noLanguageServer` (no language server for this file type; `message`
#: may name it), `notSupported` (the editor cannot answer this kind), `failed` (the language server failed).
EDITOR_QUERY_ERROR_KINDS = ("noLanguageServer", "notSupported", "failed")


class LspPosition(BaseModel):
    model_config = ConfigDict(extra="ignore")
    line: int = Field(ge=0)
    character: int = Field(ge=0)


class LspRange(BaseModel):
    model_config = ConfigDict(extra="ignore")
    start: LspPosition
    end: LspPosition


class LspLocation(BaseModel):
    model_config = ConfigDict(extra="ignore")
    uri: str
    range: LspRange


class EditorQueryParams(WireModel):
    """One question to the editor. `position` is in the position encoding negotiated in `initialize`
    (UTF-16 unless the client offered another)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    kind: EditorQueryKind
    uri: str | None = Field(None, description="The document asked about; absent for `workspaceSymbols` and for "
                                              "`diagnostics` of the whole workspace.")
    position: LspPosition | None = Field(None, description="For definition, references, hover, typeDefinition, "
                                                           "implementation and callHierarchy.")
    query: str | None = Field(None, description="For workspaceSymbols: the name searched for.")


class _Answer(WireModel):
    # An editor's answer: extra fields are ignored (clients grow), wrong types are still errors.
    model_config = ConfigDict(extra="ignore")


class MarkupContent(_Answer):
    kind: str = "markdown"
    value: str


class DocumentSymbol(_Answer):
    name: str
    kind: int
    range: LspRange
    selection_range: LspRange
    detail: str | None = None
    children: list[DocumentSymbol] = Field(default_factory=list)


class SymbolInformation(_Answer):
    name: str
    kind: int
    location: LspLocation
    container_name: str | None = None


class LspDiagnostic(_Answer):
    range: LspRange
    message: str
    severity: int | None = None
    source: str | None = None
    code: int | str | None = None


class DocumentDiagnostics(_Answer):
    uri: str
    diagnostics: list[LspDiagnostic]


class CallHierarchyItem(_Answer):
    name: str
    kind: int
    uri: str
    range: LspRange
    selection_range: LspRange
    detail: str | None = None


class HierarchyCall(_Answer):
    """One incoming call: the caller (`from`) and where it calls (`fromRanges`)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    caller: CallHierarchyItem = Field(alias="from")
    from_ranges: list[LspRange] = Field(default_factory=list, alias="fromRanges")


class EditorQueryResult(_Answer):
    """Exactly the field of the kind asked: `locations` (definition, references, typeDefinition,
    implementation), `contents` (hover; null when there is nothing), `symbols` (documentSymbols:
    DocumentSymbol[] or SymbolInformation[]; workspaceSymbols: SymbolInformation[]), `diagnostics`
    (per document), `calls` (callHierarchy: the incoming calls of the item at the position)."""

    locations: list[LspLocation] | None = None
    contents: MarkupContent | None = None
    symbols: list[DocumentSymbol] | list[SymbolInformation] | None = None
    diagnostics: list[DocumentDiagnostics] | None = None
    calls: list[HierarchyCall] | None = None


class EditorQueryErrorData(_Answer):
    kind: Literal["noLanguageServer", "notSupported", "failed"]


METHOD_DOC: tuple[str, Literal["request"], str, type[BaseModel], type[BaseModel], str] = (
    AGENT_EDITOR_QUERY, "request", "server → client", EditorQueryParams, EditorQueryResult,
    "Sent when the model calls an editor-query tool (find_definition, find_references, hover, document_symbols, "
    "workspace_symbols, editor_diagnostics, find_implementations) and after an edit (kind `diagnostics`, for the "
    "edited files). Only kinds the client declared in `capabilities.experimental.lspAgent.editorQueries` are "
    "asked. Answer in LSP's own types; for a file with no language server reply with an error whose "
    "`data.kind` is `noLanguageServer` (or `notSupported`, `failed`). No answer within `editorQueries.timeoutS` "
    "(default 5 s) is reported to the model as \"the editor did not answer\".")


def declared_kinds(experimental: Any) -> list[str]:
    """The kinds a client declared in `capabilities.experimental`, in its order; [] when absent or malformed."""
    section = experimental.get("lspAgent") if isinstance(experimental, dict) else None
    kinds = section.get("editorQueries") if isinstance(section, dict) else None
    if not isinstance(kinds, list):
        return []
    return [k for k in kinds if isinstance(k, str)]
