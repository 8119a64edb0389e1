"""``spade bench learning``: does self-play make the default model better on environments
it never trained on?

1. **held-out split**: every single-agent environment of the seed suite's held-out split
   (:func:`spade_envs.evals.splits.is_heldout`; the seed suite so that the figure is the
   same on every machine whatever its local store holds; multi-agent games are left out,
   as the registry suite does), each at its EASIEST difficulty level (lowest ``difficulty`` of
   its ``PARAMETERS``; its defaults when it declares none), played on fixed episode seeds
   until at least ``heldout_episodes`` episodes (default 96) — with the default model;
2. **train**: ``spade selfplay`` (the ``cpu-smol`` preset unless told otherwise) on the
   train split, in a private registry under the bench's output folder (nothing is added
   to the user's registry), for at most ``train_budget_s`` seconds of rounds;
3. **held-out again** with the trained checkpoint: the same tasks, seeds and sampling
   seed (the same batches), so the two passes differ only by the weights.

Reported: ``success_before``, ``success_after``, their Wilson 95 % intervals, the
difference and whether it reaches ``target_delta`` (0.10), ``heldout_episodes``, the
held-out environments and levels, and per round the designer's acceptance (valid /
proposed) and mean regret, plus timings.

``spade bench learning [--json]`` calls :func:`run`; settings come from the environment:
``SPADE_BENCH_OUT`` (default ``runs/bench-learning``), ``SPADE_BENCH_TRAIN_S`` (training
budget, default 1800 s: 30 minutes), ``SPADE_BENCH_EPISODES`` (default 96), ``SPADE_BENCH_MODEL``
(default ``default``). ``--quick`` is a smoke run (tiny random model, 8 episodes, one
round; its figures mean nothing). Progress lines go to stderr.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, Callable

TARGET_DELTA = 0.10
#: the bench's training settings on top of the preset: the agent's learning is what is
#: measured, so the designer works in params mode only (cheap on CPU) and the agent
#: takes larger steps over more environments per round
BENCH_OVERRIDES = dict(params_share=1.0, designer_prompts=1, designer_group_size=2, envs_per_round=6,
                       agent_group_size=4, hint_plays=1, learning_rate=1e-4)
EPISODE_SEED0 = 70_000  #: held-out episode seeds start here (away from acceptance/training seeds)


def heldout_tasks(n_episodes: int, max_turns: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """The held-out tasks (see the module docstring) and a description of each environment."""
    from ..agents.api import PlayTask
    from ..games import is_multiplayer
    from ..registry.catalog import seed_records
    from .levels import easiest
    from .splits import is_heldout

    records = [r for r in seed_records() if is_heldout(str(r.env_id)) and not is_multiplayer(r)]
    if not records:
        raise RuntimeError("the held-out split has no single-agent environment")
    per_env = max(1, math.ceil(n_episodes / len(records)))
    tasks, envs = [], []
    for rec in sorted(records, key=lambda r: str(r.env_id)):
        kw = easiest(rec.source) if getattr(rec, "parent", None) is None else {}
        envs.append({"id": str(rec.env_id), "skill": rec.skill, "kwargs": kw, "episodes": per_env})
        tasks += [PlayTask(env_id=str(rec.env_id), seed=EPISODE_SEED0 + i, max_turns=max_turns, kwargs=dict(kw))
                  for i in range(per_env)]
    return tasks, envs


def _play(model: str, tasks: list[Any], *, max_new_tokens: int, seed: int) -> list[bool]:
    from ..agents import load_agent

    agent = load_agent(f"transformers:{model}", max_new_tokens=max_new_tokens, temperature=0.6, seed=seed)
    try:  # one batch per environment: its rows share the prompt prefix, which is encoded once
        won = [False] * len(tasks)
        for env_id in dict.fromkeys(t.env_id for t in tasks):
            idx = [i for i, t in enumerate(tasks) if t.env_id == env_id]
            for i, ep in zip(idx, agent.play([tasks[i] for i in idx])):
                won[i] = bool(ep.won)
        return won
    finally:
        agent.close()


def _rate(wins: list[bool]) -> dict[str, Any]:
    from ..evals.stats import wilson_interval

    k, n = sum(wins), len(wins)
    low, high = wilson_interval(k, n)
    return {"rate": k / n if n else 0.0, "ci95": [round(low, 4), round(high, 4)], "wins": k}


def run_learning_bench(*, out_dir: str | Path, model: str = "default", preset: str = "cpu-smol",
                       heldout_episodes: int = 96, train_budget_s: float = 600.0, rounds: int = 50,
                       max_turns: int = 2, max_new_tokens: int = 48, seed: int = 0,
                       overrides: dict[str, Any] | None = None,
                       say: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Run the bench (module docstring); returns the ``bench learning`` JSON object."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # shared cores: do not spin
    from .config import build_config
    from .loop import run

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tasks, envs = heldout_tasks(heldout_episodes, max_turns)
    say(f"bench learning: {len(tasks)} held-out episodes over {len(envs)} environments (easiest levels), "
        f"model {model}")
    before = _play(model, tasks, max_new_tokens=max_new_tokens, seed=seed + 1)
    t_before = time.perf_counter() - t0
    say(f"held-out before training: {sum(before)}/{len(before)} won [{t_before:.0f} s]")
    settings = dict(out_dir=str(out / "selfplay"), registry_path=str(out / "registry.sqlite3"), model=model,
                    rounds=rounds, seed=seed, max_turns=max_turns, agent_max_new_tokens=max_new_tokens)
    cfg = build_config(preset, **{**settings, **(overrides or {})})
    t1 = time.perf_counter()
    summary = run(cfg, on_phase=say, time_budget_s=train_budget_s,
                  on_round=lambda row: say(f"round {row['round']}: valid {row.get('valid')}/{row.get('proposed')} "
                                           f"regret {row.get('mean_regret')} reward {row.get('agent_reward')} "
                                           f"[{row.get('round_s')} s]"))
    t_train = time.perf_counter() - t1
    trained = str(Path(summary["checkpoint"]) / "model")
    t2 = time.perf_counter()
    after = _play(trained, tasks, max_new_tokens=max_new_tokens, seed=seed + 1)
    t_after = time.perf_counter() - t2
    say(f"held-out after training: {sum(after)}/{len(after)} won [{t_after:.0f} s]")
    b, a = _rate(before), _rate(after)
    from .loop import _read_rows

    per_round = [{"round": r["round"], "proposed": r.get("proposed", 0), "valid": r.get("valid", 0),
                  "acceptance": r.get("valid_rate"), "mean_regret": r.get("mean_regret"),
                  "agent_reward": r.get("agent_reward"), "registered_new": r.get("registered_new", 0)}
                 for r in _read_rows(summary["metrics"])]
    per_env = []
    for env in envs:
        idx = [i for i, t in enumerate(tasks) if t.env_id == env["id"]]
        per_env.append({**env, "wins_before": sum(before[i] for i in idx), "wins_after": sum(after[i] for i in idx)})
    delta = a["rate"] - b["rate"]
    return {
        "bench": "learning", "model": model, "preset": preset,
        "success_before": round(b["rate"], 4), "success_after": round(a["rate"], 4),
        "success_before_ci95": b["ci95"], "success_after_ci95": a["ci95"],
        "delta_success": round(delta, 4), "target_delta": TARGET_DELTA, "target_met": delta >= TARGET_DELTA,
        "heldout_episodes": len(tasks), "heldout_envs": per_env, "rounds": per_round,
        "registered": summary["registered"], "checkpoint": summary["checkpoint"],
        "stopped_by_budget": summary.get("stopped_by_budget"),
        "eval_before_s": round(t_before, 1), "train_s": round(t_train, 1), "eval_after_s": round(t_after, 1),
        "total_s": round(time.perf_counter() - t0, 1), "out_dir": str(out),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """``spade bench learning`` (settings: module docstring)."""
    import sys

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    env = os.environ
    out = env.get("SPADE_BENCH_OUT", "runs/bench-learning")
    if quick:
        return {k: v for k, v in run_learning_bench(
            out_dir=out, model="tiny-random", preset="cpu-tiny", heldout_episodes=8, train_budget_s=0, rounds=1,
            max_turns=1, max_new_tokens=4, overrides={"tensorboard": False}, say=say).items() if k != "bench"}
    result = run_learning_bench(out_dir=out, model=env.get("SPADE_BENCH_MODEL", "default"), overrides=BENCH_OVERRIDES,
                                heldout_episodes=int(env.get("SPADE_BENCH_EPISODES", "96")),
                                train_budget_s=float(env.get("SPADE_BENCH_TRAIN_S", "1800")), say=say)
    return {k: v for k, v in result.items() if k != "bench"}
