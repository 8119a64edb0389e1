"""``spade bench designer``: does the designer learn to aim? (DESIGN.md section 6)

Arms, from the same initial weights, prompts (the trainer's seeded RNG picks the same
parents and sampling seeds at every step), episode seeds and number of steps, each a
:class:`~.designer_arm.DesignerArm` over its own :class:`~.trainer.SelfPlayTrainer`
(the ``cpu-smol`` preset in params mode only, over the train split's parametric
parents, the preset's reward mode) and its own registry:

- **trained**: ``steps`` designer GRPO steps, each on ``prompts`` prompts x ``group``
  proposals; every accepted proposal is played ``plays`` times plain and ``plays`` times
  hinted on the same seeds by the FROZEN agent (the untrained model: a separate copy
  that no optimizer sees), so any change is the designer's;
- **control**: identical except that each group's rewards are permuted within the group
  just before the step;
- **untrained**: the initial designer, sampled for as many steps as the last quarter
  has, no step (the drift baseline);
- **held-out parents**: after training, the trained and the control designers each
  propose ``heldout`` variants of the held-out split's parametric parents (never offered
  in training), scored the same way.

A point proposed by several arms is played once (the agent is frozen and the seeds come
from the point: :class:`~.designer_arm.PointScorer`). Figures per step and arm, knob
distributions of the first and last quarter, and ``comparison`` (last-quarter mean
proposal regret, trained - control and trained - untrained, bootstrap 95 % interval and
permutation p-value, the same on the held-out parents): :mod:`.designer_stats`. Output
folder ``SPADE_BENCH_OUT`` (``runs/bench-designer``): ``designer.png``, ``tensorboard/``,
``designer.json`` (and ``steps.jsonl``, one line per step as it ends), and the trained and
control designers after the last step as transformers checkpoints, ``trained/designer/``
and ``control/designer/`` (``arms.<arm>.checkpoint``; any model setting takes the folder).
Progress (a bar) goes to stderr.

Settings from the environment (defaults in :data:`DEFAULTS`): ``SPADE_BENCH_STEPS``,
``SPADE_BENCH_PROMPTS``, ``SPADE_BENCH_GROUP``, ``SPADE_BENCH_PLAYS``,
``SPADE_BENCH_HELDOUT``, ``SPADE_BENCH_MODEL``, ``SPADE_BENCH_LR``, ``SPADE_BENCH_BETA``,
``SPADE_BENCH_TEMPERATURE``, ``SPADE_BENCH_REWARD_SCALE``, ``SPADE_BENCH_INVALID_PENALTY``
(a rejected proposal's reward, -1 to 0; unset: -0.25, see :data:`DEFAULTS`), ``SPADE_BENCH_SEED``. Under
the preset's ``scale_rewards="group"`` a reward scale cancels in the advantages; the
invalid penalty is what weighs validity against regret.
``spade bench designer-checkpoint`` (:mod:`.designer_checkpoint`) scores a saved designer
against the untrained one on parents of your choice.
``--quick``: the tiny random model, 2 steps of 1 prompt x 2, 1 + 1 plays, 2 held-out
proposals (its figures mean nothing; it checks the wiring).
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from . import designer_stats as st
from .designer_arm import DesignerArm, PointScorer, frozen_agent, save_checkpoint, weights_hash

TARGET_DELTA = 0.05
TARGET_P = 0.05


@dataclass
class BenchSettings:
    """One run's settings (see the module docstring)."""

    model: str = "default"
    preset: str = "cpu-smol"
    steps: int = 30
    prompts: int = 2
    group: int = 8
    plays: int = 4
    heldout: int = 64
    learning_rate: float = 5e-5
    beta: float = 0.0
    temperature: float = 0.6
    reward_scale: float | None = None
    # a rejected proposal's reward; None: the preset's (cpu-smol: -1; SPADE: 0). -0.25 is the
    # best of the three values tried (README: -1, 0, -0.25), the default since run 3
    invalid_penalty: float | None = -0.25
    seed: int = 0
    max_turns: int = 2
    agent_max_new_tokens: int = 48


DEFAULTS = BenchSettings()
QUICK = BenchSettings(model="tiny-random", preset="cpu-tiny", steps=2, prompts=1, group=2, plays=1, heldout=2,
                      learning_rate=1e-3, agent_max_new_tokens=4, max_turns=1)


