"""User lookup."""

_USERS = {1: "ada", 2: "grace"}


def get_usr(user_id: int) -> str:
    """The user's name; KeyError if there is no such user."""
    return _USERS[user_id]
