"""Callbacks to merchants: the outbox of CloudEvents, Standard Webhooks signing, delivery
attempts, retries and replay.

Other apps call ``webhooks.services.event_create`` inside the transaction of the change they
report; this app knows nothing of orders beyond the bytes it is given to send.
"""
