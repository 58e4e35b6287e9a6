"""A scripted stand-in agent for the starter suite: applies a task's reference solution, or nothing.

`--config solutions="DIR"` (an arm's config) names the reference solutions (DIR/TASK/...);
`--config prompts="FILE"` maps each prompt to its task id. Without `solutions` it changes nothing,
like an agent that gives up. It prints a minimal `--json` event stream ending in run_finish.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tomllib
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--json", action="store_true", required=True)
    parser.add_argument("--config", action="append", default=[])
    parser.add_argument("prompt")
    args = parser.parse_args()
    config: dict[str, object] = {}
    for pair in args.config:
        key, value = pair.split("=", 1)
        try:
            config[key] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            config[key] = value  # e.g. toolProfile=default, a bare word
    if "solutions" in config:
        task = json.loads(Path(str(config["prompts"])).read_text())[args.prompt]
        shutil.copytree(Path(str(config["solutions"])) / task, args.workspace, dirs_exist_ok=True)
    base = {"sessionID": "ses_solver", "generation": "gen_solver"}
    print(json.dumps({**base, "type": "run_finish", "stopReason": "final", "verification": "not_run", "steps": 0,
                      "toolCalls": 0, "toolErrors": 0, "tokens": {}, "filesChanged": [], "model": "solver",
                      "scripted": True}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
