"""Step 2: download every asset, the packing slip and the branding files through the guarded
client, in parallel when there are several (one runs in the task's own thread).

Each asset keeps its own attempt count and due time. A failed attempt leaves one
``order.items.assets.NotDownloaded`` issue per asset (replaced, not appended); the last turns
it into ``order.items.assets.FailedToDownloaded``, the item ``Invalid`` and the step ``Error``.
Which attempt is the last depends on the answer (decisions.md, "Images that cannot be
fetched"): timeouts, connection errors, 429 and 5xx are tried ``ASSET_DOWNLOAD_ATTEMPTS``
(10) times with a doubling backoff; an answer that will not change on retry (404, 410, 401,
403, an md5 mismatch) 3 times, after the waits of ``ASSET_PERMANENT_RETRY_SECONDS`` (60 s,
then 120 s), within 5 minutes; a file that arrived and is not an image or PDF, one over the size
limit or a URL refused fail at once.
The order's own files (``OrderFile``: packing slip, branding) go the same way with the
``order.packingSlip.*`` and ``order.branding.*`` codes on the order; they must be a JPEG, PNG,
TIFF or PDF file, and their status is shown on ``packingSlip.status`` and in ``branding``.
"""

import logging
import tempfile
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from common.files import file_store
from common.http import (
    DownloadedFile,
    OutboundError,
    OutboundRefused,
    TransferTooSlow,
    borrowed_session,
    download_to_file,
)
from labs.catalogue import catalogue_snapshot
from orders.artwork.files import (
    AssetFileError,
    AssetFileInfo,
    Md5Mismatch,
    check_md5,
    inspect_asset_file,
    sniff_format,
)
from orders.document import order_document_write
from orders.issues import (
    ASSET_FAILED_TO_DOWNLOAD,
    ASSET_NOT_DOWNLOADED,
    BRANDING_FAILED_TO_DOWNLOAD,
    BRANDING_NOT_DOWNLOADED,
    PACKING_SLIP_FAILED_TO_DOWNLOAD,
    PACKING_SLIP_NOT_DOWNLOADED,
)
from orders.models import (
    Asset,
    AssetStatus,
    DetailState,
    ItemStatus,
    Order,
    OrderFile,
    OrderFileKind,
    OrderIssue,
    OrderItem,
)
from orders.pipeline.claims import order_claimed_transaction
from orders.pipeline.lanes import (
    asset_host,
    download_pace,
    slow_download_place,
    slow_host_known,
    slow_host_remember,
    slow_lane_wait,
)
from orders.selectors import order_items_get

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fetched:
    asset_id: int
    downloaded: DownloadedFile | None = None
    info: AssetFileInfo | None = None
    error: str = ""
    # Fails at this attempt: trying again cannot help (a refused URL, a file too large or not
    # an image or PDF).
    permanent: bool = False
    # An answer that will not change on retry but for an upload landing meanwhile (a 4xx status
    # but 408, 425 and 429; an md5 mismatch): asked again soon, a few times only.
    settled: bool = False
    # Not attempted, or stopped as too slow: tried again after this, no attempt counted.
    waits: timedelta | None = None


def retry_delay(attempt: int) -> timedelta:
    """Backoff after the ``attempt``-th failure."""
    seconds = settings.ASSET_RETRY_BASE_SECONDS * 2 ** (attempt - 1)
    return timedelta(seconds=min(seconds, settings.ASSET_RETRY_MAX_SECONDS))


def settled_retry_delay(attempt: int) -> timedelta:
    """The wait after the ``attempt``-th failure that was an answer that will not change
    (``Fetched.settled``), for the attempts before the last (``attempts_allowed``)."""
    waits = settings.ASSET_PERMANENT_RETRY_SECONDS
    return timedelta(seconds=waits[min(attempt, len(waits)) - 1])


def attempts_allowed(fetched: Fetched) -> int:
    """How many attempts an asset or file whose last answer was ``fetched`` is given."""
    if fetched.settled:
        return len(settings.ASSET_PERMANENT_RETRY_SECONDS) + 1
    return int(settings.ASSET_DOWNLOAD_ATTEMPTS)


