"""Step 2: download every asset, in parallel, through the guarded client.

Each asset keeps its own attempt count and due time. A failed attempt leaves one
``order.items.assets.NotDownloaded`` issue per asset (replaced, not appended); the tenth turns
it into ``order.items.assets.FailedToDownloaded``, the item ``Invalid`` and the step ``Error``.
"""

import logging
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from common.http import DownloadedFile, OutboundError, OutboundRefused, download_to_file
from orders.artwork.files import (
    AssetFileError,
    AssetFileInfo,
    Md5Mismatch,
    check_md5,
    inspect_asset_file,
)
from orders.issues import ASSET_FAILED_TO_DOWNLOAD, ASSET_NOT_DOWNLOADED
from orders.models import Asset, AssetStatus, DetailState, ItemStatus, Order, OrderIssue, OrderItem
from orders.pipeline.claims import order_claim_renew
from products.selectors import product_get

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fetched:
    asset_id: int
    downloaded: DownloadedFile | None = None
    info: AssetFileInfo | None = None
    error: str = ""
    permanent: bool = False


def retry_delay(attempt: int) -> timedelta:
    """Backoff after the ``attempt``-th failure."""
    seconds = settings.ASSET_RETRY_BASE_SECONDS * 2 ** (attempt - 1)
    return timedelta(seconds=min(seconds, settings.ASSET_RETRY_MAX_SECONDS))


def _fetch(asset: Asset, priced_by_page: bool, folder: Path) -> Fetched:
    """Runs in a worker thread: network and file checks only, no database access."""
    destination = folder / f"{asset.id}.part"
    try:
        downloaded = download_to_file(
            asset.url,
            destination,
            max_bytes=settings.ASSET_MAX_BYTES,
            deadline_seconds=settings.ASSET_DOWNLOAD_DEADLINE_SECONDS,
        )
        check_md5(expected=asset.md5_hash or None, actual=downloaded.md5)
        info = inspect_asset_file(
            path=downloaded.path,
            priced_by_page=priced_by_page,
            declared_page_count=asset.page_count,
        )
        return Fetched(asset.id, downloaded, info)
    except OutboundRefused as exc:
        return Fetched(asset.id, error=str(exc), permanent=True)
    except OutboundError as exc:
        # Over the size cap or a redirect loop: the same request fails the same way. Statuses
        # are retried, 4xx included: merchants often place orders before their upload lands.
        return Fetched(
            asset.id, error=str(exc), permanent=not exc.retryable and not exc.status_code
        )
    except (Md5Mismatch, OSError) as exc:
        # The file may still be replaced with the right one (an upload in progress).
        return Fetched(asset.id, error=str(exc))
    except AssetFileError as exc:
        # Empty, not an image or PDF, damaged, too many pages: the same bytes fail again, and
        # a file that did arrive is no upload in progress, so one attempt is the answer.
        return Fetched(asset.id, error=str(exc), permanent=True)
    except Exception as exc:
        # Counted as a failed attempt: an unexpected error must not stall the order forever.
        logger.exception("Asset %s: unexpected error while downloading", asset.public_id)
        return Fetched(asset.id, error=f"The file could not be checked ({type(exc).__name__}).")


def _store(asset: Asset, fetched: Fetched) -> None:
    assert fetched.downloaded is not None and fetched.info is not None
    name = f"orders/{asset.item.order_id}/assets/{asset.id}/source.{fetched.info.format.value}"
    if default_storage.exists(name):
        default_storage.delete(name)
    with fetched.downloaded.path.open("rb") as source:
        asset.source_file = default_storage.save(name, File(source))
    asset.source_size = fetched.downloaded.size
    if fetched.info.page_count is not None:
        asset.page_count = fetched.info.page_count


def _issue(order: Order, asset: Asset, code: str, description: str) -> None:
    OrderIssue.objects.filter(order=order, asset=asset).exclude(error_code=code).delete()
    OrderIssue.objects.update_or_create(
        order=order,
        asset=asset,
        error_code=code,
        defaults={"object_id": asset.item.public_id, "description": description},
    )


