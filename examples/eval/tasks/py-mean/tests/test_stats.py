import unittest

from stats import mean


class Mean(unittest.TestCase):
    def test_fraction(self) -> None:
        self.assertEqual(mean([1, 2]), 1.5)

    def test_negative(self) -> None:
        self.assertEqual(mean([-3, -4]), -3.5)

    def test_empty(self) -> None:
        with self.assertRaises(ValueError):
            mean([])
