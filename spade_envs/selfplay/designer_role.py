"""The self-play trainer's designer role: a round's proposals into the run's tables, and
the designer's GRPO step (``SelfPlayTrainer``'s half that ``spade bench designer``
drives directly; one implementation of each).

:class:`DesignerRole` is a base of :class:`~.trainer.SelfPlayTrainer` and works on the
tables the trainer owns and builds in its ``__init__`` (nothing here creates one):
``config``, ``rng``, ``on_phase``, ``grpo`` (and ``_grpo_step``), ``backend``,
``designer``, ``registry``, ``registrar``, ``buffer``, ``ledger``, ``rollout``,
``constraints``, ``hint_sources``, ``scripted``, ``acc`` and ``variant_memory``.

- :meth:`DesignerRole._design`: round ``r``'s proposals (params mode through
  :func:`~.design_params.propose_params`, code mode through the designer); the valid
  ones join the replay buffer (protected until their group trains) and, for programs,
  the registrar's pending list with their hinted source; every candidate joins the
  :class:`~.rewards.DesignerLedger`; each completion is stored with its sampling-time
  logprobs and its decoding schema for the delayed step.
- :meth:`DesignerRole.designer_step`: the step on the ledger's ready groups, rewards
  from :func:`~.rewards.finalize_rewards`.
"""

from __future__ import annotations

from typing import Any

from . import dist
from ..designer.proposal import Proposal
from .replay_buffer import ReplayEntry, program_key
from .rewards import LedgerEntry, designer_scale, finalize_rewards
from .rollout import StoredCompletion, designer_prompt
from .round_record import DesignerStats


class DesignerRole:
    """The designer's half of the self-play trainer (see the module docstring)."""

    config: Any
    variant_memory: Any

    def _behaviour_logprobs(self, props: list[Proposal]) -> list[list[float]]:
        """Sampling-time logprobs of each proposal's completion: the backend's when it is the
        policy and reported them, else teacher-forced under the current (= sampling-time)
        weights, all of them in one call (a group's prompt runs once)."""
        from .trl_bridge import teacher_forced_logps_batch

        n = self.config.designer_max_new_tokens
        out = [list(p.logprobs[:n]) for p in props]
        # constrained decoding (params mode) samples from a masked distribution, which the loss
        # scores under that mask at its temperature (the caller registered it in
        # self.constraints): the backend's logprobs are that distribution's only when it says
        # so (Backend.masked_logprobs); otherwise they are recomputed under the mask
        masked = bool(getattr(self.designer.backend, "masked_logprobs", False))
        forced = [i for i, p in enumerate(props)
                  if self.scripted or (p.is_params and not (p.constrained and masked))
                  or len(out[i]) != len(p.completion_ids[:n]) or (p.completion_ids and not any(out[i]))]
        scored = teacher_forced_logps_batch(self.grpo, [(props[i].prompt_ids, props[i].completion_ids[:n]) for i in forced])
        for i, lps in zip(forced, scored):
            out[i] = lps
        return out

    def _design(self, r: int) -> tuple[list[Proposal], set[str]]:
        """The round's proposals, and the replay keys of the valid ones."""
        cfg = self.config
        if not cfg.designer_prompts or r % cfg.designer_every:
            return [], set()
        n_params = round(cfg.designer_prompts * cfg.params_share)
        self.on_phase(f"round {r}: designer proposes {cfg.designer_prompts * cfg.designer_group_size} candidates "
                      f"({n_params} prompts params mode, {cfg.designer_prompts - n_params} code mode)")
        props: list[Proposal] = []
        if n_params:
            from .design_params import propose_params

            props += propose_params(self.designer, self._variant_memory(), self.rng, round_no=r, n_prompts=n_params,
                                    register_variant=self.registrar.register_variant)
        if cfg.designer_prompts - n_params:
            props += self.designer.propose(r, self.rng, self.registrar.pending_sources(),
                                           n_prompts=cfg.designer_prompts - n_params)
        hint_backend = self.backend if cfg.model_hints else None
        protected = set(self.ledger.pending_keys())
        new_keys: set[str] = set()
        for p in props:
            key = None
            if p.valid:
                new_keys.add(p.env_id or program_key(p.source))
            if p.valid and p.env_id is not None:  # a variant, registered when accepted (design_params)
                key = p.env_id
                entry = ReplayEntry(key=key, env_id=key, skill=p.skill, added_round=r)
                if not self.buffer.add(entry, protected=protected):
                    key = None  # held out (or the buffer is full of waiting candidates): settled without plays
                else:
                    protected.add(key)
            elif p.valid:
                key = program_key(p.source)
                if key not in self.buffer and not self.registrar.is_pending(key):
                    # a sandbox deadline (and sampling) decide it: the main process's answer wins
                    hinted, origin = dist.on_main(self.acc, lambda src=p.source: self.designer.hinted_source(
                        src, hint_backend))
                    entry = ReplayEntry(key=key, source=p.source, skill=p.skill, added_round=r,
                                        hint_usable=origin != "none")
                    if self.buffer.add(entry, protected=protected):
                        protected.add(key)
                        self.hint_sources[key] = hinted
                        self.registrar.add_pending(p, key, hinted, origin, r)
                    else:
                        key = None
                elif key not in self.buffer:
                    key = None
            cand = LedgerEntry(p.cid, p.group, r, p.valid, key, skill=p.skill,
                             hint_usable=bool(key and self.buffer.entries[key].hint_usable))
            self.ledger.add(cand)
            if key is None and p.valid:
                self.ledger.finalize_candidate(cand)
        n = cfg.designer_max_new_tokens
        for p in props:
            self.constraints.add(p.prompt_ids, p.completion_ids[:n], p.decoding_schema)
        for p, lps in zip(props, self._behaviour_logprobs(props)):
            self.rollout.designer[p.cid] = StoredCompletion(p.prompt_ids, p.completion_ids[:n], lps,
                                                            json_schema=p.decoding_schema)
        return props, new_keys

    def _variant_memory(self) -> Any:
        if self.variant_memory is None:
            from ..designer.params_mode import VariantMemory

            self.variant_memory = VariantMemory(self.registry)
        return self.variant_memory

    def designer_step(self) -> DesignerStats | None:
        """The designer GRPO step on the ledger's ready groups (None: no group was ready);
        ``spade bench designer`` calls it too: one implementation of the step."""
        return self._designer_step()


    def _designer_step(self) -> DesignerStats | None:
        cfg = self.config
        groups = self.ledger.ready_groups()
        if not groups:
            return None
        rewards = finalize_rewards(groups, center=cfg.designer_center, scale=designer_scale(cfg))
        rows = []
        for c, rew in zip([c for g in groups for c in g], rewards):
            self.rollout.designer[c.cid].reward = rew
            rows.append({"prompt": designer_prompt(c.cid)})
        self.on_phase(f"designer GRPO step on {len(groups)} group(s)")
        step = self._grpo_step(rows, cfg.designer_group_size, behaviour=True)
        for g in groups:
            for c in g:
                done = self.rollout.designer.pop(c.cid, None)
                if done is not None:
                    self.constraints.discard(done.prompt_ids, done.completion_ids)
        return DesignerStats.of(groups, [float(x) for x in rewards], step)
