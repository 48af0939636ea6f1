"""Image files are deleted automatically some days after the order was submitted."""

from datetime import timedelta

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils import timezone

from orders.models import Asset, Order, OrderItem


def images_purge_expired(*, batch: int = 200) -> int:
    """Delete the stored files of orders submitted more than IMAGE_RETENTION_DAYS ago."""
    cutoff = timezone.now() - timedelta(days=settings.IMAGE_RETENTION_DAYS)
    orders = list(
        Order.objects.filter(submitted_at__lt=cutoff, files_deleted_at__isnull=True).values_list(
            "id", flat=True
        )[:batch]
    )
    for order_id in orders:
        for asset in Asset.objects.filter(item__order_id=order_id):
            for name in {asset.source_file, asset.print_file, asset.thumbnail} - {""}:
                default_storage.delete(name)
        Asset.objects.filter(item__order_id=order_id).update(
            source_file="", print_file="", thumbnail=""
        )
        OrderItem.objects.filter(order_id=order_id).update(thumbnail="")
        Order.objects.filter(id=order_id).update(files_deleted_at=timezone.now())
    return len(orders)
