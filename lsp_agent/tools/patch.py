"""apply_patch, pure part: the `*** Begin Patch` grammar, a tolerant hunk matcher, and edit plans.

Nothing here touches the file system. The tool reads the documents; this module turns
(patch, documents) into an EditPlan whose TextEdits, applied to the text they were computed
from, give exactly `new_text` (checked before a plan is returned).

Matching passes, in order: exact, ignoring trailing whitespace, ignoring indentation, Unicode
punctuation folded. The first pass that finds anything decides, and it must find exactly one
place: a silently wrong edit costs more than asking the model for more context.
"""

from __future__ import annotations

import difflib
import heapq
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from lsp_agent.core.edits import (
    CreateFile,
    DeleteFile,
    EditPlan,
    FileOp,
    Position,
    RenameFile,
    TextEdit,
    UpdateFile,
    digest,
    utf16_len,
)
from lsp_agent.core.ports import Document
from lsp_agent.tools.paths import normalize

# --- grammar -------------------------------------------------------------------------------------

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
UPDATE = "*** Update File:"
MOVE = "*** Move to:"
END_OF_FILE = "*** End of File"
# Models trained on unified diffs sometimes write `@@ -12,7 +12,8 @@ def f():`; keep only the text.
_UNIFIED_HEADER = re.compile(r"^-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@\s?(.*)$")

Kind = Literal[" ", "-", "+"]


class PatchParseError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Hunk:
    anchors: tuple[str, ...]  # `@@ text` lines: the hunk starts after the next line matching each
    lines: tuple[tuple[Kind, str], ...]
    end_of_file: bool = False
    line: int = 0  # patch line where the hunk starts (0: built from old_text/new_text)

    @property
    def old_lines(self) -> list[str]:
        return [text for kind, text in self.lines if kind != "+"]


@dataclass(frozen=True)
class AddOp:
    path: str
    text: str
    line: int


@dataclass(frozen=True)
class DeleteOp:
    path: str
    line: int


@dataclass(frozen=True)
class UpdateOp:
    path: str
    move_to: str | None
    hunks: tuple[Hunk, ...]
    line: int


PatchOp = AddOp | DeleteOp | UpdateOp


@dataclass(frozen=True)
class ParsedPatch:
    ops: tuple[PatchOp, ...]

    def paths(self) -> list[str]:
        """Every path the patch touches, move targets included, in patch order."""
        seen: dict[str, None] = {}
        for op in self.ops:
            seen[op.path] = None
            if isinstance(op, UpdateOp) and op.move_to is not None:
                seen[op.move_to] = None
        return list(seen)


def _header(line: str, marker: str) -> str | None:
    stripped = line.strip()
    if stripped.lower().startswith(marker.lower()):
        return stripped[len(marker):].strip()
    return None


def _is_wrapper(line: str) -> bool:
    """Shell heredoc or markdown fence lines a model may wrap the patch in."""
    s = line.strip()
    return s.startswith("```") or "<<" in s or s in {"EOF", "'EOF'", "PATCH"}


