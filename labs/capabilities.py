"""The fixed vocabulary of what a lab's connector can do to a lab order after submission."""

CAPABILITIES = ("cancel", "hold", "unhold", "updateAddress", "updateShippingMethod")
