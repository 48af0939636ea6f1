from django.urls import path

from billing import views

app_name = "billing"

urlpatterns = [
    path("stripe/webhook", views.stripe_webhook, name="stripe-webhook"),
]