def _fetch(asset: Asset, priced_by_page: bool, folder: Path, *, lanes: bool = True) -> Fetched:
    """Runs in a fetching thread (``_fetching_pool``): network and file checks only, no
    database access. ``lanes``: a slow download goes to the slow lane (``_fetch_checked``)."""

    def check(downloaded: DownloadedFile) -> AssetFileInfo:
        if asset.md5_hash:
            assert downloaded.md5 is not None  # hashed because the order gives one
            check_md5(expected=asset.md5_hash, actual=downloaded.md5)
        return inspect_asset_file(
            path=downloaded.path,
            priced_by_page=priced_by_page,
            declared_page_count=asset.page_count,
        )

    return _fetch_checked(
        asset.id,
        asset.url,
        folder / f"{asset.id}.part",
        check,
        asset.public_id,
        md5=bool(asset.md5_hash),  # hashed only to compare with the merchant's hash
        lanes=lanes,
    )


def _fetch_checked(
    row_id: int,
    url: str,
    destination: Path,
    check: Callable[[DownloadedFile], AssetFileInfo],
    label: str,
    *,
    md5: bool = False,
    lanes: bool = True,
) -> Fetched:
    """Download ``url`` through the guarded client (a kept session: keep-alive between
    downloads from one host) and ``check`` the file: one attempt.

    ``lanes`` (the download step): a download from a host remembered as slow runs only with a
    place in the slow lane, or is not started and waits (``orders.pipeline.lanes``); any other
    keeps its pace, and one that falls behind stops, its host remembered as slow, and is tried
    again at once, in the slow lane. Neither counts as an attempt. Without a cache to keep
    the lane in, downloads run unpaced, as they did before the lane."""
    host = asset_host(url)
    known = slow_host_known(host) if lanes else False
    if known:
        with slow_download_place(host) as taken:
            if not taken:
                return Fetched(
                    row_id,
                    error=f"The host {host} sends slowly and every place for slow downloads is "
                    "taken: the download waits for one.",
                    waits=slow_lane_wait(),
                )
            return _fetch_once(row_id, url, destination, check, label, md5=md5, paced=False)
    # Without a cache (``known`` None) there is no lane to go to: unpaced.
    fetched = _fetch_once(
        row_id, url, destination, check, label, md5=md5, paced=known is False and lanes
    )
    if fetched.waits is not None:
        slow_host_remember(host)
    return fetched


def _fetch_once(
    row_id: int,
    url: str,
    destination: Path,
    check: Callable[[DownloadedFile], AssetFileInfo],
    label: str,
    *,
    md5: bool,
    paced: bool,
) -> Fetched:
    """One download of ``url``, checked; ``paced``: stopped if it falls behind the pace."""
    try:
        with borrowed_session() as session:
            downloaded = download_to_file(
                url,
                destination,
                max_bytes=settings.ASSET_MAX_BYTES,
                deadline_seconds=settings.ASSET_DOWNLOAD_DEADLINE_SECONDS,
                session=session,
                md5=md5,
                pace=download_pace() if paced else None,
            )
        return Fetched(row_id, downloaded, check(downloaded))
    except TransferTooSlow as exc:
        return Fetched(row_id, error=str(exc), waits=timedelta(0))
    except OutboundRefused as exc:
        return Fetched(row_id, error=str(exc), permanent=True)
    except OutboundError as exc:
        if exc.retryable:  # a timeout, a broken connection, 429, 5xx: the backoff
            return Fetched(row_id, error=str(exc))
        if exc.status_code:
            # 404, 410, 401, 403...: the same answer again, unless the merchant's upload lands
            # in the next minutes (orders are often placed just before it does).
            return Fetched(row_id, error=str(exc), settled=True)
        # Over the size cap or a redirect loop: the same request fails the same way.
        return Fetched(row_id, error=str(exc), permanent=True)
    except Md5Mismatch as exc:
        # The file may still be replaced with the right one (an upload in progress).
        return Fetched(row_id, error=str(exc), settled=True)
    except OSError as exc:  # our own disk: nothing the answer said
        return Fetched(row_id, error=str(exc))
    except AssetFileError as exc:
        # Empty, not an image or PDF, damaged, too many pages: the same bytes fail again, and
        # a file that did arrive is no upload in progress, so one attempt is the answer.
        return Fetched(row_id, error=str(exc), permanent=True)
    except Exception as exc:
        # Counted as a failed attempt: an unexpected error must not stall the order forever.
        logger.exception("%s: unexpected error while downloading", label)
        return Fetched(row_id, error=f"The file could not be checked ({type(exc).__name__}).")


