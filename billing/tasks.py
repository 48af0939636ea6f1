"""Billing's periodic work."""

from celery import shared_task
from django.utils import timezone

from billing.services import invoices_issue, previous_month


@shared_task(name="billing.tasks.invoices_issue_task", ignore_result=True)
def invoices_issue_task() -> int:
    """Beat, on the first of each month: last month's invoices of every invoice-billed
    merchant (issuing a month again issues nothing more). How many were issued."""
    return len(invoices_issue(period_start=previous_month(timezone.now().date())))
