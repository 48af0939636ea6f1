"""The Operators and Administrators groups: made by the migration, kept by ``create_staff``,
each holding exactly its role's permissions; in the admin each role sees and does what it is
allowed, and anything else is the admin's own HTML 403 page."""

import io
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.test import Client

from merchants.models import Merchant
from merchants.services import CreatedMerchant
from staff.models import ADMINISTRATORS_GROUP
from staff.roles import ADMINISTRATOR_PERMISSIONS, OPERATOR_PERMISSIONS, OPERATORS_GROUP
from staff.services import staff_user_save
from tests.labs.factories import LabFactory
from tests.support.staff import signed_in

pytestmark = pytest.mark.django_db


def held(group: str) -> set[str]:
    return {
        f"{app}.{codename}"
        for app, codename in Permission.objects.filter(group__name=group).values_list(
            "content_type__app_label", "codename"
        )
    }


@pytest.fixture
def operator() -> Client:
    user, _ = staff_user_save(username="olga", password="a-long-password-1")
    return signed_in(user)


@pytest.fixture
def administrator() -> Client:
    user, _ = staff_user_save(username="ada", password="a-long-password-1", administrator=True)
    return signed_in(user)


def test_the_migration_made_both_groups_with_exactly_their_permissions() -> None:
    assert held(OPERATORS_GROUP) == set(OPERATOR_PERMISSIONS)
    assert held(ADMINISTRATORS_GROUP) == set(ADMINISTRATOR_PERMISSIONS)
    assert set(OPERATOR_PERMISSIONS) < set(ADMINISTRATOR_PERMISSIONS)
    assert "backoffice.run_siteflow_shipping" not in OPERATOR_PERMISSIONS
    assert "labs.change_lab" not in OPERATOR_PERMISSIONS


def test_create_staff_puts_every_staff_user_in_operators_and_keeps_the_groups() -> None:
    Group.objects.get(name=OPERATORS_GROUP).permissions.clear()
    Group.objects.filter(name=ADMINISTRATORS_GROUP).delete()
    stray = Permission.objects.get(codename="delete_order")
    Group.objects.get(name=OPERATORS_GROUP).permissions.add(stray)

    call_command("create_staff", "--username", "olga", stdout=io.StringIO(), stderr=io.StringIO())
    call_command(
        "create_staff",
        "--username",
        "ada",
        "--administrator",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )

    assert held(OPERATORS_GROUP) == set(OPERATOR_PERMISSIONS)
    assert held(ADMINISTRATORS_GROUP) == set(ADMINISTRATOR_PERMISSIONS)
    olga, ada = User.objects.get(username="olga"), User.objects.get(username="ada")
    assert set(olga.groups.values_list("name", flat=True)) == {OPERATORS_GROUP}
    assert set(ada.groups.values_list("name", flat=True)) == {OPERATORS_GROUP, ADMINISTRATORS_GROUP}
    assert not olga.is_superuser and not ada.is_superuser
    assert olga.has_perm("orders.operate_shipment") and not olga.has_perm("labs.change_lab")
    assert ada.has_perm("labs.change_lab") and ada.has_perm("backoffice.run_siteflow_shipping")


OPERATOR_PAGES = [
    "/admin/",
    "/admin/orders/order/",
    "/admin/merchants/merchant/",
    "/admin/merchants/environment/",
    "/admin/labs/lab/",
    "/admin/webhooks/callbackevent/",
    "/admin/staff/auditentry/",
    "/admin/backoffice/bulkjob/",
    "/admin/backoffice/bulkjob/resubmission/",
    "/admin/orders/shipmentresubmission/",
    "/admin/billing/stripeevent/",
    "/admin/billing/invoice/",
]
ADMINISTRATOR_ONLY_PAGES = [
    "/admin/staff/staffapikey/",
    "/admin/staff/staffapikey/add/",
    "/admin/backoffice/bulkjob/shipping/",
]
SUPERUSER_ONLY_PAGES = ["/admin/auth/user/", "/admin/products/product/"]


def assert_refused(response: Any) -> None:
    """The admin's own page: HTML, status 403, titled for the service, never the API's JSON."""
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "<title>Not allowed | Print Fulfilment back-office</title>" in html
    assert 'id="refusal"' in html


