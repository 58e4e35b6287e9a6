"""Sensitive paths: workspace files that other programs execute when the workspace is opened.

An editor's tasks (`.vscode/tasks.json` with `runOn: folderOpen`), direnv's `.envrc`, a CI
workflow, a git hook directory, Neovim's exrc: a change to one of them runs code later, outside
the sandbox, in someone else's process. The setting `tools.sensitive_paths` lists them as globs,
anchored at the workspace root: `*` and `?` stay inside one path component, `**` spans any
number of them, and `dir/**` also names `dir` itself (replacing the directory is a change to
what it holds). Matching ignores letter case: on a case-insensitive file system `.VSCode/Tasks.json`
is the same file.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

_GLOB_CHARS = frozenset("*?[")


def _component(part: str) -> str:
    """One path component's glob as a regex that never crosses a `/`."""
    out: list[str] = []
    i = 0
    while i < len(part):
        char = part[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = part.find("]", i + 2 if i + 1 < len(part) and part[i + 1] in "!^" else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = part[i + 1:end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                out.append(f"[{'^/' if negate else ''}{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def parts_of(pattern: str) -> list[str] | None:
    """The pattern's path components; None for one that could name something outside the workspace
    (a `..` component) or nothing at all: such a pattern is ignored."""
    parts = [p for p in pattern.strip().replace("\\", "/").strip("/").split("/") if p not in ("", ".")]
    return None if not parts or ".." in parts else parts


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str] | None:
    parts = parts_of(pattern)
    if parts is None:
        return None
    regex = ""
    glue = ""  # what joins the next component to the text so far
    for n, part in enumerate(parts):
        if part == "**":
            if n == len(parts) - 1:
                regex += "(?:/.*)?" if regex else ".*"
            else:
                regex += glue + "(?:[^/]+/)*"
                glue = ""
                continue
        else:
            regex += glue + _component(part)
        glue = "/"
    return re.compile(f"^{regex}$", re.IGNORECASE | re.DOTALL)


def matching(rel: str, patterns: Iterable[str]) -> str | None:
    """The first pattern that names the workspace-relative path `rel` (or None)."""
    path = rel.replace("\\", "/").strip("/").removeprefix("./")
    for pattern in patterns:
        compiled = _compile(pattern)
        if compiled is not None and compiled.match(path):
            return pattern
    return None


def static_prefix(pattern: str) -> tuple[list[str], bool]:
    """(the leading components without glob characters, whether that is the whole pattern).

    `.vscode/tasks.json` → (['.vscode', 'tasks.json'], True); `.github/workflows/**` →
    (['.github', 'workflows'], False): what exists of a pattern starts there."""
    prefix, literal = _static_prefix(pattern)
    return list(prefix), literal


@functools.lru_cache(maxsize=256)
def _static_prefix(pattern: str) -> tuple[tuple[str, ...], bool]:
    parts = parts_of(pattern)
    if parts is None:
        return (), True  # names nothing: nothing to look at
    prefix: list[str] = []
    for part in parts:
        if _GLOB_CHARS & set(part):
            return tuple(prefix), False
        prefix.append(part)
    return tuple(prefix), True


@functools.lru_cache(maxsize=256)
def whole_tree(pattern: str) -> bool:
    """`dir/**` (with a plain `dir`): the pattern names a directory and everything under it."""
    prefix, literal = static_prefix(pattern)
    return not literal and bool(prefix) and parts_of(pattern) == [*prefix, "**"]


#: The sensitive files the user approved an edit of, as they were right after it (device, inode, size,
#: mtime): a command of another session running meanwhile must not have its cleanup take them away.
_approved: dict[str, tuple[int, int, int, int]] = {}
_approved_lock = threading.Lock()
APPROVED_KEPT = 1024  # the oldest are forgotten past this many


def _facts(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def remember_approved(paths: Iterable[Path]) -> None:
    """Note files an approved edit has just written (absent ones are forgotten)."""
    with _approved_lock:
        for path in paths:
            facts = _facts(path)
            _approved.pop(str(path), None)
            if facts is not None:
                _approved[str(path)] = facts
        while len(_approved) > APPROVED_KEPT:
            _approved.pop(next(iter(_approved)))


def approved_as_is(path: Path) -> bool:
    """Whether `path` is exactly as an approved edit left it (not touched since)."""
    with _approved_lock:
        kept = _approved.get(str(path))
    return kept is not None and kept == _facts(path)