def parse_patch(text: str) -> ParsedPatch:
    """Parse the patch grammar; raise PatchParseError naming the line and what was expected."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    filled = [i for i, ln in enumerate(lines) if ln.strip()]
    if not filled:
        raise PatchParseError(1, f"the patch is empty; expected '{BEGIN}' as the first line")
    first, last = filled[0], filled[-1]
    if lines[first].strip() != BEGIN and _is_wrapper(lines[first]) and len(filled) > 1:
        first = filled[1]
    if lines[first].strip() != BEGIN:
        raise PatchParseError(first + 1, f"expected '{BEGIN}' as the first line, got {lines[first].strip()!r}")
    if lines[last].strip() != END and _is_wrapper(lines[last]) and len(filled) > 1:
        last = filled[-2]
    if last <= first or lines[last].strip() != END:
        raise PatchParseError(last + 1, f"expected '{END}' as the last line (is the patch cut off?), "
                                        f"got {lines[last].strip()!r}")
    ops: list[PatchOp] = []
    owner: dict[str, int] = {}
    i = first + 1
    while i < last:
        if not lines[i].strip():
            i += 1
            continue
        start = i
        op: PatchOp
        if (path := _header(lines[i], ADD)) is not None:
            op, i = _parse_add(lines, i + 1, last, _path(path, start, ADD))
        elif (path := _header(lines[i], DELETE)) is not None:
            op, i = DeleteOp(_path(path, start, DELETE), start + 1), i + 1
        elif (path := _header(lines[i], UPDATE)) is not None:
            op, i = _parse_update(lines, i + 1, last, _path(path, start, UPDATE), start + 1)
        else:
            after_add = bool(ops) and isinstance(ops[-1], AddOp)
            hint = f"; every line of an '{ADD}' section must start with '+'" if after_add else ""
            raise PatchParseError(i + 1, f"expected a file header ('{ADD} <path>', '{UPDATE} <path>' or "
                                         f"'{DELETE} <path>'), got {lines[i].strip()!r}{hint}")
        for p in [op.path] + ([op.move_to] if isinstance(op, UpdateOp) and op.move_to else []):
            if p in owner:
                raise PatchParseError(start + 1, f"{p} already appears in the section at line {owner[p]}; "
                                                 "put all changes to one file in one section")
            owner[p] = start + 1
        ops.append(op)
    if not ops:
        raise PatchParseError(first + 2, f"expected at least one file section ('{ADD}', '{UPDATE}', "
                                         f"'{DELETE}') between '{BEGIN}' and '{END}'")
    return ParsedPatch(tuple(ops))


def _path(raw: str, index: int, marker: str) -> str:
    if not raw:
        raise PatchParseError(index + 1, f"expected a path after '{marker}'")
    return normalize(raw)


def _parse_add(lines: list[str], i: int, end: int, path: str) -> tuple[AddOp, int]:
    start = i
    content: list[str] = []
    while i < end:
        if lines[i].startswith("+"):
            content.append(lines[i][1:])
        elif not lines[i].strip() and _next_filled_starts_with(lines, i, end, "+"):
            content.append("")  # an empty line the model wrote without its '+'
        else:
            break
        i += 1
    return AddOp(path, "".join(c + "\n" for c in content), start), i


def _next_filled_starts_with(lines: list[str], i: int, end: int, prefix: str) -> bool:
    for j in range(i + 1, end):
        if lines[j].strip():
            return lines[j].startswith(prefix)
    return False


def _parse_update(lines: list[str], i: int, end: int, path: str, header_line: int) -> tuple[UpdateOp, int]:
    move_to: str | None = None
    if i < end and (target := _header(lines[i], MOVE)) is not None:
        move_to = _path(target, i, MOVE)
        i += 1
    hunks: list[Hunk] = []
    while i < end:
        if not lines[i].strip() and not hunks:
            i += 1
            continue
        if lines[i].startswith("***"):
            break
        hunk, i = _parse_hunk(lines, i, end, first=not hunks)
        hunks.append(hunk)
    if not hunks and move_to is None:
        raise PatchParseError(header_line, f"'{UPDATE} {path}' has no hunks; expected '@@' followed by lines "
                                           "starting with ' ', '-' or '+'")
    return UpdateOp(path, None if move_to == path else move_to, tuple(hunks), header_line), i


def _parse_hunk(lines: list[str], i: int, end: int, first: bool) -> tuple[Hunk, int]:
    start = i
    anchors: list[str] = []
    while i < end and lines[i].startswith("@@"):
        anchor = lines[i][2:].strip()
        if (m := _UNIFIED_HEADER.match(anchor)) is not None:
            anchor = m.group(1).strip()
        if anchor:
            anchors.append(anchor)
        i += 1
    if i == start and not first:
        raise PatchParseError(i + 1, f"expected '@@' to start the next hunk, got {lines[i]!r}")
    body: list[tuple[Kind, str]] = []
    bare: list[bool] = []  # the patch line was empty, not ' '
    eof = False
    while i < end:
        line = lines[i]
        if line.rstrip() == END_OF_FILE:
            eof = True
            i += 1
            break
        if line.startswith(("***", "@@")):
            break
        if line == "":
            body.append((" ", ""))  # a blank context line whose leading space got lost
        elif line[0] in " -+":
            body.append((line[0], line[1:]))  # type: ignore[arg-type]  # checked just above
        else:
            raise PatchParseError(i + 1, "expected a hunk line starting with ' ' (unchanged context), '-' "
                                         f"(remove) or '+' (add), got {line!r}; every line of a hunk, "
                                         "unchanged ones included, needs one of these prefixes")
        bare.append(line == "")
        i += 1
    # Empty lines that only separate sections are not context.
    while body and bare[-1]:
        body.pop()
        bare.pop()
    if not body:
        raise PatchParseError(start + 1, "the hunk has no lines; expected lines starting with ' ', '-' or '+' "
                                         "after '@@'")
    return Hunk(tuple(anchors), tuple(body), eof, start + 1), i


# --- text, positions and TextEdits ---------------------------------------------------------------

# LSP line breaks: a position's line counts these, nothing else (not U+2028, not form feed).
_EOL = re.compile(r"\r\n|\n|\r")
# UTF-8 decoding with surrogateescape turns undecodable bytes into these.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class FileText:
    lines: list[str]  # without line endings
    eols: list[str]  # each line's ending; only the last may be "" (no final newline)
    eol: str  # the ending new lines get: the file's most common one

    @classmethod
    def split(cls, text: str) -> FileText:
        parts = _EOL.split(text)
        breaks = _EOL.findall(text)
        contents = parts
        if contents[-1] == "":
            contents = contents[:-1]
        else:
            breaks = [*breaks, ""]
        counts = {e: breaks.count(e) for e in ("\n", "\r\n", "\r")}
        best = max(counts.values())
        eol = "\n" if best == 0 or counts["\n"] == best else ("\r\n" if counts["\r\n"] == best else "\r")
        return cls(contents, breaks, eol)

    @property
    def missing_final_eol(self) -> bool:
        return bool(self.lines) and self.eols[-1] == ""


def _line_bounds(text: str) -> tuple[list[int], list[int]]:
    starts, ends = [0], []
    for m in _EOL.finditer(text):
        ends.append(m.start())
        starts.append(m.end())
    ends.append(len(text))
    return starts, ends


def _offset(text: str, starts: list[int], ends: list[int], pos: Position) -> int:
    if pos.line < 0 or pos.character < 0:
        raise ValueError(f"negative position {pos}")
    if pos.line >= len(starts):  # past the last line: LSP clients clamp to the end
        return len(text)
    offset, stop, units = starts[pos.line], ends[pos.line], 0
    while offset < stop and units < pos.character:
        units += 2 if ord(text[offset]) > 0xFFFF else 1
        offset += 1
    return offset


def apply_text_edits(text: str, edits: Sequence[TextEdit]) -> str:
    """Apply LSP TextEdits (ranges in UTF-16 units, all relative to `text`); overlapping ranges raise."""
    starts, ends = _line_bounds(text)
    spans = []
    for index, edit in enumerate(edits):
        a = _offset(text, starts, ends, edit.start)
        b = _offset(text, starts, ends, edit.end)
        if b < a:
            raise ValueError(f"edit {index} ends before it starts")
        spans.append((a, b, index, edit.new_text))
    spans.sort()
    out: list[str] = []
    cursor = 0
    for a, b, index, new in spans:
        if a < cursor:
            raise ValueError(f"edit {index} overlaps an earlier edit")
        out.append(text[cursor:a])
        out.append(new)
        cursor = b
    out.append(text[cursor:])
    return "".join(out)


def position_at(text: str, offset: int) -> Position:
    """The LSP position of a code-point offset into `text`."""
    line = line_start = 0
    for m in _EOL.finditer(text, 0, offset):
        line, line_start = line + 1, m.end()
    return Position(line=line, character=utf16_len(text[line_start:offset]))


@dataclass(frozen=True)
class Region:
    """Replace file lines [start, end) with `new` (lines without endings)."""

    start: int
    end: int
    new: tuple[str, ...]


def render(ft: FileText, regions: Sequence[Region], keep_missing_eol: bool) -> tuple[str, list[TextEdit]]:
    """The new text and one line-range TextEdit per region.

    New lines get the file's line ending. A missing final newline stays missing unless a region
    changes the end of the file; then the file ends with a newline, unless `keep_missing_eol`.
    """
    lines, eols, eol, n = ft.lines, ft.eols, ft.eol, len(ft.lines)
    # The independent computation: the new file as (content, ending) pairs.
    pairs: list[tuple[str, str]] = []
    prev = 0
    for r in regions:
        pairs.extend(zip(lines[prev:r.start], eols[prev:r.start], strict=True))
        pairs.extend((line, eol) for line in r.new)
        prev = r.end
    pairs.extend(zip(lines[prev:], eols[prev:], strict=True))
    pairs = [(c, e or eol) for c, e in pairs[:-1]] + pairs[-1:]
    touches_end = any(r.end == n for r in regions)
    if pairs and keep_missing_eol and ft.missing_final_eol and touches_end:
        pairs[-1] = (pairs[-1][0], "")
    new_text = "".join(c + e for c, e in pairs)

    edits: list[TextEdit] = []
    for r in regions:
        chunk = "".join(line + eol for line in r.new)
        start = Position(line=r.start, character=0)
        end = Position(line=r.end, character=0)
        if r.end == n and ft.missing_final_eol:
            end = Position(line=n - 1, character=utf16_len(lines[-1]))
            if r.start == n:  # appending after a last line that has no newline
                start, chunk = end, eol + chunk
            if keep_missing_eol:
                if chunk:
                    chunk = chunk[: -len(eol)]
                elif r.start > 0:  # deleting the tail: the line before loses its newline
                    start = Position(line=r.start - 1, character=utf16_len(lines[r.start - 1]))
        edits.append(TextEdit(start=start, end=end, new_text=chunk))
    return new_text, edits


# --- matching ------------------------------------------------------------------------------------

_PUNCTUATION = str.maketrans({
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
    **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    "\u2026": "...",
    "\u200b": "",
    "\ufeff": "",
})

Normalizer = Callable[[str], str]
PASSES: tuple[tuple[str, Normalizer], ...] = (
    ("exact", lambda s: s),
    ("ignoring trailing whitespace", str.rstrip),
    ("ignoring indentation", str.strip),
    ("with Unicode punctuation normalised", lambda s: s.translate(_PUNCTUATION).strip()),
)
_TOLERATED = "also tried ignoring trailing whitespace, indentation and Unicode punctuation"


class MatchError(Exception):
    def __init__(self, kind: Literal["no_match", "ambiguous"], message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _occurrences(hay: Sequence[str], needle: Sequence[str], lo: int) -> list[int]:
    k, first = len(needle), needle[0]
    return [p for p in range(lo, len(hay) - k + 1)
            if hay[p] == first and all(hay[p + j] == needle[j] for j in range(1, k))]


def _span(start: int, count: int) -> str:
    return f"line {start + 1}" if count <= 1 else f"lines {start + 1}-{start + count}"


def _show(line: str, limit: int = 200) -> str:
    return line if len(line) <= limit else line[:limit] + " [...]"


class Matcher:
    """Locates hunks in one file, front to back."""

    def __init__(self, path: str, ft: FileText) -> None:
        self.path = path
        self.ft = ft
        self._normalized: dict[int, list[str]] = {}

    def _hay(self, index: int) -> list[str]:
        if index not in self._normalized:
            norm = PASSES[index][1]
            self._normalized[index] = [norm(line) for line in self.ft.lines]
        return self._normalized[index]

    def locate(self, hunk: Hunk, cursor: int, what: str) -> tuple[int, int, tuple[tuple[Kind, str], ...]]:
        """(start line, pass index, the hunk lines used) or MatchError."""
        starts = [cursor]
        for anchor in hunk.anchors:
            starts = self._after_anchor(anchor, starts, what)
        body = hunk.lines
        variants = [body]
        while body and body[-1][0] == " " and not body[-1][1].strip():
            body = body[:-1]  # a trailing blank context line often stands for the final newline
            variants.append(body)
        for lines in variants:
            old = [text for kind, text in lines if kind != "+"]
            if not old:  # pure addition: after the anchor, else at the end of the file
                if not hunk.anchors:
                    return len(self.ft.lines), 0, lines
                if len(set(starts)) > 1:
                    raise self._ambiguous(sorted(set(starts)), 0, what, anchored=True)
                return starts[0], 0, lines
            for index, (_, norm) in enumerate(PASSES):
                hay, needle = self._hay(index), [norm(s) for s in old]
                found: set[int] = set()
                for lo in starts:
                    hits = _occurrences(hay, needle, lo)
                    if hunk.end_of_file:
                        hits = [h for h in hits if h + len(old) == len(hay)]
                    found.update(hits[:1] if hunk.anchors else hits)
                if len(found) == 1:
                    return found.pop(), index, lines
                if found:
                    raise self._ambiguous(sorted(found), len(old), what, anchored=bool(hunk.anchors))
        raise self._not_found(hunk.old_lines, cursor, what, hunk.end_of_file)

    def _after_anchor(self, anchor: str, starts: list[int], what: str) -> list[int]:
        passes: list[Callable[[str, str], bool]] = [
            *(lambda line, a, n=norm: n(line) == n(a) for _, norm in PASSES),
            lambda line, a: bool(a.strip()) and PASSES[3][1](a) in PASSES[3][1](line),
        ]
        lines = self.ft.lines
        for same in passes:
            found = set()
            for lo in starts:
                hit = next((i for i in range(lo, len(lines)) if same(lines[i], anchor)), None)
                if hit is not None:
                    found.add(hit + 1)
            if found:
                return sorted(found)
        near = self._closest([anchor])
        hint = "" if near is None else f" The most similar is line {near[0] + 1}: {_show(lines[near[0]])!r}."
        after = f" after line {min(starts)}" if min(starts) else ""
        raise MatchError("no_match", f"{what}: the '@@ {anchor}' context line was not found in {self.path}"
                                     f"{after} ({_TOLERATED}).{hint} Re-read the file with read_file and use a "
                                     "line that exists, or drop the '@@' text.")

    def _ambiguous(self, hits: list[int], count: int, what: str, anchored: bool) -> MatchError:
        shown = ", ".join(_span(h, count) for h in hits[:10]) + (", ..." if len(hits) > 10 else "")
        more = "make the '@@' line name a unique enclosing line or add " if anchored else "add "
        return MatchError("ambiguous", f"{what} matches {len(hits)} places in {self.path} ({shown}); "
                                       f"{more}more unchanged context lines so it matches exactly one place.")

    def _not_found(self, old: list[str], cursor: int, what: str, eof: bool) -> MatchError:
        lines = self.ft.lines
        where = " at the end of the file" if eof else (f" after line {cursor}" if cursor else "")
        subject = (f"old_text ({len(old)} line(s)) was" if what == "old_text"
                   else f"{what}: its {len(old)} context/removed line(s) were")
        head = f"{subject} not found in {self.path}{where} ({_TOLERATED})."
        if cursor and not eof:
            for index, (_, norm) in enumerate(PASSES):
                hits = _occurrences(self._hay(index), [norm(s) for s in old], 0)
                if hits:
                    return MatchError("no_match", f"{head} They match at {_span(hits[0], len(old))}, before the "
                                                  "previous hunk: order the hunks as they appear in the file.")
        reason = (" The file may differ from what you expect (whitespace, line wrapping), or it changed since "
                  "you read it.")
        near = self._closest(old)
        if near is None:
            return MatchError("no_match", f"{head}{reason} No similar lines were found. Re-read the file with "
                                          "read_file and copy the lines to replace exactly.")
        start, ratio = near
        count = min(len(old), len(lines) - start)
        shown = "\n".join(f"{start + j + 1:>6} | {_show(lines[start + j])}" for j in range(min(count, 12)))
        if count > 12:
            shown += "\n       | [...]"
        diff = ""
        for j in range(count):
            if PASSES[3][1](lines[start + j]) != PASSES[3][1](old[j]):
                diff = (f"\nFirst difference: line {start + j + 1} is {_show(lines[start + j])!r} but "
                        f"{'old_text' if what == 'old_text' else 'the patch'} has {_show(old[j])!r}.")
                break
        lo, hi = max(1, start + 1 - 3), min(len(lines), start + count + 3)
        return MatchError("no_match", f"{head}{reason}\nClosest match ({round(ratio * 100)}% similar) at "
                                      f"{_span(start, count)}:\n{shown}{diff}\nRe-read the file with read_file "
                                      f"(start_line={lo}, end_line={hi}) and retry with its current text.")

    def _closest(self, old: list[str]) -> tuple[int, float] | None:
        """The window of len(old) lines most similar to `old` (difflib), if any is similar at all."""
        lines = [line.strip() for line in self.ft.lines]
        want = [line.strip() for line in old]
        if not lines or not any(want):
            return None
        k = len(want)
        # Seed candidate windows from the most distinctive (longest) patch lines, so a large file
        # costs a few cheap line comparisons per line, not a full diff per window.
        matcher = difflib.SequenceMatcher(autojunk=False)
        seeds: dict[int, None] = {}
        for j in sorted(range(k), key=lambda j: -len(want[j]))[:3]:
            if not want[j]:
                continue
            matcher.set_seq2(want[j])
            scored = []
            for i, line in enumerate(lines):
                matcher.set_seq1(line)
                if (matcher.real_quick_ratio() >= 0.5 and matcher.quick_ratio() >= 0.5
                        and (r := matcher.ratio()) >= 0.5):
                    scored.append((r, -i))
            for _, neg in heapq.nlargest(10, scored):
                seeds[min(max(-neg - j, 0), max(len(lines) - k, 0))] = None
        target = "\n".join(want)
        best: tuple[int, float] | None = None
        for start in seeds:
            ratio = difflib.SequenceMatcher(None, "\n".join(lines[start:start + k]), target,
                                            autojunk=False).ratio()
            if best is None or ratio > best[1]:
                best = (start, ratio)
        return best


def _indent_shift(file_lines: Sequence[str], patch_lines: Sequence[str]) -> tuple[str, str] | None:
    """(remove, add): the patch's indentation differs from the file's by one consistent prefix."""
    shift: tuple[str, str] | None = None
    for f, p in zip(file_lines, patch_lines, strict=True):
        if not f.strip() or not p.strip():
            continue
        fi, pi = f[: len(f) - len(f.lstrip())], p[: len(p) - len(p.lstrip())]
        if fi.endswith(pi):
            this = ("", fi[: len(fi) - len(pi)])
        elif pi.endswith(fi):
            this = (pi[: len(pi) - len(fi)], "")
        else:
            return None
        if shift is not None and this != shift:
            return None
        shift = this
    return shift if shift != ("", "") else None


def hunk_regions(ft: FileText, start: int, pass_index: int,
                 lines: Sequence[tuple[Kind, str]]) -> list[Region]:
    """The changed runs of a located hunk; context lines keep the file's own text."""
    shift = None
    if PASSES[pass_index][0] in ("ignoring indentation", "with Unicode punctuation normalised"):
        old = [text for kind, text in lines if kind != "+"]
        shift = _indent_shift(ft.lines[start:start + len(old)], old)
        added = [text for kind, text in lines if kind == "+" and text.strip()]
        if shift is not None and not all(text.startswith(shift[0]) for text in added):
            shift = None

    def reindent(text: str) -> str:
        if shift is None or not text.strip():
            return text
        return shift[1] + text[len(shift[0]):]

    regions: list[Region] = []
    i, run_start = start, -1
    run_new: list[str] = []
    for kind, text in [*lines, (" ", "")]:
        if kind == " ":
            if run_start >= 0:
                regions.append(_trim(ft, Region(run_start, i, tuple(run_new))))
                run_start, run_new = -1, []
            i += 1
            continue
        if run_start < 0:
            run_start = i
        if kind == "-":
            i += 1
        else:
            run_new.append(reindent(text))
    return [r for r in regions if r.start != r.end or r.new]


