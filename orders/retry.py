"""Staff run an order's failed step again, after correcting what made it fail.

An order stops at the ``Failed`` step when a processing step ends in Error: its downloads
(an asset failed ten times), its allocation (no lab can make it), its print files, or its
submission (a lab refused for good). Staff may correct the URLs of the assets that failed to
download and run that step again (``order_failed_step_retry``); the order then carries on
from there as it would have. Every attempt, refused or not, is written to the audit log.

A lab order its lab cancelled or failed on its side is not retried here: staff resubmit it
(the bulk resubmission tool), which follows the order again.
"""

from collections.abc import Mapping
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
from orders.pipeline.state_machine import order_failed_step_reopen
from staff.services import audit_entry_record

AUDIT_OPERATION = "retry failed step"
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
    try:
        failed = _retry(order_id=order.id, asset_urls=urls)
    except RetryRefused as refused:
        audit_entry_record(
            user=user,
            operation=AUDIT_OPERATION,
            success=False,
            target=order.public_id,
            message=str(refused),
        )
        raise
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


@transaction.atomic
def _retry(*, order_id: int, asset_urls: dict[int, str]) -> FailedStep:
    order = Order.objects.select_for_update().get(id=order_id)
    failed = order_failed_step(order=order)
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
