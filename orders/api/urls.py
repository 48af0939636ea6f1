from django.urls import path

from orders.api import shipments, views

SHIPMENT = "orders/<str:orderId>/shipments/<str:shipmentId>"

ACTIONS = [
    ("cancel", views.CancelView, "order-cancel"),
    ("updateShippingMethod", views.UpdateShippingMethodView, "order-update-shipping-method"),
    ("updateShipping", views.UpdateShippingAliasView, "order-update-shipping"),
    ("updateRecipient", views.UpdateRecipientView, "order-update-recipient"),
    ("updateMetadata", views.UpdateMetadataView, "order-update-metadata"),
]

urlpatterns = [
    path("orders", views.OrdersView.as_view(), name="orders"),
    path("orders/<str:orderId>", views.OrderDetailView.as_view(), name="order"),
    path("orders/<str:orderId>/actions", views.OrderActionsView.as_view(), name="order-actions"),
    *(
        path(f"orders/<str:orderId>/actions/{action}", view.as_view(), name=name)
        for action, view, name in ACTIONS
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
