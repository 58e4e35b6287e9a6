"""Test oracle that works on a copy of the fixture, as careful oracles do: `copying_oracle.py MODE FIXTURE`.

The copy raises (shutil.Error) on a named pipe in the fixture: an uncaught exception, exit 1, that
is a crash and not a verdict. MODE `assert` checks target.txt == "ok" with an assert (a failing
assert is a verdict: not done); MODE `exit` exits 1 itself.
"""

import pathlib
import shutil
import sys
import tempfile

mode, fixture = sys.argv[1:3]
with tempfile.TemporaryDirectory() as tmp:
    work = pathlib.Path(tmp) / "work"
    shutil.copytree(fixture, work, ignore=shutil.ignore_patterns(".git"))
    text = (work / "target.txt").read_text()
    if mode == "assert":
        assert text == "ok", f"target.txt holds {text!r}"
    sys.exit(0 if text == "ok" else 1)
