"""`eval run MANIFEST --resume RUNS`: which attempts of the cohort RUNS already holds.

Only attempts that ended with a verdict-bearing outcome count as done; cancelled
ones, lost ones (no line) and never-started ones are run again, with their
planned repetition and position, so pairing is unchanged. A last line cut by a
crash mid-write was never complete: it is cut off before appending.
"""

from __future__ import annotations

import os
from pathlib import Path

from lsp_agent.eval.compare import CompareError, load_runs
from lsp_agent.eval.records import Outcome
from lsp_agent.eval.runner import Earlier


class ResumeError(Exception):
    pass


def _cut_partial_line(path: Path) -> None:
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        # Find the last newline; everything after it is a half-written record.
        step = 65536
        pos = size
        while pos > 0:
            start = max(0, pos - step)
            handle.seek(start)
            chunk = handle.read(pos - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                handle.truncate(start + cut + 1)
                return
            pos = start
        handle.truncate(0)


def earlier_run(path: Path, cohort: str) -> Earlier:
    if not path.is_file():
        raise ResumeError(f"--resume {path}: not a file")
    try:
        _cut_partial_line(path)
        runs = load_runs(path)
    except OSError as exc:
        raise ResumeError(f"--resume {path}: {exc.strerror or exc}") from exc
    except CompareError as exc:
        raise ResumeError(f"--resume {path}: {exc}") from exc
    if cohort not in runs.headers:
        held = ", ".join(c[:12] for c in runs.headers) or "none"
        raise ResumeError(f"--resume {path}: it holds no run of this manifest (cohort {cohort[:12]}; the file has "
                          f"{held}); a changed manifest is a new cohort and cannot be resumed")
    if runs.problems:
        raise ResumeError(f"--resume {path}: damaged records:\n" + "\n".join(f"  - {p}" for p in runs.problems[:10]))
    done = frozenset((a.task, a.repetition, a.arm) for _, a in runs.attempts
                     if a.cohort == cohort and a.outcome is not Outcome.CANCELLED)
    invalid = {task: why for (c, task), why in runs.invalid.items() if c == cohort}
    return Earlier(done=done, invalid=invalid)
