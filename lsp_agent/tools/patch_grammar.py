"""apply_patch's input language: the `*** Begin Patch` grammar, parsed into file operations.

Pure: no file system, no matching. Parsing is forgiving where models are predictably sloppy
(markdown fences, unified-diff hunk headers, lost blank-line prefixes) and otherwise names the
patch line and what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from lsp_agent.core.paths import normalize

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
