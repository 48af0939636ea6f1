from rest_framework import serializers

from api.serializers import OutcomeField, StrictSerializer, TraceParentField

REGISTRATION_OUTCOMES = ("Created",)


class RegistrationCompleteInput(StrictSerializer):
    token = serializers.CharField(
        max_length=500, help_text="The token of the verification link mailed at sign-up."
    )


class RegisteredMerchantOutput(serializers.Serializer):
    id = serializers.CharField(help_text="Your account's id.")
    name = serializers.CharField(help_text="Your account's name.")
    email = serializers.CharField(help_text="The email address the account signs in with.")


class RegistrationCompleteResponse(serializers.Serializer):
    outcome = OutcomeField(REGISTRATION_OUTCOMES, "Created.")
    merchant = RegisteredMerchantOutput(help_text="The new account.")
    sandboxApiKey = serializers.CharField(help_text="A Sandbox API key, shown once: store it now.")
    liveApiKey = serializers.CharField(help_text="A Live API key, shown once: store it now.")
    traceParent = TraceParentField()
