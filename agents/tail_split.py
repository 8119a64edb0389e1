"""Splitting a fresh batch's first tails where rows share a long prefix.

At a session's first turn every row's prompt is the shared prefix (encoded once by
:meth:`~.kv_session.SessionTurn.start`) and a *tail*. Tails of different rows often
share a long prefix of their own: an episode played plain and the same episode played
with a privileged hint (:func:`~.chat.add_hint` appends the hint to the first
observation, so both prompts agree up to the observation's end). Such a batch is
prefilled in two steps: every row's *head* (its longest prefix shared with another
row), where rows with the same head are computed once and copied
(:meth:`~.kv_session.SessionTurn.prefill` does that for identical sequences), then
every row's *rest*. Positions are explicit and every real token sees the same keys it
would see in one pass, so the logits are those of a single prefill up to float rounding.

:func:`split_tails` says where to cut, or None when cutting would save fewer than
``min_saved`` token computations (the second step costs one more model call and widens
the cache by the longest rest). :func:`common_prefix_len` is the one prefix measure: the
session's shared prefix (every row) and each head (a row and its sorted neighbour).
"""

from __future__ import annotations

MIN_SHARED = 16  # a head shorter than this is not worth its own column block
MIN_SAVED = 64  # token computations a split must save


def common_prefix_len(prompts: list[list[int]]) -> int:
    """Length of the longest token prefix shared by every prompt."""
    if not prompts:
        return 0
    first, n = prompts[0], min(len(p) for p in prompts)
    for i in range(n):
        t = first[i]
        if any(p[i] != t for p in prompts[1:]):
            return i
    return n


def split_tails(tails: list[list[int]], *, min_shared: int = MIN_SHARED,
                min_saved: int = MIN_SAVED) -> tuple[list[list[int]], list[list[int]]] | None:
    """``(heads, rests)`` with ``heads[r] + rests[r] == tails[r]`` and every rest non-empty,
    or None when no split saves ``min_saved`` token computations.

    A row's head is its longest prefix shared with any other row (at most all but its
    last token); a row that shares fewer than ``min_shared`` tokens with every other row
    keeps all but its last token in its head, so its cost is unchanged."""
    n = len(tails)
    if n < 2 or any(len(t) < 2 for t in tails):
        return None
    order = sorted(range(n), key=lambda r: tails[r])
    best = [0] * n  # in sorted order, the longest common prefix with any row is a neighbour's
    for a, b in zip(order, order[1:]):
        k = common_prefix_len([tails[a], tails[b]])
        best[a], best[b] = max(best[a], k), max(best[b], k)
    cut = [min(best[r], len(tails[r]) - 1) if best[r] >= min_shared else len(tails[r]) - 1 for r in range(n)]
    heads = [t[:c] for t, c in zip(tails, cut)]
    saved = sum(cut) - sum(len(h) for h in {tuple(h): h for h in heads}.values())
    whole = sum(len(t) for t in tails) - sum(len(t) for t in {tuple(t): t for t in tails}.values())
    if saved - whole < min_saved:  # identical whole tails are deduplicated without a split
        return None
    return heads, [t[c:] for t, c in zip(tails, cut)]
