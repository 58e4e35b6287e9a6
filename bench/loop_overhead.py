"""Loop-overhead benchmark: what the harness itself costs per step, against an instant model.

A loopback OpenAI-compatible server (both wire protocols) answers every request
at once with a scripted tool call — a read_file of a small file — and after N of
them with a final text. `lsp-agent run --json` runs as a real subprocess against
it. Measured, per wire protocol and N:

- wall: process start to exit (includes interpreter start-up and imports);
- per-step overhead: time from the server finishing a reply to receiving the next
  request, as seen by the server — parsing the stream, checking and running the
  call, storing the step, building and sending the next request (median, p95);
- peak RSS of the agent process (ru_maxrss from os.wait4 on that child);
- first and last request size in bytes;
- prefix-stable: the share of requests that are exact extensions of the previous
  one (every field but the message/item list byte-identical, the list starting
  with the previous list, element for element); `byte prefix` is the smallest
  share of the previous body that the next body repeats byte for byte.

Targets (issue 3): per-step overhead <= 10 ms median at N = 30, peak RSS <= 80 MB,
100 % prefix-stable, first request <= 16 KB.

    python bench/loop_overhead.py                 # N = 30 and 200, both wires
    python bench/loop_overhead.py -n 30 --wire chat --profile /tmp/prof   # cProfile the agent
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the loopback server lives with the provider tests
    sys.path.insert(0, str(REPO))

from lsp_agent.core.prefix import common_prefix_len  # noqa: E402
from tests.providers.loopback import (  # noqa: E402
    LoopbackServer,
    Reply,
    Wire,
    agent_command,
    extends,
    message_list,
    static_fields,
    turn,
    write_workspace,
)

TARGET_STEP_MS = 10.0
TARGET_RSS_MB = 80.0
TARGET_FIRST_BYTES = 16 * 1024
SMALL_FILES = 8


@dataclass
class Sample:
    """One run of the agent."""

    wall_s: float
    startup_ms: float
    gaps_ms: list[float]
    rss_mb: float
    first_bytes: int
    last_bytes: int
    prefix_stable: float
    byte_prefix_min: float
    stop: str


@dataclass
class Result:
    """One configuration over its runs: step gaps pooled, wall and start-up medians, worst RSS/prefix."""

    wire: Wire
    steps: int
    runs: int
    wall_s: float
    startup_ms: float
    step_median_ms: float
    step_p95_ms: float
    rss_mb: float
    first_bytes: int
    last_bytes: int
    prefix_stable: float
    byte_prefix_min: float
    stop: str

    @classmethod
    def of(cls, wire: Wire, steps: int, samples: list[Sample]) -> Result:
        gaps = [g for s in samples for g in s.gaps_ms]
        return cls(
            wire=wire, steps=steps, runs=len(samples),
            wall_s=statistics.median(s.wall_s for s in samples),
            startup_ms=statistics.median(s.startup_ms for s in samples),
            step_median_ms=statistics.median(gaps), step_p95_ms=percentile(gaps, 95),
            rss_mb=max(s.rss_mb for s in samples),
            first_bytes=max(s.first_bytes for s in samples), last_bytes=max(s.last_bytes for s in samples),
            prefix_stable=min(s.prefix_stable for s in samples),
            byte_prefix_min=min(s.byte_prefix_min for s in samples),
            stop="/".join(sorted({s.stop for s in samples})),
        )

    def misses(self) -> list[str]:
        missed = []
        if self.steps <= 30 and self.step_median_ms > TARGET_STEP_MS:
            missed.append("step median")
        if self.rss_mb > TARGET_RSS_MB:
            missed.append("peak RSS")
        if self.prefix_stable < 1.0:
            missed.append("prefix stability")
        if self.first_bytes > TARGET_FIRST_BYTES:
            missed.append("first request size")
        return missed


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


async def peak_rss_kib(pid: int, every_s: float = 0.005) -> int:
    """The child's VmHWM (peak RSS of its own address space), polled until it exits; 0 off Linux.

    Not ru_maxrss: Linux folds the address space a child had before exec — a copy of
    this (much larger) benchmark process — into the child's maxrss, so os.wait4 and
    RUSAGE_CHILDREN report the parent's size. VmHWM belongs to the exec'd program alone.
    """
    status = Path(f"/proc/{pid}/status")
    peak = 0
    while True:
        try:
            text = status.read_text()
        except OSError:
            return peak
        hwm = next((line for line in text.splitlines() if line.startswith("VmHWM:")), None)
        if hwm is None:  # a zombie: the address space is gone
            return peak
        peak = max(peak, int(hwm.split()[1]))
        await asyncio.sleep(every_s)


def make_workspace(base: Path) -> Path:
    files = {f"src/mod{i}.py": "".join(f"def f{i}_{j}():\n    return {j}\n" for j in range(4))
             for i in range(SMALL_FILES)}
    return write_workspace(base / "ws", files)


def script(wire: Wire, steps: int) -> list[Reply]:
    """N read_file calls over a few small files (never the same call twice in a row), then text."""
    replies = []
    for step in range(1, steps + 1):
        start = step % 4 * 2 + 1
        call = (f"call_{step}", "read_file",
                {"path": f"src/mod{step % SMALL_FILES}.py", "start_line": start, "end_line": start + 1})
        replies.append(Reply(chunks=[turn(wire, call=call, usage=(1000 + step, 20, 0, 900))], chunk_delay=0))
    replies.append(Reply(chunks=[turn(wire, text="Read them all.", usage=(1000 + steps, 5, 0, 900))],
                         chunk_delay=0))
    return replies


async def run_once(server: LoopbackServer, wire: Wire, steps: int, workdir: Path,
                   profile: Path | None) -> Sample:
    root = make_workspace(workdir)
    server.requests.clear()
    server.replies.clear()
    server.queue(*script(wire, steps))
    command = agent_command("Read the small files, one at a time.", root, server.url, wire,
                            "openai-compatible/bench", "--max-steps", str(steps + 1))
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
        command[1:3] = ["-m", "cProfile", "-o", str(profile / f"{wire}-{steps}.prof"), "-m", "lsp_agent"]
    env = {k: v for k, v in os.environ.items() if k != "LSP_AGENT_API_KEY"}
    env["LSP_AGENT_STATE_DIR"] = str(workdir / "state")
    with (workdir / "stdout").open("wb") as out, (workdir / "stderr").open("wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        watcher = asyncio.ensure_future(peak_rss_kib(proc.pid))
        _, status, usage = await asyncio.to_thread(os.wait4, proc.pid, 0)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        hwm_kib = await watcher
    events = [json.loads(line) for line in (workdir / "stdout").read_text().splitlines() if line.strip()]
    finish: dict[str, Any] = next((e for e in events if e.get("type") == "run_finish"), {})
    requests = list(server.requests)
    if proc.returncode != 0 or len(requests) != steps + 1:
        sys.stderr.write((workdir / "stderr").read_text()[-2000:])
        raise SystemExit(f"{wire} N={steps}: exit {proc.returncode}, {len(requests)} requests, "
                         f"stop {finish.get('stopReason')}")
    gaps = [(requests[i].at - requests[i - 1].done_at) * 1000 for i in range(1, len(requests))]
    bodies = [r.json() for r in requests]
    stable = sum(1 for prev, cur in itertools.pairwise(bodies)
                 if static_fields(wire, prev) == static_fields(wire, cur)
                 and extends(message_list(wire, prev), message_list(wire, cur)))
    byte_share = min(common_prefix_len(p.body, c.body) / len(p.body) for p, c in itertools.pairwise(requests))
    return Sample(
        wall_s=wall, startup_ms=(requests[0].at - started) * 1000, gaps_ms=gaps,
        rss_mb=(hwm_kib or usage.ru_maxrss) / 1024,
        first_bytes=len(requests[0].body), last_bytes=len(requests[-1].body),
        prefix_stable=stable / (len(bodies) - 1), byte_prefix_min=byte_share,
        stop=str(finish.get("stopReason")),
    )


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs ({cpu}), "
            f"Python {platform.python_version()}")


def table(results: list[Result]) -> str:
    def mark(ok: bool) -> str:
        return "" if ok else " ✗"

    lines = ["| wire | N | runs | wall s | start-up ms | step median ms | step p95 ms | peak RSS MB | first req B "
             "| last req B | prefix-stable | byte prefix (min) | stop |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        missed = r.misses()
        lines.append(
            f"| {r.wire} | {r.steps} | {r.runs} | {r.wall_s:.2f} | {r.startup_ms:.0f} | "
            f"{r.step_median_ms:.2f}{mark('step median' not in missed)} | {r.step_p95_ms:.2f} | "
            f"{r.rss_mb:.1f}{mark('peak RSS' not in missed)} | "
            f"{r.first_bytes:,}{mark('first request size' not in missed)} | {r.last_bytes:,} | "
            f"{r.prefix_stable:.0%}{mark('prefix stability' not in missed)} | {r.byte_prefix_min:.4f} | {r.stop} |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> list[Result]:
    server = LoopbackServer()
    await server.start()
    results: list[Result] = []
    try:
        for wire in args.wire:
            for steps in args.n:
                samples = []
                for _ in range(args.repeat):
                    workdir = Path(tempfile.mkdtemp(prefix="lsp-agent-bench-"))
                    try:
                        samples.append(await run_once(server, wire, steps, workdir, args.profile))
                    finally:
                        if not args.keep:
                            shutil.rmtree(workdir, ignore_errors=True)
                results.append(Result.of(wire, steps, samples))
    finally:
        await server.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", type=int, action="append", help="tool-call steps per run (default: 30 and 200)")
    parser.add_argument("--wire", action="append", choices=["chat", "responses"],
                        help="wire protocol (default: both)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per configuration; step gaps are pooled (default 3)")
    parser.add_argument("--profile", type=Path, help="run the agent under cProfile, writing .prof files here")
    parser.add_argument("--keep", action="store_true", help="keep the temp workspaces and state")
    args = parser.parse_args()
    args.n = args.n or [30, 200]
    args.wire = args.wire or ["chat", "responses"]
    results = asyncio.run(main_async(args))
    print(f"machine: {machine()}")
    print(table(results))
    missed = [r for r in results if r.misses()]
    print("targets: step median <= 10 ms at N = 30, peak RSS <= 80 MB, 100% prefix-stable, first request "
          f"<= 16 KB — {'all met' if not missed else f'{len(missed)} row(s) miss (marked ✗)'}")
    return 0 if not missed else 1


if __name__ == "__main__":
    raise SystemExit(main())
