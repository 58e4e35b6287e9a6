"""Pagination helpers."""


def page_count(items: int, per_page: int) -> int:
    """How many pages are needed to show `items` items, `per_page` per page."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    return items // per_page
