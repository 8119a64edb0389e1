"""``SelfPlayTrainer``: the self-play loop (orchestration only).

One model, two roles, one optimizer, trained with TRL's ``GRPOTrainer`` through its
multi-turn ``rollout_func`` (:mod:`.rollout`); every TRL internal it needs is driven
from :mod:`.trl_bridge`. Each round ``r``:

1. designer (every ``designer_every`` rounds): ``designer_prompts`` prompts, a share
   ``params_share`` of them in ``params`` mode (a variant of a registry environment,
   :mod:`.design_params`), the rest in ``code`` mode (a program, :mod:`.design`);
   ``designer_group_size`` candidates each, validated by acceptance; accepted ones join
   the replay buffer (protected from eviction until their group is trained) and the
   pending registrations; every candidate joins the :class:`~.rewards.DesignerLedger`
   (this step and the designer's GRPO step of 5 are :class:`~.designer_role.DesignerRole`).
   Completions keep their sampling-time logprobs (teacher-forced under the current
   weights when the backend reported none) for the delayed, off-policy designer step;
2. pick at most ``envs_per_round`` environments: those whose candidates still wait for
   plays (oldest first), then replay samples (priority = recent regret);
3. hinted plays (``hint_plays`` each, on the SAME episode seed as the plain plays; with
   ``hint_once`` only the first time an environment is played; none for an environment
   without a usable hint);
4. agent GRPO step: ``agent_group_size`` plain plays per environment = one group; groups
   whose returns are all equal train nothing (``filter_zero_std``);
5. regret per environment (0 without a usable hint) -> replay priorities, the ledger
   and the registry's stored scores (from all actual plays so far); designer GRPO step
   on the groups whose rewards are all known, rewards centred/scaled by
   :func:`~.rewards.finalize_rewards` (in a step of their own, normalised over their own
   tokens: SPADE's ``min(50, agent/designer rows x regen)`` scale offsets the dilution of
   designer rows mixed into the agent's batch, which does not happen here, so
   ``designer_reward_scale=None`` means 1 — see :func:`~.rewards.designer_scale`);
6. every ``register_every`` rounds pending programs/variants become ONE new registry
   generation (main process only); metrics; checkpoint.

The trainer owns every table of the run (replay buffer, ledger, plays, hint cache, hinted
sources, estimates, variant memory); its collaborators get narrow typed inputs and give
typed results back: :class:`~.registration.Registrar` (registry writes, returns a
:class:`~.registration.RegistrationReport` the trainer rekeys its tables from),
:func:`~.design_params.propose_params` (the designer, the variant memory and the
registrar's ``register_variant``), :func:`~.rewards.regret_estimate` (the regret rule).
A round's record is a :class:`~.round_record.RoundRecord`.

Several processes: every rank runs this same loop; generation is split across ranks and
gathered (:mod:`.dist`); acceptance verdicts and hint resolution (sandbox deadlines) are
decided on the main process and broadcast, so buffers and ledgers stay identical.
"""

from __future__ import annotations

import json
import random
import time
from typing import TYPE_CHECKING, Any, Callable

from . import dist
from .config import SelfPlayConfig
from .design import ScriptedSeedVariants, SelfPlayDesigner
from .designer_role import DesignerRole
from .registration import Registrar, RegistrationReport
from .replay_buffer import ReplayBuffer, ReplayEntry, train_seed_entries
from .rewards import DesignerLedger, is_step_timeout, regret_estimate
from .rollout import SelfPlayRollout, StoredCompletion, agent_prompt
from .round_record import AgentStats, EnvOutcome, ProposalStats, RoundRecord, mean_or_none
from .splits import is_heldout

if TYPE_CHECKING:
    from ..designer.regret import RegretEstimate

PhaseFn = Callable[[str], None]
MAX_KEPT_PLAYS = 256  #: plain/hinted returns kept per environment for its stored scores


