"""Oracle of the navigation example: `oracle.py TASK FIXTURE` exits 0 when the task is done in
FIXTURE, 1 when it is not, 2 when it cannot decide (no fixture).

rename:     no `compute_area` is left in any module, and the callers still compute the same values.
type-error: parse_count returns an int and restock adds it (checked by running the code).
"""

import subprocess
import sys
from pathlib import Path

CHECKS = {
    "rename": "import report, billing, shapes\n"
              "assert report.summary() == 'area=6', report.summary()\n"
              "assert billing.cost(2, 3) == 30, billing.cost(2, 3)\n"
              "assert shapes.rectangle_area(4, 5) == 20\n",
    "type-error": "import stock, units\n"
                  "assert units.parse_count(' 3 ') == 3, repr(units.parse_count(' 3 '))\n"
                  "assert stock.restock(2, ' 3 ') == 5\n",
}

if len(sys.argv) != 3 or sys.argv[1] not in CHECKS:
    print("usage: oracle.py rename|type-error FIXTURE", file=sys.stderr)
    sys.exit(2)
task, fixture = sys.argv[1], Path(sys.argv[2])
if not fixture.is_dir():
    print(f"oracle: no fixture at {fixture}", file=sys.stderr)
    sys.exit(2)
if task == "rename":
    left = [p.name for p in sorted(fixture.glob("*.py")) if "compute_area" in p.read_text(encoding="utf-8")]
    if left:
        print(f"oracle: compute_area is still named in {', '.join(left)}", file=sys.stderr)
        sys.exit(1)
ran = subprocess.run([sys.executable, "-c", CHECKS[task]], cwd=fixture, capture_output=True, text=True,
                     timeout=60, check=False)
if ran.returncode != 0:
    print(f"oracle: the {task} check failed: {ran.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    sys.exit(1)
sys.exit(0)
