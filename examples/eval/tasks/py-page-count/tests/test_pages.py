import unittest

from pages import page_count


class PageCount(unittest.TestCase):
    def test_partial_last_page(self) -> None:
        self.assertEqual(page_count(10, 3), 4)

    def test_exact(self) -> None:
        self.assertEqual(page_count(9, 3), 3)

    def test_empty(self) -> None:
        self.assertEqual(page_count(0, 3), 0)

    def test_bad_page_size(self) -> None:
        with self.assertRaises(ValueError):
            page_count(1, 0)
