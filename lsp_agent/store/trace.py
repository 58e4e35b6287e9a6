"""The JSONL trace of one run: per step the calls, arguments, bounded results and milliseconds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO


class TraceWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: TextIO | None = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TraceDir:
    """The core's `TraceOpener`: one JSONL file per generation, `<session>-<generation>.jsonl`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def __call__(self, session_id: str, generation: str) -> TraceWriter:
        return TraceWriter(self.directory / f"{session_id}-{generation}.jsonl")
