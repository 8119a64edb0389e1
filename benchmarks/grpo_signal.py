"""How much learning signal GRPO gets from the train split, per difficulty level.

GRPO learns from a group of plays of one task only when the group's rewards differ: a
group the agent loses every time (or wins every time) has zero advantage and adds no
gradient. This plays the environments self-play trains on (the train split's seeds of
``--preset``'s skills, at ``--levels`` of their ladders: ``seed_levels="ladder"``) with the
untrained model, ``--group`` plays per task as a GRPO group does (temperature 0.6, the
learning bench's sampling), and reports per level: the win rate, and the share of groups
with a nonzero advantage (some plays won, some lost), with Wilson 95 % intervals.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/grpo_signal.py --tasks 4 --group 4 --json

Nothing here is evaluated elsewhere: the held-out split is never played.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from typing import Any

SEED0 = 30_000  #: episode seeds (away from acceptance, training, screening and evaluation seeds)


def train_tasks(preset: str, tasks_per_env: int, group: int, max_turns: int,
                levels: set[int] | None = None) -> list[tuple[int, str, Any]]:
    """(level, group key, PlayTask) for every train-split seed entry at ``levels`` (all when None)."""
    from spade_envs.agents import PlayTask
    from spade_envs.selfplay.presets import build_config
    from spade_envs.selfplay.replay_buffer import train_seed_entries

    cfg = build_config(preset, seed_levels="ladder", tensorboard=False)
    out = []
    for entry in train_seed_entries(cfg):
        level = int(entry.kwargs.get("difficulty", 0))
        if levels is not None and level not in levels:
            continue
        for i in range(tasks_per_env):
            key = f"{entry.key}#{SEED0 + i}"
            out += [(level, key, PlayTask(env_id=entry.env_id, seed=SEED0 + i, max_turns=max_turns,
                                          kwargs=dict(entry.kwargs))) for _ in range(group)]
    return out


def summarise(rows: list[tuple[int, str, bool]]) -> list[dict[str, Any]]:
    """Per level: plays, win rate, groups, share of groups with a nonzero advantage."""
    from spade_envs.evals.stats import wilson_interval

    by_level: dict[int, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for level, key, won in rows:
        by_level[level][key].append(won)
    table = []
    for level in sorted(by_level):
        groups = by_level[level]
        wins = [w for g in groups.values() for w in g]
        mixed = [0 < sum(g) < len(g) for g in groups.values()]
        k, n = sum(mixed), len(mixed)
        table.append({"level": level, "plays": len(wins), "win_rate": round(sum(wins) / len(wins), 4),
                      "groups": n, "groups_with_signal": k, "signal_share": round(k / n, 4),
                      "signal_ci95": [round(x, 4) for x in wilson_interval(k, n)]})
    return table


def level_set(text: str) -> set[int] | None:
    """``--levels``: ``all`` or comma-separated non-negative integers."""
    if text == "all":
        return None
    try:
        levels = {int(x) for x in text.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'all' or levels like 0,1, got {text!r}") from None
    if min(levels) < 0:
        raise argparse.ArgumentTypeError("levels are 0 or more")
    return levels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--preset", default="cpu-smol")
    ap.add_argument("--tasks", type=int, default=4, help="tasks (episode seeds) per environment and level")
    ap.add_argument("--group", type=int, default=4, help="plays per task (a GRPO group)")
    ap.add_argument("--levels", type=level_set, default="0,1",
                    help="comma-separated difficulty levels ('all': every level)")
    ap.add_argument("--max-turns", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from spade_envs.selfplay import learning_sets as ls

    t0 = time.perf_counter()
    plan = train_tasks(args.preset, args.tasks, args.group, args.max_turns, args.levels)
    print(f"{len(plan)} plays ({len(plan) // args.group} groups of {args.group})", file=sys.stderr, flush=True)
    outcomes = ls.play(args.model, [t for _, _, t in plan], max_new_tokens=args.max_new_tokens, seed=1,
                       say=lambda s: print(s, file=sys.stderr, flush=True))
    table = summarise([(lv, key, o.won) for (lv, key, _), o in zip(plan, outcomes)])
    result = {"model": args.model, "preset": args.preset, "group": args.group, "max_turns": args.max_turns,
              "levels": table, "wall_s": round(time.perf_counter() - t0, 1)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{'level':>5} {'plays':>6} {'win rate':>9} {'groups':>7} {'with signal':>12}")
        for r in table:
            print(f"{r['level']:>5} {r['plays']:>6} {r['win_rate']:>9.3f} {r['groups']:>7} "
                  f"{r['groups_with_signal']:>5} ({r['signal_share']:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
