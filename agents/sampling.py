"""Sampling one token per row with the exact logprob of what was sampled.

``log_softmax(logits / temperature)`` at the sampled token (the raw ``log_softmax`` when
greedy, ``temperature == 0``); no top-k/top-p, so the logprob is that of the
distribution the token was really drawn from (what a trainer's importance ratio needs).
"""

from __future__ import annotations

from typing import Any


def sample(logits: Any, temperature: float, generator: Any) -> tuple[Any, Any]:
    """Next tokens and their exact logprobs (after temperature; raw when greedy)."""
    import torch

    if temperature > 0:
        logp_all = torch.log_softmax(logits / temperature, dim=-1)
        nxt = torch.multinomial(logp_all.exp(), 1, generator=generator).squeeze(-1)
    else:
        logp_all = torch.log_softmax(logits, dim=-1)
        nxt = logp_all.argmax(dim=-1)
    return nxt, logp_all.gather(-1, nxt[:, None]).squeeze(-1)
