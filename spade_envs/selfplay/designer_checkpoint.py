"""Scoring a saved designer on parents of your choice: ``SPADE_BENCH_CHECKPOINT=DIR spade
bench designer-checkpoint`` (DESIGN.md section 6).

``spade bench designer`` saves its trained and control designers (``trained/designer``,
``control/designer``). This plays one such checkpoint against the untrained designer on
parametric parents it may never have been offered, with everything else as in the
bench's held-out phase (:func:`~.designer_bench.propose_heldout`): the same proposal
function, the same FROZEN agent (the untrained ``SPADE_BENCH_MODEL``, not the
checkpoint), the same :class:`~.designer_arm.PointScorer` (episode seeds derived from
the point, so a point scores the same here as in the bench), ``SPADE_BENCH_HELDOUT``
proposals per designer.

Settings: ``SPADE_BENCH_CHECKPOINT`` (a transformers folder), ``SPADE_BENCH_PARENTS``
(comma-separated ids of parametric parents of the suite, any split; unset: the held-out
split's), and the bench's other ``SPADE_BENCH_*`` values. Output: ``checkpoint.json`` in
``SPADE_BENCH_OUT`` (``runs/bench-designer-checkpoint``) and the returned dict:
``checkpoint``, ``parents``, per designer (``designers.checkpoint``,
``designers.untrained``) its ``summary`` (valid rate, mean regret per proposal, frontier
share, knob distributions) and its ``proposals``, and ``comparison`` (checkpoint -
untrained mean regret per proposal, bootstrap 95 % interval, permutation p-value). Bad settings are refused before any model loads.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from . import designer_stats as st
from .designer_bench import arm_config, heldout_parent_ids, proposal_summary, propose_heldout, settings_from_env


def checkpoint_folder(text: str) -> str:
    """``text`` as a saved designer's folder, or one :class:`~.config.SelfPlayConfigError`."""
    from .config import SelfPlayConfigError

    folder = Path(text).expanduser()
    if not (folder / "config.json").is_file():
        raise SelfPlayConfigError(f"SPADE_BENCH_CHECKPOINT={text!r} is not a saved designer: expected a folder with "
                                  "config.json, such as runs/bench-designer/trained/designer")
    return str(folder)


def parent_ids(text: str | None, default: list[str]) -> list[str]:
    """The parents to score: the ids in ``text`` (comma-separated), each a parametric parent of
    the suite, or ``default``; one :class:`~.config.SelfPlayConfigError` naming the others."""
    from ..designer.params_mode import parametric_parents
    from .config import SelfPlayConfigError

    if text is None or not text.strip():
        return list(default)
    known = {str(r.env_id): str(r.env_id) for r in parametric_parents(None)}
    known.update({re.sub(r"-v\d+$", "", k): v for k, v in list(known.items())})  # an id without its version: the latest
    wanted = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in wanted if x not in known]
    if unknown:
        sample = ", ".join(sorted(set(known.values()))[:6])
        raise SelfPlayConfigError(f"SPADE_BENCH_PARENTS: not parametric parents of the suite: {', '.join(unknown)} "
                                  f"(for example: {sample})")
    return list(dict.fromkeys(known[x] for x in wanted))


def score_checkpoint(s: Any, checkpoint: str, parents_text: str | None, out_dir: str | Path,
                     say: Callable[[str], None] | None = None,
                     trainer_factory: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """The checkpoint and the untrained designer (``s.model``) each propose ``s.heldout``
    variants of the parents, played by the frozen untrained agent (module docstring)."""
    from .designer_arm import DesignerArm, PointScorer, frozen_agent, weights_hash
    from .trainer import SelfPlayTrainer

    say = say or (lambda text: None)
    folder = checkpoint_folder(checkpoint)
    out = Path(out_dir)
    base_cfg = arm_config(s, out, "untrained")
    parents = parent_ids(parents_text, heldout_parent_ids(base_cfg))
    if not parents:
        from .config import SelfPlayConfigError

        raise SelfPlayConfigError("no parametric parents to score: set SPADE_BENCH_PARENTS")
    out.mkdir(parents=True, exist_ok=True)
    make = trainer_factory or SelfPlayTrainer
    untrained_tr = make(base_cfg)
    agent, start_model = frozen_agent(untrained_tr)  # the untrained model plays, as in the bench
    scorer = PointScorer(agent, untrained_tr.rollout.reward_of, plain=s.plays, hint=s.plays, max_turns=s.max_turns,
                         seed=s.seed)
    ckpt_tr = make(arm_config(replace(s, model=folder), out, "checkpoint"))
    designers = {"checkpoint": DesignerArm("checkpoint", ckpt_tr, scorer, start_model, train=False, seed=s.seed),
                 "untrained": DesignerArm("untrained", untrained_tr, scorer, start_model, train=False, seed=s.seed)}
    props = {}
    for name, arm in designers.items():
        say(f"designer checkpoint: {name} proposes {s.heldout} variants of {len(parents)} parent(s)")
        props[name] = propose_heldout(arm, parents, s.heldout, s.seed + 1)
    regrets = {name: [float(p["regret"] or 0.0) for p in ps] for name, ps in props.items()}
    result = {"checkpoint": folder, "parents": parents,
              "designers": {name: {"summary": proposal_summary(ps), "proposals": ps} for name, ps in props.items()},
              "comparison": {"unit": "one proposal (invalid: regret 0)",
                             "checkpoint_minus_untrained": st.compare(regrets["checkpoint"], regrets["untrained"],
                                                                      seed=s.seed + 2)},
              "settings": {"model": s.model, "plays": s.plays, "proposals": s.heldout, "seed": s.seed,
                           "points_scored": len(scorer.cache), "agent_plays": scorer.plays,
                           "checkpoint_weights_sha256": weights_hash(ckpt_tr.model),
                           "untrained_weights_sha256": weights_hash(untrained_tr.model),
                           "agent_weights_sha256": weights_hash(start_model)}}
    (out / "checkpoint.json").write_text(json.dumps(result, indent=1, default=str))
    c = result["comparison"]["checkpoint_minus_untrained"]
    say(f"designer checkpoint: mean regret checkpoint - untrained {c['diff']} (95 % {c['ci95']}, p {c['p_value']})")
    return result


def run(quick: bool = False) -> dict[str, Any]:
    """``spade bench designer-checkpoint`` (settings: module docstring; ``--quick``: the bench's
    quick settings); bad settings are refused before any model loads."""
    from .config import SelfPlayConfigError

    s = settings_from_env(quick)
    checkpoint = os.environ.get("SPADE_BENCH_CHECKPOINT")
    if not checkpoint:
        raise SelfPlayConfigError("set SPADE_BENCH_CHECKPOINT to a saved designer, such as "
                                  "runs/bench-designer/trained/designer (spade bench designer saves it)")
    out = os.environ.get("SPADE_BENCH_OUT") or (tempfile.mkdtemp(prefix="spade-bench-designer-checkpoint-") if quick
                                                 else "runs/bench-designer-checkpoint")
    return score_checkpoint(s, checkpoint, os.environ.get("SPADE_BENCH_PARENTS"), out,
                            say=lambda text: print(text, file=sys.stderr, flush=True))
