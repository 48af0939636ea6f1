"""Probe endpoints for the API plumbing tests, mounted beside the real routes."""

import time
from typing import Any

from django.urls import path
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import StrictSerializer
from api.views import ApiView
from common.errors import EntityNotFound
from config.urls import urlpatterns as service_urlpatterns


class AddressProbe(StrictSerializer):
    line1 = serializers.CharField()
    countryCode = serializers.CharField(max_length=2)


class ItemProbe(StrictSerializer):
    copies = serializers.IntegerField(min_value=1)


class EchoProbe(StrictSerializer):
    name = serializers.CharField()
    address = AddressProbe()
    items = ItemProbe(many=True)


class EchoView(ApiView):
    schema = None

    def post(self, request: Request) -> Response:
        serializer = EchoProbe(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response({"outcome": "Ok", "echo": serializer.validated_data})

    def get(self, request: Request) -> Response:
        return Response(
            {
                "outcome": "Ok",
                "query": {k: request.query_params.getlist(k) for k in request.query_params},
            }
        )


class SlowView(ApiView):
    schema = None

    def get(self, request: Request) -> Response:
        time.sleep(float(request.query_params.get("seconds", "5")))
        return Response({"outcome": "Ok"})


class CrashView(ApiView):
    schema = None

    def get(self, request: Request) -> Response:
        raise RuntimeError("boom")


class MissingView(ApiView):
    schema = None

    def get(self, request: Request, **kwargs: Any) -> Response:
        raise EntityNotFound()


urlpatterns = [
    path("v4.0/testProbes/echo", EchoView.as_view()),
    path("v4.0/testProbes/slow", SlowView.as_view()),
    path("v4.0/testProbes/crash", CrashView.as_view()),
    path("v4.0/testProbes/missing/<str:thing_id>", MissingView.as_view()),
    *service_urlpatterns,
]
handler404 = "api.views.not_found"
handler500 = "api.views.server_error"
