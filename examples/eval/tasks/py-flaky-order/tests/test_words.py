import unittest

from words import unique_words


class UniqueWords(unittest.TestCase):
    def test_first_occurrence_order(self) -> None:
        text = "the quick brown fox jumps over the lazy dog the end"
        self.assertEqual(unique_words(text),
                         ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "end"])

    def test_empty(self) -> None:
        self.assertEqual(unique_words(""), [])
