"""Loop-overhead benchmark: what the harness itself costs per step, against an instant model.

A loopback OpenAI-compatible server (both wire protocols) answers every request
at once with a scripted tool call — a read_file of a small file — and after N of
them with a final text. `lsp-agent run --json` runs as a real subprocess against
it. Measured, per wire protocol and N:

- wall: process start to exit (includes interpreter start-up and imports); CPU: the agent
  process's user + system time (what a loaded machine inflates least);
- per-step overhead: time from the server finishing a reply to receiving the next
  request, as seen by the server — parsing the stream, checking and running the
  call, storing the step, building and sending the next request (median, p95);
- peak RSS of the agent process (its `VmHWM` from /proc, polled; see `watch_process`);
- CPU ms/step: the agent's user + system CPU time from its first request to its last, per step
  (polled from /proc): when it equals the step gap, the agent is CPU-bound and the gap is its work;
- first and last request size in bytes;
- prefix-stable: the share of requests that are exact extensions of the previous
  one (every field but the message/item list byte-identical, the list starting
  with the previous list, element for element); `byte prefix` is the smallest
  share of the previous body that the next body repeats byte for byte.

- floor: the same request bodies, posted in the same order to the same server by the HTTP client
  the providers use, each reply read to its end and nothing else (bench/http_floor.py): the median
  gap of that replay is what the HTTP stack, the loopback and the kernel cost on this machine, and
  `harness` (step median minus floor) is the harness's own work per step;
- per 100 steps: the median gap of each 100-step bucket, and the growth per 100 steps
  (least-squares slope over the bucket medians) — a flat line means the per-step cost does
  not grow with the history.

Compaction `off`: automatic compaction off and a window no run fills (the history only grows).
Compaction `on`: a 32k-token window and no usage reports (the estimate decides), so long runs
compact every ~150 steps; the server answers each compaction request with a short summary.

Targets (see "A flat per-step cost and a bounded peak memory" in docs/decisions.md): per-step
overhead median <= 3 ms at N <= 30 and <= 4 ms at N = 1,000,
growth <= 0.3 ms per 100 steps, peak RSS <= 80 MB (<= 50 MB at N >= 1,000), 100 % prefix-stable
(without compaction), first request <= 16 KB.

    python bench/loop_overhead.py                 # N = 30, 200 and 1,000, both wires, compaction off
    python bench/loop_overhead.py -n 1000 --compaction off --compaction on
    python bench/loop_overhead.py -n 200 --wire chat --repeat 1 --profile /tmp/prof   # cProfile the agent

Side by side with another commit (`--against`: a checkout of it, e.g. a git worktree): every run
of this checkout's agent is paired with the same run of that checkout's agent, in alternating
order, against the same server, and a second table gives both medians and their ratio. On a
machine whose speed drifts, that ratio is what a change did; the absolute targets are judged on
this checkout's rows as before.

    git worktree add /tmp/before e2e1d14   # the baseline the targets were set against
    python bench/loop_overhead.py -n 30 -n 1000 --compaction off --compaction on --against /tmp/before
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import itertools
import json
import math
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

from bench.http_floor import write_bodies  # noqa: E402
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

TARGET_STEP_MS = 3.0  # at N <= 30
TARGET_LONG_STEP_MS = 4.0  # at N >= 1,000
TARGET_GROWTH_MS = 0.3  # per 100 steps
TARGET_RSS_MB = 80.0
TARGET_LONG_RSS_MB = 50.0  # at N >= 1,000
TARGET_FIRST_BYTES = 16 * 1024
SMALL_FILES = 8
BUCKET = 100
#: the tail prompt of a compaction request (context/manager.py COMPACTION_MARKER)
COMPACTION_ASK = b"[lsp-agent compaction #"
WORKSPACE_CONFIG = {
    "off": "[compaction]\nauto = false\ncontext_window = 10000000\n",
    "on": "[compaction]\ncontext_window = 32000\n",
}


@dataclass
class Sample:
    """One run of the agent."""

    wall_s: float
    startup_ms: float
    #: (step, ms): the gap before each request, by the step it belongs to
    gaps_ms: list[tuple[int, float]]
    compactions: int
    cpu_s: float
    rss_mb: float
    #: the agent's CPU time from its first request to its last, per step
    step_cpu_ms: float
    first_bytes: int
    last_bytes: int
    prefix_stable: float
    byte_prefix_min: float
    stop: str
    #: the gaps of the HTTP-only replay of the same requests (bench/http_floor.py)
    floor_gaps_ms: list[float]


@dataclass
class Result:
    """One configuration over its runs: step gaps pooled, wall and start-up medians, worst RSS/prefix."""

    wire: Wire
    steps: int
    compaction: str
    runs: int
    wall_s: float
    cpu_s: float
    startup_ms: float
    step_median_ms: float
    step_p95_ms: float
    step_cpu_ms: float
    floor_ms: float
    rss_mb: float
    first_bytes: int
    last_bytes: int
    prefix_stable: float
    byte_prefix_min: float
    stop: str
    compactions: int
    #: median gap per 100-step bucket
    buckets: list[float]

    @classmethod
    def of(cls, wire: Wire, steps: int, compaction: str, samples: list[Sample]) -> Result:
        gaps = [g for s in samples for _, g in s.gaps_ms]
        floor = [g for s in samples for g in s.floor_gaps_ms]  # none for another checkout's runs
        by_bucket: dict[int, list[float]] = collections.defaultdict(list)
        for s in samples:
            for step, g in s.gaps_ms:
                by_bucket[(step - 1) // BUCKET].append(g)
        return cls(
            wire=wire, steps=steps, compaction=compaction, runs=len(samples),
            wall_s=statistics.median(s.wall_s for s in samples),
            cpu_s=statistics.median(s.cpu_s for s in samples),
            startup_ms=statistics.median(s.startup_ms for s in samples),
            step_median_ms=statistics.median(gaps), step_p95_ms=percentile(gaps, 95),
            step_cpu_ms=statistics.median(s.step_cpu_ms for s in samples),
            floor_ms=statistics.median(floor) if floor else math.nan,
            rss_mb=max(s.rss_mb for s in samples),
            first_bytes=max(s.first_bytes for s in samples), last_bytes=max(s.last_bytes for s in samples),
            prefix_stable=min(s.prefix_stable for s in samples),
            byte_prefix_min=min(s.byte_prefix_min for s in samples),
            stop="/".join(sorted({s.stop for s in samples})),
            compactions=max(s.compactions for s in samples),
            buckets=[statistics.median(by_bucket[b]) for b in sorted(by_bucket)],
        )

    @property
    def growth_ms(self) -> float:
        """Least-squares slope of the bucket medians: ms per 100 steps (0 with fewer than 2 buckets)."""
        full = self.buckets[: self.steps // BUCKET]  # a last partial bucket is left out
        if len(full) < 2:
            return 0.0
        xs = range(len(full))
        mx, my = statistics.fmean(xs), statistics.fmean(full)
        return sum((x - mx) * (y - my) for x, y in zip(xs, full, strict=True)) / sum((x - mx) ** 2 for x in xs)

    def misses(self) -> list[str]:
        missed = []
        if self.steps <= 30 and self.step_median_ms > TARGET_STEP_MS:
            missed.append("step median")
        if self.steps >= 1000 and self.step_median_ms > TARGET_LONG_STEP_MS:
            missed.append("step median")
        if self.growth_ms > TARGET_GROWTH_MS:
            missed.append("growth")
        if self.rss_mb > (TARGET_LONG_RSS_MB if self.steps >= 1000 else TARGET_RSS_MB):
            missed.append("peak RSS")
        if self.compaction == "off" and self.prefix_stable < 1.0:
            missed.append("prefix stability")
        if self.first_bytes > TARGET_FIRST_BYTES:
            missed.append("first request size")
        return missed


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


@dataclass
class Watched:
    """What polling /proc saw of the agent process."""

    peak_kib: int = 0
    #: (monotonic time, the process's user + system CPU seconds so far)
    cpu: list[tuple[float, float]] = dataclasses.field(default_factory=list)

    def cpu_at(self, when: float) -> float:
        """CPU seconds used by `when` (the last sample not after it)."""
        before = [cpu for at, cpu in self.cpu if at <= when]
        return before[-1] if before else 0.0


async def watch_process(pid: int, every_s: float = 0.005) -> Watched:
    """The child's VmHWM (peak RSS of its own address space) and its CPU time, polled until it
    exits; nothing off Linux.

    Not ru_maxrss: Linux folds the address space a child had before exec — a copy of
    this (much larger) benchmark process — into the child's maxrss, so os.wait4 and
    RUSAGE_CHILDREN report the parent's size. VmHWM belongs to the exec'd program alone.
    CPU comes in clock ticks (10 ms): over a run of hundreds of steps that is a fine resolution.
    """
    status, stat = Path(f"/proc/{pid}/status"), Path(f"/proc/{pid}/stat")
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    seen = Watched()
    while True:
        try:
            text = status.read_text()
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            return seen
        hwm = next((line for line in text.splitlines() if line.startswith("VmHWM:")), None)
        if hwm is None:  # a zombie: the address space is gone
            return seen
        seen.peak_kib = max(seen.peak_kib, int(hwm.split()[1]))
        seen.cpu.append((time.monotonic(), (int(fields[11]) + int(fields[12])) / tick))  # utime, stime
        await asyncio.sleep(every_s)


def make_workspace(base: Path, compaction: str) -> Path:
    files = {f"src/mod{i}.py": "".join(f"def f{i}_{j}():\n    return {j}\n" for j in range(4))
             for i in range(SMALL_FILES)}
    return write_workspace(base / "ws", files, WORKSPACE_CONFIG[compaction])


def script(wire: Wire, steps: int, compaction: str) -> list[Reply]:
    """N read_file calls over a few small files (never the same call twice in a row), then text.
    With compaction on no usage is reported, so the harness's own estimate decides when to compact."""
    def usage(step: int, output: int) -> tuple[int, int, int, int]:
        return (1000 + step, output, 0, 900) if compaction == "off" else (0, output, 0, 0)

    replies = []
    for step in range(1, steps + 1):
        start = step % 4 * 2 + 1
        call = (f"call_{step}", "read_file",
                {"path": f"src/mod{step % SMALL_FILES}.py", "start_line": start, "end_line": start + 1})
        replies.append(Reply(chunks=[turn(wire, call=call, usage=usage(step, 20))], chunk_delay=0))
    replies.append(Reply(chunks=[turn(wire, text="Read them all.", usage=usage(steps, 5))], chunk_delay=0))
    return replies