class SelfPlayTrainer(DesignerRole):
    """See the module docstring. Inject ``registry``, ``designer_backend``, ``runtime`` in tests."""

    def __init__(self, config: SelfPlayConfig, *, registry: Any = None, designer_backend: Any = None,
                 runtime: Any = None, on_phase: PhaseFn | None = None) -> None:
        from . import grpo

        self.config = config
        self.on_phase = on_phase or (lambda text: None)
        self.rng = random.Random(config.seed)
        grpo.seed_everything(config.seed)
        self.grpo = grpo.build_trainer(config)
        self.acc = self.grpo.accelerator
        self.tokenizer = self.grpo.processing_class
        self.backend = grpo.policy(self.grpo, config)
        from ..agents.rollout import LLMAgent

        self.agent = LLMAgent(self.backend, name=f"policy:{config.model}", max_new_tokens=config.agent_max_new_tokens,
                              temperature=config.temperature, sandbox=config.sandbox_seeds)
        self.agent.max_positions = int(config.max_context)
        filler = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        self.rollout = SelfPlayRollout(self.agent, filler, failed_reward=config.failed_play_reward,
                                       unterminated_reward=config.unterminated_reward)
        self.grpo.rollout_func = self.rollout
        from .constrained_scoring import TokenConstraints

        #: the stored designer completions decoded under a schema, scored under its mask
        self.constraints = self.grpo.spade_constraints = TokenConstraints(self.tokenizer)
        if registry is None:
            from ..registry.store import Registry

            registry = Registry.open(config.registry_path)
        self.registry = registry
        self.scripted = designer_backend is None and config.designer == "scripted:seed-variants"
        if designer_backend is None:
            designer_backend = ScriptedSeedVariants(self.tokenizer) if self.scripted else self.backend
        # the scripted designer is cheap and counts its calls: every rank runs all of it (same answers)
        # acceptance is judged on the main process and broadcast (the designer's accelerator)
        self.designer = SelfPlayDesigner(config, designer_backend if self.scripted else
                                         dist.ShardedBackend(designer_backend, self.acc), registry, runtime,
                                         accelerator=self.acc)
        self.buffer = ReplayBuffer(config.replay_capacity, config.replay_recent, config.replay_temperature,
                                   config.replay_min_priority)
        self.ledger = DesignerLedger.from_config(config)
        self.registrar = Registrar(registry, accelerator=self.acc, runtime=runtime, reward_mode=config.reward_mode,
                                   designer_model=getattr(self.designer.backend, "name", config.model),
                                   agent_name=self.agent.name, push_to_hub=config.push_to_hub)
        self.variant_memory: Any = None  #: params mode's VariantMemory, made when first needed
        self.hint_sources: dict[str, str] = {}
        self.hint_cache: dict[str, list[float]] = {}  # hint_once: the hinted returns, made once
        self.plays: dict[str, dict[str, list[float]]] = {}  # actual returns per environment key
        self.estimates: dict[str, dict] = {}
        self._records: dict[str, tuple[str, dict]] = {}
        self.round = 0  # next round to run
        self.last_plain_episodes: list[Any] = []  #: the agent's plain plays of the last round, group-major
        if config.include_seeds:
            self._add_seeds()

    @property
    def model(self) -> Any:
        return self.acc.unwrap_model(self.grpo.model)

    @property
    def generations(self) -> list[int]:
        return self.registrar.generations

    def _add_seeds(self) -> None:
        for entry in train_seed_entries(self.config):
            self.buffer.add(entry)

    # -- one GRPO step --------------------------------------------------------------------
    def _grpo_step(self, rows: list[dict], group_size: int, *, behaviour: bool = False) -> dict[str, Any]:
        from .trl_bridge import grpo_step

        return grpo_step(self.grpo, rows, group_size, micro_batch=self.config.micro_batch_size,
                         max_grad_norm=self.config.max_grad_norm, behaviour=behaviour)

    # -- playing ---------------------------------------------------------------------------
    def _store_record(self, env_id: str) -> tuple[str, dict] | None:
        """``(source, kwargs)`` of a registry entry of THIS run's store (a variant's are its
        root program and fixed point), so plays never depend on the process's default
        registry; None for seeds (the agent loop resolves them itself)."""
        if self.registrar.is_seed(env_id):
            return None
        if env_id not in self._records:
            rec = self.registry.get(env_id)
            self._records[env_id] = (rec.source, dict(getattr(rec, "params", None) or {}))
        return self._records[env_id]

    def _task_prompt(self, entry: ReplayEntry, seed: int, hint: bool) -> str:
        key = entry.key
        stored = self._store_record(entry.env_id) if entry.env_id and entry.source is None else None
        if stored is not None:
            src_key = f"rec:{entry.env_id}"
            self.rollout.sources[src_key] = stored[0]
            return agent_prompt(entry.env_id, seed, hint=hint, max_turns=self.config.max_turns, source_key=src_key,
                                kwargs={**stored[1], **entry.kwargs})
        if entry.source is not None:
            src_key = f"{key}:hint" if hint and key in self.hint_sources else key
            self.rollout.sources[key] = entry.source
            if key in self.hint_sources:
                self.rollout.sources[f"{key}:hint"] = self.hint_sources[key]
            return agent_prompt(entry.env_id or key, seed, hint=hint, max_turns=self.config.max_turns,
                                source_key=src_key)
        return agent_prompt(entry.env_id or key, seed, hint=hint, max_turns=self.config.max_turns,
                            kwargs=entry.kwargs)

    def _pick(self) -> list[ReplayEntry]:
        cap = self.config.envs_per_round
        reserved = min(cap, round(cap * self.config.replay_share))  # replay slots waiting candidates never take
        pending = [k for k in self.ledger.pending_keys() if k in self.buffer]
        plays = [self.buffer.entries[k] for k in pending[:cap - reserved]]
        # candidates past the cap wait for their turn in order rather than by priority
        return plays + self.buffer.sample(max(0, cap - len(plays)), self.rng, exclude=set(pending))

    def _hinted(self, plays: list[ReplayEntry], seeds: list[int]) -> dict[str, list[Any]]:
        cfg = self.config
        todo = [(e, s) for e, s in zip(plays, seeds)
                if e.hint_usable and not (cfg.hint_once and e.key in self.hint_cache)]
        tasks = [self.rollout.task_of(json.loads(self._task_prompt(e, s, True)))
                 for e, s in todo for _ in range(cfg.hint_plays)]  # the plain plays' episode seed
        self.agent.seed = self.rng.randrange(2**31) + 7919 * self.acc.process_index
        eps = dist.map_sharded(self.acc, tasks, self.rollout.play)
        out: dict[str, list[Any]] = {}
        for i, (e, _) in enumerate(todo):
            out[e.key] = eps[i * cfg.hint_plays:(i + 1) * cfg.hint_plays]
        return out

    def run_round(self) -> dict[str, Any]:
        """Run round ``self.round``; returns its metrics row (:meth:`RoundRecord.as_row`)."""
        return self.run_round_record().as_row()

    def run_round_record(self) -> RoundRecord:
        """Run round ``self.round``; returns its typed record."""
        cfg, r = self.config, self.round
        t0 = time.perf_counter()
        props, new_keys = self._design(r)
        t_design = time.perf_counter() - t0
        plays = self._pick()
        t1 = time.perf_counter()
        agent, tokens, gen_s = self._play(r, plays, new_keys) if plays else (None, 0, 0.0)
        t_play = time.perf_counter() - t1
        designer = self._designer_step()
        proposals = ProposalStats.of(props)
        registration = self._register(r) if (r + 1) % cfg.register_every == 0 else None
        record = RoundRecord(
            round=r, envs_played=len(plays), designer_s=round(t_design, 3), agent=agent,
            play_s=round(t_play, 3), rollout_tokens=tokens, generation_s=round(gen_s, 3),
            rollout_tokens_per_s=round(tokens / t_play, 2) if t_play > 0 else None,
            generation_tokens_per_s=round(tokens / gen_s, 2) if gen_s > 0 else None,
            designer=designer, proposals=proposals, registration=registration, replay_size=len(self.buffer),
            replay_mean_priority=round(self.buffer.mean_priority(), 4), global_step=self.grpo.state.global_step,
            round_s=round(time.perf_counter() - t0, 3))
        self.round = r + 1
        return record

    def _play(self, r: int, plays: list[ReplayEntry], new_keys: set[str]) -> tuple[AgentStats, int, float]:
        """Round ``r``'s agent phase on ``plays``: hinted plays where due, the plain plays of
        the agent's GRPO step, each environment settled; ``(stats, tokens, generation s)``
        (``new_keys``: this round's valid proposals, for the frontier count)."""
        cfg = self.config
        seeds = [self.rng.randrange(1_000_000) for _ in plays]
        gen_s = 0.0
        self.on_phase(f"round {r}: agent plays {len(plays)} environments "
                      f"({cfg.agent_group_size} plain plays each, hinted where due)")
        hinted = self._hinted(plays, seeds)
        gen_s += self.agent.last_timings.get("generation_s", 0.0) if hinted else 0.0
        self.agent.seed = self.rng.randrange(2**31) + 7919 * self.acc.process_index
        rows = [{"prompt": self._task_prompt(e, s, False)} for e, s in zip(plays, seeds)
                for _ in range(cfg.agent_group_size)]
        step = self._grpo_step(rows, cfg.agent_group_size)
        gen_s += self.agent.last_timings.get("generation_s", 0.0)
        plain_eps = dist.gather_rows(self.acc, self.rollout.last_episodes)[:len(rows)]
        self.last_plain_episodes = plain_eps  # the designer step's rollout call resets last_episodes
        tokens = sum(sum(ep.mask) for eps in [plain_eps, *hinted.values()] for ep in eps)
        returns = [self.rollout.reward_of(ep) for ep in plain_eps]
        outcomes = []
        for i, e in enumerate(plays):
            eps = plain_eps[i * cfg.agent_group_size:(i + 1) * cfg.agent_group_size]
            timeout = any(is_step_timeout(ep) for ep in list(eps) + list(hinted.get(e.key, [])))
            outcomes.append(self.settle_env(e, [self.rollout.reward_of(ep) for ep in eps],
                                            [self.rollout.reward_of(ep) for ep in hinted.get(e.key, [])],
                                            step_timeout=timeout))
        # the designer's learning signal: this round's valid proposals that, played this round, land in
        # the frontier band (0 < plain win rate < 1 and regret > 0); shares are of all proposals
        frontier = sum(e.key in new_keys and 0 < o.win_rate_plain < 1 and o.regret > 0
                       for e, o in zip(plays, outcomes))
        agent = AgentStats(
            agent_loss=step["loss"], agent_advantages=step["advantages"], agent_reward=mean_or_none(returns),
            agent_micro_batches=step["micro_batches"], agent_grad_norm=step.get("grad_norm"),
            agent_clip_ratio=step.get("clip_ratio/region_mean"),
            agent_rows_filtered=sum(dist.gather_rows(self.acc, [step.get("rows_filtered", 0)])),
            mean_regret=mean_or_none([o.regret for o in outcomes]),
            win_rate_plain=mean_or_none([o.win_rate_plain for o in outcomes]),
            win_rate_hint=mean_or_none([o.win_rate_hint for o in outcomes if o.win_rate_hint is not None]),
            frontier=frontier,
            scores_stored=self.registrar.store_scores([(e.env_id, self.estimate(e.key)) for e in plays
                                                       if e.env_id]))
        return agent, tokens, gen_s

    # -- settlement -------------------------------------------------------------------------
    def settle_env(self, e: ReplayEntry, plain: list[float], fresh: list[float], *,
                   step_timeout: bool = False) -> EnvOutcome:
        """One environment's plays of this round (``fresh``: its hinted returns made now):
        kept for its stored scores, its regret (:func:`~.rewards.regret_estimate`) to the
        replay priorities, its returns to the ledger."""
        if fresh:
            self.hint_cache[e.key] = fresh
        hint = fresh or (self.hint_cache.get(e.key, []) if self.config.hint_once else [])
        kept = self.plays.setdefault(e.key, {"plain": [], "hint": []})
        kept["plain"] = (kept["plain"] + plain)[-MAX_KEPT_PLAYS:]
        kept["hint"] = (kept["hint"] + fresh)[-MAX_KEPT_PLAYS:]
        est = regret_estimate(plain, hint, hint_usable=e.hint_usable)
        self.estimates[e.key] = est.as_dict()
        self.buffer.record(e.key, est.regret)
        self.ledger.record_plays(e.key, plain, fresh, step_timeout=step_timeout)
        return EnvOutcome(est.regret, est.win_rate_plain, est.win_rate_hint if hint else None)

    def estimate(self, key: str) -> "RegretEstimate | None":
        """The estimate of ``key`` from every recorded play so far (None when never played):
        what the registry stores as its scores."""
        kept = self.plays.get(key)
        if not kept or not kept["plain"]:
            return None
        entry = self.buffer.entries.get(key)
        return regret_estimate(kept["plain"], kept["hint"] or self.hint_cache.get(key, []),
                               hint_usable=entry is None or entry.hint_usable)

    def _register(self, round_no: int) -> RegistrationReport:
        """The pending programs become one generation; the trainer's tables follow their new ids."""
        report = self.registrar.register(round_no, {p["key"]: self.estimate(p["key"]) for p in self.registrar.pending})
        for key, eid in report.renamed:
            for table in (self.plays, self.hint_cache, self.hint_sources):
                if key in table:
                    table[eid] = table.pop(key)
            if is_heldout(eid):
                self.ledger.finalize(key)
            else:
                self.ledger.rekey(key, eid)
            self.buffer.rekey(key, eid)
        return report

    # -- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "next_round": self.round, "global_step": self.grpo.state.global_step,
            "buffer": self.buffer.to_json(), "ledger": self.ledger.to_json(),
            "designer_completions": {k: vars(v) for k, v in self.rollout.designer.items()},
            "sources": self.rollout.sources, "hint_sources": self.hint_sources, "hint_cache": self.hint_cache,
            "plays": self.plays, "estimates": self.estimates, **self.registrar.state_dict(),
            "registry_next_generation": self.registry.next_generation(), "config": self.config.to_dict(),
            "scripted_calls": getattr(self._designer_inner, "calls", None),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.round = int(state["next_round"])
        self.grpo.state.global_step = int(state["global_step"])
        self.buffer = ReplayBuffer.from_json(state["buffer"])
        self.ledger = DesignerLedger.from_json(state["ledger"])
        self.rollout.designer = {k: StoredCompletion(**v) for k, v in state["designer_completions"].items()}
        for stored in self.rollout.designer.values():
            self.constraints.add(stored.prompt_ids, stored.completion_ids, stored.json_schema)
        self.rollout.sources = dict(state["sources"])
        self.hint_sources, self.hint_cache = dict(state["hint_sources"]), dict(state.get("hint_cache", {}))
        self.plays, self.estimates = dict(state.get("plays", {})), dict(state["estimates"])
        self.registrar.load_state_dict(state)
        if state.get("scripted_calls") is not None and hasattr(self._designer_inner, "calls"):
            self._designer_inner.calls = int(state["scripted_calls"])

    @property
    def _designer_inner(self) -> Any:
        return getattr(self.designer.backend, "inner", self.designer.backend)
