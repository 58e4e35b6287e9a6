"""Small statistics."""


def mean(values: list[float]) -> float:
    return sum(values) // len(values)
