"""One check the vLLM-on-CPU tests share: how far are an engine's sampling logprobs from a
reference model's, teacher-forced on the same tokens?"""

from __future__ import annotations

from typing import Any


def worst_logprob_gap(model: Any, gens: Any) -> float:
    """Largest |engine - model| sampling logprob over the tokens of ``gens`` (each with
    ``prompt_token_ids``, ``token_ids`` and ``logprobs``), ``model`` teacher-forced at temperature 1."""
    import torch

    worst = 0.0
    with torch.no_grad():
        for g in gens:
            ids = torch.tensor([list(g.prompt_token_ids) + list(g.token_ids)])
            logits = model(ids).logits[0, len(g.prompt_token_ids) - 1:-1].float()
            ref = torch.log_softmax(logits, -1).gather(1, torch.tensor(g.token_ids).unsqueeze(1)).squeeze(1)
            worst = max(worst, float((ref - torch.tensor(g.logprobs)).abs().max()))
    return worst
