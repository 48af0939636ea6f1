"""Settings shared by every environment.

With no environment variable at all the service runs on the embedded default: SQLite and the
kombu filesystem broker, both under ``var/``. ``DATABASE_URL`` and ``REDIS_URL`` switch to
PostgreSQL and Redis.
"""

from datetime import timedelta
from pathlib import Path

from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from config.env import BASE_DIR, email_file_path, env
from config.media import FILE_SYSTEM, s3_media_storage

# Local state of the embedded default (SQLite, filesystem broker, file cache, static files);
# ``common`` creates the folders when Django starts, never this module.
VAR_DIR = Path(env.str("VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DJANGO_DEBUG", default=False)
# No SECRET_KEY here: ``local`` and ``test`` set a development one, ``production`` requires one.
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
USE_X_FORWARDED_HOST = env.bool("DJANGO_USE_X_FORWARDED_HOST", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "backoffice.site.ServiceAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "axes",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "common",
    "api",
    "merchants",
    "staff",
    "products",
    "labs",
    "quotes",
    "orders",
    "webhooks",
    "billing",
    "dashboard",
    "backoffice",
]

MIDDLEWARE = [
    # A body the view never read is read before the answer goes (api/bodies.py: else gunicorn's
    # close resets the connection and nginx may answer 503 instead of the answer).
    "api.bodies.UnreadBodyDrainMiddleware",
    # Counts and times every request by route (Prometheus, GET /metrics).
    "api.metrics.RequestMetricsMiddleware",
    "api.trace.TraceParentMiddleware",
    "api.versions.RequestVersionsMiddleware",
    "api.timeouts.RequestDeadlineMiddleware",
    "api.timeouts.OutboundBudgetMiddleware",
    "api.routing.CaseInsensitiveApiPathMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Sessions, CSRF, signed-in users and messages, for every request but API calls without a
    # session cookie and the health check (api/browser.py).
    "api.browser.BrowserMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its refusal page.
    "axes.middleware.AxesMiddleware",
]
# The admin looks for sessions, signed-in users and messages in MIDDLEWARE by name, and the
# deployment checks for CSRF: they are inside api.browser.BrowserMiddleware, in the same order,
# for every request a browser makes. Its own check (api.W001) stands in for the CSRF cookie's
# deployment check, which Django skips when it does not find the middleware by name.
SILENCED_SYSTEM_CHECKS = ["admin.E408", "admin.E409", "admin.E410", "security.W003"]

ROOT_URLCONF = "config.urls"
CSRF_FAILURE_VIEW = "api.views.csrf_failure"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
if env.str("DATABASE_URL", default=""):
    DATABASES = {"default": env.db("DATABASE_URL")}
    DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
    # Not Django's health checks (a ``SELECT 1`` before each request's first query): a kept
    # connection the server dropped is noticed from its socket, at no round trip, before each
    # request and task (``common.db.dropped_connections_closed``).
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
    # Off behind a pooler in transaction mode (PgBouncer): each transaction may run on another
    # server connection, so nothing may outlive one: no prepared statements, no server-side
    # cursors (QuerySet.iterator() outside a transaction).
    _prepared_statements = env.bool("DATABASE_PREPARED_STATEMENTS", default=True)
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = not _prepared_statements
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and _prepared_statements:
        # Values sent apart from the statement (server-side binding), and a statement run a
        # second time on a connection prepared (psycopg's threshold: runs before preparing):
        # PostgreSQL parses and plans it once per connection, not on every run (a worker's
        # steps cost the server a third of the CPU). Off behind a pooler in transaction mode
        # that cannot keep prepared statements (PgBouncer before 1.22, or without
        # max_prepared_statements).
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            server_side_binding=True, prepare_threshold=1
        )
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            # WAL and immediate transactions let web, worker and beat share one file safely.
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
            },
            # Kept open between requests, as PostgreSQL's: opening one runs the PRAGMAs above,
            # which cost a request that does one query (GET /healthz) two thirds of its time.
            "CONN_MAX_AGE": env.int("DATABASE_CONN_MAX_AGE", default=60),
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache, broker --------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT = "common.broker:Transport"  # kombu's Redis, a client kept
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {"visibility_timeout": 3600}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }
    _broker_dir = VAR_DIR / "broker"
    # The host is not used (the folders below are); named so kombu has none to warn about.
    CELERY_BROKER_URL = "filesystem://localhost/"
    # kombu's, writing whole files and setting aside a file that is not a message (rejected/).
    CELERY_BROKER_TRANSPORT = "common.file_broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "rejected_folder": str(_broker_dir / "rejected"),
        # Exchange bindings (otherwise a "control" folder in the working directory).
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }

