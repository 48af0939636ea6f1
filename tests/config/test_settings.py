import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import KNOWN_SECRET_KEYS, LOCAL_SECRET_KEY, TEST_SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]


def _import_production(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    return subprocess.run(
        [sys.executable, "-c", "import config.settings.production"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_settings_refuse_to_start_without_a_secret_key() -> None:
    result = _import_production({"DJANGO_ALLOWED_HOSTS": "api.example.com"})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_settings_refuse_a_negative_render_threads() -> None:
    result = _import_production({"RENDER_THREADS": "-1"})
    assert result.returncode != 0
    assert "RENDER_THREADS must be 0" in result.stderr


def test_settings_refuse_a_callback_retry_scale_of_zero() -> None:
    result = _import_production({"CALLBACK_RETRY_SCALE": "0"})
    assert result.returncode != 0
    assert "CALLBACK_RETRY_SCALE must be above 0" in result.stderr


def test_production_settings_refuse_to_start_without_allowed_hosts() -> None:
    result = _import_production({"DJANGO_SECRET_KEY": "x" * 50})
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS" in result.stderr


def _run_without_settings_module(code: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DJANGO_ALLOWED_HOSTS": "api.example.com"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_wsgi_without_a_settings_module_runs_production_and_refuses_without_a_secret_key() -> None:
    result = _run_without_settings_module("import config.wsgi")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_the_celery_app_without_a_settings_module_runs_production() -> None:
    result = _run_without_settings_module(
        "import os, config; print(os.environ['DJANGO_SETTINGS_MODULE'])"
    )
    assert result.stdout.strip() == "config.settings.production", result.stderr


def test_base_settings_hold_no_secret_key() -> None:
    result = _run_without_settings_module(
        "import config.settings.base as base; print(hasattr(base, 'SECRET_KEY'))"
    )
    assert result.stdout.strip() == "False", result.stderr


def test_importing_settings_creates_no_folder(tmp_path: Path) -> None:
    var = tmp_path / "var"
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    result = subprocess.run(
        [sys.executable, "-c", "import config.settings.local"],
        cwd=ROOT,
        env={**clean, "VAR_DIR": str(var)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert not var.exists()


COMPLETE = {
    "DJANGO_SECRET_KEY": "x" * 50,
    "DJANGO_ALLOWED_HOSTS": "api.example.com",
    "SANDBOX_BASE_URL": "https://sandbox.example.com",
    "LIVE_BASE_URL": "https://api.example.com",
    "PAYMENT_PROVIDER": "stripe",
    "STRIPE_SECRET_KEY": "sk_test_settings",
    "STRIPE_WEBHOOK_SECRET": "whsec_settings",
    "METRICS_TOKEN": "m" * 32,
}


def test_production_settings_refuse_the_local_settings_secret_key() -> None:
    # 35 characters, so long enough: but anyone with the code knows it.
    result = _import_production({**COMPLETE, "DJANGO_SECRET_KEY": LOCAL_SECRET_KEY})

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is a development key" in result.stderr
    assert {LOCAL_SECRET_KEY, TEST_SECRET_KEY, "CHANGE-ME"} <= KNOWN_SECRET_KEYS


@pytest.mark.parametrize(
    "spelling",
    [
        f" {LOCAL_SECRET_KEY} ",
        f"{LOCAL_SECRET_KEY}\n",
        LOCAL_SECRET_KEY.upper(),
        LOCAL_SECRET_KEY.replace("-", "_"),
        LOCAL_SECRET_KEY.replace("-", " "),
        f"{TEST_SECRET_KEY}                 ",
        f"{TEST_SECRET_KEY.title()}-and-some-more-letters",
        "change-me-change-me-change-me-change-me",
    ],
)
def test_production_settings_refuse_a_development_key_in_any_spelling(spelling: str) -> None:
    result = _import_production({**COMPLETE, "DJANGO_SECRET_KEY": spelling})

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is a development key" in result.stderr


def test_production_settings_start_when_complete() -> None:
    result = _import_production(COMPLETE)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("token", [None, "", "short-token"])
def test_production_settings_refuse_to_start_without_a_metrics_token(token: str | None) -> None:
    told = {k: v for k, v in COMPLETE.items() if k != "METRICS_TOKEN"}
    if token is not None:
        told["METRICS_TOKEN"] = token

    result = _import_production(told)

    assert result.returncode != 0
    assert "METRICS_TOKEN must be set to at least 24 characters" in result.stderr


@pytest.mark.parametrize("name", ["SANDBOX_BASE_URL", "LIVE_BASE_URL"])
def test_production_settings_refuse_a_missing_or_plain_http_base_url(name: str) -> None:
    missing = {k: v for k, v in COMPLETE.items() if k != name}
    assert name in _import_production(missing).stderr
    plain = {**COMPLETE, name: "http://api.example.com"}
    result = _import_production(plain)
    assert result.returncode != 0 and name in result.stderr


@pytest.mark.parametrize("provider", ["test", "orders.payments.TestPaymentProvider"])
def test_production_settings_refuse_the_test_payment_provider(provider: str) -> None:
    result = _import_production({**COMPLETE, "PAYMENT_PROVIDER": provider})
    assert result.returncode != 0
    assert "PAYMENT_PROVIDER must be a real payment provider (stripe)" in result.stderr
    default = {k: v for k, v in COMPLETE.items() if k != "PAYMENT_PROVIDER"}
    assert "PAYMENT_PROVIDER must be" in _import_production(default).stderr


def _start_production(env: dict[str, str], var: Path) -> subprocess.CompletedProcess[str]:
    """Django started (``django.setup()``, as gunicorn and the workers start it) with the
    production settings, its local folders in ``var``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={
            **clean,
            **env,
            "VAR_DIR": str(var),
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("provider", ["", " "])
def test_production_settings_refuse_an_empty_payment_provider(provider: str) -> None:
    result = _import_production({**COMPLETE, "PAYMENT_PROVIDER": provider})
    assert result.returncode != 0
    assert "PAYMENT_PROVIDER is empty: it must name a real payment provider (stripe)" in (
        result.stderr
    )


@pytest.mark.parametrize(
    "provider",
    [
        "paypal",
        "Stripe",
        "orders.payments.NoSuchProvider",
        "no_such_module.Provider",
        "orders.payments.PAYMENT_PROVIDERS",  # not a class
        "orders.payments.PaymentResult",  # a class without authorise and refund
    ],
)
def test_production_refuses_to_start_with_an_unknown_payment_provider(
    provider: str, tmp_path: Path
) -> None:
    result = _start_production({**COMPLETE, "PAYMENT_PROVIDER": provider}, tmp_path)
    assert result.returncode != 0
    assert f"PAYMENT_PROVIDER={provider!r} names no payment provider: use one of stripe, test" in (
        result.stderr
    )


@pytest.mark.parametrize("provider", ["stripe", "billing.stripe.StripePaymentProvider"])
def test_production_starts_with_stripe_by_name_or_path(provider: str, tmp_path: Path) -> None:
    result = _start_production({**COMPLETE, "PAYMENT_PROVIDER": provider}, tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("provider", ["stripe", "billing.stripe.StripePaymentProvider"])
@pytest.mark.parametrize("missing", ["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"])
def test_stripe_without_its_keys_refuses_to_start(missing: str, provider: str) -> None:
    result = _import_production({**COMPLETE, "PAYMENT_PROVIDER": provider, missing: ""})
    assert result.returncode != 0
    assert "PAYMENT_PROVIDER=stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET" in (
        result.stderr
    )


def test_a_plain_worker_consumes_every_queue() -> None:
    from config.celery_app import app

    assert set(app.amqp.queues) == {"downloads", "images", "labs", "callbacks", "sweeps"}


@pytest.mark.parametrize(
    ("task", "args", "queue"),
    [
        ("orders.tasks.order_advance_task", (1, "Download"), "downloads"),
        ("orders.tasks.order_advance_task", (1, "Held"), "images"),
        ("orders.tasks.order_advance_task", (1, "AwaitingPayment"), "images"),
        ("orders.tasks.order_advance_task", (1, "Allocate"), "images"),
        ("orders.tasks.order_advance_task", (1, "Prepare"), "images"),
        ("orders.tasks.order_advance_task", (1, "Submit"), "labs"),
        ("orders.tasks.order_advance_task", (1, "Production"), "labs"),
        ("orders.tasks.order_advance_task", (1,), "images"),  # queued by an earlier release
        ("orders.tasks.orders_sweep_task", (), "sweeps"),
        ("orders.tasks.images_purge_expired_task", (), "images"),
        ("backoffice.tasks.bulk_job_run_task", (1,), "images"),
        ("backoffice.tasks.bulk_jobs_sweep_task", (), "sweeps"),
        ("webhooks.tasks.event_deliver_task", (1,), "callbacks"),
        ("webhooks.tasks.events_sweep_task", (), "sweeps"),
    ],
)
def test_each_task_goes_to_its_queue_an_orders_task_to_the_queue_of_its_step(
    task: str, args: tuple[object, ...], queue: str
) -> None:
    from config.celery_app import app

    assert app.amqp.router.route({}, task, args)["queue"].name == queue


def _run_embedded(code: str, var_dir: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a process on the embedded default (no DATABASE_URL or REDIS_URL), its state
    under ``var_dir``."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings.local", "VAR_DIR": str(var_dir)})
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_embedded_default_uses_sqlite_and_the_filesystem_broker(tmp_path: Path) -> None:
    code = (
        "from django.conf import settings; import django; django.setup();"
        "print(settings.DATABASES['default']['ENGINE']); print(settings.CELERY_BROKER_URL)"
    )
    result = _run_embedded(code, tmp_path)
    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem://localhost/"], (
        result.stderr
    )
    assert (tmp_path / "broker" / "queue").is_dir()


def test_the_embedded_broker_takes_a_task_without_a_warning(tmp_path: Path) -> None:
    """kombu warned "No hostname was supplied" on every process's first send to a host-less
    ``filesystem://``; the message lands in the queue folder."""
    code = (
        "import django; django.setup(); from common.tasks import task_enqueue;"
        "task_enqueue('orders.tasks.order_advance_task', 1, 'Download')"
    )
    result = _run_embedded(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    [message] = (tmp_path / "broker" / "queue").iterdir()
    assert message.name.endswith(".downloads.msg")


def test_the_production_settings_pass_djangos_deployment_checks(tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={
            **clean,
            **COMPLETE,
            "DJANGO_SECRET_KEY": "k" * 24 + "-not-a-default-8f3a9c2e1b7d",
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "VAR_DIR": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def _settings_values(module: str, names: list[str], env: dict[str, str]) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    for name in ("PORT", "SANDBOX_BASE_URL", "LIVE_BASE_URL", "ALLOW_PRIVATE_URLS", "EMAIL_URL"):
        clean.pop(name, None)
    code = (
        f"import json, {module} as s; "
        f"print(json.dumps({{n: str(getattr(s, n, None)) for n in {names!r}}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


LOCAL = ["SANDBOX_BASE_URL", "LIVE_BASE_URL", "ALLOW_PRIVATE_URLS", "DEMO_IMAGE_ENABLED"]


def test_local_settings_hand_out_urls_on_the_port_make_run_serves_on() -> None:
    assert _settings_values("config.settings.local", LOCAL, {"PORT": "8200"}) == {
        "SANDBOX_BASE_URL": "http://127.0.0.1:8200",
        "LIVE_BASE_URL": "http://127.0.0.1:8200",
        "ALLOW_PRIVATE_URLS": "True",
        "DEMO_IMAGE_ENABLED": "True",
    }
    assert _settings_values("config.settings.local", LOCAL[:2], {}) == {
        "SANDBOX_BASE_URL": "http://127.0.0.1:8000",
        "LIVE_BASE_URL": "http://127.0.0.1:8000",
    }
    given = {"PORT": "8200", "SANDBOX_BASE_URL": "https://sandbox.example.test/"}
    assert _settings_values("config.settings.local", LOCAL[:1], given) == {
        "SANDBOX_BASE_URL": "https://sandbox.example.test"
    }


def test_loopback_assets_and_callbacks_and_the_demo_photo_are_never_production_defaults() -> None:
    values = _settings_values("config.settings.production", LOCAL[2:], COMPLETE)
    assert values == {"ALLOW_PRIVATE_URLS": "False", "DEMO_IMAGE_ENABLED": "False"}


def test_local_mail_goes_to_files_under_var_unless_email_url_says_otherwise(tmp_path: Path) -> None:
    names = ["EMAIL_BACKEND", "EMAIL_FILE_PATH"]
    assert _settings_values("config.settings.local", names, {"VAR_DIR": str(tmp_path)}) == {
        "EMAIL_BACKEND": "common.mail.FolderEmailBackend",
        "EMAIL_FILE_PATH": str(tmp_path / "mail"),
    }
    smtp = {"VAR_DIR": str(tmp_path), "EMAIL_URL": "smtp://mail.example.test:25"}
    values = _settings_values("config.settings.local", names[:1], smtp)
    assert values == {"EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend"}


def test_the_simulator_makes_no_live_order_under_production_settings_unless_told_to() -> None:
    name = ["SIMULATOR_PRODUCES_LIVE"]
    assert _settings_values("config.settings.production", name, COMPLETE) == {name[0]: "False"}
    assert _settings_values("config.settings.local", name, {}) == {name[0]: "True"}
    assert _settings_values("config.settings.test", name, {}) == {name[0]: "True"}
    told = {**COMPLETE, "SIMULATOR_PRODUCES_LIVE": "1"}
    assert _settings_values("config.settings.production", name, told) == {name[0]: "True"}


@pytest.mark.parametrize(
    ("waits", "said"),
    [("100,200", "240 seconds at most"), ("1,2,3", "at most two waits"), ("-1", "at most two")],
)
def test_settings_refuse_a_short_schedule_that_does_not_end_within_five_minutes(
    waits: str, said: str
) -> None:
    result = _import_production({"ASSET_PERMANENT_RETRY_SECONDS": waits})
    assert result.returncode != 0
    assert said in result.stderr


EXAMPLE = ROOT / "deploy" / "production.env.example"
# Read by the settings, never for a deployment: local and test settings turn them on.
DEVELOPMENT_ONLY = {"DJANGO_DEBUG", "CALLBACK_RETRY_SCALE", "SIMULATOR_PRODUCES_LIVE"}
NOT_CODE = {".venv", ".git", "var", "tests", "docs", "node_modules", "__pycache__"}


def _example_names() -> set[str]:
    return set(re.findall(r"^#?([A-Z][A-Z0-9_]+)=", EXAMPLE.read_text(), flags=re.MULTILINE))


def _code_text() -> str:
    """Every file of the project that runs (settings, deploy scripts, templates, code)."""
    texts = []
    for folder, folders, files in os.walk(ROOT):
        folders[:] = [name for name in folders if name not in NOT_CODE]
        for name in files:
            path = Path(folder) / name
            if path != EXAMPLE and path.suffix in {".py", ".sh", ".conf", ".template", ".toml", ""}:
                texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


def test_the_env_example_names_only_variables_something_reads() -> None:
    code = _code_text()

    unread = sorted(name for name in _example_names() if not re.search(rf"\b{name}\b", code))

    assert unread == []


def test_the_env_example_names_every_variable_the_settings_read() -> None:
    settings_code = "".join(
        path.read_text() for path in (ROOT / "config").rglob("*.py") if "local" not in path.name
    )
    read = set(re.findall(r"env(?:\.\w+)?\(\s*\"([A-Z][A-Z0-9_]+)\"", settings_code))

    assert sorted(read - DEVELOPMENT_ONLY - _example_names()) == []


def test_a_filemail_url_names_an_absolute_folder(tmp_path: Path) -> None:
    folder = tmp_path / "mail"
    names = ["EMAIL_BACKEND", "EMAIL_FILE_PATH"]

    values = _settings_values(
        "config.settings.production", names, {**COMPLETE, "EMAIL_URL": f"filemail://{folder}"}
    )
    relative = _import_production({**COMPLETE, "EMAIL_URL": "filemail://var/mail"})

    assert values == {
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "EMAIL_FILE_PATH": str(folder),
    }
    assert relative.returncode != 0
    assert "EMAIL_URL=filemail:///... must name an absolute folder" in relative.stderr
