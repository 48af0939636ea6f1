import pytest
from rest_framework.test import APIClient

from merchants.services import CreatedMerchant, merchant_create


@pytest.fixture
def merchant(db: None) -> CreatedMerchant:
    return merchant_create(name="Acme Prints", email="ops@acme.test")


@pytest.fixture
def other_merchant(db: None) -> CreatedMerchant:
    return merchant_create(name="Other Prints")


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def sandbox_api(merchant: CreatedMerchant) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=merchant.sandbox_api_key)
    return client


@pytest.fixture
def live_api(merchant: CreatedMerchant) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=merchant.live_api_key)
    return client
