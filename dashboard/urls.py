from django.urls import path

from dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("signup", views.signup, name="signup"),
    path("verify", views.verify, name="verify"),
    path("login", views.LoginView.as_view(), name="login"),
    path("logout", views.LogoutView.as_view(), name="logout"),
    path("password-reset", views.PasswordResetView.as_view(), name="password-reset"),
    path("password-reset/sent", views.PasswordResetSentView.as_view(), name="password-reset-sent"),
    path("password-reset/done", views.PasswordResetDoneView.as_view(), name="password-reset-done"),
    path(
        "password-reset/<uidb64>/<token>/",
        views.PasswordResetConfirmView.as_view(),
        name="password-reset-confirm",
    ),
    path("environment", views.environment_switch, name="environment"),
    path("keys", views.keys, name="keys"),
    path("keys/<int:key_id>/revoke", views.key_revoke, name="key-revoke"),
    path("settings", views.settings_page, name="settings"),
    path("settings/rotate-secret", views.secret_rotate, name="secret-rotate"),
    path("orders", views.orders, name="orders"),
    path("orders/<str:order_id>", views.order_detail, name="order"),
    path("orders/<str:order_id>/edit", views.order_edit, name="order-edit"),
    path("orders/<str:order_id>/submit", views.order_submit, name="order-submit"),
    path("orders/<str:order_id>/cancel", views.order_cancel_view, name="order-cancel"),
    path("callbacks", views.callbacks, name="callbacks"),
    path("callbacks/<str:event_id>/replay", views.callback_replay, name="callback-replay"),
    path("pay/<str:order_id>", views.pay, name="pay"),
    path("orders/<str:order_id>/receipt.pdf", views.order_receipt, name="order-receipt"),
    path("invoices", views.invoices, name="invoices"),
    path("catalogue", views.catalogue, name="catalogue"),
    path("invoices/<str:number>.pdf", views.invoice_pdf_download, name="invoice-pdf"),
]
