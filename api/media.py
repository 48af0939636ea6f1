"""Serving files of the local default storage (print files, thumbnails) under ``MEDIA_URL``.

Deployments on object storage (django-storages) hand out the storage's own URLs instead.
"""

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.static import serve


def media(request: HttpRequest, path: str) -> HttpResponseBase:
    return serve(request, path, document_root=str(settings.MEDIA_ROOT))
