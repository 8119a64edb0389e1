"""KV-cache reuse across the turns of a batch of episodes (the ``transformers`` backend).

A :class:`DecodeSession` holds ONE batched KV cache for the rows (episodes) that an
:class:`~spade_envs.agents.rollout.LLMAgent` plays together. Each turn a row's prompt is
its previous prompt, the tokens the model generated, and the environment's reply plus
the next generation prompt; only that new tail is encoded, the rest is read from the
cache. The prompt prefix all rows share at the start (system prompt, tool specs) is
encoded once, for one row, and copied to every row.

Layout of the cache (width grows to the right; every row has the same width)::

    [ shared prefix | pad.. row tail 1 | pad.. gen 1 | pad.. tail 2 | pad.. gen 2 ... ]

Pads are masked out and never attended to by a real token; positions are explicit per
row and continue from the row's last real token, so every real token sees exactly the
keys and positions it would see in one unpadded forward pass. Logprobs are therefore
those of the plain sequence (checked against a full forward in the tests). Rows that
finish generating early keep stepping with a masked pad (their cache must stay aligned
with the batch), swapped behind the rows still generating so that attention skips them
(:func:`_decode`); rows whose episode ended are dropped before the next turn. The token
sampled last in a turn is not fed to the model in that turn: it opens the row's next
tail, so ``consumed`` is exactly what the cache holds.

Speed (models whose layers are all full attention, with ``sdpa``/``eager`` attention):
the cache is a :class:`~.growing_cache.GrowingCache` (appends in place, room reserved
for the whole turn up front), the padding mask is a preallocated buffer, and masks are
handed to the model as 4-D additive masks (no per-step concatenation, no re-expansion).
A turn's tails are prefilled in chunks of similar length (the backend's
``max_pad_ratio`` rule), each computing only its own width and writing right-aligned
into the shared layout, so one long tail does not make every row encode its padding.
Rows whose whole sequence is identical (the rows of a GRPO group at their first turn)
are computed once and their keys, values and logits copied to the others; a fresh
batch whose tails share long prefixes (plain and hinted plays) is prefilled as heads,
then rests, so the shared heads are computed once (:mod:`.tail_split`).
Other models keep ``DynamicCache``, 2-D masks and one prefill per turn.

A session is used only when the caller gives the same rows (by key) whose prompts extend
what the session has consumed; anything else (a new row, a prompt that does not extend,
more rows than one batch) falls back to encoding from scratch. A session made with a
Prefix Sliding window (``DecodeSession(window=W, prefix=P)``) also tracks each column's
position, masks by the window and drops the columns the window left behind, so its cache
stays bounded over the whole episode (:mod:`.session_window`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .growing_cache import GROWTH, GrowingCache, growing_cache_for
from .sampling import sample
from .session_window import compact, visible, width_bound
from .tail_split import common_prefix_len, split_tails

FOUR_D_ATTENTION = {"sdpa", "eager", "spade_gqa_sdpa"}  # implementations that take an additive 4-D mask


def _new_stats() -> dict[str, float]:
    return {"encoded_tokens": 0, "reused_tokens": 0, "rebuilds": 0, "computed_tokens": 0, "cache_growths": 0,
            "prefill_chunks": 0, "prefill_s": 0.0, "compactions": 0, "peak_width": 0}


@dataclass
class DecodeSession:
    """The persistent state of one batch of episodes (see the module docstring)."""

    keys: list[Any] = field(default_factory=list)  # caller's key of each batch row
    consumed: list[list[int]] = field(default_factory=list)  # tokens in the cache, per row
    cache: Any = None
    mask: Any = None  # [rows, capacity] bool; columns < width say which cache columns are real
    width: int = 0  # columns in the cache
    last_pos: Any = None  # [rows, 1] position of each row's last real token
    stats: dict[str, float] = field(default_factory=_new_stats)  # prefill_s: wall time (exact on CPU)
    # Prefix Sliding across turns (:mod:`.session_window`); window None: no window
    window: int | None = None  # W
    prefix: int | None = None  # P (None: each row's first prompt)
    pos: Any = None  # [rows, capacity] long: absolute position of each cache column, -1 for a pad
    prefix_end: Any = None  # [rows, 1] long: positions below it are never dropped

    def rows_for(self, keys: list[Any], prompts: list[list[int]]) -> list[int] | None:
        """The session row of each key when the session can continue (rows it holds, a
        subset in any order: decoding moves rows that stopped behind the live ones, whose
        new prompts extend what the cache holds); else None."""
        if self.cache is None or not keys or len(set(keys)) != len(keys):
            return None
        index = {k: i for i, k in enumerate(self.keys)}
        if any(k not in index for k in keys):
            return None
        rows = [index[k] for k in keys]
        for r, p in zip(rows, prompts):
            have = self.consumed[r]
            if len(p) <= len(have) or p[: len(have)] != have:
                return None
        return rows

    def keep(self, rows: list[int]) -> None:
        """Keep only ``rows`` (ascending; the others' episodes ended)."""
        import torch

        if rows == list(range(len(self.keys))):
            return
        sel = torch.tensor(rows, dtype=torch.long, device=self.mask.device)
        self.cache.batch_select_indices(sel)
        self.mask, self.last_pos = self.mask[sel], self.last_pos[sel]
        if self.window is not None:
            self.pos, self.prefix_end = self.pos[sel], self.prefix_end[sel]
        self.keys = [self.keys[r] for r in rows]
        self.consumed = [self.consumed[r] for r in rows]

    def swap_rows(self, a: list[int], b: list[int]) -> None:
        """Exchange rows ``a[i]`` and ``b[i]`` (cache columns, mask, positions, keys)."""
        import torch

        ia = torch.tensor(a, dtype=torch.long, device=self.mask.device)
        ib = torch.tensor(b, dtype=torch.long, device=self.mask.device)
        self.cache.swap_rows(ia, ib, self.width)
        for name in ("mask", "last_pos") + (("pos", "prefix_end") if self.window is not None else ()):
            t = getattr(self, name)
            t[ia], t[ib] = t[ib].clone(), t[ia].clone()
        for lst in (self.keys, self.consumed):
            for i, j in zip(a, b):
                lst[i], lst[j] = lst[j], lst[i]

    def reserve(self, needed: int) -> None:
        """Room for ``needed`` columns in the mask buffer and the cache (geometric growth)."""
        cap = self.mask.shape[1]
        if needed > cap:
            grown = self.mask.new_zeros((self.mask.shape[0], max(needed, int(cap * GROWTH))))
            grown[:, :cap] = self.mask
            self.mask = grown
            if self.window is not None:
                pos = self.pos.new_full(grown.shape, -1)
                pos[:, :cap] = self.pos
                self.pos = pos
        if isinstance(self.cache, GrowingCache):
            self.cache.reserve(needed)

    def additive_mask(self, dtype: Any) -> Any:
        """The decode-step mask ``[rows, 1, 1, width]``: 0 where attended, dtype-min elsewhere."""
        import torch

        real = self.mask[:, None, None, : self.width]
        if self.window is not None:
            real = real & visible(self.pos[:, : self.width], self.prefix_end, self.last_pos, self.window)[:, None]
        return torch.zeros(real.shape, dtype=dtype, device=real.device).masked_fill_(~real, torch.finfo(dtype).min)


def _chunk_mask(real: Any, w: int, dtype: Any, window: Any = None) -> Any:
    """``[rows, 1, w, K]`` additive mask for a chunk whose ``w`` tokens are the last ``w``
    of ``K`` columns: earlier real columns, causal among the new ones, and within
    ``window`` (``[rows, w, K]`` bool, Prefix Sliding) when given; a pad query also sees
    itself, so no query row is fully masked."""
    import torch

    rows, k = real.shape
    allowed = real[:, None, None, :].expand(rows, 1, w, k).clone()
    new = torch.ones((w, w), dtype=torch.bool, device=real.device)
    allowed[..., k - w:] &= new.tril()
    if window is not None:
        allowed &= window[:, None]
    allowed[..., k - w:] |= torch.eye(w, dtype=torch.bool, device=real.device)
    return torch.zeros(allowed.shape, dtype=dtype, device=real.device).masked_fill_(~allowed, torch.finfo(dtype).min)


class SessionTurn:
    """One ``generate`` call on a :class:`DecodeSession` for a ``TransformersBackend``."""

    def __init__(self, backend: Any, session: DecodeSession) -> None:
        self.b, self.s = backend, session
        self.model = backend.model
        self.dtype = next(self.model.parameters()).dtype

    @property
    def four_d(self) -> bool:
        impl = getattr(self.model.config, "_attn_implementation", None)
        return isinstance(self.s.cache, GrowingCache) and impl in FOUR_D_ATTENTION

    def start(self, keys: list[Any], prompts: list[list[int]], room: int) -> list[list[int]]:
        """A fresh cache holding the prompts' shared prefix (encoded once); the tails."""
        import torch
        from transformers import DynamicCache

        s, device, n = self.s, self.b.device, len(prompts)
        shared = min(common_prefix_len(prompts), min(len(p) for p in prompts) - 1)
        s.cache = growing_cache_for(self.model.config) or DynamicCache(config=self.model.config)
        s.keys, s.stats["rebuilds"] = keys, s.stats["rebuilds"] + 1
        s.mask = torch.zeros((n, 0), dtype=torch.bool, device=device)
        s.width = 0
        s.last_pos = torch.full((n, 1), -1, dtype=torch.long, device=device)
        if s.window is not None:  # the first prompt (or P) is never dropped
            s.pos = torch.full((n, 0), -1, dtype=torch.long, device=device)
            ends = [len(p) if s.prefix is None else s.prefix for p in prompts]
            s.prefix_end = torch.tensor(ends, dtype=torch.long, device=device)[:, None]
        s.reserve(room)
        if shared > 0:
            ids = torch.tensor([prompts[0][:shared]], dtype=torch.long, device=device)
            with torch.inference_mode():
                self.model(input_ids=ids, position_ids=torch.arange(shared, device=device)[None],
                           past_key_values=s.cache, use_cache=True, logits_to_keep=1)
            if n > 1:
                s.cache.batch_repeat_interleave(n)
            s.mask[:, :shared] = True
            if s.window is not None:
                s.pos[:, :shared] = torch.arange(shared, device=device)
            s.width = shared
            s.last_pos += shared
            s.stats["encoded_tokens"] += shared
            s.stats["computed_tokens"] += shared
            s.stats["reused_tokens"] += shared * (n - 1)
        s.consumed = [list(p[:shared]) for p in prompts]
        return [p[shared:] for p in prompts]

    def prefill(self, tails: list[list[int]], windowed: bool = False) -> Any:
        """Encode every row's tail (right-aligned in ``W`` new columns); next-token logits.
        ``windowed``: apply the session's Prefix Sliding window to the tails' queries (a
        continued turn; a first prompt attends causally to all of itself)."""
        import torch

        s, device, n = self.s, self.b.device, len(tails)
        lengths = [len(t) for t in tails]
        width, start = max(lengths), s.width
        # rows whose whole sequence so far is the same (the rows of a GRPO group at their
        # first turn) get the same keys, values and logits: compute one, copy to the rest
        first: dict[tuple[int, ...], int] = {}
        rep = [first.setdefault((*s.consumed[r], -1, *tails[r]), r) for r in range(n)] if self.four_d else list(range(n))
        ids = torch.full((n, width), self.b.pad_id, dtype=torch.long)
        offsets = torch.zeros((n, width), dtype=torch.long)
        for row, t in enumerate(tails):
            ids[row, width - len(t):] = torch.tensor(t, dtype=torch.long)
            offsets[row, width - len(t):] = torch.arange(1, len(t) + 1)
            s.mask[row, start + width - len(t): start + width] = True
            s.consumed[row].extend(t)
        ids, offsets = ids.to(device), offsets.to(device)
        positions = (s.last_pos + offsets).clamp(min=0)
        s.last_pos = s.last_pos + torch.tensor(lengths, device=device)[:, None]
        s.width = end = start + width
        if s.window is not None:
            s.pos[:, start:end] = torch.where(s.mask[:, start:end], positions, torch.full_like(positions, -1))
        s.stats["encoded_tokens"] += sum(lengths[r] for r in range(n) if rep[r] == r)
        if not self.four_d:
            out = self.model(input_ids=ids, attention_mask=s.mask[:, :end].long(), position_ids=positions,
                             past_key_values=s.cache, use_cache=True, logits_to_keep=1)
            s.stats["computed_tokens"] += n * width
            s.stats["prefill_chunks"] += 1
            return out.logits[:, -1, :].float()
        unique = [r for r in range(n) if rep[r] == r]
        order = sorted(unique, key=lambda r: lengths[r])
        chunks = self.b._chunks(order, lengths) if len(unique) > 1 else [order]
        if len(chunks) == 1 and len(unique) == n:
            chunks = [list(range(n))]
        logits = None
        for chunk in chunks:
            w = max(lengths[r] for r in chunk)
            idx = torch.tensor(chunk, dtype=torch.long, device=device)
            whole = chunk == list(range(n))
            cache = s.cache if whole else s.cache.rows(chunk, end - w, n, device)
            window = None
            if windowed and s.window is not None:
                window = visible(s.pos[idx, :end], s.prefix_end[idx], positions[idx, width - w:], s.window)
            out = self.model(input_ids=ids[idx, width - w:], attention_mask=_chunk_mask(s.mask[idx, :end], w, self.dtype,
                                                                                         window),
                             position_ids=positions[idx, width - w:], past_key_values=cache, use_cache=True,
                             logits_to_keep=1).logits[:, -1, :].float()
            if logits is None:
                logits = out.new_empty((n, out.shape[-1]))
            logits[idx] = out
            s.stats["computed_tokens"] += len(chunk) * w
            s.stats["prefill_chunks"] += 1
        copies = [r for r in range(n) if rep[r] != r]
        if copies:
            dst = torch.tensor(copies, dtype=torch.long, device=device)
            src = torch.tensor([rep[r] for r in copies], dtype=torch.long, device=device)
            s.cache.copy_rows(src, dst, start, end)
            logits[dst] = logits[src]
            s.stats["reused_tokens"] += sum(lengths[r] for r in copies)
        if chunks != [list(range(n))]:
            s.cache.set_length(end)
        return logits

    def step(self, step_ids: Any, feed: Any, live: int | None = None) -> Any:
        """Feed one token per row (``feed`` False: a masked pad); next-token logits.
        ``live``: rows ``live...`` stopped (``feed`` is False there) and attention skips
        them (see :mod:`.gqa_attention`)."""
        import torch

        s = self.s
        if s.window is not None and s.width + 1 > width_bound(s):
            compact(s)
        s.reserve(s.width + 1)
        s.mask[:, s.width] = feed
        s.last_pos = s.last_pos + feed.long()[:, None]
        if s.window is not None:
            s.pos[:, s.width] = torch.where(feed, s.last_pos[:, 0], torch.full_like(s.last_pos[:, 0], -1))
        s.width += 1
        s.stats["peak_width"] = max(s.stats["peak_width"], s.width)
        extra = {"live_rows": live} if live is not None and self.four_d else {}
        mask = s.additive_mask(self.dtype) if self.four_d else s.mask[:, : s.width].long()
        return self.model(input_ids=step_ids[:, None], attention_mask=mask, position_ids=s.last_pos.clamp(min=0),
                          past_key_values=s.cache, use_cache=True, **extra).logits[:, -1, :].float()


def generate_in_session(backend: Any, session: DecodeSession, keys: list[Any], prompts: list[list[int]],
                        max_new_tokens: int, temperature: float, generator: Any) -> tuple[list, list, list]:
    """Tokens, logprobs and finish reasons for ``prompts``, continuing ``session`` when it
    can continue (else starting it afresh)."""
    import torch

    turn = SessionTurn(backend, session)
    if backend.max_positions is not None:
        max_new_tokens = max(0, min(max_new_tokens, backend.max_positions - max(len(p) for p in prompts)))
    t0 = time.perf_counter()  # prefill_s: the shared prefix (when started here) and the tails
    n = len(prompts)
    caller = list(range(n))  # caller's index of each row, in the session's row order
    rows = session.rows_for(keys, prompts)
    if rows is not None:
        caller.sort(key=lambda r: rows[r])
        session.keep(sorted(rows))
        prompts = [prompts[r] for r in caller]
        tails = [p[len(c):] for p, c in zip(prompts, session.consumed)]
        session.stats["reused_tokens"] += sum(len(c) for c in session.consumed)
        if session.window is not None:
            with torch.inference_mode():  # drop what the window left behind before reserving room
                compact(session)
    else:
        tails = turn.start(keys, prompts, max(len(p) for p in prompts) + max_new_tokens)
    # a fresh batch whose tails share long prefixes (plain and hinted plays): heads, then rests
    split = split_tails(tails) if rows is None and turn.four_d else None
    growths_before = session.cache.growths if isinstance(session.cache, GrowingCache) else 0
    steps = [tails] if split is None else list(split)
    session.reserve(session.width + sum(max(len(t) for t in part) for part in steps) + max_new_tokens)
    tokens: list[list[int]] = [[] for _ in range(n)]
    logps: list[list[float]] = [[] for _ in range(n)]
    finish = ["length"] * n
    with torch.inference_mode():
        for part in steps:
            logits = turn.prefill(part, windowed=rows is not None)
        session.stats["peak_width"] = max(session.stats["peak_width"], session.width)
        session.stats["prefill_s"] += time.perf_counter() - t0
        _decode(turn, logits, max_new_tokens, temperature, generator, caller, tokens, logps, finish)
    if isinstance(session.cache, GrowingCache):
        session.stats["cache_growths"] += session.cache.growths - growths_before
    return tokens, logps, finish


def _decode(turn: SessionTurn, logits: Any, max_new_tokens: int, temperature: float, generator: Any,
            caller: list[int], tokens: list, logps: list, finish: list) -> None:
    """The decode loop of one turn. With a 4-D-mask model the live rows are kept at the
    front of the batch: rows that stop are swapped behind the live ones (``caller``
    follows them), so a step's attention reads the live rows' cache only. Otherwise they
    stay in place and step with a masked pad."""
    import torch

    session, backend, n = turn.s, turn.b, len(caller)
    pad = torch.full((n,), backend.pad_id, dtype=torch.long, device=backend.device)
    active = [True] * n  # per row of the batch: still generating
    live = n  # rows live... are all stopped (only shrinks with a 4-D-mask model)
    for step in range(max_new_tokens):
        nxt, chosen = sample(logits[:live], temperature, generator)
        stopped = torch.isin(nxt, backend._stop).tolist()
        for p, (tok, lp, st) in enumerate(zip(nxt.tolist(), chosen.tolist(), stopped)):
            if active[p]:
                row = caller[p]
                tokens[row].append(tok)
                logps[row].append(lp)
                if st:
                    finish[row] = "stop"
                    active[p] = False  # it keeps its stop token for the next turn's tail
        going = [p for p in range(live) if active[p]]
        if step == max_new_tokens - 1 or not going:
            break
        src = list(range(live))  # the row of ``nxt`` each row feeds
        if turn.four_d and len(going) < live:
            holes = [p for p in range(len(going)) if not active[p]]
            movers = [p for p in going if p >= len(going)]
            if holes:
                session.swap_rows(holes, movers)
            for i, j in zip(holes, movers):
                caller[i], caller[j] = caller[j], caller[i]
                src[i] = j
            live = len(going)
            src = src[:live]
            active = [True] * live + [False] * (n - live)
        feed = torch.tensor(active, dtype=torch.bool, device=backend.device)
        ids = pad.clone()
        ids[:live] = torch.where(feed[:live], nxt[torch.tensor(src, dtype=torch.long, device=nxt.device)], pad[:live])
        for p in range(live):
            if active[p]:
                session.consumed[p].append(tokens[caller[p]][-1])
        logits = turn.step(ids, feed, live if turn.four_d else None)
