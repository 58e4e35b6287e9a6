"""A stand-in for `lsp-agent run --json`: same flags, same event shapes, behaviour told by its prompt.

The prompt is a JSON object (the "plan"): files to write, which event stream to print, whether
to spawn grandchildren, hang, or exit with a code. Only the eval tests use it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]
BASE = {"sessionID": "ses_fake", "generation": "gen_fake"}

#: What the normal stream adds up to (tests compare against it).
NORMAL_TOTALS = {"steps": 2, "inputTokens": 220, "outputTokens": 15, "reasoningTokens": 2,
                 "cacheReadTokens": 110, "toolCalls": 2, "toolErrors": 1}


def _tool(part_id: str, status: str) -> dict[str, Any]:
    return {**BASE, "type": "tool_use", "step": 1, "part": {
        "id": part_id, "messageID": "msg_1", "callID": f"call_{part_id}", "tool": "write_file",
        "state": {"status": status, "input": {"path": "target.txt"}, "output": "OK: written"}}}


def _finish(part_id: str, step: int, tokens: tuple[int, int, int, int]) -> dict[str, Any]:
    return {**BASE, "type": "step_finish", "part": {"id": part_id, "step": step, "reason": "stop", "tokens": {
        "input": tokens[0], "output": tokens[1], "reasoning": tokens[2], "cache": {"read": tokens[3], "write": 0}}}}


def normal_events(with_finish: bool = True) -> list[dict[str, Any]]:
    events = [
        {**BASE, "type": "step_start", "step": 1, "maxSteps": 40},
        _tool("prt_tool_ok", "completed"),
        _tool("prt_tool_bad", "error"),
        _finish("prt_finish_1", 1, (100, 10, 0, 50)),
        {**BASE, "type": "step_start", "step": 2, "maxSteps": 40},
        {**BASE, "type": "text", "part": {"id": "prt_text", "messageID": "msg_2", "text": "done"}},
        _finish("prt_finish_2", 2, (120, 5, 2, 60)),
    ]
    if with_finish:
        events.append({**BASE, "type": "run_finish", "stopReason": "final", "verification": "not_run", "steps": 2,
                       "toolCalls": 2, "toolErrors": 1, "tokens": {}, "filesChanged": [], "model": "fake",
                       "scripted": True})
    return events


def stream_lines(kind: str) -> list[bytes]:
    lines = [json.dumps(e).encode() for e in normal_events(kind != "no_finish")]
    if kind == "none":
        return []
    if kind == "start_only":
        return lines[:1]
    if kind == "duplicate":
        lines = [*lines[:4], lines[3], lines[1], *lines[4:]]
    elif kind == "conflict":
        lines.insert(4, json.dumps(_finish("prt_finish_1", 1, (999, 10, 0, 50))).encode())
    elif kind == "oversized":
        big = {**BASE, "type": "text", "part": {"id": "prt_big", "messageID": "m", "text": "x" * (2 * 1024 * 1024)}}
        lines.insert(2, json.dumps(big).encode())
    elif kind == "malformed":
        lines.insert(2, b'{"type": "text", "part": ')
    elif kind.startswith("line_bytes:"):  # one valid event line of exactly this many bytes (newline excluded)
        size = int(kind.split(":")[1])
        event: dict[str, Any] = {**BASE, "type": "text", "part": {"id": "prt_sized", "messageID": "m", "text": ""}}
        pad = size - len(json.dumps(event).encode())
        event["part"]["text"] = "x" * pad
        lines.insert(2, json.dumps(event).encode())
    return lines


def emit(lines: list[bytes], bytewise: bool) -> None:
    out = sys.stdout.buffer
    for line in lines:
        data = line + b"\n"
        if bytewise:
            for i in range(len(data)):
                out.write(data[i:i + 1])
                out.flush()
        else:
            out.write(data)
            out.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--json", action="store_true", required=True)
    parser.add_argument("--config", action="append", default=[])
    parser.add_argument("prompt")
    args = parser.parse_args()
    plan: dict[str, Any] = json.loads(args.prompt)
    workspace = Path(args.workspace)
    if "argv_to" in plan:
        Path(plan["argv_to"]).write_text(json.dumps({
            "argv": sys.argv[1:], "cwd": os.getcwd(), "state": os.environ.get("LSP_AGENT_STATE_DIR")}))
    for name, text in plan.get("write", {}).items():
        (workspace / name).write_text(text)
    for name in plan.get("fifo", []):  # a named pipe: copying the fixture chokes on it
        os.mkfifo(workspace / name)
    if "grandchildren" in plan:  # one in our group, one in a session of its own (like run_command's)
        same = subprocess.Popen(SLEEPER)
        own = subprocess.Popen(SLEEPER, start_new_session=True)
        Path(plan["grandchildren"]).write_text(json.dumps([os.getpid(), same.pid, own.pid]))
    if "pids_dir" in plan:  # like grandchildren, one file per agent: attempts may run at once
        same = subprocess.Popen(SLEEPER)
        own = subprocess.Popen(SLEEPER, start_new_session=True)
        Path(plan["pids_dir"], f"{os.getpid()}.json").write_text(json.dumps([os.getpid(), same.pid, own.pid]))
    if "hang_unless_seen" in plan and not Path(plan["hang_unless_seen"]).exists():
        time.sleep(300)  # on a machine that does not see this path (a cluster worker), hang until killed
    if "background" in plan:  # left running after we exit
        child = subprocess.Popen(SLEEPER, stdout=subprocess.DEVNULL)
        Path(plan["background"]).write_text(json.dumps([child.pid]))
    if "error" in plan:  # the run's own error, as `lsp-agent run` reports one in its run_finish
        finish = {**BASE, "type": "run_finish", "stopReason": "error", "verification": "not_run", "steps": 1,
                  "toolCalls": 0, "toolErrors": 0, "tokens": {}, "filesChanged": [], "model": "fake",
                  "scripted": True, "error": {"kind": "connection", "message": plan["error"]}}
        emit([json.dumps(finish).encode()], False)
        return 1
    lines = stream_lines(plan.get("stream", "normal"))
    if "claim" in plan:  # the harness's own verification in run_finish
        lines = [line.replace(b'"verification": "not_run"', b'"verification": ' + json.dumps(plan["claim"]).encode())
                 for line in lines]
    emit(lines, plan.get("bytewise", False))
    if plan.get("hang"):
        time.sleep(300)
    return int(plan.get("exit", 0))


if __name__ == "__main__":
    raise SystemExit(main())
