"""The core's EditorQueries port over `agent/editorQuery`: workspace paths become URIs, code-point
columns become UTF-16 (the encoding this server always negotiates), the editor's LSP answer becomes
neutral facts (langserver/answers.py, shared with the harness's own language servers), and every way it
can go wrong becomes a classified EditorQueryError."""

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
    EditorQueryError,
    QueryAnswer,
    QueryFailure,
    QueryKind,
    SpotPosition,
)
from lsp_agent.domain.ports import DocumentSource
from lsp_agent.langserver.answers import AnswerReader, wire_position
from lsp_agent.protocol.editor_query_models import (
    AGENT_EDITOR_QUERY,
    EditorQueryErrorData,
    EditorQueryParams,
    EditorQueryResult,
)
from lsp_agent.server.convert import to_plain
from lsp_agent.settings.config import EditorQuerySettings

_FAILURE_OF = {"noLanguageServer": QueryFailure.NO_LANGUAGE_SERVER, "notSupported": QueryFailure.NOT_SUPPORTED,
               "failed": QueryFailure.FAILED}


class LspEditorQueries:
    def __init__(self, ls: LanguageServer, root: Path, documents: DocumentSource, declared: tuple[str, ...],
                 settings: Callable[[], EditorQuerySettings]) -> None:
        self.ls = ls
        self.root = root
        self.documents = documents
        self.answers = AnswerReader(root, documents)
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
        lines = await self.answers.lines(path) if path is not None else []
        params = EditorQueryParams(
            kind=kind.value, uri=(self.root / path).as_uri() if path is not None else None,
            position=wire_position(lines, position) if position is not None else None, query=query)
        raw = await self._ask(params, path)
        try:
            answer = EditorQueryResult.model_validate(to_plain(raw) or {})
        except ValidationError as exc:
            raise EditorQueryError(QueryFailure.MALFORMED, f"the editor's answer to {kind.value} was malformed "
                                                           f"({exc.error_count()} problems)") from exc
        return await self.answers.neutral(answer, (self.root / path).as_uri() if path is not None else "")

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
