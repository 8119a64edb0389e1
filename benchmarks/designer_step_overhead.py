"""What the designer bench spends per arm step outside the proposals, the plays and the
GRPO step: the behaviour logprobs of the step's completions and the step's diagnostics
(KL to the start, sampled - scored logprob gap), before and after they were cut, in one run.

- ``baseline``: the behaviour logprobs teacher-forced under the schema mask (one batched
  forward a group), and the KL scored one completion at a time (a whole forward of its
  ~700-token prompt each): what every step did before;
- ``shipped``: the transformers backend's own sampling logprobs taken as they are
  (``Backend.masked_logprobs``: they are the masked, renormalised distribution it drew
  from), and the KL and the gap each one batched forward whose prompt runs once
  (``DesignerArm._kl_and_logprob_gap``).

Both work on the same proposals (one ``_design`` of the bench's trained arm, default
settings, the default model), ``--repeats`` times interleaved after an untimed warm-up;
the medians and ``ratio`` = baseline / shipped are printed (``--json``: one object).

    .venv/bin/python benchmarks/designer_step_overhead.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)

    from spade_envs.selfplay.designer_arm import DesignerArm, PointScorer, frozen_agent, token_logps
    from spade_envs.selfplay.designer_bench import DEFAULTS, arm_config
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    cfg = arm_config(DEFAULTS, Path(tempfile.mkdtemp(prefix="spade-step-overhead-")), "trained")
    tr = SelfPlayTrainer(cfg)
    agent, start = frozen_agent(tr)
    arm = DesignerArm("trained", tr, PointScorer(agent, tr.rollout.reward_of, plain=1, hint=1, max_turns=1, seed=0),
                      start)
    props, _ = tr._design(0)
    stored = tr.rollout.designer
    picked = [p for p in props if p.cid in stored and stored[p.cid].completion_ids][:arm.kl_samples]
    backend = tr.designer.backend

    def baseline() -> Any:
        backend.masked_logprobs = False
        try:
            tr._behaviour_logprobs(props)
        finally:
            backend.masked_logprobs = True
        for p in picked:
            s = stored[p.cid]
            token_logps(start, s.prompt_ids, s.completion_ids, cfg.temperature,
                        allowed=tr.constraints.allowed(s.prompt_ids, s.completion_ids))

    def shipped() -> Any:
        tr._behaviour_logprobs(props)
        arm._kl_and_logprob_gap(props)

    variants = {"baseline": baseline, "shipped": shipped}
    for fn in variants.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {k: [] for k in variants}
    for rep in range(a.repeats):
        for name, fn in variants.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
            print(f"[{rep + 1}/{a.repeats}] {name}: {times[name][-1]:.2f} s", file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"proposals": len(props), "kl_rows": len(picked), "prompt_tokens": [len(stored[p.cid].prompt_ids) for p in picked],
           "repeats": a.repeats, **{f"{k}_s": round(v, 3) for k, v in med.items()},
           "ratio": round(med["baseline"] / med["shipped"], 2)}
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:16} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
