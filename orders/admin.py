"""Admin registrations of the orders app (Django imports this module to find them)."""

import orders.callbacks.admin  # noqa: F401
