"""``SelfPlayTrainer``: the self-play loop (orchestration only).

One model, two roles, one optimizer, trained with TRL's ``GRPOTrainer`` through its
multi-turn ``rollout_func`` (:mod:`.rollout`). Each round ``r``:

1. designer (every ``designer_every`` rounds): sample skills, modes and grounding
   documents, build prompts with memory examples, sample ``designer_group_size``
   candidates per prompt, run the acceptance pipeline (:mod:`.design`); accepted
   candidates join the replay buffer and the pending registrations, every candidate
   joins the :class:`~.rewards.DesignerLedger` (invalid ones get the penalty at once);
2. pick environments: those whose candidates still wait for plays, then replay samples
   (priority = recent regret) up to ``envs_per_round``; held-out ids are never picked;
3. hinted plays (``hint_plays`` each, no training) for the regret;
4. agent GRPO step: ``agent_group_size`` plain plays per environment = one group, played
   by the ``rollout_func`` inside ``GRPOTrainer.training_step``; reward = episode return,
   advantages normalized within each environment;
5. regret per environment -> replay priorities and the ledger; designer GRPO step on the
   groups whose rewards are all known (delayed by ``play_window`` rounds), replaying the
   stored completions through the same ``rollout_func``;
6. every ``register_every`` rounds, pending accepted sources become ONE new registry
   generation (optionally pushed to the Hub); metrics; checkpoint.

Driving TRL: the trainer is built once; each step calls ``training_step`` with rows
built here (group-major, ``num_generations`` rows per group, as TRL's ``RepeatSampler``
would give), then clips gradients and steps the optimizer; ``state.global_step`` is
advanced so TRL re-syncs vLLM weights before the next rollout.
"""

from __future__ import annotations

import hashlib
import random
import time
from statistics import fmean
from typing import Any, Callable

from .config import SelfPlayConfig
from .design import Proposal, ScriptedSeedVariants, SelfPlayDesigner
from .replay_buffer import ReplayBuffer, ReplayEntry
from .rewards import Candidate, DesignerLedger
from .rollout import SelfPlayRollout, StoredCompletion, agent_prompt, designer_prompt, reward_from_rollout
from .splits import is_heldout

ProgressFn = Callable[[int, dict], None]


def _mean(xs: list[float]) -> float | None:
    return fmean(xs) if xs else None


