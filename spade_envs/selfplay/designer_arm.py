"""One arm of ``spade bench designer``: a self-play trainer whose designer learns against a
FROZEN agent (module :mod:`.designer_bench` runs the arms side by side).

Contract:

- :func:`frozen_agent` copies the initial policy weights into a separate model (no
  gradient, never handed to an optimizer) and wraps it in an ``LLMAgent``: every arm's
  proposals are played by that one agent, so the regret landscape cannot move;
- :class:`PointScorer` plays a variant ``(parent, point)`` ``plain`` times without and
  ``hint`` times with its hint on the SAME episode seeds (derived from the point, so every
  arm plays a point on the same seeds) and caches the returns: a point proposed by two
  arms is scored once and both see the same figures. Returns go through the trainer's
  own agent reward (``SelfPlayRollout.reward_of``);
- :func:`save_checkpoint` writes an arm's designer as a transformers folder, so its
  figures can be checked by playing it elsewhere;
- :class:`DesignerArm` drives the trainer's OWN code for everything it measures: the
  proposals are ``SelfPlayTrainer._design`` (:mod:`.designer_role`; params mode), the
  returns go into the trainer's settlement (``SelfPlayTrainer.settle_env``: SPADE's regret and, through its
  :class:`~.rewards.DesignerLedger`, the preset's designer reward), and the step is
  ``SelfPlayTrainer.designer_step``. The only
  difference between arms is ``permute``: the control arm shuffles the settled rewards
  inside each group (same multiset, no information about which proposal earned which)
  just before the step; ``train=False`` (the untrained arm) settles the groups and
  drops them without a step.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any


def weights_hash(model: Any) -> str:
    """sha256 over every parameter and buffer of ``model`` (names and bytes)."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().float().numpy().tobytes())
    return h.hexdigest()


def save_checkpoint(trainer: Any, folder: str | Path) -> str:
    """Write ``trainer``'s current designer (policy) weights and tokenizer to ``folder`` as a
    transformers checkpoint (safetensors, the training dtype): ``from_pretrained(folder)``
    loads it, and so does any spade model setting (``model=``, ``SPADE_BENCH_MODEL``,
    ``--set model=``). Returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model = trainer.model
    model = model.module if hasattr(model, "module") else model
    model.save_pretrained(folder, safe_serialization=True)
    trainer.tokenizer.save_pretrained(folder)
    return str(folder)


def fresh_copy(model: Any) -> Any:
    """A model of ``model``'s class and config holding a copy of its weights, in eval mode
    and without gradients. Not ``copy.deepcopy``: TRL patches the policy's ``forward`` per
    instance (its fused LM head), and a deep copy keeps that function, still bound to the
    ORIGINAL model, so the "copy" would run the live, training weights."""
    import torch

    src = model.module if hasattr(model, "module") else model
    param = next(src.parameters())
    clone = type(src)(copy.deepcopy(src.config)).to(dtype=param.dtype, device=param.device)
    with torch.no_grad():
        clone.load_state_dict(src.state_dict())
    clone.eval()
    clone.requires_grad_(False)
    return clone


def frozen_agent(trainer: Any) -> tuple[Any, Any]:
    """``(agent, model)``: an ``LLMAgent`` over a frozen copy of ``trainer``'s current weights."""
    from ..agents.backend_transformers import TransformersBackend
    from ..agents.rollout import LLMAgent

    cfg = trainer.config
    model = fresh_copy(trainer.model)
    backend = TransformersBackend(f"frozen:{cfg.model}", model=model, tokenizer=trainer.tokenizer)
    agent = LLMAgent(backend, name=f"frozen:{cfg.model}", max_new_tokens=cfg.agent_max_new_tokens,
                     temperature=cfg.temperature, sandbox=cfg.sandbox_seeds)
    agent.max_positions = int(cfg.max_context)
    return agent, model


def point_key(parent: str, point: dict[str, Any] | None) -> str:
    return f"{parent}@{json.dumps(point or {}, sort_keys=True)}"


@dataclass
class PointScore:
    """The returns of one variant's plays (hinted plays on the plain plays' seeds)."""

    plain: list[float]
    hint: list[float]
    step_timeout: bool = False

    @property
    def estimate(self) -> Any:
        """Self-play's one regret rule (:func:`~.rewards.regret_estimate`; a parametric
        parent's own ``hint()`` is its usable hint)."""
        from .rewards import regret_estimate

        return regret_estimate(self.plain, self.hint, hint_usable=True)


