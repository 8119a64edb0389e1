"""Multi-process helpers (accelerate/DDP): shard work across ranks, gather results,
run registry/checkpoint writes on the main process only and share their result.

With one process every helper is a plain call. Every rank runs the same orchestration
with the same ``random.Random`` state; only generation work is split (each rank plays
or generates its contiguous slice and the results are gathered in order). Anything
decided by wall clock or by a sandbox deadline (acceptance verdicts, hint resolution,
the ``--time-budget`` stop) could differ between ranks: it is decided on the main
process and broadcast (:func:`on_main`, :func:`from_main`), so all ranks keep identical
replay buffers and ledgers and reach the same collectives in the same order.

Rule for collectives: every helper here is called by EVERY rank at the same point of
the program; ``map_sharded`` calls ``fn`` on every rank, also with an empty slice.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")


def world(acc: Any) -> tuple[int, int]:
    """``(num_processes, process_index)`` (1, 0 without an accelerator)."""
    if acc is None:
        return 1, 0
    return int(acc.num_processes), int(acc.process_index)


def is_main(acc: Any) -> bool:
    return acc is None or bool(acc.is_main_process)


def slice_for(n: int, size: int, rank: int) -> tuple[int, int]:
    """The contiguous ``[start, end)`` of ``n`` items that ``rank`` of ``size`` handles."""
    per, extra = divmod(n, size)
    start = rank * per + min(rank, extra)
    return start, start + per + (1 if rank < extra else 0)


def map_sharded(acc: Any, items: Sequence[Any], fn: Callable[[list[Any]], list[T]]) -> list[T]:
    """``fn`` over this rank's slice of ``items``; the results of all ranks, in order."""
    size, rank = world(acc)
    if size == 1:
        return fn(list(items))
    from accelerate.utils import gather_object

    start, end = slice_for(len(items), size, rank)
    local = fn(list(items[start:end]))  # also when empty: fn may itself be a collective
    parts = gather_object([local])
    return [x for part in parts for x in part]


def gather_rows(acc: Any, local: Sequence[T]) -> list[T]:
    """Every rank's ``local`` list concatenated in rank order (the rows of a sharded step)."""
    size, _ = world(acc)
    if size == 1:
        return list(local)
    from accelerate.utils import gather_object

    return [x for part in gather_object([list(local)]) for x in part]


def on_main(acc: Any, fn: Callable[[], T]) -> T:
    """Run ``fn`` on the main process only (registry, checkpoint, metrics writes) and give
    every rank its return value."""
    size, _ = world(acc)
    if size == 1:
        return fn()
    from accelerate.utils import broadcast_object_list

    box = [fn() if is_main(acc) else None]
    broadcast_object_list(box, from_process=0)
    return box[0]


def from_main(acc: Any, value: T) -> T:
    """The main process's ``value`` on every rank (its decision wins)."""
    size, _ = world(acc)
    if size == 1:
        return value
    from accelerate.utils import broadcast_object_list

    box = [value if is_main(acc) else None]
    broadcast_object_list(box, from_process=0)
    return box[0]


class ShardedBackend:
    """A generation backend whose ``chat``/``generate`` split the batch across ranks."""

    def __init__(self, inner: Any, acc: Any) -> None:
        self.inner, self.acc = inner, acc
        self.name, self.tokenizer = inner.name, inner.tokenizer
        self.token_level = getattr(inner, "token_level", False)
        self.masked_logprobs = bool(getattr(inner, "masked_logprobs", False))

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    @property
    def supports_json_schema(self) -> bool:
        from ..designer.params_mode import supports_json_schema

        return supports_json_schema(self.inner)

    def chat(self, conversations: list[list[dict]], **kw: Any) -> list[Any]:
        size, rank = world(self.acc)
        if kw.get("seed") is not None:
            kw = dict(kw, seed=int(kw["seed"]) + rank * 1_000_003)
        per_item = {k: v for k, v in kw.items() if k in ("tools", "json_schema") and isinstance(v, list)}
        common = {k: v for k, v in kw.items() if k not in per_item}
        items = [(c, {k: v[i] for k, v in per_item.items()}) for i, c in enumerate(conversations)]

        def part_chat(part: list[Any]) -> list[Any]:
            if not part:
                return []
            extra = {k: [x[1][k] for x in part] for k in per_item}
            return self.inner.chat([x[0] for x in part], **common, **extra)

        return map_sharded(self.acc, items, part_chat)

    def generate(self, prompts: list[list[int]], **kw: Any) -> list[Any]:
        size, rank = world(self.acc)
        if kw.get("seed") is not None:
            kw = dict(kw, seed=int(kw["seed"]) + rank * 1_000_003)
        return map_sharded(self.acc, prompts, lambda part: self.inner.generate(part, **kw) if part else [])

    def close(self) -> None:
        self.inner.close()
