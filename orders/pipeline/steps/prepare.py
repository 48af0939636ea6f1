"""Step 4: print-ready files and thumbnails for every image asset, and the spines to draw.

The target pixel size is the recommended size of the asset's print area on the item's product
variant. Print-ready PDFs (products priced by page) are used as they are. A photobook with a
``spine`` object and no ``spine`` asset gets its spine drawn (``orders.artwork.spine``).
"""

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import DatabaseError

from labs.catalogue import CatalogueSnapshot, catalogue_snapshot
from orders.artwork.printready import PrintReadyError, render_print_ready
from orders.artwork.spine import SPINE_AREA, area_pixels, render_spine, spine_size
from orders.document import order_changed
from orders.issues import PRINT_READY_FAILED
from orders.models import Asset, Order, OrderIssue, OrderItem
from orders.pipeline.claims import order_claim_renew
from orders.pipeline.steps.download import original_fetch, original_store
from orders.selectors import order_items_get
from products.models import PRINT_DPI
from products.validation import DEFAULT_PRINT_AREA, item_page_count


@contextlib.contextmanager
def local_copy(name: str) -> Iterator[Path]:
    """A local path for a stored file (the file itself on local storage)."""
    try:
        path = Path(default_storage.path(name))
    except NotImplementedError:
        pass
    else:
        yield path
        return
    with tempfile.NamedTemporaryFile(suffix=Path(name).suffix) as temporary:
        with default_storage.open(name, "rb") as source:
            shutil.copyfileobj(source, temporary)
        temporary.flush()
        yield Path(temporary.name)


def target_size(
    catalogue: CatalogueSnapshot, item: OrderItem, print_area: str
) -> tuple[int, int] | None:
    """The print area's recommended pixels on the item's variant, from the catalogue
    snapshot."""
    product = catalogue.products_by_sku([item.sku]).get(item.sku.strip().upper())
    if product is None:
        return None
    return area_pixels(product, item.attributes, print_area)


def order_print_files_restore(*, order: Order, claimed: bool = True) -> bool:
    """Whether the order's print files are there to send to a lab. Once retention deleted
    them (``Order.files_deleted_at``, ``orders.pipeline.retention``: a late submission or
    resubmission), what is missing is downloaded and rendered again first, and the order no
    longer counts as without files; False (with a ``PrintReadyFailed`` issue) when they cannot
    be made again. ``claimed`` as for ``order_assets_prepare``."""
    if order.files_deleted_at is None:
        return True
    if not _print_files_ready(order) and not order_assets_prepare(order=order, claimed=claimed):
        return False
    Order.objects.filter(id=order.id).update(files_deleted_at=None)
    order.files_deleted_at = None
    return True


def _print_files_ready(order: Order) -> bool:
    """Whether every asset has its print file and every spine to draw is drawn."""
    items, assets = order_items_get(order=order)
    return all(a.print_file for i in items for a in assets[i.id]) and not any(
        _spine_wanted(item, assets[item.id]) for item in items
    )


def _spine_wanted(item: OrderItem, assets: list[Asset]) -> bool:
    given = any(a.print_area == SPINE_AREA for a in assets)  # an asset wins
    return bool(item.spine) and not item.spine_print_file and not given


def order_assets_prepare(*, order: Order, claimed: bool = True) -> bool:
    """Render what is not rendered yet; False (with an issue) when an image cannot be used.

    An asset whose files retention deleted (a late submission) is downloaded again from its
    URL first, one attempt: the merchant's original is never sent as a print file. When it
    cannot be had, the issue says so. ``claimed``: run by the pipeline under the order's claim
    (renewed between renderings); a staff resubmission runs it without one."""
    ok = True
    items, assets = order_items_get(order=order)
    catalogue: CatalogueSnapshot | None = None  # read once, for the first image to render
    for item, asset in [(i, a) for i in items for a in assets[i.id] if not a.print_file]:
        # A long rendering after another: the claim renewed first (not the claim just taken).
        if claimed:
            order_claim_renew(order=order, unless_fresh=True)
        if catalogue is None:
            catalogue = catalogue_snapshot()
        if not asset.source_file and not _original_fetch(order, item, asset, catalogue):
            ok = False
            continue
        if asset.source_file.endswith(".pdf"):
            asset.print_file = asset.source_file
            _asset_record(asset, print_file=asset.print_file)
            continue
        size = target_size(catalogue, item, asset.print_area)
        try:
            with local_copy(asset.source_file) as source:
                width, height = size or _own_size(source)
                result = render_print_ready(
                    source=source,
                    target_width=width,
                    target_height=height,
                    dpi=PRINT_DPI,
                    sizing=item.sizing,
                    storage_prefix=f"orders/{order.id}/assets/{asset.id}",
                )
        except (PrintReadyError, ValueError) as exc:
            ok = False
            _print_ready_issue(
                order, item, asset, f"Asset {asset.public_id} cannot be printed: {exc}"
            )
            continue
        asset.print_file = result.print_file
        asset.thumbnail = result.thumbnail
        with _shown_change(order):
            _asset_record(asset, print_file=asset.print_file, thumbnail=asset.thumbnail)
            # The item shows its default print area; another area's image only when it has
            # none.
            item_row = OrderItem.objects.filter(id=asset.item_id)
            if asset.print_area != DEFAULT_PRINT_AREA:
                item_row = item_row.filter(thumbnail="")
            item_row.update(thumbnail=result.thumbnail)
    for item in items:
        if _spine_wanted(item, assets[item.id]):
            if catalogue is None:
                catalogue = catalogue_snapshot()
            ok = _spine_draw(order, item, assets[item.id], catalogue, claimed=claimed) and ok
    return ok


