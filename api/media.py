"""Stored files (print files, thumbnails) under ``MEDIA_URL``, only through signed, unexpired
URLs (``common.files``); anything else is the JSON 404.

On the local storage the file is sent from the disk. On an S3 bucket the answer is a redirect
to a presigned URL of the file valid ``MEDIA_S3_REDIRECT_SECONDS``: the bytes go from the bucket
to the client, never through this process.
"""

from django.core.files.storage import default_storage
from django.core.files.storage.filesystem import FileSystemStorage
from django.http import HttpRequest, HttpResponseRedirect
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
    if isinstance(default_storage, FileSystemStorage):
        return serve(request, path, document_root=str(default_storage.location))
    return HttpResponseRedirect(default_storage.url(path))
