"""The JSONL trace of one run: per step the calls, arguments, bounded results and milliseconds.

The trace is a record for debugging, not state: a state directory that cannot take it (full,
read-only, deleted) stops the trace, never the run — the store reports the fault itself.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger(__name__)


class TraceWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")
        except OSError as exc:
            log.warning("no trace for this run: %s", exc)

    def write(self, record: dict[str, Any]) -> None:
        if self._file is not None:
            try:
                self._file.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
                self._file.flush()
            except OSError as exc:
                log.warning("the trace %s stops here: %s", self.path, exc)
                self.close()

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError:
                pass  # the buffered rest could not be written either: the trace ends where it ended


class TraceDir:
    """The core's `TraceOpener`: one JSONL file per generation, `<session>-<generation>.jsonl`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def __call__(self, session_id: str, generation: str) -> TraceWriter:
        return TraceWriter(self.directory / f"{session_id}-{generation}.jsonl")
