"""The regret landscape `spade bench designer` offers its designer, point by point.

The designer bench rewards a proposal by the regret its point earns from a FROZEN agent
(the untrained default model). If no point a designer can propose earns a regret above 0,
nothing can be learned but validity. This plays, with the bench's own pieces (its
settings, :func:`~spade_envs.selfplay.designer_arm.frozen_agent` and
:class:`~spade_envs.selfplay.designer_arm.PointScorer`: hinted plays on the plain plays'
seeds, the trainer's agent reward, the bench's ``max_turns`` and reply budget), every
parametric parent the bench offers (the train split's) at each level of its
``difficulty`` knob (other knobs at their defaults; ``--levels`` narrows the levels,
parents without the knob are played at their defaults), ``--plays`` plain and
``--plays`` hinted episodes per point, all points in one batch.

Prints a table (parent, level, plain wins, hinted wins, regret, in the frontier band:
0 < plain win rate < 1 and regret > 0) and the share of points with regret > 0 and in
the band; ``--json`` one JSON object; progress on stderr.

    nice -n 10 .venv/bin/python benchmarks/designer_landscape.py --levels 0 --plays 4
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def points(parents: list[Any], levels: list[int] | None) -> list[tuple[str, dict[str, Any]]]:
    """``(parent id, kwargs)`` of every point to play (see the module docstring)."""
    from spade_envs.parameters import schema_of

    out = []
    for rec in parents:
        spec = (schema_of(rec.source) or {}).get("properties", {}).get("difficulty")
        if not spec or "minimum" not in spec or "maximum" not in spec:
            out.append((str(rec.env_id), {}))
            continue
        for level in range(int(spec["minimum"]), int(spec["maximum"]) + 1):
            if levels is None or level in levels:
                out.append((str(rec.env_id), {"difficulty": level}))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", type=int, nargs="*", help="difficulty levels to play (default: all)")
    parser.add_argument("--plays", type=int, default=4, help="plain and hinted plays per point (the bench's 4)")
    parser.add_argument("--model", default=None, help="the agent's model (default: the bench's)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from spade_envs.designer.params_mode import parametric_parents
    from spade_envs.selfplay.design_params import train_parents
    from spade_envs.selfplay.designer_arm import PointScorer, frozen_agent
    from spade_envs.selfplay.designer_bench import DEFAULTS, arm_config
    from spade_envs.selfplay.trainer import SelfPlayTrainer

    t0 = time.perf_counter()
    s = DEFAULTS
    cfg = arm_config(s, Path(tempfile.mkdtemp(prefix="spade-landscape-")), "probe")
    if args.model:
        cfg.model = args.model
    print("building the trainer (the bench's settings) ...", file=sys.stderr, flush=True)
    trainer = SelfPlayTrainer(cfg)
    agent, _ = frozen_agent(trainer)
    ids = set(train_parents(trainer.registry, cfg.seed_skills))
    parents = [r for r in parametric_parents(trainer.registry) if str(r.env_id) in ids]
    todo = points(parents, args.levels)
    print(f"playing {len(todo)} points of {len(parents)} parents x {args.plays} plain + {args.plays} hinted ...",
          file=sys.stderr, flush=True)
    scorer = PointScorer(agent, trainer.rollout.reward_of, plain=args.plays, hint=args.plays,
                         max_turns=s.max_turns, seed=s.seed)
    rows = []
    for (parent, kw), sc in zip(todo, scorer.score(todo)):
        est = sc.estimate
        band = 0 < est.win_rate_plain < 1 and est.regret > 0
        rows.append({"parent": parent, "point": kw, "plain_wins": round(est.win_rate_plain * len(sc.plain)),
                     "hint_wins": round(est.win_rate_hint * len(sc.hint)), "plays": args.plays,
                     "win_rate_plain": est.win_rate_plain, "win_rate_hint": est.win_rate_hint,
                     "regret": est.regret, "frontier": band})
    n = len(rows) or 1
    summary = {"points": len(rows), "parents": len(parents), "plays": scorer.plays,
               "regret_positive_share": sum(r["regret"] > 0 for r in rows) / n,
               "frontier_share": sum(r["frontier"] for r in rows) / n,
               "plain_win_share": sum(r["plain_wins"] > 0 for r in rows) / n,
               "wall_s": round(time.perf_counter() - t0, 1),
               "settings": {"model": cfg.model, "max_turns": s.max_turns,
                            "agent_max_new_tokens": s.agent_max_new_tokens, "reward_mode": cfg.reward_mode}}
    if args.json:
        print(json.dumps({"bench": "designer_landscape", "summary": summary, "rows": rows}))
        return 0
    print("| parent | point | plain wins | hinted wins | regret | frontier |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['parent']} | {json.dumps(r['point'])} | {r['plain_wins']}/{r['plays']} | "
              f"{r['hint_wins']}/{r['plays']} | {r['regret']:.2f} | {'yes' if r['frontier'] else ''} |")
    print(f"points with regret > 0: {summary['regret_positive_share']:.0%}, in the frontier band: "
          f"{summary['frontier_share']:.0%}, won at least once plain: {summary['plain_win_share']:.0%} "
          f"({summary['plays']} plays, {summary['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
