"""The stack's floor under bench/loop_overhead.py: the agent's own request bodies, posted in order by
the HTTP client the providers use, each streamed reply read to its end — and nothing else.

Its gap per step is what the HTTP client (httpx over asyncio), the loopback and the kernel cost
together on this machine; the agent's gap minus it is the harness's own work (parse the stream,
check and run the call, store the step, build the next request).

    python bench/http_floor.py URL BODIES   # BODIES: a JSON list of lengths, a newline, the bodies
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from lsp_agent.providers.http_client import new_client  # noqa: E402


def read_bodies(path: Path) -> list[bytes]:
    data = path.read_bytes()
    header, _, rest = data.partition(b"\n")
    bodies, at = [], 0
    for length in json.loads(header):
        bodies.append(rest[at:at + length])
        at += length
    return bodies


def write_bodies(path: Path, bodies: list[bytes]) -> None:
    path.write_bytes(json.dumps([len(b) for b in bodies]).encode() + b"\n" + b"".join(bodies))


async def post_all(url: str, bodies: list[bytes]) -> None:
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    async with new_client(url, timeout=30) as client:
        for body in bodies:
            request = client.build_request("POST", url, content=body, headers=headers)
            response = await client.send(request, stream=True)
            try:
                async for _ in response.aiter_bytes():
                    pass
            finally:
                await response.aclose()


def main() -> int:
    url, bodies = sys.argv[1], read_bodies(Path(sys.argv[2]))
    asyncio.run(post_all(url, bodies))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
