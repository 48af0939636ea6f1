"""A budget of sign-ups and registration completions per client address."""

from typing import Any

from api.rate_limits import FailOpenRateThrottle


class RegistrationThrottle(FailOpenRateThrottle):
    """``REGISTRATION_RATE_LIMIT`` per address, for the sign-up page and the API alike (both
    take a Django or a DRF request: only ``META`` is read)."""

    scope = "registration"

    def get_cache_key(self, request: Any, view: Any) -> str:
        return f"throttle_{self.scope}_{self.get_ident(request)}"