def _order_file_check(downloaded: DownloadedFile) -> AssetFileInfo:
    """A packing slip or branding file: an image or a PDF, as a lab prints either."""
    with downloaded.path.open("rb") as source:
        head = source.read(1024)
    found = sniff_format(head)
    if found is None:
        what = "empty" if not head else "not a JPEG, PNG, TIFF or PDF file"
        raise AssetFileError(f"The downloaded file is {what}.")
    return AssetFileInfo(format=found, media_type=found.media_type, page_count=None)


def _fetch_order_file(order_file: OrderFile, folder: Path) -> Fetched:
    return _fetch_checked(
        order_file.id,
        order_file.url,
        folder / f"file-{order_file.id}.part",
        _order_file_check,
        f"Order {order_file.order_id} {order_file.label}",
    )


def original_fetch(asset: Asset, priced_by_page: bool, folder: Path) -> Fetched:
    """One attempt at the asset's URL, checked as its downloads are (a late submission's
    download of an original whose files were deleted: ``steps.prepare``; not on the downloads
    queue, so outside its slow lane)."""
    return _fetch(asset, priced_by_page, folder, lanes=False)


def original_store(asset: Asset, fetched: Fetched) -> None:
    """Keep what ``original_fetch`` downloaded as the asset's source (the instance only)."""
    _store(asset, fetched)


def _store(asset: Asset, fetched: Fetched) -> None:
    assert fetched.downloaded is not None and fetched.info is not None
    name = f"orders/{asset.item.order_id}/assets/{asset.id}/source.{fetched.info.format.value}"
    asset.source_file = file_store(fetched.downloaded.path, name)
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


def _files_shown_in(order: Order, statuses: tuple[str, ...]) -> bool:
    """Whether the order row shows a packing slip or branding file in one of ``statuses``:
    each file's status is also on the order row, so an order with none (most have no packing
    slip or branding at all) needs no query of its files."""
    return order.packing_slip_status in statuses or any(
        shown.get("status") in statuses for shown in order.branding.values()
    )


def _pending_files(order: Order, now: datetime) -> list[OrderFile]:
    if not _files_shown_in(order, (AssetStatus.IN_PROGRESS,)):
        return []
    return list(
        OrderFile.objects.filter(order=order, status=AssetStatus.IN_PROGRESS).exclude(
            next_attempt_at__gt=now
        )
    )


def _assets(order: Order) -> list[Asset]:
    """Every asset of the order with its item, in the items' and then the assets' order: the
    ones due are attempted, and the others count for their item's status and the step's state
    without being read again."""
    items, assets = order_items_get(order=order)
    every_asset = []
    for item in items:
        for asset in assets[item.id]:
            asset.item = item
            every_asset.append(asset)
    return every_asset


def _due(row: Asset, now: datetime) -> bool:
    return row.status == AssetStatus.IN_PROGRESS and (
        row.next_attempt_at is None or row.next_attempt_at <= now
    )


def order_downloads_due_now(*, order: Order, now: datetime) -> None:
    """Every asset and file of the order still to download due at ``now``: a wait for its
    backoff or for the slow lane is over (staff run the step now), its attempts kept."""
    Asset.objects.filter(item__order=order, status=AssetStatus.IN_PROGRESS).update(
        next_attempt_at=now
    )
    if _files_shown_in(order, (AssetStatus.IN_PROGRESS,)):
        OrderFile.objects.filter(order=order, status=AssetStatus.IN_PROGRESS).update(
            next_attempt_at=now
        )


LastRecord = Callable[[], tuple[str, datetime | None]]


