"""The catalogue's admin forms as an administrator posts them: a lab, a lab product, a
shipping rate. ``AdminSession`` posts them over HTTP to a server in another process (signed in
through the admin's own form, with its CSRF token), where the Django test client cannot go."""

import re
from typing import Any

import requests

# A formset of the lab page's inlines with nothing in it.
_NO_INLINES = {
    f"{prefix}-{field}": "0"
    for prefix in ("products", "shipping_rates")
    for field in ("TOTAL_FORMS", "INITIAL_FORMS")
}


def lab_form(
    code: str,
    *,
    capabilities: tuple[str, ...] = ("cancel", "hold"),
    site: Any = None,
    **changes: str,
) -> dict[str, Any]:
    """The lab add page filled in: a GBP lab in GB with these capabilities ticked; with
    ``site`` (a ``tests.support.siteflow.SiteflowServer``), a Site Flow lab at that site."""
    form: dict[str, Any] = {
        "code": code,
        "name": f"Lab {code}",
        "country_code": "GB",
        "currency": "GBP",
        "is_active": "on",
        "connector": "simulator",
        "capabilities": list(capabilities),
        "simulator_failure_share": "0",
        "simulator_cancel_share": "0",
        "simulator_error_share": "0",
        "siteflow_carrier_aliases": "{}",
        **_NO_INLINES,
    }
    if site is not None:
        form.update(
            connector="siteflow",
            siteflow_base_url=site.base_url,
            siteflow_token=site.token,
            siteflow_secret=site.secret,
            siteflow_destination="admin-made",
            siteflow_carrier_aliases='{"Standard": "royalmail-48"}',
        )
    form.update(changes)
    return form


def lab_product_form(lab_id: int, product_id: int, **changes: str) -> dict[str, Any]:
    """The lab product add page filled in: the lab makes the product at 7.50 with its own
    codes for two canvas wraps."""
    return {
        "lab": str(lab_id),
        "product": str(product_id),
        "lab_sku": "ADM-CAN-10",
        "variant_codes": '{"wrap=ImageWrap": "ADM-CAN-10-IW", "wrap=Black": "ADM-CAN-10-BK"}',
        "unit_cost": "7.50",
        "extra_page_cost": "0",
        "in_stock": "on",
        **changes,
    }


def shipping_rate_form(lab_id: int, **changes: str) -> dict[str, Any]:
    """The shipping rate add page filled in: Standard to GB for 2.95 by Royal Mail."""
    return {
        "lab": str(lab_id),
        "country_code": "GB",
        "zone": "",
        "method": "Standard",
        "price": "2.95",
        "carrier_name": "Royal Mail",
        "carrier_service": "Tracked 48",
        "min_days": "2",
        "max_days": "3",
        **changes,
    }


def added_id(location: str) -> int:
    """The id in the change page's URL an add redirects to (``_continue``)."""
    found = re.search(r"/(\d+)/change/", location)
    assert found, location
    return int(found.group(1))


class AdminSession:
    """A browser-like session of the admin at ``base_url``: signs in through the form and
    posts forms with the CSRF token the admin set."""

    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base_url = base_url
        self.http = requests.Session()
        self.http.get(f"{base_url}/admin/login/", timeout=30).raise_for_status()
        signed_in = self.post(
            "/admin/login/?next=/admin/", {"username": username, "password": password}
        )
        assert signed_in.status_code == 302, signed_in.text[:2000]

    def get(self, path: str) -> requests.Response:
        return self.http.get(f"{self.base_url}{path}", timeout=30, allow_redirects=False)

    def post(self, path: str, form: dict[str, Any]) -> requests.Response:
        token = self.http.cookies.get("csrftoken", "")
        return self.http.post(
            f"{self.base_url}{path}",
            data={**form, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{self.base_url}{path}"},
            timeout=30,
            allow_redirects=False,
        )

    def option_value(self, path: str, label: str) -> int:
        """The value of the option labelled ``label`` on the page at ``path``."""
        page = self.get(path).text
        found = re.search(rf'<option value="(\d+)">{re.escape(label)}</option>', page)
        assert found, f"no option {label} on {path}"
        return int(found.group(1))
