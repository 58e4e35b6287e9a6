"""A one-line summary of an invoice."""

from money import fmt


def summary(customer: str, cents: int) -> str:
    return f"{customer}: {fmt(cents)}"
