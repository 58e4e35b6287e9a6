import pathlib
import unittest

import admin
import users
import views


class Rename(unittest.TestCase):
    def test_new_name(self) -> None:
        self.assertEqual(users.get_user(1), "ada")
        self.assertEqual(views.profile(2), "<h1>grace</h1>")
        self.assertEqual(admin.audit([1, 2]), ["ADA", "GRACE"])

    def test_old_name_is_gone(self) -> None:
        root = pathlib.Path(__file__).resolve().parent.parent
        left = [p.name for p in root.glob("*.py") if "get_usr" in p.read_text()]
        self.assertEqual(left, [])
