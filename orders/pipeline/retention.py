"""Image files (assets, packing slip, branding) are deleted automatically some days after the
order's submission ended.

An order submitted to its labs keeps its files IMAGE_RETENTION_DAYS after that submission; an
order that ended without it (cancelled, or failed in the pipeline) keeps them as long after
its last update. An order still in progress keeps them.
"""

from datetime import timedelta

from django.conf import settings
from django.core.files.storage import default_storage
from django.db.models import Q
from django.utils import timezone

from orders.document import order_changed
from orders.models import Asset, Order, OrderFile, OrderItem, PipelineStep, Stage


def images_purge_expired(*, batch: int = 200) -> int:
    """Delete the stored files of every expired order, ``batch`` orders at a time until none
    is left; return how many orders lost their files."""
    cutoff = timezone.now() - timedelta(days=settings.IMAGE_RETENTION_DAYS)
    ended = Q(pipeline_step__in=[PipelineStep.CANCELLED, PipelineStep.FAILED]) | Q(
        stage=Stage.CANCELLED
    )
    expired = Q(submitted_at__lt=cutoff) | (
        ended & Q(submitted_at__isnull=True, last_updated__lt=cutoff)
    )
    purged = 0
    while True:
        orders = list(
            Order.objects.filter(expired, files_deleted_at__isnull=True)
            .order_by("id")
            .values_list("id", flat=True)[:batch]
        )
        for order_id in orders:
            _files_delete(order_id)
        purged += len(orders)
        if len(orders) < batch:
            return purged


def _files_delete(order_id: int) -> None:
    """Delete the order's files, then clear them from its rows in one transaction with its
    document (whose thumbnails go); the order row is written first, so it is locked before its
    items, as the actions lock them."""
    for asset in Asset.objects.filter(item__order_id=order_id):
        for name in {asset.source_file, asset.print_file, asset.thumbnail} - {""}:
            default_storage.delete(name)
    for item in OrderItem.objects.filter(order_id=order_id).exclude(spine_print_file=""):
        for name in {item.spine_print_file, item.spine_thumbnail} - {""}:
            default_storage.delete(name)
    for order_file in OrderFile.objects.filter(order_id=order_id).exclude(source_file=""):
        default_storage.delete(order_file.source_file)
    with order_changed(order_id):
        Order.objects.filter(id=order_id).update(files_deleted_at=timezone.now())
        Asset.objects.filter(item__order_id=order_id).update(
            source_file="", print_file="", thumbnail=""
        )
        OrderItem.objects.filter(order_id=order_id).update(
            thumbnail="", spine_print_file="", spine_thumbnail=""
        )
        OrderFile.objects.filter(order_id=order_id).update(source_file="")
