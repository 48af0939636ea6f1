"""Staff run an order's failed step again, after correcting what made it fail.

An order stops at the ``Failed`` step when a processing step ends in Error: its downloads
(an asset failed ten times), its allocation (no lab can make it), its print files, or its
submission (a lab refused for good). Staff may correct the URLs of the assets that failed to
download and run that step again (``order_failed_step_retry``); the order then carries on
from there as it would have. Every attempt, refused or not, is written to the audit log.

Staff may also correct an image's URL while its download is still being retried
(``order_asset_urls_correct``, "Retry with a corrected image URL"): its attempts start again
and the download runs now; on an order whose download failed, the same as the retry above.

A lab order its lab cancelled or failed on its side is not retried here: staff resubmit it
(the bulk resubmission tool), which follows the order again.
"""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet

from orders.issues import (
    ASSET_FAILED_TO_DOWNLOAD,
    ASSET_NOT_DOWNLOADED,
    PRINT_READY_FAILED,
    SUBMISSION_FAILED,
)
from orders.models import (
    Asset,
    AssetStatus,
    DetailState,
    ItemStatus,
    Order,
    OrderIssue,
    OrderItem,
    PipelineStep,
    Shipment,
    ShipmentStatus,
    Stage,
)
from orders.pipeline.state_machine import order_download_restart, order_failed_step_reopen
from staff.services import audit_entry_record

AUDIT_OPERATION = "retry failed step"
CORRECT_AUDIT_OPERATION = "retry with a corrected image URL"
# The order's detail that shows a step in Error, and the step that runs again, in step order.
RETRYABLE_STEPS = (
    ("download_assets", PipelineStep.DOWNLOAD),
    ("allocate_production_location", PipelineStep.ALLOCATE),
    ("print_ready_assets_prepared", PipelineStep.PREPARE),
    ("in_production", PipelineStep.SUBMIT),
)


class RetryRefused(Exception):
    """The order has no failed step staff can run again; the message says why."""


@dataclass(frozen=True)
class FailedStep:
    detail: str  # the order field showing Error
    step: str  # the pipeline step that runs again
    # The assets whose URL may be corrected: those that failed to download (Download), or whose
    # original could not be downloaded again after retention deleted its files (Prepare).
    assets: tuple[Asset, ...]


def order_failed_step(*, order: Order) -> FailedStep:
    """The step that stopped the order, or ``RetryRefused`` saying why there is none."""
    if order.stage != Stage.IN_PROGRESS or order.pipeline_step != PipelineStep.FAILED:
        raise RetryRefused(
            f"Order {order.public_id} has no failed step: it is at {order.pipeline_step} "
            f"({order.stage})."
        )
    for detail, step in RETRYABLE_STEPS:
        if getattr(order, detail) != DetailState.ERROR:
            continue
        if step == PipelineStep.SUBMIT and not _unsubmitted(order).exists():
            raise RetryRefused(
                "Every shipment reached a lab; one its lab cancelled or failed is resubmitted "
                "with the bulk resubmission tool instead."
            )
        if step == PipelineStep.PREPARE:  # originals gone after retention deleted the files
            failed = Asset.objects.filter(item__order=order, source_file="", print_file="")
        else:
            failed = Asset.objects.filter(item__order=order, status=AssetStatus.ERROR)
        assets = tuple(failed.order_by("item__position", "position"))
        return FailedStep(detail=detail, step=step, assets=assets)
    raise RetryRefused(f"Order {order.public_id} shows no step in Error.")


def _unsubmitted(order: Order) -> QuerySet[Shipment]:
    return Shipment.objects.filter(
        order=order, submitted_at__isnull=True, status=ShipmentStatus.PROCESSING
    )


def order_failed_step_retry(
    *,
    order: Order,
    user: User | None,
    asset_urls: Mapping[int, str] | None = None,
) -> FailedStep:
    """Correct the failed assets' URLs (``asset_urls``: asset id → URL, only those of
    ``FailedStep.assets``) and run the failed step again; audited either way.

    Raises ``RetryRefused`` when the order has no failed step to run again or a URL is given
    for an asset that did not fail."""
    urls = dict(asset_urls or {})
    with _refusal_audited(user=user, operation=AUDIT_OPERATION, order=order):
        failed = _retry(order_id=order.id, asset_urls=urls)
    corrected = ", ".join(f"{a.public_id} → {urls[a.id]}" for a in failed.assets if a.id in urls)
    audit_entry_record(
        user=user,
        operation=AUDIT_OPERATION,
        success=True,
        target=order.public_id,
        message=f"{failed.step} runs again"
        + (f"; corrected URLs: {corrected}" if corrected else ""),
    )
    return failed


@contextmanager
def _refusal_audited(*, user: User | None, operation: str, order: Order) -> Iterator[None]:
    """A ``RetryRefused`` raised in the block is written to the audit log, then raised on."""
    try:
        yield
    except RetryRefused as refused:
        audit_entry_record(
            user=user, operation=operation, success=False, target=order.public_id,
            message=str(refused),
        )  # fmt: skip
        raise


@transaction.atomic
def _retry(*, order_id: int, asset_urls: dict[int, str]) -> FailedStep:
    order = Order.objects.select_for_update().get(id=order_id)
    return _reopen(order, order_failed_step(order=order), asset_urls)


