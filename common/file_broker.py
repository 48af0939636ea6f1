"""The filesystem broker's transport: kombu's, made safe against bad message files.

kombu's filesystem channel creates a message's file and then writes it, so a consumer listing
the folder in between takes an empty file; and it decodes what it takes without a guard, so an
empty, truncated or foreign file raised out of the worker's consuming loop and stopped the
worker. Here a message is written under a name no consumer takes and renamed into the queue
when whole; a taken file that is not a whole kombu message (empty, not JSON, not an object
with the properties a message carries, a body that does not decode) is moved aside into
``rejected_folder`` with a warning naming it and why, and the next file is taken. A message
that is whole but not a task is Celery's to refuse (it logs it and drops it).

A taken file is renamed into ``processed_folder`` (on the queue's file system, where kombu
would move it to the system's temporary folder, maybe by a copy) so exactly one consumer
takes it, and deleted once read unless ``store_processed``. Selected by
``CELERY_BROKER_TRANSPORT`` when ``REDIS_URL`` is not set.
"""

import logging
import os
import uuid
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property

logger = logging.getLogger(__name__)


class Channel(filesystem.Channel):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for folder in (self.data_folder_in, self.processed_folder, self.rejected_folder):
            os.makedirs(folder, exist_ok=True)

    @cached_property
    def rejected_folder(self) -> str:
        return str(self.transport_options.get("rejected_folder", "rejected"))

    # Named as kombu's filesystem channel names it (its base says ``message``).
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Write the message whole, then give it its queue's name (an atomic rename)."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        path = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.partial")
        try:
            with open(partial, "wb") as file:
                file.write(dumps(payload).encode())
            os.rename(partial, path)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {path!r} to directory") from exc

    def _get(self, queue: str, timeout: Any = None) -> Any:
        """The oldest whole message of ``queue``; files that are not one are set aside."""
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            taken = os.path.join(self.processed_folder, name)
            try:
                os.rename(os.path.join(self.data_folder_in, name), taken)
            except OSError:
                continue  # another consumer took it first
            payload, fault = self._message_read(taken)
            if fault:
                self._set_aside(taken, name, fault)
                continue
            if not self.store_processed:
                os.remove(taken)
            return payload
        raise Empty()

    def _message_read(self, path: str) -> tuple[Any, str]:
        """The message in the file at ``path``, or what is wrong with it."""
        try:
            with open(path, "rb") as file:
                raw = file.read()
        except OSError as exc:
            return None, f"unreadable ({exc})"
        if not raw.strip():
            return None, "empty"
        try:
            payload = loads(bytes_to_str(raw))
        except ValueError:  # JSON's and Unicode's decoding errors alike
            return None, "not JSON (truncated or garbage)"
        properties = payload.get("properties") if isinstance(payload, dict) else None
        if not isinstance(properties, dict) or not isinstance(properties.get("delivery_tag"), str):
            return None, "not a message (no properties.delivery_tag)"
        delivery = properties.get("delivery_info")
        if not isinstance(delivery, dict) or not all(
            isinstance(delivery.get(k), str) for k in ("exchange", "routing_key")
        ):
            return None, "not a message (no properties.delivery_info)"
        try:
            self.Message(payload, channel=self)
        except Exception as exc:
            return None, f"not a message ({type(exc).__name__}: {exc})"
        return payload, ""

    def _set_aside(self, taken: str, name: str, fault: str) -> None:
        aside = os.path.join(self.rejected_folder, name)
        try:
            os.rename(taken, aside)
        except OSError:
            logger.exception("Broker file %s is %s and could not be set aside", taken, fault)
            return
        logger.warning("Broker file %s is %s: set aside as %s", name, fault, aside)


class Transport(filesystem.Transport):  # type: ignore[misc]
    Channel = Channel