@contextlib.contextmanager
def _shown_change(order: Order) -> Iterator[None]:
    """A change the order's document shows (a thumbnail, an issue), in one transaction with
    the document. The order row is locked first, as the actions lock it before its items and
    assets: an action meanwhile waits for this write or is seen by its document, and neither
    document misses the other's change."""
    with order_changed(order.id):
        Order.objects.select_for_update(no_key=True).filter(id=order.id).exists()
        yield


def _print_ready_issue(order: Order, item: OrderItem, asset: Asset, description: str) -> None:
    """The asset's one ``PrintReadyFailed`` issue (on its item), replaced, not appended."""
    with _shown_change(order):
        OrderIssue.objects.update_or_create(
            order=order,
            asset=asset,
            error_code=PRINT_READY_FAILED,
            defaults={"object_id": item.public_id, "description": description},
        )


def _original_fetch(
    order: Order, item: OrderItem, asset: Asset, catalogue: CatalogueSnapshot
) -> bool:
    """Download an asset again whose files were deleted (one attempt, checked as the first
    download was); False, with an issue saying so, when the original is gone too."""
    product = catalogue.products_by_sku([item.sku]).get(item.sku.strip().upper())
    priced_by_page = product is not None and product.priced_by_page
    with tempfile.TemporaryDirectory(prefix="original-") as folder:
        fetched = original_fetch(asset, priced_by_page, Path(folder))
        if fetched.downloaded is None:
            _print_ready_issue(
                order,
                item,
                asset,
                f"The print files of asset {asset.public_id} were deleted "
                f"({settings.IMAGE_RETENTION_DAYS} days after submission) and its original "
                f"could not be downloaded again from {asset.url}: {fetched.error}",
            )
            return False
        original_store(asset, fetched)
    with _shown_change(order):
        _asset_record(asset, source_file=asset.source_file)
        OrderIssue.objects.filter(order=order, asset=asset, error_code=PRINT_READY_FAILED).delete()
    return True


def _spine_draw(
    order: Order,
    item: OrderItem,
    assets: list[Asset],
    catalogue: CatalogueSnapshot,
    *,
    claimed: bool,
) -> bool:
    """Draw the item's spine from its ``spine`` object; False (with an issue) when it cannot."""
    if claimed:
        order_claim_renew(order=order, unless_fresh=True)
    product = catalogue.products_by_sku([item.sku]).get(item.sku.strip().upper())
    pages = item_page_count((a.print_area, a.page_count) for a in assets)
    size = (
        spine_size(product=product, attributes=item.attributes, pages=pages)
        if product is not None and pages is not None
        else None
    )
    try:
        if size is None:
            raise PrintReadyError(f"{item.sku} has no spine size for {pages} pages.")
        result = render_spine(
            spine=item.spine or {},
            size=size,
            storage_prefix=f"orders/{order.id}/items/{item.id}/spine",
        )
    except PrintReadyError as exc:
        description = f"The spine of {item.public_id} cannot be printed: {exc}"
        with _shown_change(order):
            OrderIssue.objects.update_or_create(
                order=order,
                object_id=item.public_id,
                asset=None,
                error_code=PRINT_READY_FAILED,
                defaults={"description": description},
            )
        return False
    item.spine_print_file, item.spine_thumbnail = result.print_file, result.thumbnail
    OrderItem.objects.filter(id=item.id).update(
        spine_print_file=result.print_file, spine_thumbnail=result.thumbnail
    )
    return True


def _asset_record(asset: Asset, **files: str) -> None:
    """Write the asset's files to its row (an error if the row is gone, as ``save`` raised)."""
    if not Asset.objects.filter(id=asset.id).update(**files):
        raise DatabaseError(f"Asset {asset.public_id}: its row is gone.")


def _own_size(source: Path) -> tuple[int, int]:
    import pyvips

    image = pyvips.Image.new_from_file(str(source), access="sequential")
    return image.width, image.height
