"""Pages."""

from users import get_user


def profile(user_id: int) -> str:
    return f"<h1>{get_user(user_id)}</h1>"