def _pending(order: Order, now: datetime) -> list[Asset]:
    return list(
        Asset.objects.select_related("item")
        .filter(item__order=order, status=AssetStatus.IN_PROGRESS)
        .exclude(next_attempt_at__gt=now)
        .order_by("item__position", "position")
    )


def order_assets_download(*, order: Order) -> tuple[str, datetime | None]:
    """Attempt every due asset once; return the order's detail state and when to look again.

    The detail state is Complete when every asset is downloaded, Error when one has failed
    for good, else InProgress with the earliest retry time.
    """
    now = timezone.now()
    assets = _pending(order, now)
    products = {a.item.sku: product_get(sku=a.item.sku) for a in assets}
    with (
        tempfile.TemporaryDirectory(prefix="assets-") as folder,
        ThreadPoolExecutor(max_workers=max(1, settings.ASSET_DOWNLOAD_PARALLELISM)) as pool,
    ):
        futures = {}
        for asset in assets:
            product = products[asset.item.sku]
            by_page = bool(product and product.priced_by_page and asset.print_area == "default")
            futures[asset.id] = pool.submit(_fetch, asset, by_page, Path(folder))
        for asset in assets:
            _record(order, asset, futures[asset.id].result())
    return _state(order)


def _record(order: Order, asset: Asset, fetched: Fetched) -> None:
    now = timezone.now()
    claim = order.claimed_until
    try:
        with transaction.atomic():
            # A worker that lost the order (its claim expired) must not count the attempt twice.
            order_claim_renew(order=order)
            _record_attempt(order, asset, fetched, now)
    except BaseException:
        order.claimed_until = claim  # the renewal rolled back with the rest
        raise


def _record_attempt(order: Order, asset: Asset, fetched: Fetched, now: datetime) -> None:
    asset.download_attempts += 1
    if fetched.error == "":
        _store(asset, fetched)
        asset.status = AssetStatus.COMPLETE
        asset.next_attempt_at = None
        asset.last_error = ""
        OrderIssue.objects.filter(order=order, asset=asset).delete()
    else:
        attempts = asset.download_attempts
        final = fetched.permanent or attempts >= settings.ASSET_DOWNLOAD_ATTEMPTS
        asset.last_error = fetched.error
        if final:
            asset.status = AssetStatus.ERROR
            asset.next_attempt_at = None
            _issue(
                order, asset, ASSET_FAILED_TO_DOWNLOAD,
                f"Asset {asset.public_id} ({asset.url}) could not be downloaded after "
                f"{attempts} attempt(s): {fetched.error}",
            )  # fmt: skip
        else:
            asset.next_attempt_at = now + retry_delay(attempts)
            _issue(
                order, asset, ASSET_NOT_DOWNLOADED,
                f"Asset {asset.public_id} ({asset.url}) is not downloaded yet "
                f"(attempt {attempts} of {settings.ASSET_DOWNLOAD_ATTEMPTS}): {fetched.error}",
            )  # fmt: skip
    asset.save()
    _item_status(asset.item)


def _item_status(item: OrderItem) -> None:
    statuses = set(Asset.objects.filter(item=item).values_list("status", flat=True))
    if AssetStatus.ERROR in statuses:
        status = ItemStatus.INVALID
    elif statuses == {AssetStatus.COMPLETE}:
        status = ItemStatus.OK
    else:
        status = ItemStatus.NOT_YET_DOWNLOADED
    OrderItem.objects.filter(id=item.id).exclude(status=status).update(status=status)


def _state(order: Order) -> tuple[str, datetime | None]:
    assets = Asset.objects.filter(item__order=order)
    if assets.filter(status=AssetStatus.ERROR).exists():
        return DetailState.ERROR, None
    pending = assets.filter(status=AssetStatus.IN_PROGRESS)
    if not pending.exists():
        return DetailState.COMPLETE, None
    next_at = min(a.next_attempt_at or timezone.now() for a in pending.only("next_attempt_at"))
    return DetailState.IN_PROGRESS, next_at
