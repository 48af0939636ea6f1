"""Mail written to a folder, one ``.eml`` file a message: the local settings' backend.

Each message is saved whole (headers, every part) where a mail client opens it, and one line
naming its subject, recipients and file is logged, so a verification link is found without
reading the console around it.
"""

import itertools
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

logger = logging.getLogger(__name__)
_numbers = itertools.count(1)


class FolderEmailBackend(BaseEmailBackend):
    """Writes each message to ``EMAIL_FILE_PATH/<time>-<process>-<n>.eml`` (by default
    ``VAR_DIR/mail``)."""

    def __init__(self, *, file_path: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        folder = file_path or getattr(settings, "EMAIL_FILE_PATH", None)
        self.folder = Path(folder or Path(settings.VAR_DIR) / "mail")

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        self.folder.mkdir(parents=True, exist_ok=True)
        sent = 0
        for message in email_messages:
            if not message.recipients():
                continue
            stamp = timezone.now().strftime("%Y%m%dT%H%M%S")
            path = self.folder / f"{stamp}-{os.getpid()}-{next(_numbers)}.eml"
            path.write_bytes(message.message().as_bytes())
            logger.info("Mail %r to %s: %s", message.subject, ", ".join(message.recipients()), path)
            sent += 1
        return sent
