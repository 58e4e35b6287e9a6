"""What one streamed model request costs the client, by layer — the floor under the per-step overhead.

A keep-alive loopback server (its own process) answers every POST with one scripted tool-call reply
streamed as SSE. The client sends N requests of `--body-kb` KiB in a row, each through:

- `provider`: lsp-agent's ChatCompletionsProvider.stream (its httpx client, SSE parsing, reply
  assembly, reading the stream to its end so the connection is reused);
- `httpx`: the providers' client (`new_client`: httpx with httpcore's pool on asyncio streams,
  lsp_agent/providers/asyncio_transport.py), httpx.AsyncClient.stream, the body read to its end;
- `httpx-anyio`: the same with httpx's default transport (httpcore's pool on anyio), for comparison;
- `h11`: the same exchange by hand over one asyncio stream with the h11 state machine (what the
  protocol itself costs in Python, without a pool, timeouts or error mapping).

Printed per mode: client CPU and wall time per request (medians over `--rounds` interleaved rounds).

    python bench/http_client.py                 # 400 requests x 5 rounds, 20 KiB bodies
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.providers.loopback import LoopbackServer, Reply, simple_request, turn  # noqa: E402

MODES = ("provider", "httpx", "httpx-anyio", "h11")


async def serve() -> None:
    server = LoopbackServer()
    server.keep_alive = True
    server.fallback = Reply(chunks=[turn("chat", call=("call_1", "read_file", {"path": "src/a.py"}),
                                         usage=(1000, 20, 0, 900))], chunk_delay=0)
    await server.start()
    print(server.port, flush=True)
    await asyncio.Event().wait()


async def client(mode: str, url: str, body: bytes) -> Callable[[], Awaitable[None]]:
    """One request of `mode`, ready to be called repeatedly."""
    if mode == "provider":
        from lsp_agent.providers.chat_completions import ChatCompletionsProvider
        from lsp_agent.settings.config import ProviderConfig

        provider = ChatCompletionsProvider(ProviderConfig(base_url=url), model="m")
        request = simple_request()

        async def via_provider() -> None:
            async for _ in provider.stream(request, body):
                pass
        return via_provider
    if mode in ("httpx", "httpx-anyio"):
        from lsp_agent.providers.http_client import httpx, new_client

        http = new_client(url) if mode == "httpx" else httpx.AsyncClient()

        async def via_httpx() -> None:
            async with http.stream("POST", f"{url}/chat/completions", content=body,
                                   headers={"Content-Type": "application/json"}) as response:
                async for _ in response.aiter_bytes():
                    pass
        return via_httpx
    import h11

    host, port = url.removeprefix("http://").split("/", 1)[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    state = {"conn": h11.Connection(h11.CLIENT)}
    headers = [("Host", host), ("Content-Type", "application/json"), ("Content-Length", str(len(body)))]

    async def via_h11() -> None:
        conn = state["conn"]
        writer.write(conn.send(h11.Request(method="POST", target="/v1/chat/completions", headers=headers))
                     + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.EndOfMessage):
                conn.start_next_cycle()
                return
    return via_h11


async def measure(mode: str, url: str, body: bytes, requests: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per request, after a short warm-up."""
    one = await client(mode, url, body)
    for _ in range(20):
        await one()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(requests):
        await one()
    return (time.process_time() - cpu) * 1000 / requests, (time.perf_counter() - wall) * 1000 / requests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-n", "--requests", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--body-kb", type=int, default=20)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve())
        return 0
    body = json.dumps({"model": "m", "stream": True, "messages": [
        {"role": "user", "content": "x" * (args.body_kb * 1024)}]}).encode()
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        results: dict[str, list[tuple[float, float]]] = {m: [] for m in MODES}
        for _ in range(args.rounds):  # interleaved: a load change hits every mode alike
            for mode in MODES:
                results[mode].append(asyncio.run(measure(mode, url, body, args.requests)))
    finally:
        server.kill()
    print(f"{args.requests} requests x {args.rounds} rounds, {args.body_kb} KiB bodies, keep-alive loopback")
    print("| client | CPU ms / request | wall ms / request |\n|---|---:|---:|")
    for mode in MODES:
        print(f"| {mode} | {statistics.median(c for c, _ in results[mode]):.2f} "
              f"| {statistics.median(w for _, w in results[mode]):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
