"""Incremental didChange cost against document size, and agent/status latency during a flood.

Starts the real server over stdio (`python -m lsp_agent serve`), opens a document of 200 lines and
one of 40,000 lines (1.7 MB), and for each sends a flood of one-character incremental changes at
random lines as fast as the pipe takes them (the writer waits only for the pipe, as an editor
replaying a macro would), while a second task sends `agent/status` every 50 ms. Prints per document
the cost of one change (flood time / changes, measured to the answer of a status request sent
after the last change), the status latencies seen during the flood, and how long that last status
request waited ("final"); then the ratio of the two per-change costs. The server under test is
whatever `lsp_agent` the child process imports: this checkout's, or with `--server NAME=PATH` one
or more checkouts side by side in one run (PATH goes first on the child's PYTHONPATH; the runs are
interleaved, so a drift of the machine's speed hits them alike).
Target: the per-change ratio (40,000 / 200 lines) under 2, status p99 under 50 ms.

    python bench/document_sync.py [--changes 10000] [--lines 200,40000] [--runs 1] [--status-every-ms 50]
                                  [--server main=/work/main --server branch=.]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RATIO = 2.0
TARGET_STATUS_MS = 50.0
LINE = "    value = compute(item, 'text that fills a line') \n"  # 52 characters, like source code


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **payload}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Client:
    """A lean JSON-RPC client over the server's stdio (json.loads per frame and nothing else)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin, self.stdout = proc, proc.stdin, proc.stdout
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while True:
            length = 0
            while (line := await self.stdout.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if not line:
                return
            message = json.loads(await self.stdout.readexactly(length))
            if "id" in message and "method" not in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None and not future.done():
                    future.set_result(message.get("result"))
            elif "id" in message:  # a request of the server's (configuration): answer empty
                await self.send({"id": message["id"], "result": [None] * 4})

    async def send(self, payload: dict[str, Any]) -> None:
        self.stdin.write(frame(payload))
        await self.stdin.drain()

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.waiting[msg_id] = future
        await self.send({"id": msg_id, "method": method, "params": params})
        return await future

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"method": method, "params": params})


def server_env(checkout: str | None) -> dict[str, str]:
    """The environment of a server of `checkout` (None: whatever this Python imports)."""
    if checkout is None:
        return dict(os.environ)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(checkout).resolve()),
                                                                      os.environ.get("PYTHONPATH")]))}


def imported_from(checkout: str | None) -> str:
    """Where a server of `checkout` imports lsp_agent from: printed, so a table names what it measured."""
    # From a directory of no checkout, as the servers run (`-c` would look in the current one first).
    done = subprocess.run([sys.executable, "-c", "import lsp_agent; print(lsp_agent.__file__)"],
                          env=server_env(checkout), capture_output=True, text=True, check=True,
                          cwd=tempfile.gettempdir())
    return str(Path(done.stdout.strip()).parent)


