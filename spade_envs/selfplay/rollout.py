"""TRL ``rollout_func`` for both roles (TRL 1.16 contract).

TRL 1.16 calls ``rollout_func(prompts, trainer)`` from ``GRPOTrainer._generate`` with the
``prompt`` column of the generation batch. That batch is already repeated: each prompt
appears ``num_generations`` times in a row (the ``RepeatSampler``; here the trainer builds
the rows the same way), and the function returns ONE completion per row, as a dict of
per-row lists:

- ``prompt_ids``: ``list[list[int]]``; ``completion_ids``: ``list[list[int]]``;
- ``logprobs``: ``list[list[float]]``, one sampling logprob per completion token (used
  for vLLM importance-sampling correction; may be 0.0 where unknown);
- optional ``env_mask``: ``list[list[int]]`` aligned with ``completion_ids``, 1 on model
  tokens and 0 on environment tokens (TRL folds it into the loss mask);
- any other key (``reward``, ``won`` ...) is merged into the rows and reaches the reward
  functions as a keyword argument.

Prompts are JSON strings naming the work (:func:`agent_prompt`, :func:`designer_prompt`):

- ``{"role": "agent", "env_id", "seed", "hint", "max_turns", "source_key"[, "kwargs"]}``: the rows are
  played as multi-turn episodes by the agent (one batched ``Agent.play``); each episode's
  token ids are split at the first model token: everything before is ``prompt_ids``, the
  rest (model turns AND environment observations) is the completion, with the episode's
  mask as ``env_mask``; ``reward`` is the episode return;
- ``{"role": "designer", "cid"}``: a designer completion generated earlier, whose reward
  (regret, or the invalid penalty) is only known now; it is returned as stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..agents.api import Episode, PlayTask
from .rewards import agent_reward


def agent_prompt(env_id: str, seed: int, *, hint: bool = False, max_turns: int = 10,
                 source_key: str | None = None, kwargs: dict | None = None) -> str:
    spec = {"role": "agent", "env_id": env_id, "seed": int(seed), "hint": bool(hint),
            "max_turns": int(max_turns), "source_key": source_key}
    if kwargs:
        spec["kwargs"] = dict(kwargs)
    return json.dumps(spec, sort_keys=True)


def designer_prompt(cid: str) -> str:
    return json.dumps({"role": "designer", "cid": cid}, sort_keys=True)


@dataclass
class StoredCompletion:
    """A designer completion kept until its reward is known (persisted in checkpoints)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    reward: float | None = None
    #: the JSON schema it was decoded under (params mode), None when free: the step scores
    #: it under that mask (:mod:`.constrained_scoring`)
    json_schema: dict | None = None


def split_episode(episode: Episode, filler_id: int) -> tuple[list[int], list[int], list[float], list[int]]:
    """``(prompt_ids, completion_ids, logprobs, env_mask)`` of an episode; an episode with
    no model token (failed at reset) becomes one masked filler token."""
    ids, lps, mask = list(episode.token_ids), list(episode.logprobs), list(episode.mask)
    first = next((i for i, m in enumerate(mask) if m == 1), None)
    if first is None:
        prompt = ids or [filler_id]
        return prompt, [filler_id], [0.0], [0]
    return ids[:first] or [filler_id], ids[first:], lps[first:], mask[first:]


class SelfPlayRollout:
    """The ``rollout_func``: agent rows are played, designer rows are replayed.

    ``agent``: an :class:`~spade_envs.agents.api.Agent` (built on the policy backend);
    ``sources``: ``source_key -> source`` for candidates not yet registered;
    ``designer``: ``cid -> StoredCompletion``. After each call ``last_episodes`` holds the
    agent episodes of that call, aligned with its agent rows.
    """

    def __init__(self, agent: Any, filler_id: int, *, failed_reward: float = 0.0,
                 unterminated_reward: float | None = None) -> None:
        self.agent = agent
        self.filler_id = int(filler_id)
        self.failed_reward, self.unterminated_reward = float(failed_reward), unterminated_reward
        self.sources: dict[str, str] = {}
        self.designer: dict[str, StoredCompletion] = {}
        self.last_episodes: list[Episode] = []

    def task_of(self, spec: dict) -> PlayTask:
        key = spec.get("source_key")
        source = self.sources.get(key) if key else None
        return PlayTask(env_id=spec["env_id"], seed=int(spec["seed"]), hint=bool(spec.get("hint")),
                        max_turns=int(spec.get("max_turns", 10)), source=source, kwargs=dict(spec.get("kwargs") or {}))

    def reward_of(self, episode: Episode) -> float:
        """The agent's reward for ``episode`` (:func:`~.rewards.agent_reward` with this run's rules)."""
        return agent_reward(episode, failed=self.failed_reward, unterminated=self.unterminated_reward)

    def play(self, tasks: list[PlayTask]) -> list[Episode]:
        return self.agent.play(tasks) if tasks else []

    def __call__(self, prompts: list[Any], trainer: Any = None) -> dict[str, list]:
        specs = [json.loads(p if isinstance(p, str) else p[-1]["content"]) for p in prompts]
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                "reward": [], "won": []}
        agent_rows = [i for i, s in enumerate(specs) if s["role"] == "agent"]
        episodes = self.play([self.task_of(specs[i]) for i in agent_rows])
        self.last_episodes = episodes
        by_row = dict(zip(agent_rows, episodes))
        for i, spec in enumerate(specs):
            if spec["role"] == "agent":
                ep = by_row[i]
                p, c, lp, m = split_episode(ep, self.filler_id)
                reward, won = self.reward_of(ep), bool(ep.won)
            elif spec["role"] == "designer":
                stored = self.designer[spec["cid"]]
                p, c, lp = stored.prompt_ids, stored.completion_ids or [self.filler_id], stored.logprobs
                m = [1] * len(stored.completion_ids) if stored.completion_ids else [0]
                lp = lp if len(lp) == len(c) else [0.0] * len(c)
                reward, won = float(stored.reward if stored.reward is not None else 0.0), False
            else:
                raise ValueError(f"unknown role in rollout prompt: {spec!r}")
            out["prompt_ids"].append(list(p))
            out["completion_ids"].append(list(c))
            out["logprobs"].append([float(x) for x in lp])
            out["env_mask"].append(list(m))
            out["reward"].append(float(reward))
            out["won"].append(won)
        return out


def reward_from_rollout(prompts: list[Any], completions: list[Any], reward: list[float] | None = None,
                        **_: Any) -> list[float]:
    """The GRPO reward function: the ``reward`` field the rollout function returned."""
    return [float(r) for r in (reward or [0.0] * len(prompts))]
