"""The embedded default's filesystem broker survives files in its queue that are not whole
messages (``common.file_broker``): they are set aside in ``rejected/`` with a warning, and
the messages after them are delivered."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from kombu import Connection

from config.env import BASE_DIR

# Named as kombu names messages (`<time>_<id>.<queue>.msg`), older than any it writes.
BAD_FILES = {
    "0000000000001_empty.images.msg": b"",
    "0000000000002_truncated.images.msg": b'{"body": "W1sxXSwge30sIHsi", "content-enc',
    "0000000000003_garbage.images.msg": b"\x00\xff\xfe not a message \x89PNG\r\n",
    "0000000000004_foreign.images.msg": b'{"hello": "world"}',
    "0000000000005_no-delivery.images.msg": b'{"body": "", "properties": {"delivery_tag": "x"}}',
}


def broker_connection(folder: Path) -> Connection:
    """A connection to a filesystem broker in ``folder``, as the embedded default's."""
    return Connection(
        "filesystem://localhost/",
        transport="common.file_broker:Transport",
        transport_options={
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "rejected_folder": str(folder / "rejected"),
            "control_folder": str(folder / "control"),
        },
    )


def test_files_that_are_not_messages_are_set_aside_and_the_next_message_delivered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with broker_connection(tmp_path) as connection:
        queue = connection.SimpleQueue("images")
        queue.put({"number": 1})
        for name, content in BAD_FILES.items():
            (tmp_path / "queue" / name).write_bytes(content)

        message = queue.get(timeout=5)
        message.ack()
        with pytest.raises(queue.Empty):
            queue.get(block=False)
        queue.close()

    assert message.payload == {"number": 1}
    assert sorted(p.name for p in (tmp_path / "rejected").iterdir()) == sorted(BAD_FILES)
    assert (tmp_path / "rejected" / "0000000000003_garbage.images.msg").read_bytes() == (
        BAD_FILES["0000000000003_garbage.images.msg"]
    )
    assert list((tmp_path / "queue").iterdir()) == []
    assert list((tmp_path / "processed").iterdir()) == []
    warnings = [r.getMessage() for r in caplog.records if r.name == "common.file_broker"]
    assert len(warnings) == len(BAD_FILES)
    assert "Broker file 0000000000001_empty.images.msg is empty: set aside as" in warnings[0]
    assert "is not JSON (truncated or garbage)" in warnings[1]
    assert "is not JSON (truncated or garbage)" in warnings[2]
    assert "is not a message (no properties.delivery_tag)" in warnings[3]
    assert "is not a message (no properties.delivery_info)" in warnings[4]


def test_a_consumer_taking_messages_while_they_are_written_takes_each_whole(
    tmp_path: Path,
) -> None:
    # Given a consumer taking messages as fast as it can (kombu's own channel created each
    # file before writing it: a consumer in between took an empty file, lost and undecodable)
    count = 2000
    taken: list[Any] = []
    failures: list[str] = []

    def consume() -> None:
        with broker_connection(tmp_path) as connection:
            channel = connection.default_channel
            deadline = time.monotonic() + 60
            while len(taken) < count and time.monotonic() < deadline:
                try:
                    taken.append(channel._get("images"))
                except Empty:
                    continue
                except Exception as exc:
                    failures.append(repr(exc))

    consumer = threading.Thread(target=consume)
    consumer.start()

    # When another connection writes messages meanwhile
    with broker_connection(tmp_path) as connection:
        channel = connection.default_channel
        for number in range(count):
            info = {"exchange": "", "routing_key": "images"}
            channel._put("images", {"body": str(number), "properties": {
                "delivery_tag": str(number), "delivery_info": info}})  # fmt: skip
    consumer.join(timeout=90)

    # Then each is taken whole, once, and nothing is set aside (the order within a millisecond
    # is the names', as kombu's)
    assert failures == []
    assert sorted(int(message["body"]) for message in taken) == list(range(count))
    assert list((tmp_path / "rejected").iterdir()) == []


def embedded_environment(var_dir: Path) -> dict[str, str]:
    """The environment of ``make run``'s processes: no database or Redis URL."""
    skipped = ("DATABASE_URL", "REDIS_URL", "PYTEST", "DJANGO_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skipped)}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.local", VAR_DIR=str(var_dir))
    return env


@pytest.fixture
def embedded_worker(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path]]:
    """A real ``celery -A config worker`` on the embedded default's filesystem broker,
    consuming ``images``; its log file and its VAR_DIR."""
    var_dir, log = tmp_path / "var", tmp_path / "worker.log"
    celery = Path(sys.executable).parent / "celery"
    with log.open("wb") as output:
        worker = subprocess.Popen(
            [str(celery), "-A", "config", "worker", "-Q", "images", "-P", "solo", "-l", "INFO"],
            cwd=BASE_DIR,
            env=embedded_environment(var_dir),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_log(log, " ready.", worker, seconds=90)
        yield worker, log, var_dir
    finally:
        with contextlib.suppress(ProcessLookupError):  # a worker that crashed is gone
            os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)


def wait_for_log(log: Path, text: str, process: subprocess.Popen[bytes], *, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while text not in (found := log.read_text(errors="replace")):
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} in the worker's log:\n{found[-5000:]}")
        time.sleep(0.2)
    return found


def test_a_real_worker_survives_bad_files_and_runs_the_task_sent_after_them(
    embedded_worker: tuple[subprocess.Popen[bytes], Path, Path],
) -> None:
    worker, log, var_dir = embedded_worker
    broker = var_dir / "broker"
    # Given files that are not whole messages in the queue the worker consumes
    for name, content in BAD_FILES.items():
        (broker / "queue" / name).write_bytes(content)

    # When a real task is sent after them (celery call, through the project's settings)
    sent = subprocess.run(
        [str(Path(sys.executable).parent / "celery"), "-A", "config", "call",
         "celery.accumulate", "--args", "[7, 8]", "--queue", "images"],
        cwd=BASE_DIR, env=embedded_environment(var_dir), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    task_id = sent.stdout.strip()

    # Then the worker runs it and is still running; the bad files were set aside, each named
    text = wait_for_log(log, f"Task celery.accumulate[{task_id}] succeeded", worker, seconds=60)
    assert worker.poll() is None
    assert sorted(p.name for p in (broker / "rejected").iterdir()) == sorted(BAD_FILES)
    assert not any(p.name in BAD_FILES for p in (broker / "queue").iterdir())
    for name in BAD_FILES:
        assert f"Broker file {name} is " in text
