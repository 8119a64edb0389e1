"""Wire format between the caller and sandbox workers: length-prefixed JSON over pipes.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. A
request (caller to worker) is one frame ``[[op, session_id, argument], ...]`` of at most
:data:`MAX_MESSAGE_BYTES`; the worker answers **each call with its own frame**
``[1, payload]`` or ``[0, error]``, in order, of at most :data:`MAX_REPLY_BYTES`, so the
caller knows on its own clock when every call finished (per-call deadlines without
anything the worker can write). The first frame a worker sends, before any request, is
its hello: ``{"pid": ..., "layers": {...}}``.

Replies are untrusted: :func:`decode_reply` parses one and checks its shape with
:func:`check_value` (depth, element count, 64-bit integers, strings without lone
surrogates); anything else raises :class:`ProtocolError`, which fails that worker's
session only. Workers run the same check on their results before sending them.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

#: largest frame in either direction
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: largest single result inside a reply (observation + info + tools)
MAX_RESULT_BYTES = 2 * 1024 * 1024
#: largest reply frame (one call's result plus its envelope)
MAX_REPLY_BYTES = MAX_RESULT_BYTES + 64 * 1024
#: deepest nesting of lists/dicts in a result, and most containers + scalars in one
MAX_DEPTH = 48
MAX_ELEMENTS = 250_000
_INT_LIMIT = 1 << 63
_HEADER = struct.Struct(">I")


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


def check_value(value: Any, lenient: bool = False) -> str | None:
    """Why ``value`` is not a plain JSON value within the caps, or None when it is.

    Iterative (no recursion), linear in the size of ``value``; only exact ``dict``,
    ``list``, ``str``, ``int``, ``float``, ``bool`` and ``None`` are accepted. ``lenient``
    (the worker's pre-check) also walks tuples and lets other objects through (they are
    encoded as their ``repr``)."""
    stack = [(value, 1)]
    count = 0
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > MAX_ELEMENTS:
            return f"more than {MAX_ELEMENTS} elements"
        kind = type(item)
        if kind is str:
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return "a string with a lone surrogate"
        elif kind is int:
            if not -_INT_LIMIT <= item < _INT_LIMIT:
                return "an integer outside the 64-bit range"
        elif kind is float or kind is bool or item is None:
            pass
        elif kind is list or kind is dict or (lenient and kind is tuple):
            if depth >= MAX_DEPTH:
                return f"nesting deeper than {MAX_DEPTH}"
            if kind is dict:
                for key, sub in item.items():
                    if type(key) is not str and not (lenient and type(key) in (int, float, bool)):
                        return "a dict key that is not a string"
                    stack.append((key, depth + 1))
                    stack.append((sub, depth + 1))
            else:
                stack.extend((sub, depth + 1) for sub in item)
        elif not lenient:
            return f"a value of type {kind.__name__}"
    return None


def decode_reply(payload: bytes) -> list:
    """One reply frame -> ``[ok, value]``; raises :class:`ProtocolError` when it is not
    valid UTF-8 JSON of that shape within the caps."""
    try:
        value = json.loads(payload)
    except (ValueError, RecursionError, MemoryError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"malformed reply ({type(exc).__name__})") from None
    if type(value) is not list or len(value) != 2 or value[0] not in (0, 1) or type(value[0]) is not int:
        raise ProtocolError("malformed reply (not [ok, value])")
    problem = check_value(value[1])
    if problem is not None:
        raise ProtocolError(f"malformed reply ({problem})")
    return value


class FrameReader:
    """Incremental frame parser for non-blocking reads (caller side)."""

    def __init__(self, max_bytes: int = MAX_REPLY_BYTES) -> None:
        self.buf = bytearray()
        self.max_bytes = max_bytes

    def feed(self, data: bytes) -> None:
        self.buf += data

    def pop(self) -> bytes | None:
        """The next complete frame's payload, or None until one is complete."""
        if len(self.buf) < 4:
            return None
        (size,) = _HEADER.unpack_from(self.buf)
        if size > self.max_bytes:
            raise ProtocolError(f"frame of {size} bytes exceeds the {self.max_bytes}-byte cap")
        if len(self.buf) < 4 + size:
            return None
        payload = bytes(self.buf[4 : 4 + size])
        del self.buf[: 4 + size]
        return payload
