"""``UnicodeText`` and ``TextList``: Gymnasium spaces for any Unicode string, and for a list
of them (a game's legal moves).

Gymnasium's ``Text`` space defaults to a 62-character alphanumeric charset, which rejects
ordinary observations ("Guess: 12 < x?"). ``UnicodeText`` keeps ``Text``'s interface
(so vector-env helpers dispatch on it) but:

- ``contains`` accepts any ``str`` within the length bounds;
- ``sample`` draws from printable ASCII plus a few non-ASCII letters;
- in ``AsyncVectorEnv`` shared memory a string is stored as its code points with a
  length prefix, so every character survives the round trip.

``TextList`` is ``Sequence(UnicodeText())`` (unstacked: a tuple of strings) that also
works in shared memory (stored as its JSON text in a ``UnicodeText`` buffer).

Both spaces are registered with every ``gymnasium.vector.utils`` function that dispatches
on the space (``batch_space``, ``batch_differing_spaces``, ``iterate``, ``concatenate``,
``create_empty_array`` and the three shared-memory functions), so ``SyncVectorEnv``,
``AsyncVectorEnv`` (shared memory or not) and SuperSuit's ``pettingzoo_env_to_vec_env_v1``
/ ``concat_vec_envs_v1`` accept them. ``iterate`` takes a batch (a sequence of values) and
yields its values.
"""

from __future__ import annotations

import copy
import json
import string
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces as _spaces
from gymnasium.spaces import Text
from gymnasium.vector.utils import shared_memory as _shm
from gymnasium.vector.utils import space_utils as _su

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


class TextList(_spaces.Sequence):
    """A tuple of Unicode strings (``Sequence(UnicodeText(max_length))``, unstacked)."""

    def __init__(self, max_length: int = MAX_TEXT_CHARS, *, seed: Any = None) -> None:
        super().__init__(UnicodeText(max_length), seed=seed, stack=False)

    @property
    def max_length(self) -> int:
        """The longest JSON text of the whole list that shared memory holds."""
        return self.feature_space.max_length

    def __repr__(self) -> str:
        return f"TextList({self.max_length})"


class TextBatch(_spaces.Tuple):
    """``batch_space`` of a text space: ``n`` copies of it; a batch is the tuple of ``n`` values.

    A class of its own so that ``iterate`` yields the ``n`` values (gymnasium's ``Tuple``
    would split a batch per component once the text spaces have an ``iterate`` function).
    """


def _batch_text(space: UnicodeText | TextList, n: int = 1) -> TextBatch:
    batched = TextBatch(tuple(copy.deepcopy(space) for _ in range(n)), seed=copy.deepcopy(space.np_random))
    batched.seed(list(map(int, copy.deepcopy(space.np_random).integers(0, int(1e8), n))))
    return batched


def _iterate_batch(space: Any, items: Any) -> Iterator[Any]:
    if isinstance(items, str):
        raise TypeError(f"iterate({space!r}, ...) takes a batch of values (a tuple of them), not one string")
    return iter(items)


def _differing(spaces: Sequence[Any]) -> TextBatch:
    return TextBatch(spaces)


for _cls in (UnicodeText, TextList):
    _su.iterate.register(_cls)(_iterate_batch)
    _su.batch_space.register(_cls)(_batch_text)
    _su.batch_differing_spaces.register(_cls)(_differing)
_su.iterate.register(TextBatch)(_iterate_batch)


@_su.create_empty_array.register(TextList)
def _empty_text_list(space: TextList, n: int = 1, fn: Callable = np.zeros) -> tuple[tuple[str, ...], ...]:
    return tuple(() for _ in range(n))


@_shm.create_shared_memory.register(UnicodeText)
@_shm.create_shared_memory.register(TextList)
def _create_unicode_shm(space: UnicodeText | TextList, n: int = 1, ctx: Any = None):
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

    def __init__(self, data: np.ndarray, decode: Callable[[str], Any] | None = None) -> None:
        self._data = data
        self._decode = decode

    def __len__(self) -> int:
        return self._data.shape[0]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self)[i]
        row = self._data[i]
        text = "".join(map(chr, row[1 : 1 + int(row[0])]))
        return self._decode(text) if self._decode else text

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


@_shm.read_from_shared_memory.register(TextList)
def _read_text_list_shm(space: TextList, shared_memory: Any, n: int = 1) -> LiveTextBatch:
    data = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length + 1))
    return LiveTextBatch(data, lambda text: tuple(json.loads(text)) if text else ())


@_shm.write_to_shared_memory.register(TextList)
def _write_text_list_shm(space: TextList, index: int, value: Sequence[str], shared_memory: Any) -> None:
    text = json.dumps(list(value), ensure_ascii=False)
    if len(text) > space.max_length:
        raise ValueError(f"{space!r}: a list of {len(value)} strings ({len(text)} characters as JSON) does not fit")
    _write_unicode_shm(space.feature_space, index, text, shared_memory)


@_shm.write_to_shared_memory.register(UnicodeText)
def _write_unicode_shm(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
    size = space.max_length + 1
    dest = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    codes = np.fromiter((ord(c) for c in value), dtype=np.int32, count=len(value))
    row = dest[index * size : (index + 1) * size]
    row[0] = len(codes)
    row[1 : 1 + len(codes)] = codes