def arm_config(s: BenchSettings, out_dir: Path, arm: str) -> Any:
    """The trainer config of one arm: identical for every arm but the folders."""
    from .presets import preset

    cfg = preset(s.preset)
    overrides = dict(model=s.model, params_share=1.0, designer_prompts=s.prompts, designer_group_size=s.group,
                     designer_every=1, learning_rate=s.learning_rate, beta=s.beta, temperature=s.temperature,
                     designer_reward_scale=s.reward_scale, seed=s.seed, max_turns=s.max_turns,
                     agent_max_new_tokens=s.agent_max_new_tokens, include_seeds=False, tensorboard=False,
                     plot=False, out_dir=str(out_dir / arm), registry_path=str(out_dir / arm / "registry.sqlite3"),
                     # designer rows only (~700 tokens): one micro-batch, each group's prompt run once
                     # (shared_prompt.py; gradient checkpointing would drop the prompt's cache)
                     gradient_checkpointing=False, micro_batch_size=s.prompts * s.group)
    if s.invalid_penalty is not None:
        overrides["invalid_penalty"] = s.invalid_penalty
    for k, v in overrides.items():
        setattr(cfg, k, v)
    return cfg


def heldout_parent_ids(cfg: Any) -> list[str]:
    """The held-out split's parametric parents (of the run's skills when it restricts them)."""
    from ..designer.params_mode import parametric_parents
    from .splits import is_heldout

    return [str(r.env_id) for r in parametric_parents(None) if is_heldout(str(r.env_id))
            and (cfg.seed_skills is None or r.skill in cfg.seed_skills)]


