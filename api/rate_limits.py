"""The base of every rate limit: counts in the cache, and fails open when the cache is down.

A cache (Redis) outage must not turn every request into a 500: the request is let through,
the failure logged and counted (``RATE_LIMIT_FAILURES``), and the limits apply again as soon
as the cache answers.
"""

import logging
from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

logger = logging.getLogger(__name__)
RATE_LIMIT_FAILURES = {"count": 0}


class FailOpenRateThrottle(SimpleRateThrottle):
    def allow_request(self, request: Request, view: Any) -> bool:
        try:
            return super().allow_request(request, view)
        except Exception:
            RATE_LIMIT_FAILURES["count"] += 1
            logger.warning(
                "Rate limit %s not checked (cache unreachable); request let through",
                self.scope,
                exc_info=True,
            )
            return True
