import collections
import copy
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.db import connection, models
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

# Each catalogue table's rows as loaded by the demo's command: on PostgreSQL the table's
# ``COPY`` text, elsewhere model instances.
_snapshot: list[tuple[type[models.Model], bytes | list[models.Model]]] = []


@pytest.fixture
def catalogue(db: None) -> None:
    """The demo catalogue: loaded by its command once, then copied in, a table at a time.

    On PostgreSQL each table in one ``COPY`` (its rows as the server wrote them): about a
    tenth of the time of building and inserting model instances, which 800 tests paid."""
    postgresql = connection.vendor == "postgresql"
    if not _snapshot:
        demo_catalogue_load()
        for app in ("products", "labs"):
            for model in apps.get_app_config(app).get_models():
                if postgresql:
                    _snapshot.append((model, _table_copied_out(model)))
                else:
                    _snapshot.append((model, list(model._default_manager.all())))
        return
    for model, rows in _snapshot:
        if model._default_manager.exists():  # written by a trigger of a table copied in
            continue
        if isinstance(rows, bytes):
            _table_copied_in(model, rows)
        else:
            model._default_manager.bulk_create(copy.deepcopy(rows))


def _table_copied_out(model: type[models.Model]) -> bytes:
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} TO STDOUT") as out:
        return b"".join(bytes(chunk) for chunk in out)


def _table_copied_in(model: type[models.Model], rows: bytes) -> None:
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} FROM STDIN") as into:
        into.write(rows)


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


@pytest.fixture(autouse=True)
def order_documents_true(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test that has the database: after it, each order's stored document equals a
    fresh render of it (``tests.support.documents``). Set up before the test's database
    fixture (so torn down after it is, with the test's data still there, and after its workers
    and servers stop), and before pytest-django's ``settings`` (so the check renders with the
    settings the test changed, such as the base URL its documents were written with)."""
    names = request.fixturenames
    if not {"db", "transactional_db", "django_db_reset_sequences"} & set(names) and (
        request.node.get_closest_marker("django_db") is None
    ):
        yield
        return
    request.getfixturevalue("_django_db_helper")
    # The settings the test changed hold until the check is done: the documents show file URLs
    # under their environment's base URL as the test (and the workers it started) had it.
    request.getfixturevalue("settings")
    yield
    if request.node.get_closest_marker("documents_unchecked") is not None:
        return
    from tests.support.documents import documents_stale

    stale = documents_stale()
    assert not stale, f"orders whose stored document is not what they show: {stale}"


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


@pytest.fixture(scope="session", autouse=True)
def flush_post_migrate_skipped_when_kept() -> Iterator[None]:
    """Between transactional tests the flush sends ``post_migrate`` only when it has emptied
    what its receivers make (``tests.support.postgresql.flush_post_migrate``), and is tried
    again when PostgreSQL ends its TRUNCATE as a deadlock's victim (a module's worker, kept
    between its tests, writing as the flush takes its tables: the flush rolled back whole)."""
    from django.core.management.commands import flush

    from tests.support.postgresql.base import flush_post_migrate, flush_retried_on_deadlock

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flush, "emit_post_migrate_signal", flush_post_migrate)
        patch.setattr(flush.Command, "handle", flush_retried_on_deadlock(flush.Command.handle))
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests sharing a node id with another (schemathesis' operations, test_fuzz.py) are marked
    ``serial``: pytest-xdist tells tests apart by node id and would run one of them only, so
    ``make test`` runs these in its one-process run. Files with slow tests are run first."""
    counts = collections.Counter(item.nodeid for item in items)
    for item in items:
        if counts[item.nodeid] > 1:
            item.add_marker(pytest.mark.serial)
    # The files of slow tests first (in their order): pytest-xdist hands files out in this
    # order, so a long file starts early rather than ending the run alone.
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
