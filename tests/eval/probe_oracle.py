"""Test oracle that also says where it ran: `probe_oracle.py LOG MARKER FILE EXPECTED FIXTURE`.

Appends {"cwd", "seesSubmitter"} to LOG (seesSubmitter: whether MARKER, a file on the submitting
machine, is visible here), then exits 0 if FIXTURE/FILE holds EXPECTED, else 1.
"""

import json
import os
import pathlib
import sys

log, marker, name, expected, fixture = sys.argv[1:6]
with open(log, "a") as out:
    out.write(json.dumps({"cwd": os.getcwd(), "seesSubmitter": os.path.exists(marker)}) + "\n")
try:
    text = (pathlib.Path(fixture) / name).read_text()
except FileNotFoundError:
    sys.exit(1)
sys.exit(0 if text == expected else 1)
