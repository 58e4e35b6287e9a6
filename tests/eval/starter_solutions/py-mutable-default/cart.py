"""A shopping cart."""


def add_item(item: str, cart: list[str] | None = None) -> list[str]:
    """Add item to cart (a new cart when none is given) and return the cart."""
    if cart is None:
        cart = []
    cart.append(item)
    return cart
