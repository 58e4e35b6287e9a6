"""Sensitive paths around one sandboxed command: bound read-only when they exist, and what the
command created among them removed when it ends.

`tools.sensitive_paths` names files other programs run when the workspace is opened
(`.vscode/tasks.json`, `.envrc`, `.github/workflows/**`...). The ones that exist are bound
read-only in the sandbox, so the command cannot change them (nor remove or rename them: a mount
point is busy). One that does not exist cannot be bound without creating it, and creating empty
`.vscode/`, `.github/`, `.envrc`... around every command would show up in the user's editor and in
git; so a new one is found when the command has ended, removed, and the model told. Until then
(the command's own run time) it exists: a program that reads it in that window — the user
opening the folder in another editor at that moment — sees it. `.git/` and `.lsp-agent/` are not
handled here: they are never creatable at all (see mount_points).

The look is cheap: only the paths the patterns name are `lstat`ed (their directories one
component at a time, never through a link); a pattern with a wildcard before its last component
walks from its fixed prefix, bounded.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from lsp_agent.core.sensitive_paths import approved_as_is, matching, parts_of, static_prefix, whole_tree

#: entries a wildcard pattern's walk looks at, at most (a huge tree is not walked whole per command)
WALK_LIMIT = 20_000
_WALK_SKIP = frozenset({".git", ".lsp-agent", "node_modules", ".venv", "venv", "__pycache__"})

#: (device, inode, file type, link target) of one entry: a change of any is a replacement
Identity = tuple[int, int, int, str]
#: workspace-relative path → identity, of every entry the patterns name and their directories
Seen = dict[str, Identity]


def _identity(path: Path) -> Identity | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    kind = stat.S_IFMT(info.st_mode)
    target = ""
    if kind == stat.S_IFLNK:
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
    return info.st_dev, info.st_ino, kind, target


def _chain(root: Path, parts: list[str], seen: Seen) -> bool:
    """Record each existing component of `parts` (never following a link but the last);
    whether the whole chain exists through real directories."""
    rel = ""
    for n, part in enumerate(parts):
        rel = f"{rel}/{part}" if rel else part
        found = _identity(root / rel)
        if found is None:
            return False
        seen[rel] = found
        if n < len(parts) - 1 and found[2] != stat.S_IFDIR:
            return False  # a link or a file where a directory is named: the look stops here
    return True


def _walk(root: Path, prefix: list[str], pattern: str, seen: Seen) -> None:
    """The entries below the pattern's fixed prefix that it names: only as deep as it reaches (`*.x`
    is one listing of the root), never into a link (a link's target may lie outside the workspace,
    where nothing may be removed)."""
    start = root.joinpath(*prefix)
    try:
        if not stat.S_ISDIR(os.lstat(start).st_mode):
            return
    except OSError:
        return
    parts = parts_of(pattern) or []
    depth = None if "**" in parts else len(parts) - len(prefix)
    count = 0
    for current, dirs, files in os.walk(start):
        base = Path(current)
        below = len(base.relative_to(start).parts) + 1  # the depth of this directory's entries
        names = [*dirs, *files]
        dirs[:] = [d for d in dirs if d not in _WALK_SKIP and (depth is None or below < depth)]
        for name in names:
            count += 1
            if count > WALK_LIMIT:
                return
            rel = (base / name).relative_to(root).as_posix()
            if matching(rel, [pattern]) is not None:
                found = _identity(base / name)
                if found is not None:
                    seen[rel] = found


def look(root: Path, patterns: Iterable[str]) -> Seen:
    """Every existing entry the patterns name, with the directories on the way to them."""
    seen: Seen = {}
    for pattern in patterns:
        prefix, literal = static_prefix(pattern)
        if not prefix and literal:
            continue
        through = _chain(root, prefix, seen) if prefix else True
        if through and not literal and not whole_tree(pattern):
            _walk(root, prefix, pattern, seen)
    return seen


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def read_only_binds(root: Path, patterns: Iterable[str], seen: Seen) -> list[Path]:
    """The real paths, inside the workspace, of the sensitive entries that exist (to bind read-only)."""
    wanted = list(patterns)
    binds: dict[Path, None] = {}
    links = any(ident[2] == stat.S_IFLNK for ident in seen.values())
    for rel in seen:
        if matching(rel, wanted) is None:
            continue
        if not links:  # the common case: nothing to resolve, the entry is where it is spelled
            binds[root / rel] = None
            continue
        try:
            real = (root / rel).resolve(strict=True)
        except (OSError, RuntimeError):
            continue  # a dangling link: what it would name is found afterwards if created
        if _inside(real, root) and real != root:
            binds[real] = None
    if not links:
        return list(binds)
    # Links met on the way (`.vscode` → `config/vscode`): what they lead to, when it exists.
    for pattern in wanted:
        prefix, literal = static_prefix(pattern)
        if prefix and (literal or whole_tree(pattern)):
            try:
                real = root.joinpath(*prefix).resolve(strict=True)
            except (OSError, RuntimeError):
                continue
            if _inside(real, root) and real != root:
                binds[real] = None
    return list(binds)


def _remove(path: Path) -> None:
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)  # never follows a link inside (fd-based on Linux)
    else:
        os.unlink(path)


def undo_new(root: Path, patterns: Iterable[str], before: Seen) -> list[str]:
    """Remove what the command created or replaced among the sensitive paths; the paths removed.

    A sensitive entry that is new (or no longer the same file) is removed; a link the command put
    on the way to one is removed; a replaced link is put back; directories the command created
    only on the way to a removed entry are removed when empty."""
    wanted = list(patterns)
    after = look(root, wanted)
    removed: list[str] = []
    changed = [rel for rel, ident in after.items() if before.get(rel) != ident]
    # Shallowest first: a removed link or directory takes what was below it.
    for rel in sorted(changed, key=lambda r: (r.count("/"), r)):
        if any(rel.startswith(f"{gone}/") for gone in removed):
            continue
        ident = after[rel]
        sensitive = matching(rel, wanted) is not None
        link_on_the_way = ident[2] == stat.S_IFLNK and not sensitive
        if not sensitive and not link_on_the_way:
            continue
        if sensitive and approved_as_is(root / rel):
            continue  # the user approved this very file (an edit of another session meanwhile)
        try:
            _remove(root / rel)
        except OSError:
            continue
        removed.append(rel)
        old = before.get(rel)
        if old is not None and old[2] == stat.S_IFLNK and old[3] not in ("", "?"):
            try:
                os.symlink(old[3], root / rel)  # the user's link, as it was
            except OSError:
                pass
    # Directories made only to hold what was removed: removed while empty, deepest first.
    for rel in sorted(after, key=lambda r: -r.count("/")):
        if rel in before or after[rel][2] != stat.S_IFDIR or rel in removed:
            continue
        if any(g.startswith(f"{rel}/") for g in removed):
            try:
                os.rmdir(root / rel)
            except OSError:
                pass
    return removed


def removal_note(removed: list[str]) -> str:
    """What the model is told about the entries removed after its command."""
    names = ", ".join(removed)
    return (f"[lsp-agent] removed after the command: {names}. Other programs (the editor, the shell, git, CI) "
            "run or load these paths when the workspace is opened (setting tools.sensitive_paths), so a command "
            "may not create or replace them. Change them with apply_patch or write_file, which ask the user.")
