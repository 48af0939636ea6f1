from django.urls import path

from orders.api import views

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
]
