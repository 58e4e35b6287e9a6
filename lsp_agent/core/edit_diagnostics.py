"""After an edit: the new errors the editor's language servers report for the edited files.

The editor's errors for the files are read before the edit and again after it, once they have stopped
changing (debounced, bounded by a wait); errors present after but not before are appended to the edit's
result as a short note, so the model can fix a type error before it runs the whole check. The note is
text only: it never touches `written` nor anything verification is derived from.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence

from lsp_agent.core.editor_queries import DiagnosticFact, EditorQueries, EditorQueryError, QueryKind
from lsp_agent.domain.ports import DocumentSource
from lsp_agent.settings.config import EditorQuerySettings

#: Most files one edit's note looks at (a patch touching more is rare; each is one question).
FILES_ASKED = 10
#: An error is the same one after an edit when these match: its line may move with the edit, but an
#: error on a line the edit left alone keeps that line's text.
_Key = tuple[str, str, str, str, str]
#: path → its lines, as the documents read right then
Texts = dict[str, list[str]]


def _key(d: DiagnosticFact, texts: Texts) -> _Key:
    lines = texts.get(d.spot.path or "", [])
    line = lines[d.spot.start.line].strip() if d.spot.start.line < len(lines) else ""
    return (d.spot.path or "", d.message, d.source, d.code, line)


async def texts_of(documents: DocumentSource, paths: Sequence[str]) -> Texts:
    out: Texts = {}
    for path in list(paths)[:FILES_ASKED]:
        try:
            document = await documents.read(path)
        except (OSError, ValueError):
            document = None
        out[path] = document.text.splitlines() if document is not None else []
    return out


async def errors_of(editor: EditorQueries, paths: Sequence[str]) -> list[DiagnosticFact]:
    """The editor's errors in these files now, in a stable order; raises EditorQueryError."""
    found: list[DiagnosticFact] = []
    for path in list(paths)[:FILES_ASKED]:
        answer = await editor.query(QueryKind.DIAGNOSTICS, path)
        found += [d for d in answer.diagnostics if d.severity == "error" and d.spot.path == path]
    found.sort(key=lambda d: (d.spot.path or "", d.spot.start.line, d.spot.start.column, d.message))
    return found


async def settled_errors(editor: EditorQueries, paths: Sequence[str],
                         settings: EditorQuerySettings) -> tuple[list[DiagnosticFact], bool]:
    """The errors once two answers `diagnosticsSettleS` apart agree; (the last answer, False) when
    they were still changing after `diagnosticsWaitS`."""
    deadline = time.monotonic() + settings.diagnostics_wait_s
    last = await errors_of(editor, paths)
    while time.monotonic() < deadline:
        await asyncio.sleep(min(settings.diagnostics_settle_s, max(0.0, deadline - time.monotonic())))
        now = await errors_of(editor, paths)
        if now == last:
            return now, True
        last = now
    return last, settings.diagnostics_wait_s == 0


def new_errors(before: list[DiagnosticFact], before_texts: Texts, after: list[DiagnosticFact],
               after_texts: Texts) -> list[DiagnosticFact]:
    """Errors after the edit beyond those the files had before it (counted, so a second copy is new)."""
    left = Counter(_key(d, before_texts) for d in before)
    fresh: list[DiagnosticFact] = []
    for d in after:
        key = _key(d, after_texts)
        if left[key] > 0:
            left[key] -= 1
        else:
            fresh.append(d)
    return fresh


def note(fresh: list[DiagnosticFact], settled: bool, settings: EditorQuerySettings) -> str:
    caveat = "" if settled else f" (still changing after {settings.diagnostics_wait_s:g}s)"
    if not fresh:
        return f"\n\nThe editor reports no new errors in the edited files{caveat}."
    shown = fresh[:settings.diagnostics_note_lines]
    lines = [f"  {d.spot.path}:{d.spot.start.line + 1}:{d.spot.start.column + 1}: "
             f"{d.message.splitlines()[0][:200] if d.message else ''}{_tag(d)}" for d in shown]
    more = f"\n  ... {len(fresh) - len(shown)} more" if len(fresh) > len(shown) else ""
    return (f"\n\nThe editor reports {len(fresh)} new error(s) in the edited files{caveat} (its language servers; "
            "not a verification — only verify_project verifies):\n" + "\n".join(lines) + more)


def _tag(d: DiagnosticFact) -> str:
    """Who reported it and its rule, as editor_diagnostics shows them (e.g. `[ts 2322]`)."""
    tag = " ".join(t for t in (d.source, d.code) if t)
    return f" [{tag}]" if tag else ""


class EditDiagnostics:
    """One edit's before/after: `begin` before the edit runs, `note_for` once it has."""

    def __init__(self, editor: EditorQueries, documents: DocumentSource, settings: EditorQuerySettings,
                 paths: Sequence[str]) -> None:
        self.editor = editor
        self.documents = documents
        self.settings = settings
        self.paths = list(paths)
        self.before: list[DiagnosticFact] | None = None
        self.before_texts: Texts = {}

    @staticmethod
    def wanted(editor: EditorQueries | None, settings: EditorQuerySettings) -> bool:
        return (editor is not None and settings.diagnostics_after_edits
                and QueryKind.DIAGNOSTICS in editor.kinds)

    async def begin(self) -> None:
        try:
            self.before = await errors_of(self.editor, self.paths)
            self.before_texts = await texts_of(self.documents, self.paths)
        except EditorQueryError:
            self.before = None  # no baseline: after the edit every error counts as new

    async def note_for(self, written: Sequence[str]) -> str:
        paths = sorted({*self.paths, *written})
        try:
            after, settled = await settled_errors(self.editor, paths, self.settings)
        except EditorQueryError as exc:
            return f"\n\n(The editor's diagnostics could not be read after the edit: {exc.message}.)"
        fresh = new_errors(self.before or [], self.before_texts, after, await texts_of(self.documents, paths))
        return note(fresh, settled, self.settings)
