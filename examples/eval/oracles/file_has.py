"""Oracle of the offline example: `file_has.py FILE TEXT FIXTURE` exits 0 when FIXTURE/FILE contains TEXT,
1 when it does not (or is missing), 2 when the fixture is not a directory (cannot decide)."""

import sys
from pathlib import Path

if len(sys.argv) != 4:
    print("usage: file_has.py FILE TEXT FIXTURE", file=sys.stderr)
    sys.exit(2)
name, text, fixture = sys.argv[1], sys.argv[2], Path(sys.argv[3])
if not fixture.is_dir():
    print(f"oracle: no fixture at {fixture}", file=sys.stderr)
    sys.exit(2)
target = fixture / name
try:
    found = target.is_file() and text in target.read_text(encoding="utf-8", errors="replace")
except OSError as exc:
    print(f"oracle: cannot read {name}: {exc}", file=sys.stderr)
    sys.exit(2)
if not found:
    print(f"oracle: {name} does not contain {text!r}", file=sys.stderr)
sys.exit(0 if found else 1)
