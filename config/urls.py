from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from api.demo import demo_photo
from api.health import HealthView
from api.media import media
from api.metrics import metrics
from api.redoc import REDOC_DIST, redoc_bundle
from api.schema import STAFF_DOCUMENT
from api.views import endpoint_does_not_exist
from dashboard.views import favicon, index

# The two OpenAPI documents and their viewers, open to anyone as the API's shapes are no secret
# (every staff operation needs a staff key or session): the merchants' document
# (drf-spectacular's settings) and the staff document (api.schema.STAFF_DOCUMENT).
api_patterns: list[URLPattern | URLResolver] = [
    # The orders' routes first (all begin with "orders"): most requests are theirs, and each
    # pattern tried before the one that matches costs.
    path("", include("orders.api.urls")),
    path(
        "schema",
        SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]),
        name="schema",
    ),
    path(
        "docs",
        SpectacularSwaggerView.as_view(
            url_name="schema", authentication_classes=[], permission_classes=[]
        ),
        name="swagger-ui",
    ),
    path(
        "redoc",
        SpectacularRedocView.as_view(
            url_name="schema", authentication_classes=[], permission_classes=[]
        ),
        name="redoc",
    ),
    # Linked from the admin's header (templates/admin/base_site.html).
    path(
        "staff/schema",
        SpectacularAPIView.as_view(
            custom_settings=STAFF_DOCUMENT, authentication_classes=[], permission_classes=[]
        ),
        name="staff-schema",
    ),
    path(
        "staff/redoc",
        SpectacularRedocView.as_view(
            url_name="staff-schema",
            title=STAFF_DOCUMENT["TITLE"],
            authentication_classes=[],
            permission_classes=[],
        ),
        name="staff-redoc",
    ),
    path("", include("products.api.urls")),
    path("", include("quotes.api.urls")),
    path("", include("labs.api.urls")),
    path("", include("dashboard.api.urls")),
    path("", include("backoffice.api.urls")),
]

urlpatterns = [
    # The API first, the health check next: the requests that come most often try the fewest
    # patterns (no other route starts with v4.0/).
    path("v4.0/", include(api_patterns)),
    path("healthz", HealthView.as_view(), name="healthz"),
    path("", index, name="index"),
    path("favicon.ico", favicon, name="favicon"),
    path(f"{REDOC_DIST.strip('/')}/bundles/redoc.standalone.js", redoc_bundle, name="redoc-bundle"),
    # Print files and thumbnails on the local default storage (django-storages serves its own).
    re_path(r"^media/(?P<path>.+)$", media),
    path("metrics", metrics),
    path("demo/photo.jpg", demo_photo, name="demo-photo"),
    path("admin/", admin.site.urls),
    path("dashboard", RedirectView.as_view(url="/dashboard/")),
    path("dashboard/", include("dashboard.urls")),
    path("payments/", include("billing.urls")),
    re_path(r"^v4\.0(?:/.*)?$", endpoint_does_not_exist),
]

handler400 = "api.views.bad_request"
handler403 = "api.views.permission_denied"
handler404 = "api.views.not_found"
handler500 = "api.views.server_error"
