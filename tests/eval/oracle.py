"""Test oracle: `oracle.py FILE EXPECTED FIXTURE` — exit 0 if FIXTURE/FILE holds EXPECTED, else 1.

A file named `undecidable` in the fixture makes it exit 2 (an oracle that cannot decide).
"""

import pathlib
import sys

name, expected, fixture = sys.argv[1:4]
root = pathlib.Path(fixture)
if (root / "undecidable").exists():
    sys.exit(2)
try:
    text = (root / name).read_text()
except FileNotFoundError:
    sys.exit(1)
sys.exit(0 if text == expected else 1)
