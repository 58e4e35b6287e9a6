"""The hunk matcher: finds where a hunk's old lines are in a file, and says why when it cannot.

Matching passes, in order: exact, ignoring trailing whitespace, ignoring indentation, Unicode
punctuation folded. The first pass that finds anything decides, and it must find exactly one
place: a silently wrong edit costs more than asking the model for more context. Failure messages
show the closest lines, so the model can retry without guessing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

from lsp_agent.tools.patch_grammar import Hunk, Kind
from lsp_agent.tools.text_edits import FileText, Region

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


def _occurrences(hay: Sequence[str], needle: Sequence[str], lo: int, limit: int | None = None) -> list[int]:
    """Every start at or after `lo` where `needle` occurs; `list.index` finds each candidate first
    line at C speed, so a 100,000-line file is not walked line by line in Python."""
    k, first, last = len(needle), needle[0], len(hay) - len(needle)
    hits: list[int] = []
    at = lo
    while at <= last:
        try:
            at = hay.index(first, at, last + 1)
        except ValueError:
            break
        if k == 1 or all(hay[at + j] == needle[j] for j in range(1, k)):
            hits.append(at)
            if limit is not None and len(hits) >= limit:
                break
        at += 1
    return hits


def line_span(start: int, count: int) -> str:
    return f"line {start + 1}" if count <= 1 else f"lines {start + 1}-{start + count}"


def _show(line: str, limit: int = 200) -> str:
    return line if len(line) <= limit else line[:limit] + " [...]"


class Matcher:
    """Locates hunks in one file, front to back."""

    def __init__(self, path: str, ft: FileText, text: str | None = None) -> None:
        self.path = path
        self.ft = ft
        #: the file as one string, when the caller has it: a pass whose lines are not even
        #: substrings of it is skipped without normalising every line of a large file
        self.text = text
        self._normalized: dict[int, list[str]] = {}
        self._text: str | None = None

    def _hay(self, index: int) -> list[str]:
        if index not in self._normalized:
            lines = self.ft.lines
            if index == 0:
                hay = lines
            elif index in (1, 2):  # C-level map, not a Python loop per line
                hay = list(map(str.rstrip if index == 1 else str.strip, lines))
            elif all(map(str.isascii, lines)):  # nothing to fold: the same as ignoring indentation
                hay = self._hay(2)
            else:
                hay = [PASSES[index][1](line) for line in lines]
            self._normalized[index] = hay
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
                needle = [norm(s) for s in old]
                if index and not self._may_match(index, needle):  # the exact pass searches as cheaply
                    continue
                hay = self._hay(index)
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

    def _may_match(self, index: int, needle: Sequence[str]) -> bool:
        """False when a pass cannot match: every pass but the Unicode one on a non-ASCII file
        compares lines that are substrings of the file, so a needle line absent from the whole
        text (one C-level search) rules the pass out."""
        text = self.text
        if text is None or (PASSES[index][0] == "with Unicode punctuation normalised" and not text.isascii()):
            return True
        return all(line in text for line in needle if line)

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
        shown = ", ".join(line_span(h, count) for h in hits[:10]) + (", ..." if len(hits) > 10 else "")
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
                    return MatchError("no_match", f"{head} They match at {line_span(hits[0], len(old))}, before the "
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
                                      f"{line_span(start, count)}:\n{shown}{diff}\nRe-read the file with read_file "
                                      f"(start_line={lo}, end_line={hi}) and retry with its current text.")

    def _closest(self, old: list[str]) -> tuple[int, float] | None:
        """The window of len(old) lines most similar to `old`, if any is similar at all.

        Bounded, whatever the file's size: candidate windows come from anchor lines (file lines
        equal to a patch line, ignoring indentation, found through a dict), else from lines that
        share the patch's most distinctive words (substring tests at C speed); at most
        MAX_CANDIDATES windows are then compared with difflib."""
        lines = self._hay(2)
        want = [line.strip() for line in old]
        if not lines or not any(want):
            return None
        k = len(want)
        last = max(len(lines) - k, 0)
        seeds: dict[int, None] = {}

        def seed(line: int, j: int) -> None:
            seeds[min(max(line - j, 0), last)] = None

        # 1. anchor lines: file lines equal to one of the longest patch lines
        for j in sorted((j for j, text in enumerate(want) if text), key=lambda j: -len(want[j]))[:ANCHOR_LINES]:
            for line in _occurrences(lines, [want[j]], 0, PER_ANCHOR):
                seed(line, j)
        # 2. lines sharing the patch's most distinctive words
        if not seeds:
            joined = self._joined()
            for word in _distinctive_words(want):
                j = next(j for j, text in enumerate(want) if word in text)
                for line in _containing(joined, word, PER_ANCHOR):
                    seed(line, j)
        # 3. a small file: every line compared (what the two bounded passes stand in for)
        if not seeds and len(lines) <= FULL_SCAN_LINES:
            for line, j in _similar_lines(lines, want):
                seed(line, j)
        if not seeds:
            return None
        import difflib  # near misses only: a run that never misses does not hold it

        target = "\n".join(want)
        best: tuple[int, float] | None = None
        for start in list(seeds)[:MAX_CANDIDATES]:
            ratio = difflib.SequenceMatcher(None, "\n".join(lines[start:start + k]), target,
                                            autojunk=False).ratio()
            if ratio >= MIN_SIMILARITY and (best is None or ratio > best[1]):
                best = (start, ratio)
        return best

    def _joined(self) -> str:
        if self._text is None:
            self._text = "\n".join(self._hay(2))
        return self._text


#: candidate windows compared with difflib, at most
MAX_CANDIDATES = 40
#: the longest patch lines used as anchors, and file lines taken per anchor
ANCHOR_LINES = 4
PER_ANCHOR = 10
#: files up to this many lines also get a similarity scan of every line when nothing else matched
FULL_SCAN_LINES = 2000
#: a window less similar than this is not shown as the closest match
MIN_SIMILARITY = 0.3


def _distinctive_words(lines: Sequence[str]) -> list[str]:
    """The patch's longest identifiers/words (longest first): rare in a file, so good seeds."""
    words = {w for line in lines for w in re.findall(r"\w{4,}", line)}
    return sorted(words, key=lambda w: (-len(w), w))[:ANCHOR_LINES]