async def measure(lines: int, changes: int, seed: int, checkout: str | None = None,
                  status_every_s: float = 0.05) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        env = {**server_env(checkout), "LSP_AGENT_STATE_DIR": str(Path(tmp) / "state"),
               "XDG_CONFIG_HOME": str(Path(tmp) / "config")}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "lsp_agent", "serve", cwd=root, env=env, limit=1 << 24,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        client = Client(proc)
        try:
            await client.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
            await client.notify("initialized", {})
            uri = (root / "doc.py").as_uri()
            await client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": LINE * lines}})
            await client.request("agent/status", {})  # the open is applied

            rng = random.Random(seed)
            latencies: list[float] = []
            flooding = True

            async def poll_status() -> None:
                while flooding:
                    sent = time.perf_counter()
                    await client.request("agent/status", {})
                    latencies.append((time.perf_counter() - sent) * 1000)
                    await asyncio.sleep(status_every_s)

            poller = asyncio.ensure_future(poll_status())
            started = time.perf_counter()
            for version in range(2, changes + 2):
                line = rng.randrange(lines)
                await client.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": {"start": {"line": line, "character": 4},
                                                  "end": {"line": line, "character": 4}}, "text": "x"}]})
            last_sent = time.perf_counter()
            await client.request("agent/status", {})  # answered once every change is applied
            elapsed = time.perf_counter() - started
            final_ms = (time.perf_counter() - last_sent) * 1000
            flooding = False
            await poller
        finally:
            proc.kill()
            await proc.wait()
            client.reader.cancel()
    return {"per_change_ms": elapsed * 1000 / changes, "flood_s": elapsed, "final_ms": final_ms,
            "status_p50_ms": statistics.median(latencies) if latencies else 0.0,
            "status_p99_ms": percentile(latencies, 0.99) if latencies else 0.0,
            "status_max_ms": max(latencies, default=0.0), "status_n": float(len(latencies))}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--lines", default="200,40000", help="document sizes in lines, comma-separated")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--status-every-ms", type=float, default=50.0,
                        help="the pause between two agent/status requests during the flood")
    parser.add_argument("--server", action="append", default=[], metavar="NAME=PATH",
                        help="a checkout to measure (repeatable); default: the lsp_agent this Python imports")
    args = parser.parse_args()
    sizes = [int(n) for n in args.lines.split(",")]
    servers: list[tuple[str, str | None]] = [
        (name, path) for name, _, path in (spec.partition("=") for spec in args.server)] or [("this checkout", None)]
    for name, path in servers:
        if path is not None and not (Path(path) / "lsp_agent" / "__init__.py").is_file():
            parser.error(f"--server {name}={path}: no lsp_agent package there")
    origins = {name: imported_from(path) for name, path in servers}
    results: dict[tuple[str, int], list[dict[str, float]]] = {(name, n): [] for name, _ in servers for n in sizes}
    for run in range(args.runs):
        for n in sizes:  # interleaved, so a drift of the machine's speed hits every size and server alike
            for name, path in servers:
                results[name, n].append(await measure(n, args.changes, run, path, args.status_every_ms / 1000))
    print(f"{args.changes} one-character didChange per document, {args.runs} run(s), agent/status every "
          f"{args.status_every_ms:g} ms, load {os.getloadavg()[0]:.1f}")
    for name, origin in origins.items():
        print(f"server {name}: lsp_agent from {origin}")
    print("| server | lines | MB | ms per change | flood s | status p50 ms | p99 ms | max ms | status answers "
          "| final ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ok = True
    verdicts: list[str] = []
    for name, _ in servers:
        per_change: dict[int, float] = {}
        worst_status = 0.0
        for n in sizes:
            rows = results[name, n]
            per_change[n] = statistics.median(r["per_change_ms"] for r in rows)
            p99 = max(r["status_p99_ms"] for r in rows)
            worst_status = max(worst_status, p99)
            print(f"| {name} | {n:,} | {n * len(LINE) / 1e6:.2f} | {per_change[n]:.3f} | "
                  f"{statistics.median(r['flood_s'] for r in rows):.2f} | "
                  f"{statistics.median(r['status_p50_ms'] for r in rows):.1f} | {p99:.1f} | "
                  f"{max(r['status_max_ms'] for r in rows):.1f} | {sum(int(r['status_n']) for r in rows)} | "
                  f"{statistics.median(r['final_ms'] for r in rows):.1f} |")
        if len(sizes) >= 2:
            ratio = per_change[sizes[-1]] / per_change[sizes[0]]
            ok = ok and ratio < TARGET_RATIO
            verdicts.append(f"{name}: per-change ratio {sizes[-1]:,} / {sizes[0]:,} lines: {ratio:.2f} "
                            f"(target < {TARGET_RATIO:g})")
        ok = ok and worst_status < TARGET_STATUS_MS
        verdicts.append(f"{name}: status p99 during the floods: {worst_status:.1f} ms "
                        f"(target < {TARGET_STATUS_MS:g} ms)")
    print("\n".join(verdicts))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
