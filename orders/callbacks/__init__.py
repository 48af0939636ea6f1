"""Callbacks to merchants: CloudEvents envelopes, Standard Webhooks signing, and delivery.

The pure parts (``signing``, ``envelope``, ``delivery``) know nothing about order rows, so they
can be tested and benchmarked against a local receiver on their own.
"""
