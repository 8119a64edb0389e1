"""The ``params`` design mode inside self-play: the policy proposes variants of registry
environments (parent id + kwargs valid under its ``PARAMETERS``).

Coupling to :mod:`spade_envs.designer.params_mode` through its public functions only:
``propose_variants`` builds the prompts (parents' schemas + the memory of past variants
with their win rates and regret), decodes under a JSON schema where the backend can,
and checks each answer (parse, params, novelty, then acceptance at the point). Only
parents of the TRAIN split are offered, so a held-out family never reaches training.
Accepted variants are registered at once through the caller's ``register_variant``
(:meth:`~.registration.Registrar.register_variant`) in the round's generation, so the
agent plays them by id; their completions keep prompt and completion ids and sampling
logprobs for the delayed designer step, like ``code`` candidates. Nothing here sees the
trainer: it passes the designer, its variant memory and the registrar's method.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Callable

from ..designer.proposal import Proposal
from .splits import is_heldout

if TYPE_CHECKING:
    from .design import SelfPlayDesigner

#: ``(parent, params, *, round_no, cid, acceptance) -> (env id, new)``:
#: :meth:`~.registration.Registrar.register_variant`
RegisterVariant = Callable[..., tuple[str, bool]]

PARAMS_MAX_NEW_TOKENS = 160  #: a variant answer is short JSON, whatever the code-mode budget


def train_parents(registry: Any, skills: list[str] | None = None) -> list[str]:
    """Ids of the parametric parents (seeds and store programs) in the train split, of
    ``skills`` only when given (the run's ``seed_skills``)."""
    from ..designer.params_mode import parametric_parents

    return [str(r.env_id) for r in parametric_parents(registry) if not is_heldout(str(r.env_id))
            and (skills is None or r.skill in skills)]


def propose_params(designer: "SelfPlayDesigner", memory: Any, rng: random.Random, *, round_no: int,
                   n_prompts: int, register_variant: RegisterVariant) -> list[Proposal]:
    """``n_prompts`` x ``designer_group_size`` variant proposals of round ``round_no``.

    ``designer`` gives the config, backend, registry, runtime and accelerator; ``memory``
    is the caller's :class:`~spade_envs.designer.params_mode.VariantMemory` (refreshed
    here); each accepted variant is registered at once through ``register_variant``
    (:meth:`~.registration.Registrar.register_variant`), and its proposal carries the id."""
    from ..designer.acceptance import AcceptanceConfig
    from ..designer.params_mode import propose_variants
    from ..registry.catalog import seed_records
    from . import dist

    cfg, registry = designer.config, designer.registry
    parents = train_parents(registry, cfg.seed_skills)
    if not parents:
        return []
    memory.refresh()
    raw = propose_variants(designer.backend, registry, n_prompts, memory, rng,
                           group_size=cfg.designer_group_size, parents=parents,
                           max_new_tokens=PARAMS_MAX_NEW_TOKENS, temperature=cfg.temperature,
                           acceptance=AcceptanceConfig(seeds=tuple(cfg.acceptance_seeds)),
                           runtime=designer.runtime, round_no=round_no)
    # acceptance ran under sandbox deadlines on every rank: the main process's verdicts win,
    # so every rank registers the same variants (each registration is a collective)
    raw = dist.from_main(designer.acc, raw)
    skills = {str(r.env_id): r.skill for r in seed_records()}
    for prop in raw:
        skill = skills.get(prop.parent or "") or "unknown"
        if prop.parent and prop.parent not in skills:
            try:
                skill = registry.get(prop.parent).skill or skill
            except Exception:
                pass
        prop.skill = skill
        if prop.valid:
            prop.env_id, prop.new = register_variant(prop.parent, prop.point, round_no=round_no, cid=prop.cid,
                                                     acceptance=prop.verdicts)
            prop.source = f"variant:{prop.env_id}"
    return raw
