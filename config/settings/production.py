"""Production settings: refuse to start without a real secret key and allowed hosts."""

from django.core.exceptions import ImproperlyConfigured

from config.env import env, secret_key_known
from config.settings.base import *  # noqa: F403

DEBUG = False
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=[])
if not SECRET_KEY or len(SECRET_KEY) < 32:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set to at least 32 characters.")
if secret_key_known(SECRET_KEY):
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is a development key that anyone with the code knows; set a random one."
    )
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must list the service's host names.")

for _name in ("SANDBOX_BASE_URL", "LIVE_BASE_URL"):
    # Callback sources, thumbnail URLs and the print-file URLs labs fetch are built from these.
    _url = env.str(_name, default="")
    if not _url.startswith("https://"):
        raise ImproperlyConfigured(f"{_name} must be the environment's public https:// base URL.")
    globals()[_name] = _url.rstrip("/")

# Card payments must move money: the built-in test provider authorises everything. A name that
# names no provider is refused when Django starts, in every setting (orders.apps).
if not PAYMENT_PROVIDER.strip():  # noqa: F405
    raise ImproperlyConfigured(
        "PAYMENT_PROVIDER is empty: it must name a real payment provider (stripe) in production."
    )
if PAYMENT_PROVIDER in ("test", "orders.payments.TestPaymentProvider"):  # noqa: F405
    raise ImproperlyConfigured(
        "PAYMENT_PROVIDER must be a real payment provider (stripe) in production; "
        "the test provider authorises every payment."
    )

# Behind nginx every client is its address: /metrics answers the monitoring system's token.
if len(METRICS_TOKEN) < 24:  # noqa: F405
    raise ImproperlyConfigured(
        "METRICS_TOKEN must be set to at least 24 characters: Prometheus sends it as "
        '"Authorization: Bearer ..." to scrape /metrics.'
    )

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True

# Served over https only (behind a proxy that terminates TLS and sets X-Forwarded-Proto):
# plain http is redirected, except the health check a load balancer probes on the inside.
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=True)
