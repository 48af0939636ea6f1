"""Staff API keys and the audit log of staff operations.

Staff are Django users with ``is_staff``; the administrator role is the ``Administrators``
group (superusers have it too, see ``staff.selectors.is_administrator``).
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from common.keys import HashedKey

ADMINISTRATORS_GROUP = "Administrators"


class StaffApiKey(HashedKey):
    """A staff user's API key; only its SHA-256 digest is stored, the key is shown once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="staff_api_keys"
    )

    class Meta(HashedKey.Meta):
        verbose_name = "staff API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"


class AuditEntry(models.Model):
    """One staff operation: who did what to which target, when, and how it ended."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_entries",
    )
    username = models.CharField(max_length=150, help_text="Kept when the user is deleted.")
    api_key = models.ForeignKey(
        StaffApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(default=timezone.now, db_index=True)
    operation = models.CharField(max_length=80)
    method = models.CharField(max_length=10, blank=True)
    path = models.CharField(max_length=500, blank=True)
    target = models.CharField(max_length=200, blank=True, help_text="What was acted on.")
    success = models.BooleanField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.created:%Y-%m-%d %H:%M:%S} {self.username} {self.operation} {self.target}"
