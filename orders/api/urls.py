from django.urls import path

from orders.api import views

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
]
