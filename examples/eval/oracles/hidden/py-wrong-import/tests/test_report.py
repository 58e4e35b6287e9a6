import unittest

from report import summary


class Summary(unittest.TestCase):
    def test_summary(self) -> None:
        self.assertEqual(summary("ACME", 123456), "ACME: 1234.56 EUR")

    def test_negative(self) -> None:
        self.assertEqual(summary("ACME", -5), "ACME: -0.05 EUR")
