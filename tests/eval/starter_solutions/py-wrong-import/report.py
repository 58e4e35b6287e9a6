"""A one-line summary of an invoice."""

from money import format_money


def summary(customer: str, cents: int) -> str:
    return f"{customer}: {format_money(cents)}"