class PointScorer:
    """Plays and caches variants; see the module docstring. ``reward_of``: the trainer's
    agent reward of an episode."""

    def __init__(self, agent: Any, reward_of: Any, *, plain: int, hint: int, max_turns: int, seed: int) -> None:
        self.agent, self.reward_of = agent, reward_of
        self.plain, self.hint, self.max_turns, self.seed = int(plain), int(hint), int(max_turns), int(seed)
        self.cache: dict[str, PointScore] = {}
        self.plays = 0

    def returns(self, key: str, hint: bool, episode: Any) -> float:
        """The reward one play of point ``key`` earned (the trainer's agent reward)."""
        return float(self.reward_of(episode))

    def episode_seeds(self, key: str) -> list[int]:
        base = int(hashlib.sha256(f"{self.seed}:{key}".encode()).hexdigest()[:8], 16)
        return [(base + 7919 * i) % 1_000_000 for i in range(max(self.plain, self.hint))]

    def score(self, points: list[tuple[str, dict[str, Any]]]) -> list[PointScore]:
        """The scores of ``points`` (``(parent, point)``), playing those not cached in one batch."""
        from ..agents.api import PlayTask
        from .rewards import is_step_timeout

        todo = list(dict.fromkeys(point_key(p, kw) for p, kw in points if point_key(p, kw) not in self.cache))
        spec = {point_key(p, kw): (p, kw) for p, kw in points}
        tasks, owners = [], []
        for key in todo:
            parent, kw = spec[key]
            seeds = self.episode_seeds(key)
            for hint, n in ((False, self.plain), (True, self.hint)):
                for i in range(n):
                    tasks.append(PlayTask(env_id=parent, seed=seeds[i], hint=hint, max_turns=self.max_turns,
                                          kwargs=dict(kw or {})))
                    owners.append((key, hint))
        if tasks:
            self.agent.seed = int(hashlib.sha256(f"{self.seed}:{todo[0]}".encode()).hexdigest()[:8], 16)
            episodes = self.agent.play(tasks)
            self.plays += len(tasks)
            for key in todo:
                self.cache[key] = PointScore([], [])
            for (key, hint), ep in zip(owners, episodes):
                sc = self.cache[key]
                (sc.hint if hint else sc.plain).append(self.returns(key, hint, ep))
                sc.step_timeout = sc.step_timeout or is_step_timeout(ep)
        return [self.cache[point_key(p, kw)] for p, kw in points]


def frontier(win_plain: float | None, regret: float | None) -> bool:
    """SPADE's band: the agent sometimes wins without the hint, and the hint helps."""
    return win_plain is not None and regret is not None and 0 < win_plain < 1 and regret > 0


def permute_group_rewards(groups: list[list[Any]], rng: random.Random) -> None:
    """Shuffle the rewards of each group's candidates among themselves (the control)."""
    for g in groups:
        rewards = [c.reward for c in g]
        rng.shuffle(rewards)
        for c, r in zip(g, rewards):
            c.reward = r


@dataclass
class StepRecord:
    """What one arm did in one step."""

    step: int
    proposals: list[dict[str, Any]] = field(default_factory=list)
    true_rewards: list[list[float]] = field(default_factory=list)  #: per group, before any permutation
    trained_rewards: list[list[float]] = field(default_factory=list)  #: per group, as the step received them
    metrics: dict[str, Any] = field(default_factory=dict)


