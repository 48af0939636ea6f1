import factory
from factory.django import DjangoModelFactory

from merchants.keys import api_key_digest, generate_api_key, generate_signing_secret, key_prefix
from merchants.models import ApiKey, Environment, EnvironmentKind, Merchant, PauseMode
from merchants.services import CreatedMerchant


class ApiKeyFactory(DjangoModelFactory[ApiKey]):
    """A key stored as ``api_key_create`` stores it: prefix and SHA-256 digest of ``key``, the
    clear text, which a test passes when it needs to send the key."""

    class Meta:
        model = ApiKey

    class Params:
        key = factory.LazyAttribute(lambda k: generate_api_key(k.environment.kind))

    environment = factory.SubFactory("tests.merchants.factories.EnvironmentFactory", api_key=None)
    name = "initial"
    prefix = factory.LazyAttribute(lambda k: key_prefix(k.key))
    digest = factory.LazyAttribute(lambda k: api_key_digest(k.key))


class EnvironmentFactory(DjangoModelFactory[Environment]):
    """A Sandbox environment with one key, no callback URL and no pause window.

    Made alone, its merchant has only this environment; ``MerchantFactory`` makes both.
    """

    class Meta:
        model = Environment
        skip_postgeneration_save = True

    merchant = factory.SubFactory(
        "tests.merchants.factories.MerchantFactory", sandbox=None, live=None
    )
    kind = EnvironmentKind.SANDBOX
    callback_url = ""
    pause_mode = PauseMode.NONE
    pause_minutes = 0
    callback_signing_secret = factory.LazyFunction(generate_signing_secret)
    api_key = factory.RelatedFactory(ApiKeyFactory, factory_related_name="environment")


class MerchantFactory(DjangoModelFactory[Merchant]):
    """A merchant with its Sandbox and Live environments and a key for each, as
    ``merchant_create`` makes one (``sandbox__callback_url=...`` changes an environment)."""

    class Meta:
        model = Merchant
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Test Prints {n}")
    email = factory.Sequence(lambda n: f"ops{n}@prints.test")
    billing_currency = "GBP"
    sandbox = factory.RelatedFactory(
        EnvironmentFactory, factory_related_name="merchant", kind=EnvironmentKind.SANDBOX
    )
    live = factory.RelatedFactory(
        EnvironmentFactory, factory_related_name="merchant", kind=EnvironmentKind.LIVE
    )


def merchant_with_keys(
    *, sandbox_api_key: str | None = None, live_api_key: str | None = None, **fields: object
) -> CreatedMerchant:
    """A ``MerchantFactory`` merchant with the clear text of its two keys, as ``merchant_create``
    returns it; keys not given are generated."""
    sandbox_key = sandbox_api_key or generate_api_key(EnvironmentKind.SANDBOX)
    live_key = live_api_key or generate_api_key(EnvironmentKind.LIVE)
    merchant = MerchantFactory.create(
        **fields, sandbox__api_key__key=sandbox_key, live__api_key__key=live_key
    )
    return CreatedMerchant(merchant, sandbox_key, live_key)
