"""``POST /v4.0/registration/complete``: the API way to finish a sign-up (no key needed)."""

from drf_spectacular.utils import OpenApiExample
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.schema import REGISTRATION, operation
from api.views import ApiViewSet, validated_input
from dashboard.api import serializers as s
from dashboard.throttling import RegistrationThrottle
from merchants.registration import registration_complete


class RegistrationViewSet(ApiViewSet):
    # POST /v4.0/registration/complete.
    authentication_classes = []
    permission_classes = []
    throttle_classes = [RegistrationThrottle]

    @operation(
        REGISTRATION,
        "registration_complete",
        "Complete a registration",
        s.RegistrationCompleteResponse,
        request=s.RegistrationCompleteInput,
        auth=[],
        description=(
            "Creates the merchant of a verified sign-up, with its Sandbox and Live "
            "environments, and returns one API key for each (shown once). A token that is "
            "unknown, used or older than 48 hours is `ValidationFailed` on `token`."
        ),
        examples=[
            OpenApiExample("A token", request_only=True, value={"token": "MTI:1u...:a1b2..."})
        ],
    )
    @action(detail=False, methods=["post"], url_path="complete", name="Registration Complete")
    def complete(self, request: Request) -> Response:
        data = validated_input(s.RegistrationCompleteInput, request)
        completed = registration_complete(token=data["token"])
        merchant = completed.created.merchant
        return Response(
            {
                "outcome": "Created",
                "merchant": {
                    "id": str(merchant.pk),
                    "name": merchant.name,
                    "email": merchant.email,
                },
                "sandboxApiKey": completed.created.sandbox_api_key,
                "liveApiKey": completed.created.live_api_key,
            }
        )