def _trim(ft: FileText, r: Region) -> Region:
    """Drop leading/trailing lines the region would rewrite unchanged (models often do)."""
    start, end, new = r.start, r.end, list(r.new)
    while start < end and new and ft.lines[start] == new[0] and ft.eols[start] in ("", ft.eol):
        if ft.eols[start] == "" and len(new) > 1:
            break
        start, new = start + 1, new[1:]
    while end > start and new and ft.lines[end - 1] == new[-1] and ft.eols[end - 1] in ("", ft.eol):
        end, new = end - 1, new[:-1]
    return Region(start, end, tuple(new))


# --- plans ---------------------------------------------------------------------------------------


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
    new_text, edits = render(ft, regions, keep_missing_eol)
    if apply_text_edits(doc.text, edits) != new_text:  # a bug here must never reach a file
        raise AssertionError(f"edits for {path} do not reproduce the new text")
    where, delta = [], 0
    for r in regions:
        first = r.start + delta + 1
        where.append((first, first + max(len(r.new), 1) - 1))
        delta += len(r.new) - (r.end - r.start)
    op = UpdateFile(path=path, edits=edits, base_digest=digest(doc.text), base_version=doc.version,
                    new_text=new_text)
    change = FileChange("M", path, added=sum(len(r.new) for r in regions),
                        removed=sum(r.end - r.start for r in regions), where=tuple(where), edits=len(edits))
    return op, change


