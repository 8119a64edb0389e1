"""Prefix Sliding in the GRPO logprob computation (agent role, optional).

With ``prefix_sliding=[P, W]`` the agent samples through
:class:`~spade_envs.agents.prefix_sliding.PrefixSlidingCache` (first P tokens + last W),
and the trainer must score tokens under the same attention pattern, or the importance
ratio compares different distributions. :func:`install` wraps the trainer's
``_get_per_token_logps_and_entropies`` so the forward pass over prompt+completion uses
:func:`~spade_envs.agents.prefix_sliding_mask.prefix_sliding_attention_mask` (4-D,
padding folded in) instead of the 2-D padding mask. ``P = None`` takes each row's
prompt length (the cache's default: the prompt is the prefix).

Scope: the mask reproduces generation exactly for one generation call that starts from
the prompt (one agent turn, or a designer completion). In multi-turn episodes the rollout
re-prefills the whole conversation at each turn, so later turns saw everything up to
their own prompt; there the mask is an approximation (it slides over earlier turns too).
"""

from __future__ import annotations

from typing import Any


def install(trainer: Any, prefix_sliding: list[Any]) -> None:
    """Make ``trainer`` compute logprobs under the Prefix Sliding mask."""
    import torch

    from ..agents.prefix_sliding_mask import prefix_sliding_attention_mask

    prefix, window = prefix_sliding[0], int(prefix_sliding[1])
    original = trainer._get_per_token_logps_and_entropies

    def patched(model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, *args: Any, **kwargs: Any):
        if attention_mask.dim() != 2:
            return original(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
        seq = input_ids.size(1)
        plen = seq - logits_to_keep if prefix is None else int(prefix)
        dtype = next(model.parameters()).dtype
        masks = [prefix_sliding_attention_mask(seq, plen, window, padding_mask=attention_mask[i:i + 1], dtype=dtype)
                 for i in range(input_ids.size(0))]
        four_d = torch.cat(masks, dim=0)
        return original(model, input_ids, four_d, logits_to_keep, *args, **kwargs)

    trainer._get_per_token_logps_and_entropies = patched
