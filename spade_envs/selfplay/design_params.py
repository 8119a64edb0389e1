"""The ``params`` design mode inside self-play: the policy proposes variants of registry
environments (parent id + kwargs valid under its ``PARAMETERS``).

Coupling to :mod:`spade_envs.designer.params_mode` through its public function only
(prompt building, constrained JSON decoding, validation against the parent's schema
and acceptance are the designer's). Accepted variants are registered at once
(:meth:`~.registration.Registrar.register_variant`) in the round's generation, so the
agent plays them by id; their completions keep prompt/completion ids and sampling
logprobs for the delayed designer step, like ``code`` candidates.
"""

from __future__ import annotations

from typing import Any

from .design import Proposal


def propose_params(trainer: Any, round_no: int, n_prompts: int) -> list[Proposal]:
    """``n_prompts`` x ``designer_group_size`` variant proposals of round ``round_no``."""
    try:
        from ..designer.params_mode import propose_variants
    except ImportError:  # the parametric designer is not in this build: code mode only
        return []
    cfg = trainer.config
    raw = propose_variants(trainer.designer.backend, trainer.registry, n_prompts=n_prompts,
                           group_size=cfg.designer_group_size, rng=trainer.rng,
                           max_new_tokens=min(cfg.designer_max_new_tokens, 256), temperature=cfg.temperature,
                           exclude_heldout=True)
    out: list[Proposal] = []
    for i, v in enumerate(raw):
        group = f"r{round_no}-q{i // cfg.designer_group_size}"
        cid = f"{group}-c{i % cfg.designer_group_size}"
        prop = Proposal(cid, group, getattr(v, "skill", None) or "unknown", "params", getattr(v, "parent", "") or "",
                        list(v.prompt_ids), list(v.completion_ids), list(v.logprobs or []), v.text,
                        verdicts=list(getattr(v, "verdicts", []) or []), rejected_at=getattr(v, "rejected_at", None),
                        parent=getattr(v, "parent", None), params=getattr(v, "params", None))
        if prop.rejected_at is None and prop.parent and prop.params is not None:
            eid, _new = trainer.registrar.register_variant(prop.parent, prop.params, round_no=round_no,
                                                           skill=prop.skill, cid=cid, acceptance=prop.verdicts)
            prop.env_id, prop.source = eid, f"variant:{eid}"
        elif prop.rejected_at is None:
            prop.rejected_at = "params"
        out.append(prop)
    return out