def _text_problem(path: str, doc: Document) -> PlanFailure | None:
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
            ops.append(DeleteFile(path=op.path, base_digest=digest(doc.text)))
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
    matcher = Matcher(op.path, ft)
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
            return PlanFailure(op.path, "invalid", f"two hunks of {op.path} change the same lines "
                                                   f"({_span(b.start, a.end - b.start)}); merge them into one hunk.")
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
    ft = FileText.split(text)
    # The model saw lines, not their CRLF: text it writes gets the file's line ending.
    if ft.eol != "\n" and "\r" not in new_text:
        new_text = new_text.replace("\n", ft.eol)
    variants = [(old_text, new_text)]
    if ft.eol != "\n" and "\r" not in old_text and "\n" in old_text:
        variants.append((old_text.replace("\n", ft.eol), new_text))
    for old, new in variants:
        hits = _find_all(text, old)
        if len(hits) > 1:
            count = len(FileText.split(old).lines)
            spans = ", ".join(_span(position_at(text, h).line, count) for h in hits[:10])
            return PlanFailure(path, "ambiguous", f"old_text matches {len(hits)} places in {path} ({spans}); "
                                                  "include more surrounding lines so it matches exactly once.")
        if hits:
            at, stop = hits[0], hits[0] + len(old)
            # LSP cannot address the middle of a CRLF: widen the range to the whole pair.
            if 0 < at < len(text) and text[at - 1:at + 1] == "\r\n":
                at, new = at - 1, "\r" + new
            if 0 < stop < len(text) and text[stop - 1:stop + 1] == "\r\n":
                stop, new = stop + 1, new + "\n"
            edit = TextEdit(start=position_at(text, at), end=position_at(text, stop), new_text=new)
            result = text[:at] + new + text[stop:]
            first = edit.start.line + 1
            added, removed = len(FileText.split(new).lines), len(FileText.split(old).lines)
            op = UpdateFile(path=path, edits=[edit], base_digest=digest(text), base_version=doc.version,
                            new_text=result)
            if apply_text_edits(text, [edit]) != result:
                raise AssertionError(f"edit for {path} does not reproduce the new text")
            change = FileChange("M", path, added=added, removed=removed,
                                where=((first, first + max(added, 1) - 1),), edits=1)
            return Planned(EditPlan(ops=[op]), (change,))
    hunk = Hunk((), tuple([("-", s) for s in FileText.split(old_text).lines]
                          + [("+", s) for s in FileText.split(new_text).lines]))
    try:
        start, index, lines = Matcher(path, ft).locate(hunk, 0, "old_text")
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
