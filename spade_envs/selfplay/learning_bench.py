"""``spade bench learning``: does self-play make the default model better where nothing is
read off, and better than training on fixed environments?

1. **sets** (:mod:`.learning_sets`, each a fixed list of tasks and seeds): the held-out
   registry split at level 0 and at level 1 (reported apart: level 0 of the seed ladders
   may state the answer, level 1 does not), and an **external** set of reasoning-gym
   tasks at easy settings, chosen by a rule in code from a screening pass of the
   untrained model (5 % - 60 % won), at least 400 episodes on entries never screened;
2. **before**: the untrained model plays every set (sampling seed ``seed + 1``);
3. **self-play**: ``spade selfplay`` (``cpu-smol`` with :data:`BENCH_OVERRIDES`) on the
   train split, in a private registry under the bench's folder, for at most
   ``train_budget_s`` seconds of rounds, with the turn budget it is evaluated with
   (``max_turns``, :data:`.learning_sets.EVAL_MAX_TURNS`: every held-out reference plan
   at levels 0 and 1 fits; each held-out set reports ``reference_plans``, how many of
   its episodes are winnable in that budget);
4. **fixed-environment baseline**: the same agent, preset, GRPO settings and number of
   rounds with the designer off (``designer="off"``: the train split's seeds only, no
   proposals, no designer steps), in its own registry;
5. **after**: both checkpoints play every set with the same tasks, seeds and sampling
   seed, so each pair of passes differs only by the weights.

Per set: win rates with Wilson 95 % intervals, the exact McNemar p-value of the paired
episodes, format rate and accuracy given format, before and after. Per self-play round:
the share of proposals that land in the frontier band (0 < plain win rate < 1 and
regret > 0, measured when first played) and the share accepted. Nothing evaluated is
trained on: held-out ids are never sampled by the trainer, reasoning-gym tasks are not
registry environments; the bench checks what each trainer played (``trained_on_evaluated``).

``spade bench learning [--json]`` calls :func:`run`; settings from the environment:
``SPADE_BENCH_OUT`` (``runs/bench-learning``), ``SPADE_BENCH_TRAIN_S`` (self-play budget,
900 s), ``SPADE_BENCH_EPISODES`` (held-out episodes per level, 48),
``SPADE_BENCH_EXTERNAL`` (external episodes, 400), ``SPADE_BENCH_SCREEN`` (screening
episodes per reasoning-gym task, 4), ``SPADE_BENCH_MODEL`` (``default``),
``SPADE_BENCH_BASELINE`` (``1``; ``0`` skips the fixed-environment baseline),
``SPADE_BENCH_SEED_LEVELS`` (the train split's levels; the preset's ``easiest`` unless set,
``ladder`` is every level).
``--quick`` is a smoke run (tiny random model, a few episodes, one round; its figures
mean nothing). Progress lines go to stderr.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from . import learning_sets as ls

TARGET_DELTA = 0.05
TARGET_P = 0.05
#: the bench's training settings on top of the preset: the designer works in params mode
#: only (cheap on CPU) and the agent takes larger steps over more environments per round
BENCH_OVERRIDES = dict(params_share=1.0, designer_prompts=1, designer_group_size=2, envs_per_round=6,
                       agent_group_size=4, hint_plays=1, learning_rate=1e-4)
SETS = ("heldout_level0", "heldout_level1", "external")
EPISODE_SEED0 = ls.EPISODE_SEED0


def heldout_tasks(n_episodes: int, max_turns: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """The held-out tasks at level 0 (see :func:`.learning_sets.heldout_tasks`)."""
    tasks, envs = ls.heldout_tasks(0, n_episodes, max_turns)
    if not tasks:
        raise RuntimeError("the held-out split has no single-agent environment")
    return tasks, envs


def _play(model: str, tasks: list[Any], *, max_new_tokens: int, seed: int) -> list[bool]:
    return [o.won for o in ls.play(model, tasks, max_new_tokens=max_new_tokens, seed=seed)]


def _rate(wins: list[bool]) -> dict[str, Any]:
    from ..evals.stats import wilson_interval

    k, n = sum(wins), len(wins)
    low, high = wilson_interval(k, n)
    return {"rate": k / n if n else 0.0, "ci95": [round(low, 4), round(high, 4)], "wins": k}


def round_signal(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per round: proposals, accepted and frontier shares (None in rounds without proposals)."""
    from .metrics import shares

    return [{"round": r["round"], "proposed": r.get("proposed", 0), "valid": r.get("valid", 0),
             **shares(r), "mean_regret": r.get("mean_regret"), "agent_reward": r.get("agent_reward"),
             "agent_loss": r.get("agent_loss"), "designer_loss": r.get("designer_loss")} for r in rows]