def propose_heldout(arm: DesignerArm, parents: list[str], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` proposals (rounded up to whole groups) of ``arm``'s designer over ``parents``,
    through the same params-mode proposal function self-play uses, scored by the shared
    scorer; nothing is trained or registered."""
    import random

    from ..designer.acceptance import AcceptanceConfig
    from ..designer.params_mode import VariantMemory, propose_variants
    from .design_params import PARAMS_MAX_NEW_TOKENS

    tr = arm.trainer
    cfg = tr.config
    raw = propose_variants(tr.designer.backend, tr.registry, max(1, math.ceil(n / cfg.designer_group_size)),
                           VariantMemory(tr.registry), random.Random(seed), group_size=cfg.designer_group_size,
                           parents=parents, max_new_tokens=PARAMS_MAX_NEW_TOKENS, temperature=cfg.temperature,
                           acceptance=AcceptanceConfig(seeds=tuple(cfg.acceptance_seeds)),
                           runtime=tr.designer.runtime, round_no=10_000)
    valid = [v for v in raw if v.valid]
    scores = dict(zip([v.cid for v in valid], arm.scorer.score([(v.parent, v.point) for v in valid])))
    out = []
    for v in raw:
        est = scores[v.cid].estimate if v.cid in scores else None
        out.append({"cid": v.cid, "valid": v.valid, "parent": v.parent, "point": v.point,
                    "rejected_at": v.rejected_at, "regret": None if est is None else est.regret,
                    "win_rate_plain": None if est is None else est.win_rate_plain})
    return out


def proposal_summary(props: list[dict[str, Any]]) -> dict[str, Any]:
    """Valid rate, mean regret per proposal (invalid: 0), frontier share and knob distributions."""
    from statistics import fmean

    return {"proposals": len(props), "valid_rate": sum(p["valid"] for p in props) / len(props) if props else 0.0,
            "mean_regret": fmean([p["regret"] or 0.0 for p in props]) if props else 0.0,
            "frontier_share": (sum(p["win_rate_plain"] is not None and p["regret"] is not None
                                   and 0 < p["win_rate_plain"] < 1 and p["regret"] > 0 for p in props) / len(props))
            if props else 0.0, "knobs": st.knob_distributions(props)}


class _Bar:
    """A progress bar on stderr (rich), or plain lines when rich is missing."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=Console(stderr=True))
            self.bar.start()
            self.task = self.bar.add_task("designer bench", total=total)
        except ImportError:
            self.bar = None

    def advance(self, text: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=text)
        else:
            print(f"[{self.done}/{self.total}] {text}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def run_designer_bench(s: BenchSettings, out_dir: str | Path, say: Callable[[str], None] | None = None,
                       trainer_factory: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """The whole bench (module docstring); ``trainer_factory(config)`` builds a trainer
    (tests inject one), default :class:`~.trainer.SelfPlayTrainer`."""
    from .trainer import SelfPlayTrainer

    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    make = trainer_factory or SelfPlayTrainer
    t0 = time.perf_counter()
    cfgs = {name: arm_config(s, out, name) for name in ("trained", "control", "untrained")}
    trained_tr = make(cfgs["trained"])
    agent, start_model = frozen_agent(trained_tr)
    frozen_before = weights_hash(start_model)
    control_tr = make(cfgs["control"])
    initial = {"trained": weights_hash(trained_tr.model), "control": weights_hash(control_tr.model)}
    scorer = PointScorer(agent, trained_tr.rollout.reward_of, plain=s.plays, hint=s.plays, max_turns=s.max_turns,
                         seed=s.seed)
    arms = {"trained": DesignerArm("trained", trained_tr, scorer, start_model, seed=s.seed),
            "control": DesignerArm("control", control_tr, scorer, start_model, permute=True, seed=s.seed)}
    first, last = st.quarters(s.steps)
    heldout_ids = heldout_parent_ids(cfgs["trained"])
    bar = _Bar(2 * s.steps + len(last) + 2)
    step_rows: list[dict[str, Any]] = []
    try:
        for step in range(s.steps):
            row: dict[str, Any] = {"step": step}
            for name, arm in arms.items():
                ts = time.perf_counter()
                rec = arm.step(step)
                rec.metrics["step_s"] = round(time.perf_counter() - ts, 2)
                row[name] = rec.metrics
                m = rec.metrics
                bar.advance(f"{name} step {step}: regret {m['mean_regret']:.3f}, valid {m['valid_rate']:.2f}")
            step_rows.append(row)
            with open(out / "steps.jsonl", "a") as fh:  # partial runs leave their steps behind
                fh.write(json.dumps(row, default=str) + "\n")
        # the designers the comparison is about, saved before anything else can go wrong
        checkpoints = {name: save_checkpoint(arms[name].trainer, out / name / "designer")
                       for name in ("trained", "control")}
        untrained_tr = make(cfgs["untrained"])
        initial["untrained"] = weights_hash(untrained_tr.model)
        arms["untrained"] = DesignerArm("untrained", untrained_tr, scorer, start_model, train=False, seed=s.seed)
        for i, step in enumerate(last):
            arms["untrained"].step(step)
            bar.advance(f"untrained sample {i + 1}/{len(last)}")
        heldout: dict[str, Any] = {"parents": heldout_ids}
        for name in ("trained", "control"):
            heldout[name] = propose_heldout(arms[name], heldout_ids, s.heldout, s.seed + 1) if heldout_ids else []
            bar.advance(f"held-out parents: {name}")
    finally:
        bar.close()
    frozen_after = weights_hash(start_model)
    records = {name: arm.records for name, arm in arms.items()}
    reg = {name: st.proposal_regrets(recs, range(0, s.steps) if name == "untrained" else last)
           for name, recs in records.items()}
    held = {name: [float(p["regret"] or 0.0) for p in heldout.get(name, [])] for name in ("trained", "control")}
    comparison = {"window": f"steps {last.start}-{last.stop - 1} (last quarter)",
                  "unit": "one proposal (invalid: regret 0)",
                  "trained_minus_control": st.compare(reg["trained"], reg["control"], seed=s.seed),
                  "trained_minus_untrained": st.compare(reg["trained"], reg["untrained"], seed=s.seed + 1),
                  "heldout_trained_minus_control": st.compare(held["trained"], held["control"], seed=s.seed + 2),
                  "target": {"delta": TARGET_DELTA, "p": TARGET_P}}
    tc, hc = comparison["trained_minus_control"], comparison["heldout_trained_minus_control"]
    comparison["target_met"] = bool(tc["diff"] is not None and tc["diff"] >= TARGET_DELTA and tc["p_value"] < TARGET_P
                                    and hc["diff"] is not None and hc["diff"] > 0)
    arms_out = {}
    for name, recs in records.items():
        arm_first = range(0, s.steps) if name == "untrained" else first
        arm_last = range(0, s.steps) if name == "untrained" else last
        arms_out[name] = {
            "steps": [r.metrics for r in recs],
            "first_quarter": st.knob_distributions([p for r in recs if r.step in arm_first for p in r.proposals]),
            "last_quarter": st.knob_distributions([p for r in recs if r.step in arm_last for p in r.proposals]),
            "initial_weights_sha256": initial[name], "final_weights_sha256": weights_hash(arms[name].trainer.model),
            "checkpoint": checkpoints.get(name),
            "received_true_rewards": [r.trained_rewards == r.true_rewards for r in recs],
        }
    png = st.plot({k: records[k] for k in ("trained", "control")}, out / "designer.png")
    tb = st.tensorboard(records, out / "tensorboard")
    result = {
        "arms": arms_out, "steps": step_rows, "comparison": comparison,
        "heldout_parents": {"parents": heldout_ids,
                            **{name: proposal_summary(heldout.get(name, [])) for name in ("trained", "control")}},
        "settings": {**asdict(s), "out_dir": str(out), "plot": str(png) if png else None, "tensorboard": tb,
                     "frozen_agent_sha256_before": frozen_before, "frozen_agent_sha256_after": frozen_after,
                     "frozen_agent_unchanged": frozen_before == frozen_after,
                     "same_initial_weights": len(set(initial.values())) == 1,
                     "points_scored": len(scorer.cache), "agent_plays": scorer.plays,
                     "episode_seeds": "derived from (seed, parent, point): the same in every arm",
                     "elapsed_s": round(time.perf_counter() - t0, 1)},
    }
    (out / "designer.json").write_text(json.dumps(result, indent=1, default=str))
    say(f"designer bench: last-quarter regret trained - control {tc['diff']} (95 % {tc['ci95']}, p {tc['p_value']}); "
        f"held-out {hc['diff']} (p {hc['p_value']}); {result['settings']['elapsed_s']} s")
    return result


def _env(name: str, default: Any, kind: type, minimum: float = 0, maximum: float = math.inf) -> Any:
    from .config import SelfPlayConfigError

    text = os.environ.get(name)
    if text is None:
        return default
    if kind is float and text.lower() == "none":
        return None
    try:
        value = kind(text)
    except ValueError:
        value = math.nan
    if not minimum <= value <= maximum:
        upto = f" and at most {maximum:g}" if maximum < math.inf else ""
        raise SelfPlayConfigError(f"{name} must be a {'whole ' if kind is int else ''}number of at least {minimum:g}"
                                  f"{upto}, got {text!r}")
    return value


def settings_from_env(quick: bool = False) -> BenchSettings:
    """The run's settings: :data:`QUICK` or :data:`DEFAULTS` with the ``SPADE_BENCH_*`` values."""
    base = QUICK if quick else DEFAULTS
    d = DEFAULTS
    return BenchSettings(
        model=os.environ.get("SPADE_BENCH_MODEL", base.model), preset=base.preset,
        steps=_env("SPADE_BENCH_STEPS", base.steps, int, 1), prompts=_env("SPADE_BENCH_PROMPTS", base.prompts, int, 1),
        group=_env("SPADE_BENCH_GROUP", base.group, int, 2), plays=_env("SPADE_BENCH_PLAYS", base.plays, int, 1),
        heldout=_env("SPADE_BENCH_HELDOUT", base.heldout, int, 1),
        learning_rate=_env("SPADE_BENCH_LR", base.learning_rate, float, 0),
        beta=_env("SPADE_BENCH_BETA", base.beta, float, 0),
        temperature=_env("SPADE_BENCH_TEMPERATURE", base.temperature, float, 0.01),
        reward_scale=_env("SPADE_BENCH_REWARD_SCALE", d.reward_scale, float, 0),
        invalid_penalty=_env("SPADE_BENCH_INVALID_PENALTY", d.invalid_penalty, float, -1, 0),
        seed=_env("SPADE_BENCH_SEED", base.seed, int, 0), max_turns=base.max_turns,
        agent_max_new_tokens=base.agent_max_new_tokens)


def run(quick: bool = False) -> dict[str, Any]:
    """``spade bench designer`` (settings: module docstring); bad settings are refused first."""
    s = settings_from_env(quick)
    out = os.environ.get("SPADE_BENCH_OUT") or (tempfile.mkdtemp(prefix="spade-bench-designer-") if quick
                                                 else "runs/bench-designer")
    return run_designer_bench(s, out)
