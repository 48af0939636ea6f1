"""Where media (downloads, print files, thumbnails) are kept: ``STORAGES["default"]``.

Read by ``config.settings.base`` from the environment; a function so that tests build the very
same storage for a bucket they start.
"""

from typing import Any

from django.core.exceptions import ImproperlyConfigured

FILE_SYSTEM = {"BACKEND": "django.core.files.storage.FileSystemStorage"}


def s3_media_storage(
    *,
    bucket: str,
    redirect_seconds: int,
    endpoint_url: str = "",
    region: str = "",
    access_key: str = "",
    secret_key: str = "",
    prefix: str = "",
    addressing_style: str = "",
) -> dict[str, Any]:
    """django-storages' S3 backend for ``bucket``: private objects, presigned URLs valid
    ``redirect_seconds``. Without keys, boto3 finds credentials itself (environment, instance
    profile)."""
    if bool(access_key) != bool(secret_key):
        raise ImproperlyConfigured(
            "MEDIA_S3_ACCESS_KEY_ID and MEDIA_S3_SECRET_ACCESS_KEY go together (or neither, "
            "for boto3's own credentials)."
        )
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "endpoint_url": endpoint_url or None,
            "region_name": region or None,
            "access_key": access_key or None,
            "secret_key": secret_key or None,
            "location": prefix,
            "addressing_style": addressing_style or None,
            "signature_version": "s3v4",
            "default_acl": None,  # the bucket's own (private): nothing is public
            "querystring_auth": True,
            "querystring_expire": redirect_seconds,
            "file_overwrite": True,  # names are chosen by the service, one file per name
        },
    }
