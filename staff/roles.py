"""The two staff roles and the exact model permissions each group holds.

Every staff user is an ``Operators`` member (who sees orders, merchants, the labs' catalogue,
callbacks, bulk jobs and billing's Stripe events and invoices); ``Administrators`` hold all of
that and may also add and change labs, lab products (lab SKU, variant codes, stock, prices),
shipping zones and rates, exchange rates and merchants, change merchants' environments and
staff keys, and run the Site Flow shipping tool. The groups are made by migrations
(``staff/migrations/0002_roles`` and the roles migrations after it) and kept exactly so by
``staff_roles_sync`` each time ``create_staff`` runs.
"""

from staff.models import ADMINISTRATORS_GROUP

OPERATORS_GROUP = "Operators"

OPERATOR_PERMISSIONS: tuple[str, ...] = (
    "orders.view_order",
    "orders.view_orderitem",
    "orders.view_asset",
    "orders.view_shipment",
    "orders.view_charge",
    "orders.view_orderissue",
    "orders.act_on_order",
    "orders.operate_shipment",
    "orders.view_shipmentresubmission",
    "merchants.view_merchant",
    "merchants.view_environment",
    "labs.view_lab",
    "labs.view_labproduct",
    "labs.view_shippingrate",
    "labs.view_shippingzone",
    "labs.view_exchangerate",
    "webhooks.view_callbackevent",
    "webhooks.view_callbackattempt",
    "webhooks.view_gonecallbackurl",
    "staff.view_auditentry",
    "backoffice.view_bulkjob",
    "backoffice.view_bulkjobrow",
    "backoffice.run_resubmission",
    "billing.view_stripeevent",
    "billing.view_invoice",
)

ADMINISTRATOR_PERMISSIONS: tuple[str, ...] = (
    *OPERATOR_PERMISSIONS,
    "labs.add_lab",
    "labs.change_lab",
    "labs.add_labproduct",
    "labs.change_labproduct",
    "labs.add_shippingzone",
    "labs.change_shippingzone",
    "labs.add_shippingrate",
    "labs.change_shippingrate",
    "labs.add_exchangerate",
    "labs.change_exchangerate",
    "merchants.add_merchant",
    "merchants.change_merchant",
    "merchants.change_environment",
    "staff.view_staffapikey",
    "staff.add_staffapikey",
    "staff.change_staffapikey",
    "backoffice.run_siteflow_shipping",
)

ROLES: dict[str, tuple[str, ...]] = {
    OPERATORS_GROUP: OPERATOR_PERMISSIONS,
    ADMINISTRATORS_GROUP: ADMINISTRATOR_PERMISSIONS,
}
