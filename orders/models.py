"""Orders and their parts: items, assets, shipments, charges and issues, and the record of a
shipment resubmitted as a new one.

Every public id is a type prefix and the row's primary key (``ord_<pk>``); keys come from
``common.ids.new_id`` and grow with creation time, so "by id, descending" is "newest first".
"""

from decimal import Decimal

from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.ids import PREFIXES, format_id
from common.models import PublicIdModel
from common.shipping import ShippingMethod
from merchants.models import Environment


class Sizing(models.TextChoices):
    FILL = "fillPrintArea"
    FIT = "fitPrintArea"
    STRETCH = "stretchToPrintArea"


class Stage(models.TextChoices):
    ON_HOLD = "OnHold"
    AWAITING_PAYMENT = "AwaitingPayment"
    IN_PROGRESS = "InProgress"
    COMPLETE = "Complete"
    CANCELLED = "Cancelled"


class DetailState(models.TextChoices):
    NOT_STARTED = "NotStarted"
    IN_PROGRESS = "InProgress"
    COMPLETE = "Complete"
    ERROR = "Error"


class PipelineStep(models.TextChoices):
    """Where the fulfilment state machine stands; each step claims the order from the one before."""

    HELD = "Held"
    AWAITING_PAYMENT = "AwaitingPayment"
    DOWNLOAD = "Download"
    ALLOCATE = "Allocate"
    PREPARE = "Prepare"
    SUBMIT = "Submit"
    PRODUCTION = "Production"
    DONE = "Done"
    FAILED = "Failed"
    CANCELLED = "Cancelled"


class ItemStatus(models.TextChoices):
    NOT_YET_DOWNLOADED = "NotYetDownloaded"
    OK = "Ok"
    INVALID = "Invalid"


class ItemAvailability(models.TextChoices):
    AVAILABLE = "Available"
    UNAVAILABLE = "Unavailable"


class AssetStatus(models.TextChoices):
    IN_PROGRESS = "InProgress"
    COMPLETE = "Complete"
    ERROR = "Error"


class ShipmentStatus(models.TextChoices):
    PROCESSING = "Processing"
    SHIPPED = "Shipped"
    CANCELLED = "Cancelled"


class CancelOption(models.TextChoices):
    """What a resubmission does with the original lab order."""

    CANCEL_ORIGINAL = "CancelOriginal", "Cancel the original lab order (a refusal fails the row)"
    KEEP_ORIGINAL = "KeepOriginal", "Keep the original lab order"
    CANCEL_IF_POSSIBLE = "CancelIfPossible", "Cancel the original lab order if the lab can"


class ChargeType(models.TextChoices):
    ITEM = "Item"
    SHIPPING = "Shipping"
    REFUND = "Refund"
    OTHER = "Other"