# Rate-limit counts without Redis: one small SQLite file every process of the machine shares
# (api.rate_limits, common.rate_counts).
RATE_LIMIT_DATABASE = VAR_DIR / "rate-limits.sqlite3"

CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
# Keep database connections across tasks (config/celery_app.py checks them around each).
CELERY_DB_REUSE_MAX = 1000
# Four queues, each for its own kind of worker (README, "Queues and workers"): `downloads`
# waits on merchants' asset hosts (a thread pool), `images` is the CPU-bound rest of the
# pipeline and every other task (prefork, a process per CPU), `labs` waits on the labs' sites
# (the pipeline's submissions and progress checks; a thread pool), `callbacks` waits on
# merchants' receivers and never queues behind any of them. The sweepers have a small queue of
# their own, `sweeps`, consumed by the callbacks worker: a worker takes from its queues in
# turn, so a sweep never waits behind a backlog of deliveries. A plain `celery -A config
# worker` consumes all five.
CELERY_TASK_DEFAULT_QUEUE = "images"
CELERY_TASK_QUEUES = (
    Queue("downloads"),
    Queue("images"),
    Queue("labs"),
    Queue("callbacks"),
    Queue("sweeps"),
)
# Routers, first match wins; a task none of them names goes to the default queue (images).
CELERY_TASK_ROUTES: list = []
CELERY_BEAT_SCHEDULE: dict = {}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# --- Service --------------------------------------------------------------------------------
SANDBOX_BASE_URL = env.str("SANDBOX_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
LIVE_BASE_URL = env.str("LIVE_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
# Outbound fetches and callbacks may reach loopback/private addresses only when this is on.
ALLOW_PRIVATE_URLS = env.bool("ALLOW_PRIVATE_URLS", default=False)
# `make run`'s demo photo at /demo/photo.jpg (on in config.settings.local only).
DEMO_IMAGE_ENABLED = False
REQUEST_TIMEOUT_SECONDS = env.float("REQUEST_TIMEOUT_SECONDS", default=60.0)
# All the lab calls one web request makes (staff shipment operations, order actions) share
# this many seconds; then the answer is that the lab could not be reached.
LAB_CALLS_BUDGET_SECONDS = env.float("LAB_CALLS_BUDGET_SECONDS", default=20.0)
API_RATE_LIMIT = env.str("API_RATE_LIMIT", default="1200/min")
WRONG_KEY_RATE_LIMIT = env.str("WRONG_KEY_RATE_LIMIT", default="60/min")

# --- Labs -----------------------------------------------------------------------------------
LAB_SIMULATOR_SECONDS = env.float("LAB_SIMULATOR_SECONDS", default=60.0)
# The simulator makes Sandbox orders. A development setting lets it make Live orders too (off
# here and in production, on in local and test); a process started with the production settings
# and this on warns at start, and every Live shipment it makes says "simulated".
SIMULATOR_PRODUCES_LIVE = env.bool("SIMULATOR_PRODUCES_LIVE", default=False)
LAB_SUBMIT_ATTEMPTS = env.int("LAB_SUBMIT_ATTEMPTS", default=5)
# Site Flow labs are polled for progress: the wait after a check is the time since submission,
# at least the base and at most the cap, so it doubles from the base up to the cap.
SITEFLOW_POLL_BASE_SECONDS = env.float("SITEFLOW_POLL_BASE_SECONDS", default=60.0)
SITEFLOW_POLL_MAX_SECONDS = env.float("SITEFLOW_POLL_MAX_SECONDS", default=3600.0)
# The whole of one Site Flow request (connect, send, answer).
SITEFLOW_TIMEOUT_SECONDS = env.float("SITEFLOW_TIMEOUT_SECONDS", default=30.0)

# --- Back-office: Google Sheets (gspread) and bulk jobs -------------------------------------
# gspread signs in with the service account's JSON key; SHEETS_API_URL points it at another
# Sheets v4 compatible server, where SHEETS_ACCESS_TOKEN (a bearer token) may replace the key.
GOOGLE_SERVICE_ACCOUNT_FILE = env.str("GOOGLE_SERVICE_ACCOUNT_FILE", default="")
SHEETS_API_URL = env.str(
    "SHEETS_API_URL", default="https://sheets.googleapis.com/v4/spreadsheets"
).rstrip("/")
SHEETS_ACCESS_TOKEN = env.str("SHEETS_ACCESS_TOKEN", default="")
SHEETS_TIMEOUT_SECONDS = env.float("SHEETS_TIMEOUT_SECONDS", default=30.0)
# The most data rows a sheet or uploaded file may have (more: 400 TooManyRows), the largest
# upload taken and the most an uploaded workbook's parts may unpack to (more: 400 TooLarge),
# and the most cells an uploaded file may have (more: 400 TooManyCells): what reading an
# upload may hold in memory.
BULK_MAX_ROWS = env.int("BULK_MAX_ROWS", default=10_000)
BULK_UPLOAD_MAX_BYTES = env.int("BULK_UPLOAD_MAX_BYTES", default=5 * 1024 * 1024)
BULK_UPLOAD_MAX_UNPACKED_BYTES = env.int("BULK_UPLOAD_MAX_UNPACKED_BYTES", default=20 * 1024 * 1024)
BULK_UPLOAD_MAX_CELLS = env.int("BULK_UPLOAD_MAX_CELLS", default=200_000)
# Row results reach the sheet in one values:batchUpdate per this many seconds (or rows).
BULK_WRITE_BACK_SECONDS = env.float("BULK_WRITE_BACK_SECONDS", default=2.0)
BULK_WRITE_BACK_ROWS = env.int("BULK_WRITE_BACK_ROWS", default=200)
# POST .../siteflow-shipping/bulk-update answers the rows its job did within this many seconds
# (the rest follow in the job); well inside REQUEST_TIMEOUT_SECONDS.
SITEFLOW_SHIPPING_WAIT_SECONDS = env.float("SITEFLOW_SHIPPING_WAIT_SECONDS", default=20.0)

# --- Fulfilment pipeline --------------------------------------------------------------------
ASSET_MAX_BYTES = env.int("ASSET_MAX_BYTES", default=300 * 1024 * 1024)
ASSET_DOWNLOAD_DEADLINE_SECONDS = env.float("ASSET_DOWNLOAD_DEADLINE_SECONDS", default=300.0)
ASSET_DOWNLOAD_ATTEMPTS = 10
ASSET_DOWNLOAD_PARALLELISM = env.int("ASSET_DOWNLOAD_PARALLELISM", default=4)
# A PDF declaring more pages is refused before its pages are read (bounds the CPU per file).
PDF_MAX_PAGES = env.int("PDF_MAX_PAGES", default=2000)
# Backoff between download attempts: base * 2^(attempt-1), capped.
ASSET_RETRY_BASE_SECONDS = env.float("ASSET_RETRY_BASE_SECONDS", default=30.0)
ASSET_RETRY_MAX_SECONDS = env.float("ASSET_RETRY_MAX_SECONDS", default=3600.0)
# An answer that will not change on retry (404, 410, 401, 403 and the other 4xx but 408, 425
# and 429; an md5 mismatch) is asked again after each of these waits in turn, and the download
# fails at the next such answer (one attempt more than waits): 3 attempts within 5 minutes
# (decisions.md, "Images that cannot be fetched"). A file that arrived and is not an image or
# PDF, or is too large, fails at once.
ASSET_PERMANENT_RETRY_SECONDS = env.list(
    "ASSET_PERMANENT_RETRY_SECONDS", cast=float, default=[60.0, 120.0]
)
if len(ASSET_PERMANENT_RETRY_SECONDS) > 2 or not all(
    wait >= 0 for wait in ASSET_PERMANENT_RETRY_SECONDS
):
    raise ImproperlyConfigured(
        "ASSET_PERMANENT_RETRY_SECONDS is at most two waits of 0 seconds or more (3 attempts)."
    )
if sum(ASSET_PERMANENT_RETRY_SECONDS) > 240:
    raise ImproperlyConfigured(
        "ASSET_PERMANENT_RETRY_SECONDS adds up to 240 seconds at most: the three attempts of an "
        "answer that will not change end within 5 minutes."
    )
# An order whose items no lab has in stock waits at allocation: base * 2^n after the first
# ItemUnavailable issue, capped (other infeasibility fails at once).
ALLOCATION_RETRY_BASE_SECONDS = env.float("ALLOCATION_RETRY_BASE_SECONDS", default=900.0)
ALLOCATION_RETRY_MAX_SECONDS = env.float("ALLOCATION_RETRY_MAX_SECONDS", default=4 * 3600.0)
# The lease of a worker's claim on an order step or a bulk job (common/leases.py): a worker
# that dies holds its work this long at most before the sweepers queue it for another. A
# heartbeat renews it every third of this while the work runs, however long a download, a
# rendering or a lab call takes; a worker stalled for the whole lease (a machine frozen, the
# database away) loses its claim, and its writes, conditional on the claim, then roll back.
# Work a killed worker held is running again within this plus PIPELINE_SWEEP_SECONDS; a task
# message presumed lost (queued, never run) is queued again after this too.
PIPELINE_CLAIM_SECONDS = env.float("PIPELINE_CLAIM_SECONDS", default=30.0)
if PIPELINE_CLAIM_SECONDS < 3:
    raise ImproperlyConfigured(
        "PIPELINE_CLAIM_SECONDS must be 3 or more: its heartbeat renews it every third of it."
    )
PIPELINE_SWEEP_SECONDS = env.float("PIPELINE_SWEEP_SECONDS", default=10.0)
# libvips threads of one rendering in a prefork (images) worker's processes. The pool already
# runs a process per CPU and one more, so threads within a rendering only contend with the
# other renderings and the steps around them; 0 leaves libvips' default (one per CPU), for a
# pool of fewer processes than CPUs.
RENDER_THREADS = env.int("RENDER_THREADS", default=1)
if RENDER_THREADS < 0:
    raise ImproperlyConfigured("RENDER_THREADS must be 0 (libvips' default) or more.")
# Fairness between merchants on the downloads queue: at most this many of one merchant's orders
# download at once. A further one is not run (it holds no download thread): it waits with a due
# time in its row, made due again as one of the merchant's downloads ends, or after
# DOWNLOAD_DEFER_SECONDS at the latest. Keep it well below the download threads of all workers.
DOWNLOADS_PER_MERCHANT = env.int("DOWNLOADS_PER_MERCHANT", default=4)
if DOWNLOADS_PER_MERCHANT < 1:
    raise ImproperlyConfigured("DOWNLOADS_PER_MERCHANT must be 1 or more.")
DOWNLOAD_DEFER_SECONDS = env.float("DOWNLOAD_DEFER_SECONDS", default=30.0)
# Fairness whatever the number of merchants (orders/pipeline/lanes.py): every download must
# average SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND, checked every SLOW_DOWNLOAD_CHECK_SECONDS; one
# that falls behind stops and its host is remembered as slow for SLOW_HOST_MEMORY_SECONDS. A
# download from a slow host runs only with a place in the slow lane: SLOW_DOWNLOADS at once
# over all workers (keep it a small part of the download threads), SLOW_DOWNLOADS_PER_HOST
# from one host; without one it waits DOWNLOAD_DEFER_SECONDS, holding no thread.
SLOW_DOWNLOAD_CHECK_SECONDS = env.float("SLOW_DOWNLOAD_CHECK_SECONDS", default=5.0)
SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND = env.int(
    "SLOW_DOWNLOAD_MIN_BYTES_PER_SECOND", default=32 * 1024
)
SLOW_HOST_MEMORY_SECONDS = env.float("SLOW_HOST_MEMORY_SECONDS", default=600.0)
SLOW_DOWNLOADS = env.int("SLOW_DOWNLOADS", default=4)
SLOW_DOWNLOADS_PER_HOST = env.int("SLOW_DOWNLOADS_PER_HOST", default=2)
if SLOW_DOWNLOAD_CHECK_SECONDS <= 0 or SLOW_DOWNLOADS < 1 or SLOW_DOWNLOADS_PER_HOST < 1:
    raise ImproperlyConfigured(
        "SLOW_DOWNLOAD_CHECK_SECONDS must be above 0, SLOW_DOWNLOADS and "
        "SLOW_DOWNLOADS_PER_HOST 1 or more."
    )
# The pipeline's calls to a real lab (submission, progress) run on the labs queue's threads;
# at most LAB_CALLS_PER_LAB of one lab's run at once over all workers (keep it a small part of
# the labs threads), so a site that hangs holds no more; a step that finds them taken asks
# again LAB_BUSY_RETRY_SECONDS later.
LAB_CALLS_PER_LAB = env.int("LAB_CALLS_PER_LAB", default=2)
if LAB_CALLS_PER_LAB < 1:
    raise ImproperlyConfigured("LAB_CALLS_PER_LAB must be 1 or more.")
LAB_BUSY_RETRY_SECONDS = env.float("LAB_BUSY_RETRY_SECONDS", default=15.0)
# The web tier's bulkhead per lab: at most LAB_WEB_CALLS_PER_LAB requests that call one real
# lab (order actions, staff shipment operations) run at once over all web workers; beyond it
# the answer is 503 ServiceUnavailable at once, with Retry-After LAB_BUSY_RETRY_SECONDS. Keep
# it a small part of the web workers (WEB_CONCURRENCY), so a lab whose site hangs holds no more.
LAB_WEB_CALLS_PER_LAB = env.int("LAB_WEB_CALLS_PER_LAB", default=1)
if LAB_WEB_CALLS_PER_LAB < 1:
    raise ImproperlyConfigured("LAB_WEB_CALLS_PER_LAB must be 1 or more.")
# An order's task message goes to the queue of the step it names (orders/pipeline/routing.py).
CELERY_TASK_ROUTES.append("orders.pipeline.routing.pipeline_task_route")
# The sweepers are short and must run on time whatever the backlog (they rescue
# lost work): their own queue, with the callbacks' sweeper.
CELERY_TASK_ROUTES.append(
    {
        "orders.tasks.orders_sweep_task": {"queue": "sweeps"},
        "orders.tasks.lab_answers_sweep_task": {"queue": "sweeps"},
        "backoffice.tasks.bulk_jobs_sweep_task": {"queue": "sweeps"},
        "webhooks.tasks.events_sweep_task": {"queue": "sweeps"},
    }
)
IMAGE_RETENTION_DAYS = env.int("IMAGE_RETENTION_DAYS", default=30)
# Stored files are served only through signed URLs valid this long: thumbnails in order bodies,
# print files sent to labs (long enough for any production and reprint).
FILE_URL_DAYS = env.int("FILE_URL_DAYS", default=7)
LAB_FILE_URL_DAYS = env.int("LAB_FILE_URL_DAYS", default=60)
CELERY_BEAT_SCHEDULE["orders-sweep"] = {
    "task": "orders.tasks.orders_sweep_task",
    "schedule": PIPELINE_SWEEP_SECONDS,
}
# A change a lab did not answer in time is settled by asking the lab, on the labs queue (it
# waits on the lab); its sweeper queues again whatever is still unsettled.
CELERY_TASK_ROUTES.append({"orders.tasks.shipment_lab_answer_reconcile_task": {"queue": "labs"}})
CELERY_BEAT_SCHEDULE["lab-answers-sweep"] = {
    "task": "orders.tasks.lab_answers_sweep_task",
    "schedule": PIPELINE_SWEEP_SECONDS,
}
CELERY_BEAT_SCHEDULE["bulk-jobs-sweep"] = {
    "task": "backoffice.tasks.bulk_jobs_sweep_task",
    "schedule": PIPELINE_SWEEP_SECONDS,
}
CELERY_BEAT_SCHEDULE["images-purge-expired"] = {
    "task": "orders.tasks.images_purge_expired_task",
    "schedule": 3600.0,
}
# Order documents whose signed thumbnail URLs near their expiry are written afresh
# (orders.document: a read would otherwise render them itself).
CELERY_BEAT_SCHEDULE["order-documents-refresh"] = {
    "task": "orders.tasks.order_documents_refresh_task",
    "schedule": 3600.0,
}

# --- Metrics --------------------------------------------------------------------------------
# GET /metrics (Prometheus) answers staff signed in to the admin, and a scrape that sends
# "Authorization: Bearer {METRICS_TOKEN}" (production requires the token). Without a token
# (local and test settings), clients of METRICS_ALLOWED_NETWORKS instead, their address read
# through NUM_PROXIES. PROMETHEUS_MULTIPROC_DIR (read by prometheus-client itself, set before
# the processes start) makes a scrape sum every process of the machine (docs/deployment.md).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = env.list("METRICS_ALLOWED_NETWORKS", default=["127.0.0.1/32", "::1/128"])
# Scrapes stay cheap and bounded: the figures read from the database and the broker are read
# at most once every METRICS_FIGURES_SECONDS over all processes; at most
# METRICS_CONCURRENT_SCRAPES scrapes run at once (others get 429).
METRICS_FIGURES_SECONDS = env.float("METRICS_FIGURES_SECONDS", default=5.0)
METRICS_CONCURRENT_SCRAPES = env.int("METRICS_CONCURRENT_SCRAPES", default=2)
if METRICS_CONCURRENT_SCRAPES < 1:
    raise ImproperlyConfigured("METRICS_CONCURRENT_SCRAPES must be 1 or more.")

# --- Webhooks (callbacks to merchants) ------------------------------------------------------
CALLBACK_TIMEOUT_SECONDS = env.float("CALLBACK_TIMEOUT_SECONDS", default=10.0)
CALLBACK_EVENT_TYPE_PREFIX = env.str("CALLBACK_EVENT_TYPE_PREFIX", default="com.service.order")
# The retry schedule's delays (webhooks/delivery.py, about three days in all) times this: below
# 1 only to see retries and give-ups happen in seconds (the tests' workers).
CALLBACK_RETRY_SCALE = env.float("CALLBACK_RETRY_SCALE", default=1.0)
if CALLBACK_RETRY_SCALE <= 0:
    raise ImproperlyConfigured("CALLBACK_RETRY_SCALE must be above 0.")
CELERY_TASK_ROUTES.append({"webhooks.*": {"queue": "callbacks"}})
CELERY_BEAT_SCHEDULE["events-sweep"] = {
    "task": "webhooks.tasks.events_sweep_task",
    "schedule": PIPELINE_SWEEP_SECONDS,
}

# --- Dashboard, registration, payment ------------------------------------------------------
# Mail (the sign-up verification) through the backend EMAIL_URL names: consolemail://,
# smtp://user:password@host:25, smtp+tls://..., filemail:///path, dummymail://.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
if env.str("EMAIL_URL", default="").startswith("filemail:"):
    EMAIL_FILE_PATH = email_file_path(env.str("EMAIL_URL"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Print API <no-reply@localhost>")
LOGIN_URL = "/dashboard/login"
LOGIN_REDIRECT_URL = "/dashboard/"
# Sign-ups and registration completions per client address.
REGISTRATION_RATE_LIMIT = env.str("REGISTRATION_RATE_LIMIT", default="20/hour")
# Card-billed merchants' Live orders are paid through this provider (orders/payments.py):
# "test" (every payment authorised at once, no money moves; refused by the production
# settings), "stripe" (Stripe Checkout with the official library, billing/stripe.py), or a
# class's dotted path.
PAYMENT_PROVIDER = env.str("PAYMENT_PROVIDER", default="test")
# An order still unpaid this many days after it started waiting is cancelled.
PAYMENT_WAIT_DAYS = env.int("PAYMENT_WAIT_DAYS", default=14)
# Stripe: the secret API key, the webhook endpoint's signing secret (whsec_...; the endpoint is
# {LIVE_BASE_URL}/payments/stripe/webhook, event checkout.session.completed), and optionally
# another base URL of Stripe's API (a Stripe compatible server, in tests).
STRIPE_SECRET_KEY = env.str("STRIPE_SECRET_KEY", default="")
STRIPE_WEBHOOK_SECRET = env.str("STRIPE_WEBHOOK_SECRET", default="")
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="").rstrip("/")
STRIPE_TIMEOUT_SECONDS = env.float("STRIPE_TIMEOUT_SECONDS", default=20.0)
_STRIPE_NAMES = ("stripe", "billing.stripe.StripePaymentProvider")  # by name or by path
if PAYMENT_PROVIDER in _STRIPE_NAMES and not (STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET):
    raise ImproperlyConfigured(
        "PAYMENT_PROVIDER=stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET."
    )
# Refunds (and payment pages to expire) wait on the provider as callbacks wait on merchants:
# the callbacks worker sends them.
CELERY_TASK_ROUTES.append(
    {
        "orders.tasks.payment_refund_send_task": {"queue": "callbacks"},
        "orders.tasks.payment_session_expire_task": {"queue": "callbacks"},
        "orders.tasks.payment_refunds_sweep_task": {"queue": "sweeps"},
    }
)
# Invoice-billed merchants' invoices for the month before, on the first of each month.
CELERY_BEAT_SCHEDULE["invoices-issue"] = {
    "task": "billing.tasks.invoices_issue_task",
    "schedule": crontab(minute=30, hour=0, day_of_month=1),
}
CELERY_BEAT_SCHEDULE["payment-refunds-sweep"] = {
    "task": "orders.tasks.payment_refunds_sweep_task",
    "schedule": PIPELINE_SWEEP_SECONDS,
}

# --- Internationalisation, static, media ----------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))
# Media (downloads, print files, thumbnails) on this machine's disk under MEDIA_ROOT, or, with
# MEDIA_S3_BUCKET, in an S3-compatible bucket (django-storages' S3 backend over boto3) that
# every web and worker process reaches: then no folder is shared between machines. Without an
# access key, boto3 finds credentials itself (environment, instance profile). Either way files
# are handed out only as the service's own signed URLs (common/files.py): the web process
# checks the signature and expiry and, on S3, redirects to a presigned URL of the bucket valid
# MEDIA_S3_REDIRECT_SECONDS (a presigned URL alone cannot outlive 7 days, and lab URLs must).
MEDIA_S3_BUCKET = env.str("MEDIA_S3_BUCKET", default="")
MEDIA_S3_REDIRECT_SECONDS = env.int("MEDIA_S3_REDIRECT_SECONDS", default=300)
_media_storage = FILE_SYSTEM
if MEDIA_S3_BUCKET:
    _media_storage = s3_media_storage(
        bucket=MEDIA_S3_BUCKET,
        redirect_seconds=MEDIA_S3_REDIRECT_SECONDS,
        endpoint_url=env.str("MEDIA_S3_ENDPOINT_URL", default=""),
        region=env.str("MEDIA_S3_REGION", default=""),
        access_key=env.str("MEDIA_S3_ACCESS_KEY_ID", default=""),
        secret_key=env.str("MEDIA_S3_SECRET_ACCESS_KEY", default=""),
        prefix=env.str("MEDIA_S3_PREFIX", default=""),
        addressing_style=env.str("MEDIA_S3_ADDRESSING_STYLE", default=""),
    )
STORAGES = {
    "default": _media_storage,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- Sign-in (admin and dashboard) ----------------------------------------------------------
# django-axes: after AXES_FAILURE_LIMIT wrong passwords for one user from one address, that
# pair is locked out for AXES_COOLOFF_MINUTES; a success resets the count.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("AXES_COOLOFF_MINUTES", default=15.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# The client's address, read by one function everywhere (rate limits, sign-in lockouts,
# /metrics): X-Forwarded-For only behind NUM_PROXIES trusted proxies (common/addresses.py).
NUM_PROXIES = env.int("NUM_PROXIES", default=0)
AXES_CLIENT_IP_CALLABLE = "common.addresses.client_address"
# Sessions (staff in the admin, merchants in the dashboard) end after SESSION_HOURS.
SESSION_COOKIE_AGE = int(env.float("SESSION_HOURS", default=8.0) * 3600)

# Merchants and staff alike: not like the email address or name, at least 10 characters, not
# all digits, not only spaces, not a common password.
AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator",
        "OPTIONS": {"user_attributes": ("username", "email", "first_name", "last_name")},
    },
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 10},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "common.passwords.NotOnlyWhitespaceValidator"},
    {"NAME": "common.passwords.GuessabilityValidator"},
]