@pytest.mark.parametrize("url", OPERATOR_PAGES)
def test_an_operator_sees_the_pages_of_the_role(operator: Client, url: str) -> None:
    response = operator.get(url)

    assert response.status_code == 200
    assert "Print Fulfilment back-office" in response.content.decode()
    assert "Django administration" not in response.content.decode()


@pytest.mark.parametrize("url", ADMINISTRATOR_ONLY_PAGES + SUPERUSER_ONLY_PAGES)
def test_an_operator_is_refused_the_rest_with_the_admins_403(operator: Client, url: str) -> None:
    assert_refused(operator.get(url))


@pytest.mark.parametrize("url", OPERATOR_PAGES + ADMINISTRATOR_ONLY_PAGES)
def test_an_administrator_sees_every_page_of_the_role(administrator: Client, url: str) -> None:
    assert administrator.get(url).status_code == 200


@pytest.mark.parametrize("url", SUPERUSER_ONLY_PAGES)
def test_an_administrator_is_refused_what_no_role_has(administrator: Client, url: str) -> None:
    assert_refused(administrator.get(url))


def test_the_index_lists_only_what_each_role_may_open(
    operator: Client, administrator: Client
) -> None:
    operator_index = operator.get("/admin/").content.decode()
    administrator_index = administrator.get("/admin/").content.decode()

    for listed in ("Orders", "Merchants", "Labs", "Callback events", "Audit entries", "Bulk jobs"):
        assert listed in operator_index and listed in administrator_index
    assert "Staff API keys" not in operator_index
    assert "Staff API keys" in administrator_index
    assert "/admin/auth/user/" not in administrator_index


def test_the_bulk_jobs_page_links_only_the_tools_of_the_role(
    operator: Client, administrator: Client
) -> None:
    operator_page = operator.get("/admin/backoffice/bulkjob/").content.decode()
    administrator_page = administrator.get("/admin/backoffice/bulkjob/").content.decode()

    assert "/admin/backoffice/bulkjob/resubmission/" in operator_page
    assert "/admin/backoffice/bulkjob/shipping/" not in operator_page
    assert "/admin/backoffice/bulkjob/shipping/" in administrator_page


def test_only_an_administrator_changes_a_lab(operator: Client, administrator: Client) -> None:
    lab = LabFactory.create(code="gb8", name="Old name", capabilities=[])
    url = f"/admin/labs/lab/{lab.pk}/change/"
    form = {
        "code": "gb8",
        "name": "New name",
        "country_code": lab.country_code,
        "currency": lab.currency,
        "is_active": "on",
        "connector": "simulator",
        "simulator_failure_share": "0",
        "simulator_cancel_share": "0",
        "simulator_error_share": "0",
        "siteflow_carrier_aliases": "{}",
        **{f"{prefix}-{field}": "0" for prefix in ("products", "shipping_rates")
           for field in ("TOTAL_FORMS", "INITIAL_FORMS")},
    }  # fmt: skip

    viewed = operator.get(url).content.decode()
    assert 'name="_save"' not in viewed  # a view, not a form
    assert_refused(operator.post(url, form))
    lab.refresh_from_db()
    assert lab.name == "Old name"

    response = administrator.post(url, form)

    assert response.status_code == 302, response.content.decode()[:3000]
    lab.refresh_from_db()
    assert lab.name == "New name"


def test_only_an_administrator_changes_a_merchant(
    operator: Client, administrator: Client, merchant: CreatedMerchant
) -> None:
    url = f"/admin/merchants/merchant/{merchant.merchant.pk}/change/"

    assert 'name="_save"' not in operator.get(url).content.decode()
    assert 'name="_save"' in administrator.get(url).content.decode()
    assert_refused(operator.post(url, {"name": "Renamed"}))
    assert Merchant.objects.get(pk=merchant.merchant.pk).name == "Acme Prints"


def test_only_an_administrator_issues_merchant_keys(
    operator: Client, administrator: Client, merchant: CreatedMerchant
) -> None:
    operator_list = operator.get("/admin/merchants/environment/").content.decode()
    administrator_list = administrator.get("/admin/merchants/environment/").content.decode()

    assert "issue_api_key" not in operator_list
    assert "issue_api_key" in administrator_list
