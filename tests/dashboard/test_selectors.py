"""The dashboard's reads called directly, with orders made by the factories."""

import pytest

from dashboard.selectors import OrderListFilter, environment_orders
from orders.models import DetailState, Stage
from tests.merchants.factories import EnvironmentFactory
from tests.orders.factories import OrderFactory, OrderIssueFactory

pytestmark = pytest.mark.django_db


def test_needs_attention_lists_each_order_waiting_for_payment_with_an_issue_or_an_error_once() -> (
    None
):
    environment = EnvironmentFactory.create()
    OrderFactory.create(environment=environment)  # in progress, nothing wrong
    awaiting = OrderFactory.create(environment=environment, stage=Stage.AWAITING_PAYMENT)
    with_issues = OrderFactory.create(environment=environment)
    OrderIssueFactory.create(order=with_issues)
    OrderIssueFactory.create(order=with_issues, error_code="order.shipments.LabError")
    in_error = OrderFactory.create(environment=environment, in_production=DetailState.ERROR)
    OrderIssueFactory.create(order=OrderFactory.create())  # another environment's

    page, more = environment_orders(
        environment=environment, filters=OrderListFilter(attention=True)
    )

    assert [order.id for order in page] == [in_error.id, with_issues.id, awaiting.id]
    assert more is False