def _containing(joined: str, word: str, limit: int) -> list[int]:
    """Up to `limit` line numbers of `joined` (lines joined by LF) containing `word`: found with
    `str.find`, numbered with `str.count` from the previous hit (C-level, no loop per line)."""
    hits: list[int] = []
    line = prev = 0
    at = joined.find(word)
    while at >= 0 and len(hits) < limit:
        line += joined.count("\n", prev, at)
        if not hits or hits[-1] != line:
            hits.append(line)
        prev = at
        at = joined.find(word, at + 1)
    return hits


def _similar_lines(lines: Sequence[str], want: Sequence[str]) -> list[tuple[int, int]]:
    """(file line, patch line) pairs at least half similar, for the three longest patch lines."""
    import difflib

    matcher = difflib.SequenceMatcher(autojunk=False)
    pairs: list[tuple[float, int, int]] = []
    for j in sorted(range(len(want)), key=lambda j: -len(want[j]))[:3]:
        if not want[j]:
            continue
        matcher.set_seq2(want[j])
        for i, line in enumerate(lines):
            matcher.set_seq1(line)
            if (matcher.real_quick_ratio() >= 0.5 and matcher.quick_ratio() >= 0.5
                    and (r := matcher.ratio()) >= 0.5):
                pairs.append((r, i, j))
    return [(i, j) for _, i, j in sorted(pairs, key=lambda p: (-p[0], p[1]))[:PER_ANCHOR * 3]]


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

