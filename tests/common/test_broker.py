"""The Redis broker's transport keeps one client per channel (``common.broker``)."""

import uuid

import pytest
from django.conf import settings
from kombu import Connection

from common.broker import Transport
from config.celery_app import app as celery_app

needs_redis = pytest.mark.skipif(not settings.REDIS_URL, reason="the Redis broker")


@needs_redis
def test_the_celery_app_publishes_and_consumes_through_the_kept_client_transport() -> None:
    with celery_app.connection_for_write() as connection:
        assert isinstance(connection.transport, Transport)
    with celery_app.connection_for_read() as connection:
        assert isinstance(connection.transport, Transport)


@needs_redis
def test_a_channel_keeps_one_client_until_its_pool_is_made_anew() -> None:
    with Connection(settings.REDIS_URL, transport="common.broker:Transport") as connection:
        channel = connection.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
        given = object()
        with channel.conn_or_acquire(given) as client:
            assert client is given
        channel._disconnect_pools()  # as after a connection error
        with channel.conn_or_acquire() as renewed:
            assert renewed is not first
            assert renewed.connection_pool is channel.pool


@needs_redis
def test_messages_go_through_and_are_acknowledged() -> None:
    name = f"test-broker-{uuid.uuid4().hex}"
    with Connection(settings.REDIS_URL, transport="common.broker:Transport") as connection:
        queue = connection.SimpleQueue(name)
        try:
            for number in range(3):
                queue.put({"number": number})
            received = []
            for _ in range(3):
                message = queue.get(timeout=5)
                received.append(message.payload["number"])
                message.ack()
            assert received == [0, 1, 2]
            with pytest.raises(queue.Empty):
                queue.get(block=False)
        finally:
            queue.close()
            with connection.default_channel.conn_or_acquire() as client:
                client.delete(name)  # what a failed run left
