from django.urls import path

from orders.api import shipments, views

SHIPMENT = "orders/<str:orderId>/shipments/<str:shipmentId>"

urlpatterns = [
    path("orders", views.OrdersView.as_view(), name="orders"),
    path("orders/<str:orderId>", views.OrderDetailView.as_view(), name="order"),
    path("orders/<str:orderId>/actions", views.OrderActionsView.as_view(), name="order-actions"),
    path("orders/<str:orderId>/actions/cancel", views.CancelView.as_view(), name="order-cancel"),
    path(
        "orders/<str:orderId>/actions/updateShippingMethod",
        views.UpdateShippingMethodView.as_view(),
        name="order-update-shipping-method",
    ),
    path(
        "orders/<str:orderId>/actions/updateShipping",
        views.UpdateShippingAliasView.as_view(),
        name="order-update-shipping",
    ),
    path(
        "orders/<str:orderId>/actions/updateRecipient",
        views.UpdateRecipientView.as_view(),
        name="order-update-recipient",
    ),
    path(
        "orders/<str:orderId>/actions/updateMetadata",
        views.UpdateMetadataView.as_view(),
        name="order-update-metadata",
    ),
    path(
        f"{SHIPMENT}/fulfilmentLocationCapabilities",
        shipments.ShipmentCapabilitiesView.as_view(),
        name="shipment-capabilities",
    ),
    path(f"{SHIPMENT}/maptojson", shipments.ShipmentLabJsonView.as_view(), name="shipment-json"),
    path(f"{SHIPMENT}/cancel", shipments.ShipmentCancelView.as_view(), name="shipment-cancel"),
    path(f"{SHIPMENT}/hold", shipments.ShipmentHoldView.as_view(), name="shipment-hold"),
    path(f"{SHIPMENT}/unhold", shipments.ShipmentUnholdView.as_view(), name="shipment-unhold"),
    path(
        f"{SHIPMENT}/updateAddress",
        shipments.ShipmentUpdateAddressView.as_view(),
        name="shipment-update-address",
    ),
    path(
        f"{SHIPMENT}/updateShippingMethod",
        shipments.ShipmentUpdateShippingMethodView.as_view(),
        name="shipment-update-shipping-method",
    ),
]
