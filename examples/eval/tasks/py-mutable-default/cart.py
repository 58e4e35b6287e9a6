"""A shopping cart."""


def add_item(item: str, cart: list[str] = []) -> list[str]:
    """Add item to cart (a new cart when none is given) and return the cart."""
    cart.append(item)
    return cart
