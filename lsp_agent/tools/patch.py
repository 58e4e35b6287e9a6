"""apply_patch, planning: (parsed patch or exact replacement, documents) -> EditPlan, or why not.

Nothing here touches the file system. The tool reads the documents; this module turns them into
an EditPlan whose TextEdits, applied to the text they were computed from, give exactly `new_text`
(checked before a plan is returned). The grammar lives in patch_grammar, hunk location in
patch_match, line-range TextEdits in text_edits.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from lsp_agent.domain.edits import (
    CreateFile,
    DeleteFile,
    EditPlan,
    FileOp,
    RenameFile,
    TextEdit,
    UpdateFile,
    position_after,
    position_at,
)
from lsp_agent.domain.ports import Document
from lsp_agent.tools.patch_grammar import ADD, UPDATE, AddOp, DeleteOp, Hunk, ParsedPatch, UpdateOp
from lsp_agent.tools.patch_match import Matcher, MatchError, hunk_regions, line_span
from lsp_agent.tools.text_edits import FileText, Region, dominant_eol, render

# UTF-8 decoding with surrogateescape turns undecodable bytes into these.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class FileChange:
    """One line of the tool's summary."""

    action: Literal["A", "M", "D", "R"]
    path: str
    new_path: str | None = None
    added: int = 0
    removed: int = 0
    # 1-based line ranges of the changes in the new text
    where: tuple[tuple[int, int], ...] = ()
    edits: int = 0


@dataclass(frozen=True)
class Planned:
    plan: EditPlan
    changes: tuple[FileChange, ...]


@dataclass(frozen=True)
class PlanFailure:
    path: str
    kind: Literal["missing", "exists", "no_match", "ambiguous", "invalid"]
    message: str


def _update(path: str, doc: Document, regions: list[Region], ft: FileText,
            keep_missing_eol: bool) -> tuple[UpdateFile, FileChange]:
    new_text, edits = render(ft, regions, keep_missing_eol, doc.text)
    where, delta = [], 0
    for r in regions:
        first = r.start + delta + 1
        where.append((first, first + max(len(r.new), 1) - 1))
        delta += len(r.new) - (r.end - r.start)
    op = UpdateFile(path=path, edits=edits, base_text=doc.text, base_version=doc.version,
                    new_text=new_text)
    change = FileChange("M", path, added=sum(len(r.new) for r in regions),
                        removed=sum(r.end - r.start for r in regions), where=tuple(where), edits=len(edits))
    return op, change


def _text_problem(path: str, doc: Document) -> PlanFailure | None:
    # Fast paths first: an ASCII text, or one that encodes strictly, has no undecodable bytes.
    if doc.text.isascii():
        return None
    try:
        doc.text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return None
    if _UNDECODABLE.search(doc.text):
        return PlanFailure(path, "invalid", f"{path} is not valid UTF-8 text; apply_patch only edits text files.")
    return None


def plan_patch(patch: ParsedPatch, docs: Mapping[str, Document | None]) -> Planned | PlanFailure:
    """Compute every file's new content; the first failure returns instead of a plan.

    `docs` holds the current document (None: absent) of every path in `patch.paths()`.
    """
    ops: list[FileOp] = []
    changes: list[FileChange] = []
    for op in patch.ops:
        doc = docs.get(op.path)
        if isinstance(op, AddOp):
            if doc is not None:
                return PlanFailure(op.path, "exists", f"{op.path} already exists; use '{UPDATE} {op.path}' "
                                                      "with hunks to change it (read it first).")
            ops.append(CreateFile(path=op.path, text=op.text))
            changes.append(FileChange("A", op.path, added=len(FileText.split(op.text).lines)))
            continue
        if doc is None:
            verb = "delete" if isinstance(op, DeleteOp) else "update"
            return PlanFailure(op.path, "missing", f"cannot {verb} {op.path}: it does not exist. Check the "
                                                   f"path with list_dir; to create a file use '{ADD} <path>'.")
        if isinstance(op, DeleteOp):
            ops.append(DeleteFile(path=op.path, base_text=doc.text))
            changes.append(FileChange("D", op.path, removed=len(FileText.split(doc.text).lines)))
            continue
        if (problem := _text_problem(op.path, doc)) is not None:
            return problem
        target = op.move_to or op.path
        if op.move_to is not None:
            if docs.get(op.move_to) is not None:
                return PlanFailure(op.move_to, "exists", f"cannot move {op.path} to {op.move_to}: the target "
                                                         "already exists. Choose another path or delete it.")
            ops.append(RenameFile(path=op.path, new_path=op.move_to))
        if not op.hunks:
            changes.append(FileChange("R", op.path, new_path=op.move_to))
            continue
        outcome = _regions_for(op, doc)
        if isinstance(outcome, PlanFailure):
            return outcome
        ft, regions = outcome
        update, change = _update(target, doc, regions, ft, keep_missing_eol=False)
        if op.move_to is not None:
            change = FileChange("R", op.path, op.move_to, change.added, change.removed, change.where,
                                change.edits)
        if update.edits:  # an update whose '+' lines equal its '-' lines changes nothing
            ops.append(update)
        changes.append(change)
    if not ops:
        return PlanFailure(patch.ops[0].path, "invalid", "the patch changes nothing: its '+' lines equal the "
                                                         "'-' lines they replace (or the file already has them).")
    return Planned(EditPlan(ops=ops), tuple(changes))