class Replies(collections.deque[Reply]):
    """The scripted steps in order; a compaction request gets a short summary instead."""

    def __init__(self, server: LoopbackServer, wire: Wire, replies: list[Reply]) -> None:
        super().__init__(replies)
        self.server = server
        self.summary = Reply(chunks=[turn(wire, text="Summary: the agent read src/mod*.py one window at a time.")],
                             chunk_delay=0)

    def popleft(self) -> Reply:
        if COMPACTION_ASK in self.server.requests[-1].body:
            return self.summary
        return super().popleft()


async def run_once(server: LoopbackServer, wire: Wire, steps: int, compaction: str, workdir: Path,
                   profile: Path | None, checkout: Path | None = None) -> Sample:
    """One run of the agent: this checkout's, or with `checkout` that one's (and no floor replay)."""
    root = make_workspace(workdir, compaction)
    server.requests.clear()
    server.replies = Replies(server, wire, script(wire, steps, compaction))
    command = agent_command("Read the small files, one at a time.", root, server.url, wire,
                            "openai-compatible/bench", "--max-steps", str(steps + 1))
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
        name = f"{wire}-{steps}-{compaction}{'-against' if checkout else ''}.prof"
        command[1:3] = ["-m", "cProfile", "-o", str(profile / name), "-m", "lsp_agent"]
    env = {k: v for k, v in os.environ.items() if k != "LSP_AGENT_API_KEY"}
    env["LSP_AGENT_STATE_DIR"] = str(workdir / "state")
    if checkout is not None:
        env.update(checkout_env(checkout))
    with (workdir / "stdout").open("wb") as out, (workdir / "stderr").open("wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=checkout)
        watcher = asyncio.ensure_future(watch_process(proc.pid))
        _, status, usage = await asyncio.to_thread(os.wait4, proc.pid, 0)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        watched = await watcher
    events = [json.loads(line) for line in (workdir / "stdout").read_text().splitlines() if line.strip()]
    finish: dict[str, Any] = next((e for e in events if e.get("type") == "run_finish"), {})
    every = list(server.requests)
    requests = [r for r in every if COMPACTION_ASK not in r.body]
    if proc.returncode != 0 or len(requests) != steps + 1:
        sys.stderr.write((workdir / "stderr").read_text()[-2000:])
        raise SystemExit(f"{wire} N={steps}: exit {proc.returncode}, {len(requests)} requests, "
                         f"stop {finish.get('stopReason')}")
    gaps: list[tuple[int, float]] = []
    step = 1
    for prev, cur in itertools.pairwise(every):
        gaps.append((step, (cur.at - prev.done_at) * 1000))
        step += COMPACTION_ASK not in cur.body
    floor = [] if checkout else await replay(server, wire, steps, compaction, [r.body for r in every], workdir)
    bodies = [r.json() for r in requests]
    stable = sum(1 for prev, cur in itertools.pairwise(bodies)
                 if static_fields(wire, prev) == static_fields(wire, cur)
                 and extends(message_list(wire, prev), message_list(wire, cur)))
    byte_share = min(common_prefix_len(p.body, c.body) / len(p.body) for p, c in itertools.pairwise(requests))
    return Sample(
        wall_s=wall, startup_ms=(requests[0].at - started) * 1000, gaps_ms=gaps,
        compactions=len(every) - len(requests), cpu_s=usage.ru_utime + usage.ru_stime,
        rss_mb=(watched.peak_kib or usage.ru_maxrss) / 1024,
        step_cpu_ms=(watched.cpu_at(requests[-1].at) - watched.cpu_at(requests[0].at)) * 1000 / steps,
        first_bytes=len(requests[0].body), last_bytes=len(requests[-1].body),
        prefix_stable=stable / (len(bodies) - 1), byte_prefix_min=byte_share,
        stop=str(finish.get("stopReason")), floor_gaps_ms=floor,
    )


async def replay(server: LoopbackServer, wire: Wire, steps: int, compaction: str, bodies: list[bytes],
                 workdir: Path) -> list[float]:
    """The gaps of bench/http_floor.py posting `bodies` to the same server, answered as the agent was."""
    path = workdir / "bodies"
    write_bodies(path, bodies)
    server.requests.clear()
    server.replies = Replies(server, wire, script(wire, steps, compaction))
    url = server.url + ("/chat/completions" if wire == "chat" else "/responses")
    proc = await asyncio.create_subprocess_exec(sys.executable, str(REPO / "bench" / "http_floor.py"), url, str(path))
    if await proc.wait() != 0 or len(server.requests) != len(bodies):
        raise SystemExit(f"the HTTP floor replay failed: exit {proc.returncode}, {len(server.requests)} requests")
    return [(cur.at - prev.done_at) * 1000 for prev, cur in itertools.pairwise(server.requests)]


def checkout_env(checkout: Path) -> dict[str, str]:
    """`python -m lsp_agent` from `checkout` (run there, so its directory comes first on sys.path)."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")]))}


def check_checkout(checkout: Path) -> str:
    """The commit of `checkout`, after making sure its own lsp_agent is the one that runs there."""
    if not checkout.is_dir():
        raise SystemExit(f"--against {checkout}: no such directory")
    found = subprocess.run([sys.executable, "-c", "import lsp_agent; print(lsp_agent.__file__)"], cwd=checkout,
                           env={**os.environ, **checkout_env(checkout)}, capture_output=True, text=True)
    module = Path(found.stdout.strip() or ".").resolve()
    if found.returncode != 0 or not module.is_relative_to(checkout.resolve()):
        raise SystemExit(f"--against {checkout}: not a checkout of lsp-agent (python -m lsp_agent there runs "
                         f"{found.stdout.strip() or found.stderr.strip()[-200:] or 'nothing'})")
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip() or "not a git checkout"


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

    lines = ["| wire | N | compaction | runs | wall s | CPU s | start-up ms | step median ms | step p95 ms "
             "| CPU ms/step | floor ms | harness ms | growth ms/100 | peak RSS MB | first req B | last req B "
             "| prefix-stable | byte prefix (min) | stop |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        missed = r.misses()
        compaction = r.compaction + (f" ({r.compactions} times)" if r.compactions else "")
        lines.append(
            f"| {r.wire} | {r.steps} | {compaction} | {r.runs} | {r.wall_s:.2f} | {r.cpu_s:.2f} | {r.startup_ms:.0f} | "
            f"{r.step_median_ms:.2f}{mark('step median' not in missed)} | {r.step_p95_ms:.2f} | {r.step_cpu_ms:.2f} | "
            f"{r.floor_ms:.2f} | {r.step_median_ms - r.floor_ms:.2f} | "
            f"{r.growth_ms:+.2f}{mark('growth' not in missed)} | "
            f"{r.rss_mb:.1f}{mark('peak RSS' not in missed)} | "
            f"{r.first_bytes:,}{mark('first request size' not in missed)} | {r.last_bytes:,} | "
            f"{r.prefix_stable:.0%}{mark('prefix stability' not in missed)} | {r.byte_prefix_min:.4f} | {r.stop} |")
    long = [r for r in results if len(r.buckets) > 1]
    if long:
        width = max(len(r.buckets) for r in long)
        lines += ["", "median step gap (ms) per 100-step bucket:", "",
                  "| wire | N | compaction | "
                  + " | ".join(f"{b * BUCKET + 1}-{(b + 1) * BUCKET}" for b in range(width)) + " |",
                  "|---|---:|---|" + "---:|" * width]
        for r in long:
            lines.append(f"| {r.wire} | {r.steps} | {r.compaction} | " + " | ".join(f"{m:.2f}" for m in r.buckets)
                         + " |" * (width - len(r.buckets) + 1))
    return "\n".join(lines)


def side_by_side(pairs: list[tuple[Result, Result]]) -> str:
    """This checkout's rows beside the same configurations run by the other checkout."""
    lines = ["| wire | N | compaction | runs | step median ms | against | ratio | CPU ms/step | against | ratio "
             "| peak RSS MB | against |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for this, other in pairs:
        lines.append(
            f"| {this.wire} | {this.steps} | {this.compaction} | {this.runs} | {this.step_median_ms:.2f} | "
            f"{other.step_median_ms:.2f} | {this.step_median_ms / other.step_median_ms:.2f} | "
            f"{this.step_cpu_ms:.2f} | {other.step_cpu_ms:.2f} | "
            f"{this.step_cpu_ms / other.step_cpu_ms if other.step_cpu_ms else math.nan:.2f} | "
            f"{this.rss_mb:.1f} | {other.rss_mb:.1f} |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> tuple[list[Result], list[Result]]:
    server = LoopbackServer()
    server.keep_alive = True  # as real servers answer: the run should reuse one connection
    await server.start()
    results: list[Result] = []
    against: list[Result] = []
    try:
        for wire, steps, compaction in itertools.product(args.wire, args.n, args.compaction):
            samples: dict[Path | None, list[Sample]] = {None: [], args.against: []}
            for round_ in range(args.repeat):
                order: list[Path | None] = [None, args.against] if args.against else [None]
                if round_ % 2:  # alternating who goes first: a machine speeding up or slowing down favours neither
                    order.reverse()
                for checkout in order:
                    workdir = Path(tempfile.mkdtemp(prefix="lsp-agent-bench-"))
                    try:
                        samples[checkout].append(await run_once(server, wire, steps, compaction, workdir,
                                                                args.profile, checkout))
                    finally:
                        if not args.keep:
                            shutil.rmtree(workdir, ignore_errors=True)
            results.append(Result.of(wire, steps, compaction, samples[None]))
            if args.against:
                against.append(Result.of(wire, steps, compaction, samples[args.against]))
    finally:
        await server.close()
    return results, against


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", type=int, action="append",
                        help="tool-call steps per run (default: 30, 200 and 1000)")
    parser.add_argument("--wire", action="append", choices=["chat", "responses"],
                        help="wire protocol (default: both)")
    parser.add_argument("--compaction", action="append", choices=["off", "on"],
                        help="automatic compaction (default: off)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per configuration; step gaps are pooled (default 3)")
    parser.add_argument("--profile", type=Path, help="run the agent under cProfile, writing .prof files here")
    parser.add_argument("--keep", action="store_true", help="keep the temp workspaces and state")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT",
                        help="another checkout (e.g. a git worktree of an older commit): each run is paired "
                             "with the same run of its agent, and both are shown side by side")
    args = parser.parse_args()
    against_commit = check_checkout(args.against) if args.against else ""
    args.n = args.n or [30, 200, 1000]
    args.wire = args.wire or ["chat", "responses"]
    args.compaction = args.compaction or ["off"]
    results, against = asyncio.run(main_async(args))
    print(f"machine: {machine()}")
    print(table(results))
    if against:
        print(f"\nside by side with {args.against} ({against_commit}), runs paired in alternating order "
              "(ratio: this checkout / that one):\n")
        print(side_by_side(list(zip(results, against, strict=True))))
    missed = [r for r in results if r.misses()]
    print("targets: step median <= 3 ms at N <= 30 and <= 4 ms at N >= 1000, growth <= 0.3 ms per 100 steps, "
          "peak RSS <= 80 MB (<= 50 MB at N >= 1000), 100% prefix-stable without compaction, first request "
          f"<= 16 KB — {'all met' if not missed else f'{len(missed)} row(s) miss (marked ✗)'}")
    return 0 if not missed else 1


if __name__ == "__main__":
    raise SystemExit(main())
