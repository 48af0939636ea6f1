"""Billing's rows in the admin: each role reads the Stripe events and the invoices; nobody, a
superuser included, adds, changes or deletes one there (the services write them)."""

import pytest

from billing.models import Invoice, StripeEvent
from tests.billing.factories import InvoiceFactory, StripeEventFactory
from tests.support.staff import signed_in, staff_client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("administrator", [False, True])
def test_each_role_reads_the_stripe_events_and_invoices(administrator: bool) -> None:
    event = StripeEventFactory.create(message="ord_42 authorised: 12.50 GBP.")
    invoice = InvoiceFactory.create(number="INV-2026-10-0007", merchant__name="Acme Prints")
    client = staff_client("staff-member", administrator=administrator)

    index = client.get("/admin/").content.decode()
    events = client.get("/admin/billing/stripeevent/").content.decode()
    invoices = client.get("/admin/billing/invoice/?q=acme").content.decode()
    event_page = client.get(f"/admin/billing/stripeevent/{event.pk}/change/").content.decode()
    invoice_page = client.get(f"/admin/billing/invoice/{invoice.pk}/change/").content.decode()

    assert "Stripe events" in index and "Invoices" in index
    assert event.event_id in events and "Authorised" in events
    assert "INV-2026-10-0007" in invoices and "Acme Prints" in invoices
    assert "ord_42 authorised: 12.50 GBP." in event_page
    assert "INV-2026-10-0007" in invoice_page and "Acme Prints" in invoice_page
    assert 'name="_save"' not in event_page and 'name="_save"' not in invoice_page


@pytest.mark.parametrize("who", ["operator", "administrator", "superuser"])
def test_nobody_adds_changes_or_deletes_them_in_the_admin(who: str, admin_user: object) -> None:
    event = StripeEventFactory.create()
    invoice = InvoiceFactory.create()
    client = (
        signed_in(admin_user)
        if who == "superuser"
        else staff_client("staff-member", administrator=who == "administrator")
    )

    for url in ("/admin/billing/stripeevent/", "/admin/billing/invoice/"):
        assert client.get(f"{url}add/").status_code == 403
    changed = client.post(f"/admin/billing/invoice/{invoice.pk}/change/", {"number": "INV-CHANGED"})
    deleted = client.post(f"/admin/billing/stripeevent/{event.pk}/delete/", {"post": "yes"})

    assert changed.status_code == 403 and deleted.status_code == 403
    assert Invoice.objects.get(pk=invoice.pk).number == invoice.number
    assert StripeEvent.objects.filter(pk=event.pk).exists()