class Order(PublicIdModel):
    """A merchant's order in one environment, with its fulfilment progress."""

    id_kind = "order"

    # No index of its own: the composite indexes below all lead with it.
    environment = models.ForeignKey(
        Environment, on_delete=models.PROTECT, related_name="orders", db_index=False
    )
    oms_id = models.BigIntegerField(null=True, blank=True)
    merchant_reference = models.CharField(max_length=200, blank=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    # SHA-256 of the canonical request body: same key and same body is AlreadyExists.
    request_fingerprint = models.CharField(max_length=64, blank=True)
    shipping_method = models.CharField(max_length=16, choices=ShippingMethod.choices)
    callback_url = models.URLField(max_length=2000, blank=True)

    recipient_name = models.CharField(max_length=200)
    recipient_email = models.CharField(max_length=254, blank=True)
    recipient_phone = models.CharField(max_length=50, blank=True)
    address_line1 = models.CharField(max_length=200)
    address_line2 = models.CharField(max_length=200, blank=True)
    address_postal_or_zip_code = models.CharField(max_length=40)
    address_country_code = models.CharField(max_length=2)
    address_town_or_city = models.CharField(max_length=100)
    address_state_or_county = models.CharField(max_length=100, blank=True)

    metadata = models.JSONField(default=dict, blank=True)
    branding = models.JSONField(default=dict, blank=True)
    packing_slip_url = models.URLField(max_length=2000, blank=True)
    packing_slip_status = models.CharField(max_length=20, blank=True)
    tag = models.CharField(max_length=100, blank=True)
    us_sales_tax_already_collected = models.BooleanField(default=False)
    currency = models.CharField(max_length=3, default="GBP", help_text="Currency of the charges.")

    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.IN_PROGRESS)
    download_assets = models.CharField(
        max_length=12, choices=DetailState.choices, default=DetailState.NOT_STARTED
    )
    allocate_production_location = models.CharField(
        max_length=12, choices=DetailState.choices, default=DetailState.NOT_STARTED
    )
    print_ready_assets_prepared = models.CharField(
        max_length=12, choices=DetailState.choices, default=DetailState.NOT_STARTED
    )
    in_production = models.CharField(
        max_length=12, choices=DetailState.choices, default=DetailState.NOT_STARTED
    )
    shipping = models.CharField(
        max_length=12, choices=DetailState.choices, default=DetailState.NOT_STARTED
    )

    # Pause window: OnHold until this time; null while OnHold means held until submitted by hand.
    held_until = models.DateTimeField(null=True, blank=True)
    # The durable state machine: the step, when it is next due, and the worker's claim on it
    # (``common.leases``: the end of its lease, renewed while the step runs, and its token).
    pipeline_step = models.CharField(
        max_length=16, choices=PipelineStep.choices, default=PipelineStep.DOWNLOAD
    )
    due_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    claim_token = models.BigIntegerField(
        null=True, blank=True, help_text="Names the worker's claim while it holds the order."
    )
    swept_at = models.DateTimeField(
        null=True, blank=True, help_text="When the sweeper last queued the order."
    )
    download_deferred_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the merchant's download share last deferred the order (cleared when a "
        "worker claims its download).",
    )
    submitted_at = models.DateTimeField(null=True, blank=True, help_text="Sent to fulfilment.")
    # Card billing: the provider's reference of the authorised payment.
    payment_reference = models.CharField(max_length=100, blank=True)
    payment_authorised_at = models.DateTimeField(null=True, blank=True)
    files_deleted_at = models.DateTimeField(null=True, blank=True)
    callback_sequence = models.PositiveIntegerField(
        default=0, help_text="Last callback event number."
    )

    created = models.DateTimeField(default=timezone.now)
    last_updated = models.DateTimeField(default=timezone.now)
    # The order as the merchant sees it (``orders.document``): the body of its GET, JSON text,
    # written in the transaction of every change to what it shows; the earliest expiry of the
    # signed file URLs in it (none: it has none).
    document = models.TextField(blank=True, editable=False)
    document_urls_expire = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-id"]
        permissions = [
            ("act_on_order", "Can act on an order's work (submit held, run or retry a step)"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["environment", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="order_idempotency_key_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["environment", "-id"], name="order_env_id"),
            models.Index(fields=["environment", "stage", "-id"], name="order_env_stage_id"),
            models.Index(fields=["environment", "merchant_reference"], name="order_env_reference"),
            models.Index(fields=["environment", "created"], name="order_env_created"),
            models.Index(fields=["due_at"], name="order_due", condition=Q(due_at__isnull=False)),
        ]


class OrderItem(PublicIdModel):
    id_kind = "order_item"

    # No index of its own: ``item_position_unique`` leads with it.
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="items", db_index=False)
    position = models.PositiveIntegerField()
    oms_id = models.BigIntegerField(null=True, blank=True)
    merchant_reference = models.CharField(max_length=200, blank=True)
    sku = models.CharField(max_length=100)
    copies = models.PositiveIntegerField()
    sizing = models.CharField(max_length=20, choices=Sizing.choices, default=Sizing.FILL)
    attributes = models.JSONField(default=dict, blank=True)
    spine = models.JSONField(null=True, blank=True)
    recipient_cost_amount = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True
    )
    recipient_cost_currency = models.CharField(max_length=3, blank=True)
    status = models.CharField(
        max_length=20, choices=ItemStatus.choices, default=ItemStatus.NOT_YET_DOWNLOADED
    )
    shipment = models.ForeignKey(
        "Shipment", on_delete=models.SET_NULL, null=True, blank=True, related_name="items"
    )
    availability = models.CharField(
        max_length=12, choices=ItemAvailability.choices, default=ItemAvailability.AVAILABLE
    )
    thumbnail = models.CharField(
        max_length=500, blank=True, help_text="Storage name of the thumbnail."
    )
    spine_print_file = models.CharField(
        max_length=500,
        blank=True,
        help_text="Storage name of the spine drawn from ``spine`` (a photobook without a spine "
        "asset).",
    )
    spine_thumbnail = models.CharField(
        max_length=500, blank=True, help_text="Storage name of the drawn spine's thumbnail."
    )

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["order", "position"], name="item_position_unique")
        ]