class DesignerArm:
    """One arm (module docstring). ``trainer``: a :class:`~.trainer.SelfPlayTrainer` in
    params mode; ``scorer``: the shared :class:`PointScorer`; ``start_model``: the frozen
    initial weights (for the KL to the start)."""

    def __init__(self, name: str, trainer: Any, scorer: PointScorer, start_model: Any, *, permute: bool = False,
                 train: bool = True, seed: int = 0, kl_samples: int = 4) -> None:
        self.name, self.trainer, self.scorer, self.start_model = name, trainer, scorer, start_model
        self.permute, self.train, self.kl_samples = bool(permute), bool(train), int(kl_samples)
        self.perm_rng = random.Random(seed * 1_000_003 + 17)
        self.records: list[StepRecord] = []

    def step(self, step: int) -> StepRecord:
        import dataclasses

        tr = self.trainer
        props, _ = tr._design(step)
        by_cid = {p.cid: p for p in props}
        # valid variants the trainer put in its buffer (the others it settled already, without plays)
        valid = [p for p in props if p.valid and p.env_id in tr.buffer.entries and p.parent]
        scores = self.scorer.score([(p.parent, p.point or {}) for p in valid])
        for p, sc in zip(valid, scores):  # the trainer's settlement: regret, the ledger's designer reward
            tr.settle_env(tr.buffer.entries[p.env_id], sc.plain, sc.hint, step_timeout=sc.step_timeout)
        cands = {c.cid: c for c in tr.ledger.candidates.values() if c.cid in by_cid}
        rec = StepRecord(step)
        for p in props:
            c = cands.get(p.cid)
            rec.proposals.append({"cid": p.cid, "group": p.group, "valid": bool(p.valid), "parent": p.parent,
                                  "point": p.point, "rejected_at": p.rejected_at,
                                  "regret": None if c is None else c.regret,
                                  "win_rate_plain": None if c is None else c.win_rate_plain,
                                  "reward": None if c is None else c.reward})
        kl, lp_gap = self._kl_and_logprob_gap(props)
        groups = [g for g in _settled_groups(tr.ledger)]
        rec.true_rewards = [[float(c.reward) for c in g] for g in groups]
        if self.permute:
            permute_group_rewards(groups, self.perm_rng)
        rec.trained_rewards = [[float(c.reward) for c in g] for g in groups]
        if self.train:
            stats = tr.designer_step()
            out = dataclasses.asdict(stats) if stats is not None else {}
            got = [float(r) for r in out.get("designer_raw_rewards") or []]  # what the step itself consumed
            sizes = [len(g) for g in groups]
            rec.trained_rewards = [got[sum(sizes[:i]):sum(sizes[:i + 1])] for i in range(len(sizes))]
        else:
            tr.ledger.ready_groups()  # settled and dropped: the untrained designer never steps
            out = {"designer_groups_trained": len(groups)}
        rec.metrics = _step_metrics(rec, out, kl, lp_gap)
        self.records.append(rec)
        return rec

    def _kl_and_logprob_gap(self, props: list[Any]) -> tuple[float | None, float | None]:
        """Mean per-token ``log pi_now - log pi_start`` on this step's sampled completions
        (a k1 estimate of KL(now || start) on the tokens actually sampled), over up to
        ``kl_samples`` completions; and the mean gap between the sampling-time logprobs the
        backend reported (under constrained decoding) and the same tokens teacher-forced under
        the schema mask by the weights that sampled them (what the step scores): each figure
        is one batched forward whose prompts run once."""
        tr = self.trainer
        stored = tr.rollout.designer
        picked = [p for p in props if p.cid in stored and stored[p.cid].completion_ids][:self.kl_samples]
        rows = [(stored[p.cid].prompt_ids, stored[p.cid].completion_ids,
                 tr.constraints.allowed(stored[p.cid].prompt_ids, stored[p.cid].completion_ids)) for p in picked]
        if not rows:
            return None, None
        temperature = tr.config.temperature
        policy = tr.model.module if hasattr(tr.model, "module") else tr.model
        was = policy.training
        policy.eval()
        try:
            now = token_logps_batch(policy, rows, temperature)
        finally:
            policy.train(was)
        starts = token_logps_batch(self.start_model, rows, temperature)
        diffs, gaps = [], []
        for p, cur, start in zip(picked, now, starts):
            diffs.extend(a - b for a, b in zip(cur, start))
            sampled = list(p.logprobs)[:len(cur)]
            if sampled and len(sampled) == len(cur) and any(sampled):
                gaps.extend(a - b for a, b in zip(sampled, cur))
        return (fmean(diffs) if diffs else None), (fmean(gaps) if gaps else None)


def _settled_groups(ledger: Any) -> list[list[Any]]:
    """The groups :meth:`~.rewards.DesignerLedger.ready_groups` will hand to the step, in its
    order, without removing them."""
    groups: dict[str, list[Any]] = {}
    for cand in ledger.candidates.values():
        groups.setdefault(cand.group, []).append(cand)
    ready = [sorted(g, key=lambda c: c.cid) for g in groups.values() if all(c.reward is not None for c in g)]
    ready.sort(key=lambda g: (g[0].round, g[0].group))
    return ready


