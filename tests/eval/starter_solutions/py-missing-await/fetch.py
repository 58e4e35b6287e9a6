"""Fetch many URLs at once."""

import asyncio
from collections.abc import Awaitable, Callable


async def fetch_all(urls: list[str], get: Callable[[str], Awaitable[str]]) -> list[str]:
    return list(await asyncio.gather(*(get(url) for url in urls)))


if __name__ == "__main__":
    async def echo(url: str) -> str:
        await asyncio.sleep(0)
        return url

    print(asyncio.run(fetch_all(["a", "b"], echo)))
