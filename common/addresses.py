"""The client's address, read the same way everywhere (rate limits, sign-in lockouts, who may
scrape ``/metrics``): ``REMOTE_ADDR``, or, behind ``NUM_PROXIES`` trusted proxies that each
append to ``X-Forwarded-For``, the address the outermost of them saw. A client cannot choose its
own: what it wrote in the header itself stays left of what the proxies appended."""

from typing import Any

from django.conf import settings


def client_address(request: Any) -> str:
    """The address of the client that sent ``request`` (a Django or a DRF request: only
    ``META`` is read); also django-axes' ``AXES_CLIENT_IP_CALLABLE``."""
    remote = str(request.META.get("REMOTE_ADDR") or "")
    forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR") or "")
    proxies = settings.NUM_PROXIES
    if proxies <= 0 or not forwarded:
        return remote
    addresses = [address.strip() for address in forwarded.split(",")]
    return addresses[-min(proxies, len(addresses))]
