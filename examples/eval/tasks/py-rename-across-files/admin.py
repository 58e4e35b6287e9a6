"""Admin tools."""

import users


def audit(ids: list[int]) -> list[str]:
    return [users.get_usr(i).upper() for i in ids]
