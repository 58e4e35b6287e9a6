"""verify_project envelopes → `textDocument/publishDiagnostics`, so a failed check shows where the editor
shows every other error.

Each located failure of a check becomes an Error diagnostic (source `lsp-agent`, code = the check
kind) on its file. Diagnostics are kept per check kind: the next envelope replaces a kind's
diagnostics when that kind failed with located failures, clears them when every check of the
kind passed, and leaves them alone when the kind errored without locations (a timeout says
nothing about the old failures).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from lsp_agent.domain.edits import utf16_len
from lsp_agent.osfiles.regular import read_regular_text
from lsp_agent.protocol.methods import DIAGNOSTIC_SOURCE
from lsp_agent.server.documents import BufferDocuments

_MAX_LINE_READ = 2_000_000  # bytes; a larger file gets a zero-width range at the line start


class DiagnosticsPublisher:
    def __init__(self, ls: LanguageServer, root: Path, documents: BufferDocuments) -> None:
        self.ls = ls
        self.root = root
        self.documents = documents
        self._by_uri: dict[str, dict[str, list[types.Diagnostic]]] = {}

    def current(self, uri: str) -> list[types.Diagnostic]:
        return [d for kind in sorted(self._by_uri.get(uri, {})) for d in self._by_uri[uri][kind]]

    def update(self, envelope: dict[str, Any], session_id: str, part_id: str) -> None:
        touched: set[str] = set()
        for kind, (passed, failures, command) in _by_kind(envelope).items():
            if passed:
                fresh: dict[str, list[types.Diagnostic]] = {}
            elif failures:
                fresh = {}
                for failure in failures:
                    rel, line = str(failure["file"]), int(failure.get("line") or 1)
                    uri = self.documents.uri_for(rel)
                    fresh.setdefault(uri, []).append(self._diagnostic(
                        kind, rel, uri, line, str(failure.get("message") or "failed"), command, session_id, part_id))
            else:
                continue
            for uri, kinds in self._by_uri.items():
                if kind in kinds and uri not in fresh:
                    del kinds[kind]
                    touched.add(uri)
            for uri, diagnostics in fresh.items():
                self._by_uri.setdefault(uri, {})[kind] = diagnostics
                touched.add(uri)
        for uri in sorted(touched):
            self.ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=self.current(uri)))
            if not self._by_uri.get(uri):
                self._by_uri.pop(uri, None)

    def _diagnostic(self, kind: str, rel: str, uri: str, line: int, message: str, command: str, session_id: str,
                    part_id: str) -> types.Diagnostic:
        row = max(line - 1, 0)
        where = types.Range(start=types.Position(line=row, character=0),
                            end=types.Position(line=row, character=self._line_length(rel, row)))
        return types.Diagnostic(
            range=where, message=message, severity=types.DiagnosticSeverity.Error, source=DIAGNOSTIC_SOURCE,
            code=kind,
            related_information=[types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=where),
                message=f"{kind} check `{command}` failed here (verify_project result {part_id}, "
                        f"session {session_id})")],
            data={"sessionID": session_id, "partID": part_id, "kind": kind, "file": rel, "line": line})

    def _line_length(self, rel: str, row: int) -> int:
        current = self.documents.buffer_text(rel)
        if current is not None:
            text = current[0]
        else:
            path = self.root / rel
            try:
                if path.stat().st_size > _MAX_LINE_READ:
                    return 0
                text = read_regular_text(path, _MAX_LINE_READ)
            except OSError:
                return 0
        lines = text.splitlines()
        return utf16_len(lines[row]) if row < len(lines) else 0


def _by_kind(envelope: dict[str, Any]) -> dict[str, tuple[bool, list[dict[str, Any]], str]]:
    """kind → (every check of the kind passed, located failures, the commands run)."""
    kinds: dict[str, tuple[bool, list[dict[str, Any]], str]] = {}
    for check in envelope.get("checks") or []:
        if not isinstance(check, dict) or not isinstance(check.get("kind"), str):
            continue
        kind = check["kind"]
        passed = check.get("exitCode") == 0 and not check.get("timedOut")
        located = [f for f in check.get("failures") or [] if isinstance(f, dict) and f.get("file")]
        command = " ".join(str(a) for a in check.get("command") or [])
        was_passed, was_failures, was_command = kinds.get(kind, (True, [], ""))
        kinds[kind] = (was_passed and passed, was_failures + located,
                       "; ".join(c for c in (was_command, command) if c))
    return kinds