class Asset(PublicIdModel):
    id_kind = "asset"

    # No index of its own: ``asset_position_unique`` leads with it.
    item = models.ForeignKey(
        OrderItem, on_delete=models.CASCADE, related_name="assets", db_index=False
    )
    position = models.PositiveIntegerField()
    oms_id = models.BigIntegerField(null=True, blank=True)
    print_area = models.CharField(max_length=50, default="default")
    url = models.URLField(max_length=2000)
    md5_hash = models.CharField(max_length=32, blank=True)
    page_count = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(
        max_length=12, choices=AssetStatus.choices, default=AssetStatus.IN_PROGRESS
    )
    download_attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    source_file = models.CharField(
        max_length=500, blank=True, help_text="Storage name of the download."
    )
    source_size = models.BigIntegerField(null=True, blank=True)
    print_file = models.CharField(
        max_length=500, blank=True, help_text="Storage name of the print file."
    )
    thumbnail = models.CharField(
        max_length=500, blank=True, help_text="Storage name of the thumbnail."
    )

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "position"], name="asset_position_unique")
        ]


class Shipment(PublicIdModel):
    """The part of an order one lab makes and ships (a lab order)."""

    id_kind = "shipment"

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="shipments")
    lab_code = models.CharField(max_length=20)
    lab_country_code = models.CharField(max_length=2)
    status = models.CharField(
        max_length=12, choices=ShipmentStatus.choices, default=ShipmentStatus.PROCESSING
    )
    shipping_method = models.CharField(max_length=16, choices=ShippingMethod.choices)
    carrier_name = models.CharField(max_length=100, blank=True)
    carrier_service = models.CharField(max_length=100, blank=True)
    tracking_number = models.CharField(max_length=100, blank=True)
    tracking_url = models.URLField(max_length=2000, blank=True)
    dispatch_date = models.DateTimeField(null=True, blank=True)
    lab_order_reference = models.CharField(max_length=100, blank=True)
    submit_attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Submissions the lab refused so far."
    )
    submitted_at = models.DateTimeField(null=True, blank=True)
    in_production_at = models.DateTimeField(null=True, blank=True)
    recipient = models.JSONField(
        null=True,
        blank=True,
        help_text="The whole recipient its lab holds (name, email, phoneNumber, address, as an "
        "order's recipient) when it is not the order's: its lab refused an updateRecipient, or "
        "staff changed this lab order's address alone. Null: the order's.",
    )
    held_since = models.DateTimeField(
        null=True, blank=True, help_text="On hold at its lab since (staff hold); null if not."
    )
    held_seconds = models.FloatField(default=0.0, help_text="Time spent on earlier holds.")
    lab_operation = models.CharField(
        max_length=40,
        blank=True,
        help_text="A change sent to the lab whose answer is not recorded yet.",
    )
    lab_operation_since = models.DateTimeField(null=True, blank=True)
    lab_operation_change = models.JSONField(
        null=True,
        blank=True,
        help_text="What the change sent to the lab asks (a method, a carrier alias, a "
        "recipient), recorded before the call so that it can be applied when the lab is "
        "asked afterwards what it did.",
    )
    lab_operation_unanswered_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the lab's answer to the change did not come in time: the lab is "
        "asked what it did, and that is recorded (orders.shipments).",
    )
    swept_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the lab answers' sweep last queued the settling of its change "
        "(common.sweeping: each change queued once, and again only if its message is lost).",
    )
    simulated = models.BooleanField(
        default=False,
        help_text="Made by the built-in lab simulator: no parcel leaves any lab.",
    )
    lab_ended_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When its lab cancelled or failed the lab order on its side (see its issue); "
        "no longer followed.",
    )
    reprint_of = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="reprints",
        help_text="The shipped shipment whose items this one makes again (a reprint, at the "
        "service's cost, orders.resubmission): its items are that one's, which stay on it. "
        "Null: its items are its own.",
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created", "id"]
        indexes = [
            # The lab answers' sweep: the few shipments with a change under way.
            models.Index(
                fields=["lab_operation_since"],
                condition=~models.Q(lab_operation=""),
                name="shipment_lab_operation_open",
            ),
        ]
        permissions = [
            (
                "operate_shipment",
                "Can cancel, hold, unhold and change the address or method of a lab order",
            ),
        ]

    @property
    def is_held(self) -> bool:
        return self.held_since is not None


