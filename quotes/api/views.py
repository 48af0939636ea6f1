from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from api.authentication import client_environment
from api.schema import QUOTES, operation
from api.views import ApiViewSet
from labs.catalogue import catalogue_snapshot
from quotes.api.serializers import QuoteRequestSerializer, QuoteResponseSerializer, cost
from quotes.services import Quote, QuoteItemRequest, quotes_create


def _quote_body(quote: Quote) -> dict[str, Any]:
    """A quote as ``QuoteSerializer`` documents it, built as plain values: the same keys in the
    same order, strings and integers (running the output through the serializer cost 40% of
    the request's CPU)."""
    plan, currency = quote.plan, quote.plan.currency
    return {
        "shipmentMethod": plan.shipping_method,
        "costSummary": {
            "items": cost(plan.items_cost, currency),
            "shipping": cost(plan.shipping_cost, currency),
            "totalTax": cost(plan.total_tax, currency),
            "totalCost": cost(plan.total_cost, currency),
        },
        "shipments": [
            {
                "carrier": {"name": s.carrier_name, "service": s.carrier_service},
                "fulfillmentLocation": {"countryCode": s.lab_country_code, "labCode": s.lab_code},
                "cost": cost(s.shipping_cost, currency),
                "items": [quote.item_ids[key] for key in s.item_keys],
            }
            for s in plan.shipments
        ],
        "items": [
            {
                "id": item.id,
                "sku": item.sku,
                "copies": item.copies,
                "unitCost": cost(line.unit_cost, currency),
                "attributes": item.attributes,
                "assets": [{"printArea": area} for area in item.print_areas],
            }
            for item, line in zip(quote.items, plan.item_lines, strict=True)
        ],
    }


class QuoteViewSet(ApiViewSet):
    # POST /v4.0/quotes.
    @operation(
        QUOTES,
        "quotes_create",
        "Price a basket for a destination, per shipping method or for one",
        QuoteResponseSerializer,
        request=QuoteRequestSerializer,
        description=(
            "What the items would cost delivered to `destinationCountryCode`: items, shipping "
            "and tax, and how they would be split into shipments. Without `shippingMethod`, one "
            "quote for each method that can deliver every item. An order of the same basket, "
            "destination and method in the key's environment is charged exactly the quoted "
            "amounts: a Live quote is priced at the labs that make Live orders."
        ),
    )
    def create(self, request: Request) -> Response:
        environment = client_environment(request)
        catalogue = catalogue_snapshot()
        serializer = QuoteRequestSerializer(data=request.data, context={"catalogue": catalogue})
        serializer.is_valid(raise_exception=True)
        data: Any = serializer.validated_data
        result = quotes_create(
            items=[
                QuoteItemRequest(
                    sku=item["sku"],
                    copies=item["copies"],
                    attributes=item["attributes"],
                    print_areas=[asset["printArea"] for asset in item["assets"]],
                    page_counts=[asset.get("pageCount") for asset in item["assets"]],
                )
                for item in data["items"]
            ],
            destination_country_code=data["destinationCountryCode"],
            shipping_method=data.get("shippingMethod"),
            currency=data.get("currencyCode") or environment.merchant.billing_currency,
            sandbox=environment.is_sandbox,
            catalogue=catalogue,
        )
        return Response(
            {
                "outcome": "CreatedWithIssues" if result.issues else "Created",
                "quotes": [_quote_body(q) for q in result.quotes],
                "issues": [
                    {"errorCode": i.error_code, "description": i.description} for i in result.issues
                ],
            }
        )
