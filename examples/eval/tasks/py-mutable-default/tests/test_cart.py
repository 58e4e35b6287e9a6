import unittest

from cart import add_item


class Cart(unittest.TestCase):
    def test_new_carts_are_separate(self) -> None:
        self.assertEqual(add_item("apple"), ["apple"])
        self.assertEqual(add_item("pear"), ["pear"])

    def test_given_cart(self) -> None:
        mine = ["milk"]
        self.assertIs(add_item("egg", mine), mine)
        self.assertEqual(mine, ["milk", "egg"])
