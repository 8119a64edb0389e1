"""What one batch of the designer bench's agent plays costs, three ways, in one run.

The designer bench's time floor is its frozen agent's plays (README, "Budget"). This
plays the batch the bench plays (its settings, :func:`~spade_envs.selfplay.designer_arm.frozen_agent`
and :class:`~spade_envs.selfplay.designer_arm.PointScorer`: ``--plays`` plain and
``--plays`` hinted episodes of each of the first ``--parents`` train-split parametric
parents at their default point, all in one batch) with:

- ``baseline``: float32 weights, tokens drawn by ``torch.multinomial`` (the sampler
  before ``agents/sampling.py`` drew with one random number a row);
- ``float32``: float32 weights, the shipped sampler (what the bench runs);
- ``bfloat16``: the frozen agent's weights cast to bfloat16, the shipped sampler;
- ``whole_tails``: as ``float32``, but each first turn prefilled as whole tails (no
  split at the prefix a plain play shares with its hinted twin, ``agents/tail_split.py``).

After an untimed warm-up of both weight copies, each variant plays the same tasks with
the same seeds on a fresh scorer (nothing cached), ``--repeats`` times, interleaved; the
medians, ``ratio_<variant>`` = baseline / variant and ``ratio_split`` = whole_tails /
float32 are printed (``--json``: one JSON object). Progress on stderr. ``--variants``
picks some (``float32`` always runs).

    .venv/bin/python benchmarks/designer_plays.py --parents 8 --plays 4 --repeats 2
    .venv/bin/python benchmarks/designer_plays.py --variants whole_tails --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


@contextmanager
def whole_tails() -> Iterator[None]:
    """Prefill every first turn as whole tails inside the block (no head/rest split)."""
    from spade_envs.agents import kv_session

    shipped = kv_session.split_tails
    kv_session.split_tails = lambda tails: None
    try:
        yield
    finally:
        kv_session.split_tails = shipped


@contextmanager
def multinomial_sampler() -> Iterator[None]:
    """Draw with ``torch.multinomial`` inside the block (the baseline sampler)."""
    import torch

    from spade_envs.agents import sampling

    shipped = sampling.draw
    sampling.draw = lambda logp, g: torch.multinomial(logp.exp(), 1, generator=g).squeeze(-1)
    try:
        yield
    finally:
        sampling.draw = shipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parents", type=int, default=8)
    ap.add_argument("--plays", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--variants", default="baseline,bfloat16,whole_tails",
                    help="comma-separated, besides float32: baseline, bfloat16, whole_tails")
    a = ap.parse_args(argv)
    import torch

    from spade_envs.designer.params_mode import parametric_parents
    from spade_envs.selfplay.designer_arm import PointScorer, frozen_agent, fresh_copy
    from spade_envs.selfplay.designer_bench import DEFAULTS, arm_config
    from spade_envs.selfplay.splits import is_heldout
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    picked = {v.strip() for v in a.variants.split(",") if v.strip()}
    unknown = picked - {"baseline", "bfloat16", "whole_tails"}
    if unknown:
        ap.error(f"unknown variant(s): {', '.join(sorted(unknown))}")
    s = DEFAULTS
    cfg = arm_config(s, Path(tempfile.mkdtemp(prefix="spade-designer-plays-")), "trained")
    tr = SelfPlayTrainer(cfg)
    agent, model32 = frozen_agent(tr)
    model16 = fresh_copy(model32).to(torch.bfloat16) if "bfloat16" in picked else model32
    parents = [str(r.env_id) for r in parametric_parents(None) if not is_heldout(str(r.env_id))
               and (cfg.seed_skills is None or r.skill in cfg.seed_skills)][: a.parents]
    points = [(p, {}) for p in parents]
    for model in dict.fromkeys((model32, model16)):  # warm-up, not timed: first-call costs (imports, sandbox, kernels)
        agent.backend.model = model
        PointScorer(agent, tr.rollout.reward_of, plain=1, hint=1, max_turns=s.max_turns,
                    seed=s.seed + 1).score(points[:2])
    times: dict[str, list[float]] = {k: [] for k in ("baseline", "float32", "bfloat16", "whole_tails")
                                     if k == "float32" or k in picked}
    plays = 0
    for rep in range(a.repeats):
        for name in times:
            agent.backend.model = model16 if name == "bfloat16" else model32
            scorer = PointScorer(agent, tr.rollout.reward_of, plain=a.plays, hint=a.plays,
                                 max_turns=s.max_turns, seed=s.seed)
            t = time.perf_counter()
            if name == "baseline":
                with multinomial_sampler():
                    scorer.score(points)
            elif name == "whole_tails":
                with whole_tails():
                    scorer.score(points)
            else:
                scorer.score(points)
            times[name].append(time.perf_counter() - t)
            plays = scorer.plays
            print(f"[{rep + 1}/{a.repeats}] {name}: {plays} plays in {times[name][-1]:.1f} s", file=sys.stderr,
                  flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    out: dict[str, Any] = {"parents": parents, "plays_per_batch": plays, "repeats": a.repeats,
                           **{f"{k}_s": round(v, 2) for k, v in med.items()},
                           **{f"{k}_s_per_play": round(v / max(plays, 1), 3) for k, v in med.items()},
                           **{f"ratio_{k}": round(med["baseline"] / v, 3) for k, v in med.items()
                              if "baseline" in med and k not in ("baseline", "whole_tails")}}
    if "whole_tails" in med:
        out["ratio_split"] = round(med["whole_tails"] / med["float32"], 3)
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:24} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
