from django.urls import path

from labs.api import views

urlpatterns = [
    path(
        "fulfilmentLocations/<str:labCode>/capabilities",
        views.LabCapabilitiesView.as_view(),
        name="fulfilment-location-capabilities",
    ),
]