def _regions_for(op: UpdateOp, doc: Document) -> tuple[FileText, list[Region]] | PlanFailure:
    ft = FileText.split(doc.text)
    matcher = Matcher(op.path, ft, doc.text)
    regions: list[Region] = []
    cursor = 0
    for number, hunk in enumerate(op.hunks, 1):
        what = f"hunk {number} (patch line {hunk.line})" if len(op.hunks) > 1 else f"the hunk at patch line {hunk.line}"
        try:
            start, index, lines = matcher.locate(hunk, cursor, what)
        except MatchError as exc:
            return PlanFailure(op.path, exc.kind, exc.message)
        old_count = sum(1 for kind, _ in lines if kind != "+")
        if old_count or hunk.anchors:
            cursor = start + old_count
        regions.extend(hunk_regions(ft, start, index, lines))
    regions.sort(key=lambda r: (r.start, r.end))
    for a, b in itertools.pairwise(regions):
        if b.start < a.end:
            overlap = line_span(b.start, a.end - b.start)
            return PlanFailure(op.path, "invalid", f"two hunks of {op.path} change the same lines ({overlap}); "
                                                   "merge them into one hunk.")
    return ft, regions


def plan_replacement(path: str, doc: Document | None, old_text: str, new_text: str) -> Planned | PlanFailure:
    """The exact-replacement form: `old_text` must occur exactly once (tolerant passes apply line-wise)."""
    if doc is None:
        return PlanFailure(path, "missing", f"{path} does not exist. Check the path with list_dir; to create a "
                                            "new file use write_file.")
    if not old_text:
        return PlanFailure(path, "invalid", "old_text is empty; give the exact current text to replace (to "
                                            "create a file use write_file).")
    if old_text == new_text:
        return PlanFailure(path, "invalid", "old_text and new_text are identical; there is nothing to change.")
    if (problem := _text_problem(path, doc)) is not None:
        return problem
    text = doc.text
    eol = dominant_eol(text)  # not FileText.split: the exact path never needs the file as lines
    # The model saw lines, not their CRLF: text it writes gets the file's line ending.
    if eol != "\n" and "\r" not in new_text:
        new_text = new_text.replace("\n", eol)
    variants = [(old_text, new_text)]
    if eol != "\n" and "\r" not in old_text and "\n" in old_text:
        variants.append((old_text.replace("\n", eol), new_text))
    for old, new in variants:
        hits = _find_all(text, old)
        if len(hits) > 1:
            count = len(FileText.split(old).lines)
            spans = ", ".join(line_span(position_at(text, h).line, count) for h in hits[:10])
            return PlanFailure(path, "ambiguous", f"old_text matches {len(hits)} places in {path} ({spans}); "
                                                  "include more surrounding lines so it matches exactly once.")
        if hits:
            at, stop = hits[0], hits[0] + len(old)
            # LSP cannot address the middle of a CRLF: widen the range to the whole pair.
            if 0 < at < len(text) and text[at - 1:at + 1] == "\r\n":
                at, new = at - 1, "\r" + new
            if 0 < stop < len(text) and text[stop - 1:stop + 1] == "\r\n":
                stop, new = stop + 1, new + "\n"
            begin = position_at(text, at)
            edit = TextEdit(start=begin, end=position_after(text, begin, at, stop), new_text=new)
            if (at, stop) == (hits[0], hits[0] + len(old)):
                # `old` occurs once: replace() builds the result in one copy (a join copies twice)
                result = text.replace(old, new, 1)
            else:  # widened over a CRLF
                result = "".join((text[:at], new, text[stop:]))
            first = edit.start.line + 1
            added, removed = len(FileText.split(new).lines), len(FileText.split(old).lines)
            op = UpdateFile(path=path, edits=[edit], base_text=text, base_version=doc.version,
                            new_text=result)
            change = FileChange("M", path, added=added, removed=removed,
                                where=((first, first + max(added, 1) - 1),), edits=1)
            return Planned(EditPlan(ops=[op]), (change,))
    hunk = Hunk((), tuple([("-", s) for s in FileText.split(old_text).lines]
                          + [("+", s) for s in FileText.split(new_text).lines]))
    ft = FileText.split(text)
    try:
        start, index, lines = Matcher(path, ft, text).locate(hunk, 0, "old_text")
    except MatchError as exc:
        return PlanFailure(path, exc.kind, exc.message)
    regions = hunk_regions(ft, start, index, lines)
    if not regions:
        return PlanFailure(path, "invalid", f"the replacement changes nothing: {path} already has that text.")
    op, change = _update(path, doc, regions, ft, keep_missing_eol=True)
    return Planned(EditPlan(ops=[op]), (change,))


def _find_all(text: str, needle: str) -> list[int]:
    hits, at = [], text.find(needle)
    while at >= 0:
        hits.append(at)
        at = text.find(needle, at + 1)
    return hits