def order_assets_download(*, order: Order) -> LastRecord:
    """Attempt every due asset and order file once, and record every attempt but the last
    (each under our claim, in a transaction of its own with the order's document, as it
    ends); return the last record.

    The last record, called by the state machine inside the transaction that moves the order
    on (``order_claimed_transaction``), writes the last attempt (nothing when none was due) and
    gives the order's detail state and when to look again: Complete when every asset and file
    is downloaded, Error when one has failed for good, else InProgress with the earliest retry
    time. So the last attempt and the move commit together, and fail together (the attempt is
    then made again when the step is retried).
    """
    now = timezone.now()
    every_asset = _assets(order)
    assets = [asset for asset in every_asset if _due(asset, now)]
    by_item: dict[int, list[Asset]] = {}
    for asset in every_asset:
        by_item.setdefault(asset.item_id, []).append(asset)
    files = _pending_files(order, now)
    # This process's catalogue snapshot: one version query, not four per product.
    products = catalogue_snapshot().products_by_sku([a.item.sku for a in assets]) if assets else {}
    last: Callable[[datetime], None] | None = None
    # Kept until the last record has stored its file (removed when collected, if never called).
    folder = tempfile.TemporaryDirectory(prefix="assets-")
    try:
        with _fetching_pool(len(assets) + len(files)) as pool:
            attempts: list[tuple[Future[Fetched], Callable[[Fetched, datetime], None]]] = []
            for asset in assets:
                product = products.get(asset.item.sku.strip().upper())
                by_page = bool(product and product.priced_by_page and asset.print_area == "default")
                attempts.append(
                    (
                        pool.submit(_fetch, asset, by_page, Path(folder.name)),
                        partial(_record_attempt, order, asset, by_item[asset.item_id]),
                    )
                )
            for order_file in files:
                attempts.append(
                    (
                        pool.submit(_fetch_order_file, order_file, Path(folder.name)),
                        partial(_record_file_attempt, order, order_file),
                    )
                )
            for number, (future, record) in enumerate(attempts, 1):
                if number == len(attempts):
                    last = partial(record, future.result())
                else:
                    with order_claimed_transaction(order=order):
                        record(future.result(), timezone.now())
                        order_document_write(order.id)
    except BaseException:
        folder.cleanup()
        raise

    def last_record() -> tuple[str, datetime | None]:
        try:
            if last is not None:
                last(timezone.now())
            return _state(order, every_asset)
        finally:
            folder.cleanup()

    return last_record


class _InThisThread(Executor):
    """Runs what is submitted at once, in the caller's thread: an order with one file to fetch
    (most orders) needs no thread started and joined for it."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def _fetching_pool(fetches: int) -> Executor:
    """Threads for ``fetches`` downloads at once (``ASSET_DOWNLOAD_PARALLELISM`` at most), or
    the caller's own thread for one."""
    if fetches <= 1:
        return _InThisThread()
    return ThreadPoolExecutor(max_workers=max(1, min(fetches, settings.ASSET_DOWNLOAD_PARALLELISM)))


def _attempt_count(row: Asset | OrderFile, fetched: Fetched, now: datetime) -> bool | None:
    """Count one download attempt of an asset or an order file: None when it succeeded (the
    row is Complete), True when it failed for good (Error), False when it is tried again
    after the backoff (or, for an answer that will not change, after the short wait of
    ``settled_retry_delay``). A download that waits for the slow lane (``Fetched.waits``) is no
    attempt: it is tried again after its wait, its count and status unchanged."""
    if fetched.waits is not None:
        row.last_error = fetched.error
        row.next_attempt_at = now + fetched.waits
        return False
    row.download_attempts += 1
    if fetched.error == "":
        row.status = AssetStatus.COMPLETE
        row.next_attempt_at = None
        row.last_error = ""
        return None
    row.last_error = fetched.error
    if fetched.permanent or row.download_attempts >= attempts_allowed(fetched):
        row.status = AssetStatus.ERROR
        row.next_attempt_at = None
        return True
    delay = settled_retry_delay if fetched.settled else retry_delay
    row.next_attempt_at = now + delay(row.download_attempts)
    return False


def _record_file_attempt(
    order: Order, order_file: OrderFile, fetched: Fetched, now: datetime
) -> None:
    """One attempt at the packing slip or a branding file, as ``_record_attempt`` for assets;
    the status the order shows follows."""
    packing_slip = order_file.kind == OrderFileKind.PACKING_SLIP
    failed = _attempt_count(order_file, fetched, now)
    attempts = order_file.download_attempts
    if failed is None:
        assert fetched.downloaded is not None and fetched.info is not None
        name = f"orders/{order.id}/files/{order_file.id}/source.{fetched.info.format.value}"
        order_file.source_file = file_store(fetched.downloaded.path, name)
        order_file.source_size = fetched.downloaded.size
        if attempts > 1:  # only a failed attempt leaves an issue on the file
            OrderIssue.objects.filter(order=order, order_file=order_file).delete()
    elif fetched.waits is None:  # a wait for the slow lane is no attempt: no issue of its own
        if failed:
            code = PACKING_SLIP_FAILED_TO_DOWNLOAD if packing_slip else BRANDING_FAILED_TO_DOWNLOAD
            description = (
                f"The {order_file.label} ({order_file.url}) could not be downloaded after "
                f"{attempts} attempt(s): {fetched.error}"
            )
        else:
            code = PACKING_SLIP_NOT_DOWNLOADED if packing_slip else BRANDING_NOT_DOWNLOADED
            description = (
                f"The {order_file.label} ({order_file.url}) is not downloaded yet "
                f"(attempt {attempts} of {attempts_allowed(fetched)}): {fetched.error}"
            )
        OrderIssue.objects.filter(order=order, order_file=order_file).exclude(
            error_code=code
        ).delete()
        OrderIssue.objects.update_or_create(
            order=order,
            order_file=order_file,
            error_code=code,
            defaults={"object_id": order.public_id, "description": description},
        )
    order_file.save()
    _order_file_status_show(order, order_file)