class Charge(PublicIdModel):
    id_kind = "charge"

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="charges")
    charge_type = models.CharField(max_length=10, choices=ChargeType.choices)
    currency = models.CharField(max_length=3)
    total_cost = models.DecimalField(max_digits=12, decimal_places=2)
    total_tax = models.DecimalField(max_digits=12, decimal_places=2)
    service_invoice_number = models.CharField(max_length=50, null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created", "id"]


class ChargeItem(PublicIdModel):
    id_kind = "charge_item"

    charge = models.ForeignKey(Charge, on_delete=models.CASCADE, related_name="items")
    charge_type = models.CharField(max_length=10, choices=ChargeType.choices)
    item = models.ForeignKey(OrderItem, on_delete=models.CASCADE, null=True, blank=True)
    shipment = models.ForeignKey(Shipment, on_delete=models.CASCADE, null=True, blank=True)
    cost = models.DecimalField(max_digits=12, decimal_places=2)
    tax = models.DecimalField(max_digits=12, decimal_places=2, default=0)

    class Meta:
        ordering = ["id"]


class OrderFileKind(models.TextChoices):
    PACKING_SLIP = "PackingSlip"
    BRANDING = "Branding"


class OrderFile(models.Model):
    """A file of the order itself (its packing slip or a branding file), downloaded and checked
    like an asset and sent to every lab with the shipment.

    ``status`` is also written to what ``GET`` shows (``Order.packing_slip_status``, the
    status in ``Order.branding``) in the same transaction, so reading an order needs no join.
    """

    # No index of its own: ``order_file_unique`` leads with it.
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="files", db_index=False)
    kind = models.CharField(max_length=12, choices=OrderFileKind.choices)
    name = models.CharField(
        max_length=50, blank=True, help_text="The branding name; blank for the packing slip."
    )
    url = models.URLField(max_length=2000)
    status = models.CharField(
        max_length=12, choices=AssetStatus.choices, default=AssetStatus.IN_PROGRESS
    )
    download_attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    source_file = models.CharField(
        max_length=500, blank=True, help_text="Storage name of the download."
    )
    source_size = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["order", "kind", "name"], name="order_file_unique")
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        """How issues name the file: ``packing slip`` or ``branding 'postcard'``."""
        if self.kind == OrderFileKind.PACKING_SLIP:
            return "packing slip"
        return f"branding '{self.name}'"


class OrderIssue(models.Model):
    """A problem shown on ``status.issues``; at most one per (order, object, asset or order
    file, code)."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="issues")
    object_id = models.CharField(max_length=40, help_text="The ord_ or ori_ id the issue is about.")
    asset = models.ForeignKey(Asset, on_delete=models.CASCADE, null=True, blank=True)
    order_file = models.ForeignKey(OrderFile, on_delete=models.CASCADE, null=True, blank=True)
    error_code = models.CharField(max_length=80)
    description = models.TextField()
    authorisation_url = models.URLField(max_length=2000, blank=True)
    payment_amount = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    payment_currency = models.CharField(max_length=3, blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created", "id"]

    def __str__(self) -> str:
        return f"{self.error_code} on {self.object_id}"


class OrderPayment(models.Model):
    """What a card-billed merchant paid for an order through ``PAYMENT_PROVIDER``: written when
    the provider confirms the payment (at once for the test provider; from Stripe's signed
    ``checkout.session.completed`` event). The first pays the order's cost; a further one pays
    the difference after a change raised it (``orders.payment_balance``)."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="payments")
    reference = models.CharField(max_length=100, help_text="The provider's payment reference.")
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    paid_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.amount} {self.currency} for order {self.order_id}"


class PaymentSessionStatus(models.TextChoices):
    OPEN = "Open"  # the payer may still pay on its page
    PENDING = "Pending"  # completed with a delayed method: the money is not there yet
    PAID = "Paid"
    FAILED = "Failed"  # the delayed method failed
    EXPIRED = "Expired"


