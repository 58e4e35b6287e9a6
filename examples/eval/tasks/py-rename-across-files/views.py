"""Pages."""

from users import get_usr


def profile(user_id: int) -> str:
    return f"<h1>{get_usr(user_id)}</h1>"
