"""The fixed vocabulary of what a lab's connector can do to a lab order after submission."""

CAPABILITIES = ("cancel", "hold", "unhold", "updateAddress", "updateShippingMethod")


def capabilities_listed(capabilities: object) -> list[str]:
    """A lab's capabilities in the vocabulary's order (names outside it are dropped)."""
    given = set(capabilities) if isinstance(capabilities, list | set | frozenset | tuple) else set()
    return [name for name in CAPABILITIES if name in given]