class _Trained:
    """What one training run played (captured through ``loop.run``'s ``on_start``)."""

    def __init__(self) -> None:
        self.trainer: Any = None

    def __call__(self, trainer: Any) -> None:
        self.trainer = trainer

    def overlap(self, evaluated: set[str]) -> list[str]:
        """Played keys that are held out, reasoning-gym tasks or evaluated ids."""
        from .replay_buffer import is_program_key
        from .splits import is_heldout

        keys = list(getattr(self.trainer, "plays", {}) or {})
        bad = []
        for key in keys:
            if key.startswith("rg:") or key in evaluated:
                bad.append(key)
            elif not is_program_key(key):
                try:
                    if is_heldout(key):
                        bad.append(key)
                except Exception:  # not an env id: a pending source key
                    pass
        return bad


def _train(cfg: Any, budget_s: float | None, say: Callable[[str], None]) -> tuple[dict[str, Any], list[str], float]:
    from .loop import run

    seen = _Trained()
    t = time.perf_counter()
    summary = run(cfg, on_phase=say, on_start=seen, time_budget_s=budget_s,
                  on_round=lambda row: say(f"round {row['round']}: valid {row.get('valid')}/{row.get('proposed')} "
                                           f"frontier {row.get('frontier_share')} regret {row.get('mean_regret')} "
                                           f"reward {row.get('agent_reward')} [{row.get('round_s')} s]"))
    return summary, seen.overlap(set()), time.perf_counter() - t


