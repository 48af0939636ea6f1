import collections
import copy
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.db import models
from rest_framework.test import APIClient

from config.celery_app import app as celery_app
from labs.services import demo_catalogue_load
from merchants.models import BillingMode, Merchant
from merchants.services import CreatedMerchant
from staff.roles import OPERATORS_GROUP
from staff.services import staff_api_key_create, staff_roles_sync
from tests.merchants.factories import merchant_with_keys
from tests.staff.factories import StaffUserFactory
from tests.support.state_writes import state_writes_watched

_snapshot: list[tuple[Any, list[models.Model]]] = []


@pytest.fixture
def catalogue(db: None) -> None:
    """The demo catalogue: loaded by its command once, then copied in with bulk inserts."""
    if not _snapshot:
        demo_catalogue_load()
        for app in ("products", "labs"):
            for model in apps.get_app_config(app).get_models():
                _snapshot.append((model, list(model._default_manager.all())))
        return
    for model, rows in _snapshot:
        if not model._default_manager.exists():
            model._default_manager.bulk_create(copy.deepcopy(rows))


@pytest.fixture
def merchant(db: None) -> CreatedMerchant:
    return merchant_with_keys(name="Acme Prints", email="ops@acme.test")


@pytest.fixture
def card(merchant: CreatedMerchant) -> CreatedMerchant:
    """``merchant`` billed by card: its Live orders wait for their payment."""
    Merchant.objects.filter(pk=merchant.merchant.pk).update(billing_mode=BillingMode.CARD)
    merchant.merchant.refresh_from_db()
    return merchant


@pytest.fixture
def other_merchant(db: None) -> CreatedMerchant:
    return merchant_with_keys(name="Other Prints")


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


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Run queued tasks in-process, so committed work is done before the test goes on."""
    celery_app.loader.import_default_modules()  # every app's tasks, as a worker has them
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_eager_propagates = False


@pytest.fixture
def staff_user(db: None) -> Any:
    """A staff user of the Operators role, as ``create_staff`` makes every staff user."""
    user = StaffUserFactory.create(username="ops")
    user.groups.add(staff_roles_sync()[OPERATORS_GROUP])
    return user


@pytest.fixture
def staff_key(staff_user: Any) -> str:
    return staff_api_key_create(user=staff_user, name="tests")[1]


@pytest.fixture
def staff_api(staff_key: str) -> APIClient:
    """A client sending a staff API key."""
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=staff_key)
    return client


@pytest.fixture
def staff_session(staff_user: Any) -> APIClient:
    """A client signed in to the admin as a staff user (no key)."""
    client = APIClient()
    client.force_login(staff_user)
    return client


@pytest.fixture(autouse=True)
def rate_limit_counts_forgotten(request: pytest.FixtureRequest) -> None:
    """Without Redis, rate limits count in a SQLite file (common.rate_counts): each test
    counts in a file of its own, as with an empty cache."""
    if django_settings.REDIS_URL:
        return
    folder = request.getfixturevalue("tmp_path")
    request.getfixturevalue("settings").RATE_LIMIT_DATABASE = folder / "rate-limits.sqlite3"


@pytest.fixture(autouse=True)
def order_state_written_by_the_state_machine(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test: an order's step, stage, due time and claim are written by the state machine
    alone (``tests.support.state_writes``); a write from anywhere else fails the test (unless
    it is marked as making one on purpose, to show that it is caught)."""
    with state_writes_watched() as watch:
        yield
    if request.node.get_closest_marker("order_state_written_elsewhere") is None:
        assert not watch.refused, f"order state written outside the state machine: {watch.refused}"


@pytest.fixture(scope="session", autouse=True)
def pooled_test_database_released(request: pytest.FixtureRequest) -> Iterator[None]:
    """Behind PgBouncer (``python -m tests.support.pgbouncer``) its server connections to the
    test database would outlive the tests and keep it from being dropped: released first."""
    import os

    from tests.support.pgbouncer import POOLER_ADMIN_URL, pooled_database_released

    if not os.environ.get(POOLER_ADMIN_URL):
        yield
        return
    request.getfixturevalue("django_db_setup")
    yield
    from django.db import connection

    pooled_database_released(connection.settings_dict["NAME"])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests sharing a node id with another (schemathesis' operations, test_fuzz.py) are marked
    ``serial``: pytest-xdist tells tests apart by node id and would run one of them only, so
    ``make test`` runs these in its one-process run."""
    counts = collections.Counter(item.nodeid for item in items)
    for item in items:
        if counts[item.nodeid] > 1:
            item.add_marker(pytest.mark.serial)
