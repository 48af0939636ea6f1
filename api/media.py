"""Serving files of the local default storage (print files, thumbnails) under ``MEDIA_URL``,
only through signed, unexpired URLs (``common.files``); anything else is the JSON 404.

Deployments on object storage (django-storages) hand out the storage's own URLs instead.
"""

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.static import serve

from api.envelope import error_response
from common.files import file_signature_valid


def media(request: HttpRequest, path: str) -> HttpResponseBase:
    signed = file_signature_valid(
        path,
        expires=request.GET.get("expires", ""),
        signature=request.GET.get("signature", ""),
    )
    if not signed:
        return error_response("EndpointDoesNotExist", 404, {"path": request.path})
    return serve(request, path, document_root=str(settings.MEDIA_ROOT))
