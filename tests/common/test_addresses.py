"""The client's address, read one way everywhere: REMOTE_ADDR, or behind NUM_PROXIES trusted
proxies the address the outermost of them saw."""

from typing import Any

import pytest
from django.test import RequestFactory

from common.addresses import client_address


def request(forwarded: str | None = None, remote: str = "127.0.0.1") -> Any:
    headers: dict[str, Any] = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/", **headers)


@pytest.mark.parametrize(
    ("proxies", "forwarded", "address"),
    [
        (0, None, "127.0.0.1"),
        (0, "203.0.113.7", "127.0.0.1"),  # no proxy trusted: the header is the client's own
        (1, None, "127.0.0.1"),
        (1, "203.0.113.7", "203.0.113.7"),  # nginx alone: what it saw
        (1, "10.0.0.1, 203.0.113.7", "203.0.113.7"),  # the client's own entry is ignored
        (2, "10.0.0.1, 203.0.113.7, 192.0.2.4", "203.0.113.7"),  # a load balancer, then nginx
        (2, "203.0.113.7", "203.0.113.7"),  # fewer entries than proxies: the first
    ],
)
def test_the_client_address(
    settings: Any, proxies: int, forwarded: str | None, address: str
) -> None:
    settings.NUM_PROXIES = proxies

    assert client_address(request(forwarded)) == address


def test_sign_in_lockouts_read_the_same_address(settings: Any) -> None:
    assert settings.AXES_CLIENT_IP_CALLABLE == "common.addresses.client_address"
