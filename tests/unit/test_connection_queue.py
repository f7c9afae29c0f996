"""The router's per-connection write queue: priority order, bounds, overflow and expiry.

A real Connection writing into a sink the test opens and closes like a slow socket.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from webmcp_a2a.router.connection import Connection


class GatedSink:
    """Accepts frames only while open, like a socket whose peer is not reading."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.open = asyncio.Event()

    async def send(self, text: str) -> None:
        await self.open.wait()
        self.written.append(text)

    def write_now(self, text: str) -> bool:
        """A socket's synchronous write: taken at once while open, refused (nothing written) when not."""
        if self.open.is_set():
            self.written.append(text)
        return self.open.is_set()

    async def close(self, code: int, reason: str) -> None:
        self.written.append(f"closed {code}")


async def drain(connection: Connection, sink: GatedSink, count: int) -> list[str]:
    await asyncio.sleep(0)  # the writer takes the first frame and blocks on the gate
    sink.open.set()
    while len(sink.written) < count:
        await asyncio.sleep(0.001)
    return sink.written


async def test_higher_priority_is_written_first_and_fifo_within_a_priority():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=100)
    for text, priority in [
        ("low-1", 1),
        ("normal-1", 5),
        ("low-2", 1),
        ("critical-1", 10),
        ("normal-2", 5),
        ("high-1", 8),
    ]:
        assert connection.offer(text, priority)
    assert await drain(connection, sink, 6) == ["critical-1", "high-1", "normal-1", "normal-2", "low-1", "low-2"]


async def test_replies_outrank_every_delivery():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=10)
    connection.offer("critical", 10)
    connection.offer("reply")  # control frames default to the top priority
    assert await drain(connection, sink, 2) == ["reply", "critical"]


async def test_full_queue_refuses_a_newcomer_that_outranks_nothing():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=2)
    assert connection.offer("a", 5)
    assert connection.offer("b", 5)
    assert connection.offer("c", 5) is False
    assert connection.offer("d", 1) is False
    assert len(connection) == 2


async def test_full_queue_evicts_the_newest_of_the_lowest_priority_for_a_higher_one():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=3)
    dropped: list[tuple[str, str]] = []

    def record(text: str) -> Callable[[str], None]:
        return lambda reason: dropped.append((text, reason))

    for text in ("low-old", "low-new"):
        connection.offer(text, 1, on_drop=record(text))
    connection.offer("normal", 5)
    assert connection.offer("critical", 10)
    assert dropped == [("low-new", "evicted")]
    assert await drain(connection, sink, 3) == ["critical", "normal", "low-old"]


async def test_replies_do_not_count_against_the_delivery_limit():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=1, reply_limit=2)
    assert connection.offer("delivery", 5)
    assert connection.offer("reply-1")
    assert connection.offer("reply-2")
    assert connection.offer("reply-3") is False  # a client that does not read its replies
    assert len(connection) == 1


async def test_expired_frame_is_dropped_not_written_and_its_sender_told():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=10)
    dropped: list[str] = []
    connection.offer("first", 5)
    connection.offer("stale", 5, expires_at=time.time() + 0.05, on_drop=dropped.append)
    connection.offer("fresh", 5, expires_at=time.time() + 60)
    await asyncio.sleep(0.1)  # "stale" expires while "first" is stuck on the gate
    sink.open.set()
    await connection.flushed()
    assert sink.written == ["first", "fresh"]
    assert dropped == ["expired"]


async def test_close_waits_for_queued_frames():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=10)
    connection.offer("last words")
    connection.close(4000, "bye")
    assert connection.offer("too late") is False
    sink.open.set()
    await connection.flushed()
    assert sink.written == ["last words", "closed 4000"]


async def test_a_frame_offered_while_nothing_waits_is_written_at_once_without_the_writer():
    sink = GatedSink()
    sink.open.set()
    connection = Connection(sink.send, sink.close, queue_limit=10, write_now=sink.write_now)
    assert connection.offer("now", 5)
    assert (sink.written, len(connection)) == (["now"], 0)  # no writer task ran


@pytest.mark.parametrize(
    ("later", "socket_frees_up", "written"),
    [(("critical", 10), False, ["critical", "normal"]), (("normal-2", 5), True, ["normal", "normal-2"])],
    ids=["by-priority-while-the-socket-is-full", "nothing-overtakes-a-waiting-frame"],
)
async def test_frames_the_socket_cannot_take_now_wait_for_the_writer(later, socket_frees_up, written):
    sink = GatedSink()  # closed: write_now refuses
    connection = Connection(sink.send, sink.close, queue_limit=10, write_now=sink.write_now)
    connection.offer("normal", 5)
    if socket_frees_up:  # write_now would take a frame now, but "normal" waits for the writer
        sink.open.set()
    connection.offer(*later)
    assert sink.written == []
    assert await drain(connection, sink, 2) == written


async def test_a_frame_never_overtakes_the_one_the_writer_is_sending():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=10, write_now=sink.write_now)
    connection.offer("first", 5)
    await asyncio.sleep(0)  # the writer holds "first", waiting for the socket
    sink.open.set()  # the socket frees up; the writer resumes only on a later turn of the loop
    connection.offer("second", 5)
    await connection.flushed()
    assert sink.written == ["first", "second"]


WRITER = "Connection._write_queued"


def writers() -> int:
    return sum(1 for task in asyncio.all_tasks() if getattr(task.get_coro(), "__qualname__", None) == WRITER)


async def test_a_writer_runs_only_while_frames_wait():
    sink = GatedSink()
    connection = Connection(sink.send, sink.close, queue_limit=10, write_now=sink.write_now)
    connection.offer("waits", 5)
    assert writers() == 1
    sink.open.set()
    await connection.flushed()
    connection.offer("written at once", 5)
    assert (sink.written, writers()) == (["waits", "written at once"], 0)


async def test_a_peer_gone_ends_the_writer_quietly_and_a_later_frame_starts_another():
    attempts: list[str] = []

    async def gone(text: str) -> None:
        attempts.append(text)
        raise ConnectionResetError

    connection = Connection(gone, GatedSink().close, queue_limit=10)
    connection.offer("lost", 5)
    await connection.flushed()
    connection.offer("lost too", 5)
    await connection.flushed()
    assert (attempts, writers()) == (["lost", "lost too"], 0)