class PaymentSession(models.Model):
    """A payment page the provider opened for an order at our request (a Stripe Checkout
    Session), for ``amount``: the provider's notifications are applied only to the order of a
    session recorded here. When what the order asks for changes (or it is paid, or cancelled),
    its open sessions for another amount are expired at the provider: ``expire_due_at`` is
    set and ``orders.tasks.payment_session_expire_task`` sends it (again, while the provider
    cannot be reached)."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="payment_sessions")
    reference = models.CharField(max_length=255, unique=True, help_text="The provider's id.")
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    created = models.DateTimeField(default=timezone.now)
    status = models.CharField(
        max_length=10, choices=PaymentSessionStatus.choices, default=PaymentSessionStatus.OPEN
    )
    # Due to be expired at the provider (again) at this time; None when not (or no longer).
    expire_due_at = models.DateTimeField(null=True, blank=True)
    expire_attempts = models.PositiveIntegerField(default=0)
    expire_failure = models.TextField(blank=True, help_text="Why the provider did not expire it.")

    class Meta:
        ordering = ["created", "id"]
        indexes = [
            models.Index(
                fields=["expire_due_at"],
                name="payment_session_expire_due",
                condition=Q(expire_due_at__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return f"payment session {self.reference} of order {self.order_id}"


class PaymentRefund(models.Model):
    """Money to give back through the provider, written in the transaction that refunds (a
    Refund charge, or the rest of the payment when a paid order is cancelled) and sent by
    ``orders.tasks.payment_refund_send_task``. ``key`` is unique and is the provider's
    idempotency key: the refund is sent at most once however often it is tried."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="payment_refunds")
    payment = models.ForeignKey(
        OrderPayment,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="refunds",
        help_text="The payment it gives back (part of); none for refunds made before payments "
        "could be several: the order's first.",
    )
    charge = models.OneToOneField(
        Charge, on_delete=models.CASCADE, null=True, blank=True, related_name="payment_refund"
    )
    key = models.CharField(max_length=80, unique=True)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    created = models.DateTimeField(default=timezone.now)
    # Due to be sent (again) at this time; None once it is sent or refused for good.
    due_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    reference = models.CharField(max_length=100, blank=True, help_text="The provider's refund.")
    failure = models.TextField(blank=True, help_text="Why the provider refused it.")
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["created", "id"]
        indexes = [
            models.Index(
                fields=["due_at"], name="payment_refund_due", condition=Q(due_at__isnull=False)
            )
        ]

    def __str__(self) -> str:
        return f"refund {self.amount} {self.currency} of order {self.order_id}"


class ShipmentResubmission(models.Model):
    """A shipment resubmitted as a new shipment of the same order, at most once per original
    (``orders.resubmission``).

    Written before the new lab order is sent (its id, lab and priced plan chosen), so a worker
    killed between the lab's answer and our record sends the same shipment id again, which a
    lab takes as the same submission. ``submitted_at`` is set with the new shipment's row."""

    original = models.OneToOneField(Shipment, on_delete=models.CASCADE, related_name="resubmission")
    new_shipment_id = models.BigIntegerField(unique=True, help_text="The new shipment's id.")
    lab_code = models.CharField(max_length=20)
    lab_country_code = models.CharField(max_length=2)
    shipping_method = models.CharField(max_length=16)
    carrier_name = models.CharField(max_length=100, blank=True)
    carrier_service = models.CharField(max_length=100, blank=True)
    plan = models.JSONField(
        default=dict, help_text="The new lab's prices: item lines, shipping, currency."
    )
    created = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(
        null=True, blank=True, help_text="When the new lab order was recorded as accepted."
    )

    def __str__(self) -> str:
        original = format_id(PREFIXES["shipment"], self.original_id)
        return f"{original} → {self.new_shipment_public_id}"

    @property
    def lab_cost(self) -> Decimal | None:
        """What the new lab charges the service (in ``plan["currency"]``): its prices for the
        items and the shipping, without the tax a merchant's price would carry; None before a
        plan is recorded."""
        if not self.plan:
            return None
        items = sum((Decimal(cost) for cost, _tax in self.plan["items"].values()), Decimal(0))
        return items + Decimal(self.plan["shipping"][0])

    @property
    def new_shipment_public_id(self) -> str:
        return format_id(PREFIXES["shipment"], self.new_shipment_id)
