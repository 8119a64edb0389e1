"""Wire format between the caller and sandbox workers: length-prefixed JSON over pipes.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. Frames
larger than :data:`MAX_MESSAGE_BYTES` are refused on both sides (a worker that sends one
is killed). Requests are ``[[op, session_id, argument], ...]``; replies hold one
``[1, payload]`` or ``[0, error]`` per call, in order.
"""

from __future__ import annotations

import os
import struct

#: largest frame in either direction
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: largest single result inside a reply (observation + info + tools)
MAX_RESULT_BYTES = 2 * 1024 * 1024
_HEADER = struct.Struct(">I")
#: the progress record a worker writes to its shared page before every call:
#: (number of calls started so far, CLOCK_MONOTONIC nanoseconds at the start)
PROGRESS = struct.Struct("<qq")


class ProtocolError(Exception):
    """A frame was malformed or too large (the peer is broken or hostile)."""


def pack(payload: bytes) -> bytes:
    if len(payload) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(payload)} bytes exceeds the {MAX_MESSAGE_BYTES}-byte cap")
    return _HEADER.pack(len(payload)) + payload


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exact(fd: int, n: int) -> bytes:
    """Blocking read of exactly ``n`` bytes (raises EOFError when the peer is gone)."""
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("peer closed the pipe")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes:
    """Blocking read of one frame (worker side; the caller sends one frame at a time,
    so a single read usually holds all of it)."""
    data = os.read(fd, 1 << 16)
    if len(data) < 4:
        if not data:
            raise EOFError("peer closed the pipe")
        data += read_exact(fd, 4 - len(data))
    (size,) = _HEADER.unpack_from(data)
    if size > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"frame of {size} bytes exceeds the cap")
    if len(data) - 4 < size:
        data += read_exact(fd, size - (len(data) - 4))
    return data[4 : 4 + size]


class FrameReader:
    """Incremental frame parser for non-blocking reads (caller side)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> bytes | None:
        """Add bytes; return a complete frame's payload when one is available."""
        self.buf += data
        if len(self.buf) < 4:
            return None
        (size,) = _HEADER.unpack_from(self.buf)
        if size > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"frame of {size} bytes exceeds the cap")
        if len(self.buf) < 4 + size:
            return None
        payload = bytes(self.buf[4 : 4 + size])
        del self.buf[: 4 + size]
        return payload