def run_learning_bench(*, out_dir: str | Path, model: str = "default", preset: str = "cpu-smol",
                       heldout_episodes: int = 48, external_episodes: int = ls.EXTERNAL_EPISODES,
                       screen_episodes: int = ls.SCREEN_EPISODES, train_budget_s: float = 900.0, rounds: int = 50,
                       max_turns: int = ls.EVAL_MAX_TURNS, max_new_tokens: int = 48, rg_max_new_tokens: int = 64,
                       seed: int = 0,
                       baseline: bool = True, overrides: dict[str, Any] | None = None,
                       say: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Run the bench (module docstring); returns the ``bench learning`` JSON object."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # shared cores: do not spin
    from ..evals.stats import rate_summary
    from .presets import build_config
    from .loop import _read_rows

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tasks: dict[str, list[Any]] = {}
    envs: dict[str, list[dict[str, Any]]] = {}
    reach: dict[str, dict[str, Any]] = {}
    for level in (0, 1):
        name = f"heldout_level{level}"
        tasks[name], envs[name] = ls.heldout_tasks(level, heldout_episodes, max_turns)
        reach[name] = ls.winnable(tasks[name])
        say(f"{name}: {reach[name]['winnable']}/{len(tasks[name])} episodes winnable in {max_turns} turns "
            f"(longest reference plan {reach[name]['longest_plan']})")
    chosen, screening = ls.select_external(model, max_new_tokens=rg_max_new_tokens, seed=seed + 1,
                                           screen_episodes=screen_episodes, say=say)
    tasks["external"] = ls.external_tasks(chosen, external_episodes)
    t_screen = time.perf_counter() - t0
    say(f"external set: {len(chosen)} task(s) chosen by the rule, {len(tasks['external'])} episodes "
        f"[{t_screen:.0f} s]")

    def play_all(which: str) -> dict[str, list[ls.Outcome]]:
        res = {}
        for name in SETS:
            tokens = rg_max_new_tokens if name == "external" else max_new_tokens
            say(f"{name}: {len(tasks[name])} episodes with {which}")
            res[name] = ls.play(which, tasks[name], max_new_tokens=tokens, seed=seed + 1, say=say) if tasks[name] else []
        return res

    t1 = time.perf_counter()
    before = play_all(model)
    t_before = time.perf_counter() - t1
    settings = dict(out_dir=str(out / "selfplay"), registry_path=str(out / "registry.sqlite3"), model=model,
                    rounds=rounds, seed=seed, max_turns=max_turns, agent_max_new_tokens=max_new_tokens)
    cfg = build_config(preset, **{**settings, **(overrides or {})})
    sp_summary, sp_overlap, t_sp = _train(cfg, train_budget_s, say)
    sp_model = str(Path(sp_summary["checkpoint"]) / "model")
    t2 = time.perf_counter()
    after = play_all(sp_model)
    t_after = time.perf_counter() - t2

    def figures(after_: dict[str, list[ls.Outcome]]) -> dict[str, Any]:
        return {name: (ls.set_figures(before[name], after_[name]) if tasks[name] else
                       {"before": None, "after": None, "episodes": 0, "p_value": None,
                        "format_rate_before": None, "format_rate_after": None}) for name in SETS}

    fixed: dict[str, Any] = {"skipped": True}
    if baseline:
        say(f"fixed-environment baseline: {sp_summary['rounds']} round(s), designer off")
        bcfg = cfg.replace(designer="off", out_dir=str(out / "fixed"), registry_path=str(out / "fixed-registry.sqlite3"),
                           rounds=max(1, int(sp_summary["rounds"])))
        fx_summary, fx_overlap, t_fx = _train(bcfg, None, say)
        fx_model = str(Path(fx_summary["checkpoint"]) / "model")
        fx_after = play_all(fx_model)
        fixed = {"sets": figures(fx_after), "checkpoint": fx_model, "rounds": fx_summary["rounds"],
                 "train_s": round(t_fx, 1), "trained_on_evaluated": fx_overlap}
    sets = figures(after)
    for name in SETS:
        sets[name]["envs"] = envs.get(name) or sorted({t.env_id for t in tasks[name]})
        if name in reach:
            sets[name]["reference_plans"] = reach[name]
    rows = _read_rows(sp_summary["metrics"])
    h0 = sets["heldout_level0"]
    met = [n for n in ("external", "heldout_level1") if tasks[n] and sets[n]["delta"] >= TARGET_DELTA
           and sets[n]["p_value"] < TARGET_P]
    return {
        "bench": "learning", "model": model, "preset": preset, "sets": sets, "fixed_baseline": fixed,
        "rounds": round_signal(rows), "checkpoint": sp_model,
        "external_selection": {"rule": f"easy settings; prompts <= {ls.EXTERNAL_PROMPT_CHARS} chars; untrained model "
                                       f"wins {ls.EXTERNAL_BAND[0]:.0%}-{ls.EXTERNAL_BAND[1]:.0%} of "
                                       f"{screen_episodes} screening episodes (entries {ls.SCREEN_SEED0}+); "
                                       f"evaluated on entries {ls.EXTERNAL_SEED0}+",
                               "candidates": len(screening), "chosen": [t.task_id for t in chosen],
                               "screening": screening,
                               "screening_rate": rate_summary(r["wins"] > 0 for r in screening)["rate"],
                               "screening_wins": sum(r["wins"] for r in screening),
                               "screening_formatted": sum(r["formatted"] for r in screening),
                               "screening_episodes": sum(r["episodes"] for r in screening)},
        "target": {"delta": TARGET_DELTA, "p_value": TARGET_P, "met_on": met},
        "success_before": h0["before"], "success_after": h0["after"], "heldout_episodes": h0["episodes"],
        "trained_on_evaluated": sp_overlap, "registered": sp_summary["registered"],
        "stopped_by_budget": sp_summary.get("stopped_by_budget"), "selfplay_rounds": sp_summary["rounds"],
        "screen_s": round(t_screen, 1), "eval_before_s": round(t_before, 1), "train_s": round(t_sp, 1),
        "eval_after_s": round(t_after, 1), "total_s": round(time.perf_counter() - t0, 1), "out_dir": str(out),
    }


def _env_number(name: str, default: str, kind: type = int, minimum: float = 0) -> Any:
    """``os.environ[name]`` as a ``kind`` of at least ``minimum`` (one clear error otherwise)."""
    from .config import SelfPlayConfigError

    text = os.environ.get(name, default)
    try:
        value = kind(text)
    except ValueError:
        value = -1
    if not value >= minimum:  # too small, or NaN
        what = "a whole number" if kind is int else "a number"
        raise SelfPlayConfigError(f"{name} must be {what} of at least {minimum:g}, got {text!r}")
    return value


def run(quick: bool = False) -> dict[str, Any]:
    """``spade bench learning`` (settings: module docstring); bad settings are refused
    before anything runs."""
    import sys

    from .config import SEED_LEVELS, SelfPlayConfigError

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    env = os.environ
    out = env.get("SPADE_BENCH_OUT", "runs/bench-learning")
    if quick:
        result = run_learning_bench(out_dir=out, model="tiny-random", preset="cpu-tiny", heldout_episodes=3,
                                    external_episodes=4, screen_episodes=1, train_budget_s=0, rounds=1, max_turns=1,
                                    max_new_tokens=4, rg_max_new_tokens=4, overrides={"tensorboard": False}, say=say)
    else:
        overrides = dict(BENCH_OVERRIDES)
        levels = env.get("SPADE_BENCH_SEED_LEVELS")
        if levels is not None:
            if levels not in SEED_LEVELS:
                raise SelfPlayConfigError(f"SPADE_BENCH_SEED_LEVELS must be one of {', '.join(SEED_LEVELS)}, "
                                          f"got {levels!r}")
            overrides["seed_levels"] = levels
        settings = dict(heldout_episodes=_env_number("SPADE_BENCH_EPISODES", "48", minimum=1),
                        external_episodes=_env_number("SPADE_BENCH_EXTERNAL", str(ls.EXTERNAL_EPISODES), minimum=1),
                        screen_episodes=_env_number("SPADE_BENCH_SCREEN", str(ls.SCREEN_EPISODES), minimum=1),
                        train_budget_s=_env_number("SPADE_BENCH_TRAIN_S", "900", float))
        result = run_learning_bench(
            out_dir=out, model=env.get("SPADE_BENCH_MODEL", "default"),
            overrides=overrides, **settings,
            baseline=env.get("SPADE_BENCH_BASELINE", "1") != "0", say=say)
    return {k: v for k, v in result.items() if k != "bench"}