class SelfPlayTrainer:
    """See the module docstring. Inject ``registry``, ``designer_backend``, ``runtime`` in tests."""

    def __init__(self, config: SelfPlayConfig, *, registry: Any = None, designer_backend: Any = None,
                 runtime: Any = None, progress: ProgressFn | None = None) -> None:
        from . import grpo

        self.config = config
        self.progress = progress or (lambda r, row: None)
        self.rng = random.Random(config.seed)
        grpo.seed_everything(config.seed)
        self.grpo = grpo.build_trainer(config)
        self.tokenizer = self.grpo.processing_class
        self.model = self.grpo.model
        self.backend = grpo.policy(self.grpo, config)
        from ..agents.rollout import LLMAgent

        self.agent = LLMAgent(self.backend, name=f"policy:{config.model}", max_new_tokens=config.agent_max_new_tokens,
                              temperature=config.temperature, sandbox=config.sandbox_seeds)
        filler = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        self.rollout = SelfPlayRollout(self.agent, filler)
        self.grpo.rollout_func = self.rollout
        if registry is None:
            from ..registry.store import Registry

            registry = Registry.open(config.registry_path)
        self.registry = registry
        if designer_backend is None:
            designer_backend = (ScriptedSeedVariants(self.tokenizer) if config.designer == "scripted:seed-variants"
                                else self.backend)
        self.designer = SelfPlayDesigner(config, designer_backend, registry, runtime)
        self.buffer = ReplayBuffer(config.replay_capacity, config.replay_recent, config.replay_temperature,
                                   config.replay_min_priority)
        self.ledger = DesignerLedger(config.reward_mode, config.invalid_penalty, config.play_window)
        self.hint_sources: dict[str, str] = {}
        self.pending: list[dict] = []  # accepted, not yet registered
        self.estimates: dict[str, dict] = {}
        self.round = 0  # next round to run
        self.generations: list[int] = []
        if config.include_seeds:
            self._add_seeds()

    # -- set-up --------------------------------------------------------------------------
    def _add_seeds(self) -> None:
        from ..registry.catalog import seed_records

        for rec in seed_records():
            eid = str(rec.env_id)
            if not is_heldout(eid):
                self.buffer.add(ReplayEntry(key=eid, env_id=eid, skill=rec.skill))

    # -- one GRPO step --------------------------------------------------------------------
    def _grpo_step(self, rows: list[dict], group_size: int) -> dict[str, float]:
        tr = self.grpo
        tr.num_generations = group_size
        loss = tr.training_step(tr.model, rows, None)
        if self.config.max_grad_norm:
            tr.accelerator.clip_grad_norm_(tr.model.parameters(), self.config.max_grad_norm)
        tr.optimizer.step()
        tr.optimizer.zero_grad(set_to_none=True)
        tr.state.global_step += 1
        logged = {k: fmean(v) for k, v in tr._metrics["train"].items() if v and isinstance(v[0], (int, float))}
        tr._metrics["train"].clear()
        advantages = tr._buffered_inputs[0]["advantages"].tolist() if tr._buffered_inputs else []
        return {"loss": float(loss), "advantages": advantages, **logged}

    # -- the round -----------------------------------------------------------------------
    def _design(self, r: int) -> list[Proposal]:
        cfg = self.config
        if not cfg.designer_prompts or r % cfg.designer_every:
            return []
        props = self.designer.propose(r, self.rng, [(x["key"], x["source"]) for x in self.pending])
        hint_backend = self.backend if cfg.model_hints else None
        for p in props:
            key = None
            if p.valid:
                key = "src:" + hashlib.sha256(p.source.encode()).hexdigest()[:16]
                if key not in self.buffer and not any(x["key"] == key for x in self.pending):
                    hinted, origin = self.designer.hinted_source(p.source, hint_backend)
                    self.hint_sources[key] = hinted
                    self.buffer.add(ReplayEntry(key=key, source=p.source, skill=p.skill, added_round=r))
                    self.pending.append({"key": key, "source": hinted, "skill": p.skill, "mode": p.mode,
                                         "cid": p.cid, "doc_ref": p.doc_ref, "parent_ids": p.parent_ids,
                                         "verdicts": p.verdicts, "hint_origin": origin, "round": r})
            self.ledger.add(Candidate(p.cid, p.group, r, p.valid, key))
            n = cfg.designer_max_new_tokens  # a scripted backend may exceed the budget: train on its first n
            self.rollout.designer[p.cid] = StoredCompletion(p.prompt_ids, p.completion_ids[:n], p.logprobs[:n])
        return props

    def _task_prompt(self, entry: ReplayEntry, seed: int, hint: bool) -> str:
        key = entry.key
        if entry.source is not None:
            src_key = f"{key}:hint" if hint and key in self.hint_sources else key
            self.rollout.sources[key] = entry.source
            if key in self.hint_sources:
                self.rollout.sources[f"{key}:hint"] = self.hint_sources[key]
            return agent_prompt(entry.env_id or key, seed, hint=hint, max_turns=self.config.max_turns,
                                source_key=src_key)
        return agent_prompt(entry.env_id or key, seed, hint=hint, max_turns=self.config.max_turns)

    def run_round(self) -> dict[str, Any]:
        """Run round ``self.round``; returns (and logs) its metrics row."""
        cfg, rng, r = self.config, self.rng, self.round
        t0 = time.perf_counter()
        props = self._design(r)
        t_design = time.perf_counter() - t0
        waiting = [k for k in self.ledger.pending_keys() if k in self.buffer]
        plays = [self.buffer.entries[k] for k in waiting]
        plays += self.buffer.sample(max(0, cfg.envs_per_round - len(plays)), rng, exclude=set(waiting))
        seeds = [rng.randrange(1_000_000) for _ in plays]
        row: dict[str, Any] = {"round": r, "envs_played": len(plays), "designer_s": round(t_design, 3)}
        tokens, t1 = 0, time.perf_counter()
        if plays:
            self.agent.seed = rng.randrange(2**31)
            hinted = [self.rollout.task_of(_spec(self._task_prompt(e, s, True)))
                      for e, s in zip(plays, seeds) for _ in range(cfg.hint_plays)]
            hint_eps = self.rollout.play(hinted)
            self.agent.seed = rng.randrange(2**31)
            rows = [{"prompt": self._task_prompt(e, s, False)} for e, s in zip(plays, seeds)
                    for _ in range(cfg.agent_group_size)]
            step = self._grpo_step(rows, cfg.agent_group_size)
            plain_eps = self.rollout.last_episodes
            tokens = sum(sum(ep.mask) for ep in hint_eps + plain_eps)
            row.update(agent_loss=step["loss"], agent_advantages=step["advantages"],
                       agent_reward=step.get("reward"), agent_clip_ratio=step.get("clip_ratio/region_mean"))
            regrets, wins_plain, wins_hint = [], [], []
            for i, e in enumerate(plays):
                plain = [ep.episode_return for ep in plain_eps[i * cfg.agent_group_size:(i + 1) * cfg.agent_group_size]]
                hint = [ep.episode_return for ep in hint_eps[i * cfg.hint_plays:(i + 1) * cfg.hint_plays]]
                from ..designer.regret import RegretEstimate

                est = RegretEstimate.from_rewards(hint, plain)
                self.estimates[e.key] = est.as_dict()
                self.buffer.record(e.key, est.regret)
                self.ledger.record_plays(e.key, plain, hint)
                regrets.append(est.regret)
                wins_plain.append(est.win_rate_plain)
                wins_hint.append(est.win_rate_hint)
                if e.env_id and not e.env_id.startswith("src:") and e.source is not None:
                    self._store_scores(e.env_id, est)
            row.update(mean_regret=_mean(regrets), win_rate_plain=_mean(wins_plain), win_rate_hint=_mean(wins_hint))
        t_play = time.perf_counter() - t1
        row.update(play_s=round(t_play, 3), rollout_tokens=tokens,
                   rollout_tokens_per_s=round(tokens / t_play, 2) if t_play > 0 else None)
        row.update(self._designer_step())
        row.update(self._proposal_metrics(props))
        if (r + 1) % cfg.register_every == 0:
            row.update(self._register(r))
        row.update(replay_size=len(self.buffer), replay_mean_priority=round(self.buffer.mean_priority(), 4),
                   global_step=self.grpo.state.global_step, round_s=round(time.perf_counter() - t0, 3))
        self.round = r + 1
        return row

    def _designer_step(self) -> dict[str, Any]:
        groups = self.ledger.ready_groups()
        if not groups:
            return {"designer_groups_trained": 0}
        rows, rewards = [], []
        for g in groups:
            for c in g:
                self.rollout.designer[c.cid].reward = c.reward
                rows.append({"prompt": designer_prompt(c.cid)})
                rewards.append(c.reward)
        step = self._grpo_step(rows, self.config.designer_group_size)
        for g in groups:
            for c in g:
                self.rollout.designer.pop(c.cid, None)
        return {"designer_groups_trained": len(groups), "designer_loss": step["loss"],
                "designer_reward": _mean([float(x) for x in rewards]), "designer_advantages": step["advantages"]}

    def _proposal_metrics(self, props: list[Proposal]) -> dict[str, Any]:
        if not props:
            return {"proposed": 0}
        from ..designer.verdicts import STAGES

        passed = {s: sum(any(v["name"] == s and v["ok"] for v in p.verdicts) for p in props)
                  for s in ("extract", *STAGES)}
        rejected: dict[str, int] = {}
        for p in props:
            if p.rejected_at:
                rejected[p.rejected_at] = rejected.get(p.rejected_at, 0) + 1
        novelty = [p.novelty for p in props if p.novelty is not None]
        return {"proposed": len(props), "valid": sum(p.valid for p in props),
                "valid_rate": sum(p.valid for p in props) / len(props),
                "acceptance_by_stage": {k: v / len(props) for k, v in passed.items()},
                "rejected_at": rejected, "novelty": _mean(novelty)}

    # -- registry --------------------------------------------------------------------------
    def _store_scores(self, env_id: str, est: Any) -> None:
        try:
            from ..designer.scoring import store_scores

            store_scores(self.registry, env_id, est, self.config.reward_mode, agent_name=self.agent.name)
        except Exception:  # scores are informative; never fail a round on them
            pass

    def _register(self, r: int) -> dict[str, Any]:
        if not self.pending:
            return {"registered": 0}
        gen = self.registry.next_generation()
        designer_model = getattr(self.designer.backend, "name", self.config.model)
        results = self.registry.add_many([{
            "source": p["source"], "filename": f"{p['cid']}.py", "generation": gen, "skill": p["skill"],
            "designer_model": designer_model, "grounding_ref": p["doc_ref"], "parent_ids": p["parent_ids"],
            "acceptance": p["verdicts"],
            "metadata": {"mode": p["mode"], "selfplay_round": p["round"], "hint_origin": p["hint_origin"],
                         "candidate": p["cid"]},
        } for p in self.pending])
        new = 0
        for p, res in zip(self.pending, results):
            eid = str(res.env_id)
            new += int(res.new)
            if p["key"] in self.estimates:
                from ..designer.regret import RegretEstimate

                d = self.estimates[p["key"]]
                est = RegretEstimate.from_rewards([d["mean_reward_hint"]], [d["mean_reward_plain"]])
                self._store_scores(eid, est)
            if is_heldout(eid):
                self.ledger.finalize(p["key"])
            else:
                self.ledger.rekey(p["key"], eid)
            self.buffer.rekey(p["key"], eid)
            if p["key"] in self.hint_sources:
                self.hint_sources[eid] = self.hint_sources.pop(p["key"])
        self.pending = []
        out: dict[str, Any] = {"registered": len(results), "registered_new": new, "generation": gen}
        if new:
            self.generations.append(gen)
        if self.config.push_to_hub and new:
            from ..registry.hub_sync import push

            res = push(self.registry.list(seeds=True), self.config.push_to_hub, generation=gen)
            out["hub_commit"] = res.get("commit")
        return out

    # -- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "next_round": self.round, "global_step": self.grpo.state.global_step, "trl_step": self.grpo._step,
            "buffer": self.buffer.to_json(), "ledger": self.ledger.to_json(),
            "designer_completions": {k: vars(v) for k, v in self.rollout.designer.items()},
            "sources": self.rollout.sources, "hint_sources": self.hint_sources, "pending": self.pending,
            "estimates": self.estimates, "generations": self.generations,
            "registry_next_generation": self.registry.next_generation(), "config": self.config.to_dict(),
            "scripted_calls": getattr(self.designer.backend, "calls", None),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.round = int(state["next_round"])
        self.grpo.state.global_step = int(state["global_step"])
        self.grpo._step = int(state["trl_step"])
        self.buffer = ReplayBuffer.from_json(state["buffer"])
        self.ledger = DesignerLedger.from_json(state["ledger"])
        self.rollout.designer = {k: StoredCompletion(**v) for k, v in state["designer_completions"].items()}
        self.rollout.sources = dict(state["sources"])
        self.hint_sources, self.pending = dict(state["hint_sources"]), list(state["pending"])
        self.estimates, self.generations = dict(state["estimates"]), list(state["generations"])
        if state.get("scripted_calls") is not None and hasattr(self.designer.backend, "calls"):
            self.designer.backend.calls = int(state["scripted_calls"])


def _spec(prompt: str) -> dict:
    import json

    return json.loads(prompt)