def token_logps(model: Any, prompt_ids: list[int], completion_ids: list[int], temperature: float = 1.0, *,
                allowed: list[list[int]] | None = None) -> list[float]:
    """Per-token logprobs of ``completion_ids`` after ``prompt_ids`` under ``model``,
    temperature-scaled as the GRPO loss scores them; with ``allowed`` (the allowed ids at
    each position of a schema-constrained completion) under that mask, renormalised.
    :func:`token_logps_batch` of one row."""
    return token_logps_batch(model, [(prompt_ids, completion_ids, allowed)], temperature)[0]


def token_logps_batch(model: Any, rows: list[tuple[list[int], list[int], list[list[int]] | None]],
                      temperature: float = 1.0) -> list[list[float]]:
    """:func:`token_logps` of each ``(prompt_ids, completion_ids, allowed)`` row; rows with
    the same prompt are scored in one batch whose prompt runs once
    (:func:`~.constrained_scoring.constrained_logps` over a :func:`~.shared_prompt.plan`)."""
    from contextlib import nullcontext

    import torch

    from .constrained_scoring import constrained_logps
    from .shared_prompt import plan

    out: list[list[float]] = [[] for _ in rows]
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (prompt, completion, _) in enumerate(rows):
        if completion:
            groups.setdefault(tuple(int(t) for t in prompt), []).append(i)
    device = next(model.parameters()).device
    vocab = int(model.get_output_embeddings().weight.shape[0])
    for prompt, members in groups.items():
        comps = [[int(t) for t in rows[i][1]] for i in members]
        keep = max(map(len, comps))
        ids = torch.tensor([[*prompt, *c, *[c[-1]] * (keep - len(c))] for c in comps], device=device)
        mask = torch.tensor([[1] * (len(prompt) + len(c)) + [0] * (keep - len(c)) for c in comps], device=device)
        allowed = torch.ones((len(members), keep, vocab), dtype=torch.bool, device=device)
        for r, i in enumerate(members):
            for t, ids_t in enumerate(rows[i][2] or []):
                allowed[r, t] = False
                allowed[r, t, [a for a in ids_t if a < vocab]] = True
        with torch.no_grad():
            lp, _ = constrained_logps(model, ids, mask, keep, allowed, temperature=temperature, autocast=nullcontext,
                                      split=plan(ids, mask, keep))
        for r, i in enumerate(members):
            out[i] = [float(x) for x in lp[r, :len(comps[r])].tolist()]
    return out


def _step_metrics(rec: StepRecord, out: dict[str, Any], kl: float | None, lp_gap: float | None) -> dict[str, Any]:
    props = rec.proposals
    valid = [p for p in props if p["valid"]]
    regrets = [p["regret"] for p in valid if p["regret"] is not None]
    rewards = [float(r) for g in rec.true_rewards for r in g]
    groups = rec.trained_rewards
    nonzero = sum(max(g) - min(g) > 1e-9 for g in groups if g)
    var = [fmean([(x - fmean(g)) ** 2 for x in g]) for g in rec.true_rewards if g]
    return {
        "step": rec.step, "proposals": len(props), "valid_rate": len(valid) / len(props) if props else 0.0,
        # over ALL proposals (an invalid one counts as regret 0 and outside the band): what the designer aims at
        "mean_regret": fmean([p["regret"] or 0.0 for p in props]) if props else 0.0,
        "mean_regret_valid": fmean(regrets) if regrets else None,
        "mean_designer_reward": fmean(rewards) if rewards else None,
        "frontier_share": (sum(frontier(p["win_rate_plain"], p["regret"]) for p in props) / len(props)) if props else 0.0,
        "nonzero_adv_group_share": nonzero / len(groups) if groups else None,
        "groups": len(groups), "trainer_groups_nonzero_adv": out.get("designer_groups_nonzero_adv"),
        "within_group_reward_var": fmean(var) if var else None,
        "kl_to_start": kl, "logprob_gap_sampled_minus_trained": lp_gap,
        "grad_norm": out.get("designer_grad_norm"), "loss": out.get("designer_loss"),
        "clip_ratio": out.get("designer_clip_ratio"),
    }
