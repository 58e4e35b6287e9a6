"""Retirement's file side: remove a candidate's SKILL.md only if it is still exactly ours.

Ours means: a regular file (not a link), with a single link (not a hard link shared with another
path), whose content hash equals what promotion wrote. A hand-edited file is a conflict and stays.
"""

from __future__ import annotations

import errno
import os
from enum import StrEnum
from pathlib import Path

from lsp_agent.domain.skill_rules import Rule, RuleFailed
from lsp_agent.skills.files import SKILL_FILE, SKILLS_PARTS, directory, read_regular, skill_rel


class Removal(StrEnum):
    REMOVED = "removed"
    MISSING = "missing"  # nothing there (already removed, or deleted by hand)


def check_ours(shown: str, regular: bool, links: int, digest: str | None, expected: str) -> None:
    if not regular:
        raise RuleFailed(Rule.SKILL_MODIFIED, f"{shown} is not a regular file any more; it stays")
    if links != 1:
        raise RuleFailed(Rule.SKILL_MODIFIED, f"{shown} has {links} hard links; it stays (remove it by hand)")
    if digest != expected:
        raise RuleFailed(Rule.SKILL_MODIFIED, f"{shown} was edited after promotion (its hash differs from the "
                                              "one promotion wrote); it is a conflict and stays. Remove it by "
                                              "hand if it is no longer wanted")


def check_removable(root: Path, name: str, expected_digest: str) -> None:
    """RuleFailed(skill_modified) unless the file is absent or exactly ours; removes nothing."""
    with directory(root, (*SKILLS_PARTS, name)) as fd:
        if fd is None:
            return
        state, _ = read_regular(fd, SKILL_FILE, limit=0)
    if state.exists:
        check_ours(skill_rel(name), state.regular, state.links, state.digest, expected_digest)


def remove_skill(root: Path, name: str, expected_digest: str) -> Removal:
    shown = skill_rel(name)
    with directory(root, (*SKILLS_PARTS, name)) as fd:
        if fd is None:
            return Removal.MISSING
        state, _ = read_regular(fd, SKILL_FILE, limit=0)
        if not state.exists:
            return Removal.MISSING
        check_ours(shown, state.regular, state.links, state.digest, expected_digest)
        # The very file that was hashed (not one swapped in since) is the one removed.
        if os.stat(SKILL_FILE, dir_fd=fd, follow_symlinks=False).st_ino != state.inode:
            raise RuleFailed(Rule.SKILL_MODIFIED, f"{shown} was replaced while being retired; it stays")
        os.unlink(SKILL_FILE, dir_fd=fd)
        os.fsync(fd)
    with directory(root, SKILLS_PARTS) as skills_fd:
        if skills_fd is not None:
            try:
                os.rmdir(name, dir_fd=skills_fd)  # the skill's folder, if nothing else lives in it
                os.fsync(skills_fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.ENOTDIR):
                    raise
    return Removal.REMOVED
