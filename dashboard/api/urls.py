from django.urls import path

from dashboard.api import views

urlpatterns = [
    path(
        "registration/complete",
        views.RegistrationCompleteView.as_view(),
        name="registration-complete",
    ),
]
