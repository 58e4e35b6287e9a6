"""Word utilities."""


def unique_words(text: str) -> list[str]:
    """The words of `text`, each once, in the order they first appear."""
    return list(set(text.split()))
