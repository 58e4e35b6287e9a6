"""Call a flaky function a few times."""

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def retry(fn: Callable[[], T], attempts: int) -> T | None:
    """Call fn up to `attempts` times; return its first result; re-raise its last error."""
    for attempt in range(attempts):
        try:
            return fn()
        except Exception:
            if attempt == attempts - 1:
                raise
    return None
