from rest_framework import serializers

from api.serializers import StrictSerializer


class RegistrationCompleteInput(StrictSerializer):
    token = serializers.CharField(
        max_length=500, help_text="The token of the verification link mailed at sign-up."
    )


class RegisteredMerchantOutput(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    email = serializers.CharField()


class RegistrationCompleteResponse(serializers.Serializer):
    outcome = serializers.CharField(help_text="Created.")
    merchant = RegisteredMerchantOutput()
    sandboxApiKey = serializers.CharField(help_text="Shown once; only its digest is stored.")
    liveApiKey = serializers.CharField(help_text="Shown once; only its digest is stored.")
    traceParent = serializers.CharField()