def _reopen(order: Order, failed: FailedStep, asset_urls: dict[int, str]) -> FailedStep:
    """The failed step run again (``order`` locked by the caller), with ``asset_urls``."""
    failed_ids = {a.id for a in failed.assets}
    unknown = sorted(set(asset_urls) - failed_ids)
    if unknown:
        names = ", ".join(Asset(id=i).public_id for i in unknown)
        raise RetryRefused(f"Only the URLs of assets that failed to download change: {names}.")
    if failed.step == PipelineStep.DOWNLOAD:
        for asset in failed.assets:
            asset.url = asset_urls.get(asset.id, asset.url)
            Asset.objects.filter(id=asset.id).update(
                url=asset.url,
                status=AssetStatus.IN_PROGRESS,
                download_attempts=0,
                next_attempt_at=None,
                last_error="",
            )
        OrderItem.objects.filter(order=order, status=ItemStatus.INVALID).update(
            status=ItemStatus.NOT_YET_DOWNLOADED
        )
        OrderIssue.objects.filter(
            order=order,
            asset_id__in=failed_ids,
            error_code__in=[ASSET_NOT_DOWNLOADED, ASSET_FAILED_TO_DOWNLOAD],
        ).delete()
    elif failed.step == PipelineStep.PREPARE:
        for asset in failed.assets:
            if asset.id in asset_urls:
                asset.url = asset_urls[asset.id]
                Asset.objects.filter(id=asset.id).update(url=asset.url)
        OrderIssue.objects.filter(order=order, error_code=PRINT_READY_FAILED).delete()
    elif failed.step == PipelineStep.SUBMIT:
        unsubmitted = list(_unsubmitted(order))
        Shipment.objects.filter(id__in=[s.id for s in unsubmitted]).update(submit_attempts=0)
        OrderIssue.objects.filter(
            order=order,
            object_id__in=[s.public_id for s in unsubmitted],
            error_code=SUBMISSION_FAILED,
        ).delete()
    order_failed_step_reopen(order=order, step=failed.step, detail=failed.detail)
    return failed


def order_assets_correctable(*, order: Order) -> tuple[Asset, ...]:
    """The assets whose URL staff may correct now, in the items' and assets' order: those not
    yet downloaded of an order at its Download step, or those that failed of an order whose
    download failed (``RetryRefused`` saying why there are none)."""
    if order.stage == Stage.IN_PROGRESS and order.pipeline_step == PipelineStep.DOWNLOAD:
        pending = Asset.objects.filter(item__order=order, status=AssetStatus.IN_PROGRESS)
        assets = tuple(pending.order_by("item__position", "position"))
        if not assets:
            raise RetryRefused(f"Every image of order {order.public_id} is downloaded.")
        return assets
    if order.pipeline_step == PipelineStep.FAILED and order.stage == Stage.IN_PROGRESS:
        failed = order_failed_step(order=order)
        if failed.step == PipelineStep.DOWNLOAD and failed.assets:
            return failed.assets
    raise RetryRefused(
        f"Order {order.public_id} is not downloading its images and its download did not fail: "
        f"it is at {order.pipeline_step} ({order.stage})."
    )


def order_asset_urls_correct(
    *, order: Order, user: User | None, asset_urls: Mapping[int, str]
) -> tuple[Asset, ...]:
    """Replace the URLs of assets still to download (``asset_urls``: asset id → URL, of
    ``order_assets_correctable``, at least one) and run the download now: their attempts start
    again and their issues go. An order still retrying downloads again at once (a download of
    the old URL running now records nothing); one whose download failed is reopened
    (``order_failed_step_reopen``: its items no longer Invalid, ``downloadAssets`` InProgress).
    Audited either way; ``RetryRefused`` when the order has no such asset, no URL is given or
    a URL is given for another asset. Returns the assets corrected."""
    urls = dict(asset_urls)
    with _refusal_audited(user=user, operation=CORRECT_AUDIT_OPERATION, order=order):
        corrected = _correct(order_id=order.id, asset_urls=urls)
    audit_entry_record(
        user=user,
        operation=CORRECT_AUDIT_OPERATION,
        success=True,
        target=order.public_id,
        message="Download runs now; corrected URLs: "
        + ", ".join(f"{a.public_id} → {urls[a.id]}" for a in corrected),
    )
    return corrected


@transaction.atomic
def _correct(*, order_id: int, asset_urls: dict[int, str]) -> tuple[Asset, ...]:
    order = Order.objects.select_for_update().get(id=order_id)
    correctable = order_assets_correctable(order=order)
    if not asset_urls:
        raise RetryRefused("No URL was corrected: give the image's new URL.")
    unknown = sorted(set(asset_urls) - {a.id for a in correctable})
    if unknown:
        names = ", ".join(Asset(id=i).public_id for i in unknown)
        raise RetryRefused(f"Only the URLs of images not downloaded yet change: {names}.")
    corrected = tuple(a for a in correctable if a.id in asset_urls)
    if order.pipeline_step == PipelineStep.FAILED:
        _reopen(order, order_failed_step(order=order), asset_urls)
        return corrected
    for asset in corrected:
        asset.url = asset_urls[asset.id]
        Asset.objects.filter(id=asset.id).update(
            url=asset.url, download_attempts=0, next_attempt_at=None, last_error=""
        )
    OrderIssue.objects.filter(
        order=order, asset_id__in=[a.id for a in corrected], error_code=ASSET_NOT_DOWNLOADED
    ).delete()
    order_download_restart(order=order)
    return corrected