def _order_file_status_show(order: Order, order_file: OrderFile) -> None:
    """Write the file's status where ``GET`` shows it, under the order's row lock."""
    locked = (
        Order.objects.select_for_update()
        .only("id", "packing_slip_status", "branding")
        .get(id=order.id)
    )
    if order_file.kind == OrderFileKind.PACKING_SLIP:
        locked.packing_slip_status = order_file.status
    else:
        locked.branding = {
            **locked.branding,
            order_file.name: {"url": order_file.url, "status": order_file.status},
        }
    Order.objects.filter(id=order.id).update(
        packing_slip_status=locked.packing_slip_status, branding=locked.branding
    )
    order.packing_slip_status, order.branding = locked.packing_slip_status, locked.branding


def _record_attempt(
    order: Order, asset: Asset, item_assets: list[Asset], fetched: Fetched, now: datetime
) -> None:
    """One attempt at ``asset`` (one of ``item_assets``, its item's), and its item's status."""
    failed = _attempt_count(asset, fetched, now)
    attempts = asset.download_attempts
    if failed is None:
        _store(asset, fetched)
        if attempts > 1:  # only a failed attempt leaves an issue on the asset
            OrderIssue.objects.filter(order=order, asset=asset).delete()
    elif failed:
        _issue(
            order, asset, ASSET_FAILED_TO_DOWNLOAD,
            f"Asset {asset.public_id} ({asset.url}) could not be downloaded after "
            f"{attempts} attempt(s): {fetched.error}",
        )  # fmt: skip
    elif fetched.waits is None:  # a wait for the slow lane is no attempt: no issue of its own
        _issue(
            order, asset, ASSET_NOT_DOWNLOADED,
            f"Asset {asset.public_id} ({asset.url}) is not downloaded yet "
            f"(attempt {attempts} of {attempts_allowed(fetched)}): {fetched.error}",
        )  # fmt: skip
    attempt = {name: getattr(asset, name) for name in _ATTEMPT_FIELDS}
    # A row gone is an error, as ``save(update_fields=...)`` made it.
    if not Asset.objects.filter(id=asset.id).update(**attempt):
        raise DatabaseError(f"Asset {asset.public_id}: its row is gone.")
    _item_status(asset.item, item_assets)


# What an attempt changes in an asset's row.
_ATTEMPT_FIELDS = (
    "download_attempts", "status", "next_attempt_at", "last_error", "source_file",
    "source_size", "page_count",
)  # fmt: skip


def _item_status(item: OrderItem, assets: list[Asset]) -> None:
    """The item's status from its assets (all of them, as this claimed step left them)."""
    statuses = {asset.status for asset in assets}
    if AssetStatus.ERROR in statuses:
        status = ItemStatus.INVALID
    elif statuses == {AssetStatus.COMPLETE}:
        status = ItemStatus.OK
    else:
        status = ItemStatus.NOT_YET_DOWNLOADED
    if item.status != status:
        OrderItem.objects.filter(id=item.id).update(status=status)
        item.status = status  # the instance its assets share (``_assets``)


_UNFINISHED = (AssetStatus.ERROR, AssetStatus.IN_PROGRESS)


def _state(order: Order, assets: list[Asset]) -> tuple[str, datetime | None]:
    """From the order's assets as this step left them and its files not yet Complete (read
    only when the order row shows one: most orders have none)."""
    rows = [(a.status, a.next_attempt_at) for a in assets if a.status in _UNFINISHED]
    if _files_shown_in(order, _UNFINISHED):
        rows.extend(
            OrderFile.objects.filter(order=order, status__in=_UNFINISHED).values_list(
                "status", "next_attempt_at"
            )
        )
    if any(status == AssetStatus.ERROR for status, _ in rows):
        return DetailState.ERROR, None
    pending = [at for status, at in rows if status == AssetStatus.IN_PROGRESS]
    if not pending:
        return DetailState.COMPLETE, None
    next_at = min(at or timezone.now() for at in pending)
    return DetailState.IN_PROGRESS, next_at
