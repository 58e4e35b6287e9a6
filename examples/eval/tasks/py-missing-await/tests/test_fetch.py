import asyncio
import unittest

from fetch import fetch_all


class FetchAll(unittest.TestCase):
    def test_results_in_order_and_concurrent(self) -> None:
        running = 0
        peak = 0

        async def get(url: str) -> str:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01 * (3 - len(url)))
            running -= 1
            return url.upper()

        self.assertEqual(asyncio.run(fetch_all(["a", "bb", "c"], get)), ["A", "BB", "C"])
        self.assertEqual(peak, 3)
