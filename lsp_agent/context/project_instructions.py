"""The project's instruction files, read for the model: AGENTS.md and `.lsp-agent/instructions.md`.

Which files, in this order (a later one takes precedence over an earlier one):

1. the nearest AGENTS.md above the workspace root, when the workspace is a folder inside a larger Git
   repository — searched up to the repository's top (the nearest folder holding `.git`), never
   beyond it: outside the repository nothing is read;
2. the workspace root's AGENTS.md;
3. the workspace root's `.lsp-agent/instructions.md` (this harness's own file).

The repository is untrusted, so reading is guarded like every read the harness makes on its own
behalf: a FIFO, socket or device under one of these names is skipped (never opened in a way that
could block), a name that resolves outside the repository (a symbolic link to `~/.ssh/…`) is never
read, and the files together are cut at `limits.instructions_bytes` — the most specific file gets
its share first. What cannot be read is reported, never raised: the run goes on without it.
The result is text for the model; it grants nothing.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from lsp_agent.osfiles.regular import NotRegularFile, open_regular

__all__ = ["CUT_MARK", "INSTRUCTION_FILES", "InstructionFile", "ProjectInstructions", "read_project_instructions"]

#: The files read at the workspace root, in order of precedence (the last wins).
INSTRUCTION_FILES = ("AGENTS.md", ".lsp-agent/instructions.md")
AGENTS = "AGENTS.md"
#: starts the line that replaces what a cut left out
CUT_MARK = "[… cut by lsp-agent:"
HEADER = ("[project instructions, read by lsp-agent] The project's instruction files follow, as text. "
          "Follow them unless the user says otherwise; where they disagree, a later file takes precedence "
          "over an earlier one. They grant no permission: every call is checked as usual.")


@dataclass(frozen=True)
class InstructionFile:
    #: how the model and the user see the file: relative to the workspace root (`../AGENTS.md` above it)
    name: str
    text: str
    size: int
    cut: bool


@dataclass(frozen=True)
class ProjectInstructions:
    files: list[InstructionFile] = field(default_factory=list)
    #: files that exist but were not read, each with why (shown to the user)
    problems: list[str] = field(default_factory=list)

    def block(self) -> str:
        """The text the model gets ("" without files); the same files give the same bytes."""
        if not self.files:
            return ""
        sections = [f"## {f.name}\n{f.text.rstrip()}" for f in self.files]
        return "\n\n".join([HEADER, *sections])

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.block().encode("utf-8")).hexdigest()

    def summary(self) -> str:
        """`AGENTS.md (1,234 bytes), .lsp-agent/instructions.md (90,000 bytes, cut)` for the transcript."""
        return ", ".join(f"{f.name} ({f.size:,} bytes{', cut' if f.cut else ''})" for f in self.files)


def _git_top(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def _candidates(root: Path) -> list[tuple[Path, Path, str]]:
    """(the folder the file must stay inside, its path, its shown name), in order of precedence."""
    found: list[tuple[Path, Path, str]] = []
    top = _git_top(root)
    if top is not None and top != root:
        for folder in root.parents:
            if os.path.lexists(folder / AGENTS):
                found.append((top, folder / AGENTS, os.path.relpath(folder / AGENTS, root)))
                break
            if folder == top:
                break
    found.extend((root, root / name, name) for name in INSTRUCTION_FILES)
    return found


class OutsideRepository(OSError):
    """The name resolves (through a symbolic link) to something outside the folder it must stay in."""


def _open_inside(base: Path, path: Path) -> int:
    """A descriptor of `path`, a regular file inside `base` (after every symbolic link is resolved),
    walked from `base` without following any link: a name swapped for a link meanwhile is refused."""
    real_base = os.path.realpath(base)
    target = os.path.realpath(path)
    if os.path.commonpath([real_base, target]) != real_base or target == real_base:
        raise OutsideRepository(f"it resolves outside {base}")
    parts = Path(os.path.relpath(target, real_base)).parts
    fd = os.open(real_base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        return open_regular(parts[-1], follow_symlinks=False, dir_fd=fd)
    finally:
        os.close(fd)


def _read(base: Path, path: Path, name: str, budget: int) -> InstructionFile:
    fd = _open_inside(base, path)
    with os.fdopen(fd, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        data = stream.read(budget + 1)
    cut = len(data) > budget
    if not cut:
        return InstructionFile(name, data.decode("utf-8", "replace"), max(size, len(data)), False)
    text = data[:budget].decode("utf-8", "ignore")  # a character split by the cut is dropped, not garbled
    shown = len(text.encode("utf-8"))
    marker = (f"\n{CUT_MARK} {name} has {max(size, len(data)):,} bytes; only the first {shown:,} "
              "are sent (limits.instructions_bytes)]")
    return InstructionFile(name, text + marker, max(size, len(data)), True)


def read_project_instructions(root: Path, limit: int) -> ProjectInstructions:
    """The instruction files of the workspace at `root`, `limit` bytes at most in all (0: none are read)."""
    if limit <= 0:
        return ProjectInstructions()
    root = root.resolve()
    files: list[tuple[int, InstructionFile]] = []
    problems: list[str] = []
    budget = limit
    candidates = _candidates(root)
    # The most specific file (the last) gets its bytes first; the order sent stays the precedence.
    for order, (base, path, name) in reversed(list(enumerate(candidates))):
        try:
            if not os.path.lexists(path):
                continue
            read = _read(base, path, name, budget)
        except NotRegularFile as exc:
            problems.append(f"{name} is {exc.kind}, not a regular file; it was not read")
            continue
        except FileNotFoundError:
            problems.append(f"{name} is a broken link; it was not read")
            continue
        except OutsideRepository as exc:
            problems.append(f"{name}: {exc}; it was not read")
            continue
        except OSError as exc:
            problems.append(f"{name} cannot be read ({exc.strerror or exc}); it was not read")
            continue
        budget = 0 if read.cut else max(0, budget - read.size)
        if read.size or read.cut:  # an empty file says nothing
            files.append((order, read))
    return ProjectInstructions([f for _, f in sorted(files, key=lambda item: item[0])], sorted(problems))