# --- API ------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.HasApiKey"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JsonBodyParser"],
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.ApiJsonRenderer"],
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.ApiKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "api_key": API_RATE_LIMIT,
        "wrong_key": WRONG_KEY_RATE_LIMIT,
        "registration": REGISTRATION_RATE_LIMIT,
    },
    "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # Client addresses (the wrong-key limit, anonymous limits) come from X-Forwarded-For only
    # through this many trusted proxies; with none, a client cannot choose its own address.
    "NUM_PROXIES": NUM_PROXIES,
    "URL_FORMAT_OVERRIDE": "format",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Print Fulfilment Ordering API",
    "VERSION": "4.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Docstrings are written for the code's reader; the document's text is written for the
    # API's (extend_schema descriptions, help texts, the introduction).
    "DISABLE_DOCSTRING_DESCRIPTIONS": True,
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # The sidecar's Redoc without its one address on the internet (api.redoc).
    "REDOC_DIST": "/redoc",
    "COMPONENT_SPLIT_REQUEST": True,
    # Enumerations whose field names are shared by several (or which several fields share).
    "ENUM_NAME_OVERRIDES": {
        "ComponentStateEnum": "api.health.COMPONENT_STATES",
        "StageEnum": "orders.models.Stage",
        "DetailStateEnum": "orders.models.DetailState",
        "ItemStatusEnum": "orders.models.ItemStatus",
        "AssetStatusEnum": "orders.models.AssetStatus",
        "ShipmentStatusEnum": "orders.models.ShipmentStatus",
        "CreateOutcomeEnum": "orders.api.serializers.CREATE_OUTCOMES",
        "OnHoldOutcomeEnum": "orders.api.serializers.ON_HOLD_OUTCOMES",
        "OkOutcomeEnum": "api.serializers.OK_OUTCOMES",
        "CancelOutcomeEnum": "orders.api.serializers.CANCEL_OUTCOMES",
        "UpdateOutcomeEnum": "orders.api.serializers.UPDATE_OUTCOMES",
        "MetadataOutcomeEnum": "orders.api.serializers.METADATA_OUTCOMES",
        "QuoteOutcomeEnum": "quotes.api.serializers.QUOTE_OUTCOMES",
        "RegistrationOutcomeEnum": "dashboard.api.serializers.REGISTRATION_OUTCOMES",
    },
    "APPEND_COMPONENTS": {
        "securitySchemes": {"ApiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}
    },
    # This is the merchants' document (/v4.0/schema): the staff endpoints have their own
    # (/v4.0/staff/schema), made with api.schema.STAFF_DOCUMENT in place of these settings.
    "PREPROCESSING_HOOKS": ["api.schema.merchant_endpoints"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_error_responses",
        # The introduction (api/introduction.md) and the tags in a merchant's order.
        "api.schema.add_introduction_and_tags",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "filters": {"periodic_task_noise": {"()": "common.logs.PeriodicTaskNoiseFilter"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # pyvips logs each image's thread pool at INFO; django-axes its version in every process.
        "pyvips": {"level": "WARNING"},
        "axes.apps": {"level": "WARNING"},
        # Beat queues the sweepers every few seconds: at INFO a sweep shows only when it did
        # something, in one line (the worker's "succeeded ...: <how many>").
        "celery.beat": {"filters": ["periodic_task_noise"]},
        "celery.worker.strategy": {"filters": ["periodic_task_noise"]},
        "celery.app.trace": {"filters": ["periodic_task_noise"]},
    },
}
