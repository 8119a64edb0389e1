"""``UnicodeText``: a Gymnasium text space that accepts any Unicode string.

Gymnasium's ``Text`` space defaults to a 62-character alphanumeric charset, which rejects
ordinary observations ("Guess: 12 < x?"). ``UnicodeText`` keeps ``Text``'s interface
(so vector-env helpers dispatch on it) but:

- ``contains`` accepts any ``str`` within the length bounds;
- ``sample`` draws from printable ASCII plus a few non-ASCII letters;
- in ``AsyncVectorEnv`` shared memory a string is stored as its code points with a
  length prefix, so every character survives the round trip.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Text
from gymnasium.vector.utils import shared_memory as _shm

from .contract import MAX_TEXT_CHARS  # noqa: F401 - re-exported: the longest text the spaces admit

_SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \néßλ→✓中"


class UnicodeText(Text):
    """Text space over all of Unicode; see the module docstring."""

    def __init__(self, max_length: int = MAX_TEXT_CHARS, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is None and probability is None:
            # keep samples short: a max_length-long random string helps nobody
            length = int(self.np_random.integers(self.min_length, min(self.max_length, 64) + 1))
            idx = self.np_random.integers(0, len(self.character_list), size=length)
            return "".join(self.character_list[i] for i in idx)
        return super().sample(mask=mask, probability=probability)

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, UnicodeText) and (self.min_length, self.max_length) == (
            other.min_length,
            other.max_length,
        )

    __hash__ = None  # spaces are mutable (seeded RNG); keep Python's rule for __eq__


@_shm.create_shared_memory.register(UnicodeText)
def _create_unicode_shm(space: UnicodeText, n: int = 1, ctx: Any = None):
    import multiprocessing as mp

    ctx = ctx or mp
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


class LiveTextBatch(Sequence):
    """The strings in a shared-memory block, decoded when read.

    ``AsyncVectorEnv`` reads its shared memory once, at construction, and afterwards hands
    out that object (deep-copied by default): numpy spaces return views, so they stay
    current. Text must be decoded, so this view decodes on every access, and a (deep)
    copy is a plain tuple of the strings at that moment.
    """

    def __init__(self, data: np.ndarray) -> None:
        self._data = data

    def __len__(self) -> int:
        return self._data.shape[0]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self)[i]
        row = self._data[i]
        return "".join(map(chr, row[1 : 1 + int(row[0])]))

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: Any) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(tuple(self))


@_shm.read_from_shared_memory.register(UnicodeText)
def _read_unicode_shm(space: UnicodeText, shared_memory: Any, n: int = 1) -> LiveTextBatch:
    return LiveTextBatch(np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length + 1)))


@_shm.write_to_shared_memory.register(UnicodeText)
def _write_unicode_shm(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
    size = space.max_length + 1
    dest = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    codes = np.fromiter((ord(c) for c in value), dtype=np.int32, count=len(value))
    row = dest[index * size : (index + 1) * size]
    row[0] = len(codes)
    row[1 : 1 + len(codes)] = codes
