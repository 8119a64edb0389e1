"""KV-cache reuse across the turns of a batch of episodes (the ``transformers`` backend).

A :class:`DecodeSession` holds ONE batched KV cache for the rows (episodes) that an
:class:`~spade_envs.agents.rollout.LLMAgent` plays together. Each turn a row's prompt is
its previous prompt, the tokens the model generated, and the environment's reply plus
the next generation prompt; only that new tail is encoded, the rest is read from the
cache. The prompt prefix all rows share at the start (system prompt, tool specs) is
encoded once, for one row, and copied to every row.

Layout of the cache (width grows to the right; every row has the same width)::

    [ shared prefix | pad.. row tail 1 | pad.. gen 1 | pad.. tail 2 | pad.. gen 2 ... ]

Pads are masked out by the 2-D attention mask and never attended to; positions are
explicit per row and continue from the row's last real token, so every real token sees
exactly the keys and positions it would see in one unpadded forward pass. Logprobs are
therefore those of the plain sequence (checked against a full forward in the tests).
Rows that finish generating early keep stepping with a masked pad (their cache must
stay aligned with the batch); rows whose episode ended are dropped before the next turn.
The token sampled last in a turn is not fed to the model in that turn: it opens the
row's next tail, so ``consumed`` is exactly what the cache holds.

A session is used only when the caller gives the same rows (by key) whose prompts extend
what the session has consumed; anything else (a new row, a prompt that does not extend,
Prefix Sliding, more rows than one batch) falls back to encoding from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


@dataclass
class DecodeSession:
    """The persistent state of one batch of episodes (see the module docstring)."""

    keys: list[Any] = field(default_factory=list)  # caller's key of each batch row
    consumed: list[list[int]] = field(default_factory=list)  # tokens in the cache, per row
    cache: Any = None
    attn: Any = None  # [rows, width] 0/1
    last_pos: Any = None  # [rows, 1] position of each row's last real token
    stats: dict[str, int] = field(default_factory=lambda: {"encoded_tokens": 0, "reused_tokens": 0, "rebuilds": 0})

    def matches(self, keys: list[Any], prompts: list[list[int]]) -> bool:
        """True when the session can continue: same rows (a subset, in order) whose new
        prompts extend what the cache holds."""
        if self.cache is None or not keys:
            return False
        index = {k: i for i, k in enumerate(self.keys)}
        if any(k not in index for k in keys):
            return False
        rows = [index[k] for k in keys]
        if rows != sorted(rows):
            return False
        for r, p in zip(rows, prompts):
            have = self.consumed[r]
            if len(p) <= len(have) or p[: len(have)] != have:
                return False
        return True

    def keep(self, keys: list[Any]) -> None:
        """Drop the rows not in ``keys`` (their episodes ended)."""
        import torch

        index = {k: i for i, k in enumerate(self.keys)}
        rows = [index[k] for k in keys]
        if rows == list(range(len(self.keys))):
            return
        sel = torch.tensor(rows, dtype=torch.long, device=self.attn.device)
        self.cache.batch_select_indices(sel)
        self.attn, self.last_pos = self.attn[sel], self.last_pos[sel]
        self.keys = [self.keys[r] for r in rows]
        self.consumed = [self.consumed[r] for r in rows]
