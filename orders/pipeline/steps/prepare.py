"""Step 4: print-ready files and thumbnails for every image asset.

The target pixel size is the recommended size of the asset's print area on the item's product
variant. Print-ready PDFs (products priced by page) are used as they are.
"""

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.core.files.storage import default_storage
from django.db import DatabaseError

from common.db import rows_update
from labs.catalogue import CatalogueSnapshot, catalogue_snapshot
from orders.artwork.printready import PrintReadyError, render_print_ready
from orders.issues import PRINT_READY_FAILED
from orders.models import Asset, Order, OrderIssue, OrderItem
from orders.pipeline.claims import order_claim_renew
from orders.selectors import order_items_get
from products.validation import DEFAULT_PRINT_AREA, resolve_attributes


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
    resolved = resolve_attributes(product=product, attributes=item.attributes)
    for variant in product.variants.all():
        if variant.attributes == resolved:
            size = (variant.print_area_sizes or {}).get(print_area)
            if size:
                return int(size["horizontalResolution"]), int(size["verticalResolution"])
    return None


def order_assets_prepare(*, order: Order) -> bool:
    """Render what is not rendered yet; False (with an issue) when an image cannot be used."""
    ok = True
    items, assets = order_items_get(order=order)
    catalogue: CatalogueSnapshot | None = None  # read once, for the first image to render
    for item, asset in [(i, a) for i in items for a in assets[i.id] if not a.print_file]:
        # A long rendering after another: the claim renewed first (not the claim just taken).
        order_claim_renew(order=order, unless_fresh=True)
        if asset.source_file.endswith(".pdf"):
            asset.print_file = asset.source_file
            _asset_record(asset, print_file=asset.print_file)
            continue
        if catalogue is None:
            catalogue = catalogue_snapshot()
        size = target_size(catalogue, item, asset.print_area)
        try:
            with local_copy(asset.source_file) as source:
                width, height = size or _own_size(source)
                result = render_print_ready(
                    source=source,
                    target_width=width,
                    target_height=height,
                    sizing=item.sizing,
                    storage_prefix=f"orders/{order.id}/assets/{asset.id}",
                )
        except (PrintReadyError, ValueError) as exc:
            ok = False
            OrderIssue.objects.update_or_create(
                order=order,
                asset=asset,
                error_code=PRINT_READY_FAILED,
                defaults={
                    "object_id": item.public_id,
                    "description": f"Asset {asset.public_id} cannot be printed: {exc}",
                },
            )
            continue
        asset.print_file = result.print_file
        asset.thumbnail = result.thumbnail
        _asset_record(asset, print_file=asset.print_file, thumbnail=asset.thumbnail)
        # The item shows its default print area; another area's image only when it has none.
        item_row: dict[str, object] = {"id": asset.item_id}
        if asset.print_area != DEFAULT_PRINT_AREA:
            item_row["thumbnail"] = ""
        rows_update(OrderItem, item_row, {"thumbnail": result.thumbnail})
    return ok


def _asset_record(asset: Asset, **files: str) -> None:
    """Write the asset's files to its row (an error if the row is gone, as ``save`` raised)."""
    if not rows_update(Asset, {"id": asset.id}, files):
        raise DatabaseError(f"Asset {asset.public_id}: its row is gone.")


def _own_size(source: Path) -> tuple[int, int]:
    import pyvips

    image = pyvips.Image.new_from_file(str(source), access="sequential")
    return image.width, image.height
