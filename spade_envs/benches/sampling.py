"""``spade bench sampling``: the sampler of a decode step against ``torch.multinomial``.

For decode batches of 1, 8 and 64 rows over the default model's vocabulary (49152), with
logits of a realistic spread at the presets' temperature 0.6, both samplers draw from the
same log-probabilities, interleaved so load from other processes hits both alike; the
median time per call is reported with ``ratio_speed_<rows>`` (multinomial / ours).
``max_abs_freq_error``: over 200k draws from a fixed 5-token distribution (one token of
probability 1e-4, one of 0), the largest gap between the observed frequency and the
probability (sampling noise is about 1e-3);
``zero_probability_drawn``: how often the token of probability 0 came up (must be 0).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

VOCAB = 49152
ROWS = (1, 8, 64)


def run(quick: bool = False) -> dict[str, Any]:
    import torch

    from spade_envs.agents.sampling import draw

    reps = 5 if quick else 30
    g = torch.Generator().manual_seed(0)
    out: dict[str, Any] = {"vocab": VOCAB, "repetitions": reps}
    for rows in ROWS:
        logp = torch.log_softmax(torch.randn(rows, VOCAB, generator=g) * 3 / 0.6, dim=-1)
        ours, theirs = [], []
        for _ in range(reps):
            t = time.perf_counter()
            draw(logp, g)
            ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            torch.multinomial(logp.exp(), 1, generator=g)
            theirs.append(time.perf_counter() - t)
        a, b = statistics.median(ours), statistics.median(theirs)
        out[f"ours_ms_{rows}"], out[f"multinomial_ms_{rows}"] = round(a * 1e3, 3), round(b * 1e3, 3)
        out[f"ratio_speed_{rows}"] = round(b / a, 2)
    probs = torch.tensor([0.5, 0.3, 0.2 - 1e-4, 1e-4, 0.0])
    n = 20_000 if quick else 200_000
    hits = torch.bincount(draw(probs.log().expand(n, -1).contiguous(), g), minlength=len(probs)) / n
    out["max_abs_freq_error"] = round(float((hits - probs).abs().max()), 5)
    out["zero_probability_drawn"] = int(hits[-1] * n)
    return out
