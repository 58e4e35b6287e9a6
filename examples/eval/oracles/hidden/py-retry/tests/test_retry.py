import unittest

from retry import retry


class Flaky:
    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise OSError(f"failure {self.calls}")
        return "ok"


class Retry(unittest.TestCase):
    def test_succeeds_on_last_attempt(self) -> None:
        flaky = Flaky(2)
        self.assertEqual(retry(flaky, 3), "ok")
        self.assertEqual(flaky.calls, 3)

    def test_reraises_last_error(self) -> None:
        flaky = Flaky(5)
        with self.assertRaisesRegex(OSError, "failure 3"):
            retry(flaky, 3)
        self.assertEqual(flaky.calls, 3)
