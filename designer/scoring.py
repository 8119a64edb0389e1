"""Hinted and plain plays of an environment through the agents API -> :class:`RegretEstimate`.

:func:`score_sources` plays, for each source, ``hint_plays`` hinted and ``plain_plays`` plain episodes
(``PlayTask(source=..., hint=...)``; seeds ``base_seed + i``, the same seeds for both
kinds so that the difference measures the hint, not the tasks) in ONE batched
``Agent.play`` call, and turns the episode returns into estimates. An episode that
failed (``Episode.error``) counts with its return (0.0) and is counted in
``estimate.extra["errors"]``.

:func:`store_scores` writes an estimate with its environment through
``Registry.update_scores`` (regret, win rates; the full estimate and the designer reward
under ``metadata["scores"]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .regret import RegretEstimate, RewardMode


@dataclass(frozen=True)
class PlayBudget:
    """How an environment is played to measure its regret: ``hint_plays`` hinted and
    ``plain_plays`` plain episodes on the same episode seeds (``base_seed + i``), at most
    ``max_turns`` agent turns each. The designer (``spade design``, both modes) and the
    self-play trainer (``hint_plays``, and ``agent_group_size`` plain plays) use these names."""

    hint_plays: int = 2  #: hinted episodes per environment (the privileged hint in the prompt)
    plain_plays: int = 4  #: plain episodes per environment
    max_turns: int = 6  #: agent turns per episode
    base_seed: int = 10_000  #: episode i of either kind is played with seed base_seed + i


def _tasks(key: str, source: str, hint_source: str, cfg: PlayBudget, kwargs: dict[str, Any] | None = None) -> list[Any]:
    from ..agents import PlayTask

    kw = dict(kwargs or {})  # a variant's parameters (both kinds of play at the same point)
    hinted = [PlayTask(env_id=key, seed=cfg.base_seed + i, hint=True, max_turns=cfg.max_turns, source=hint_source,
                       kwargs=dict(kw)) for i in range(cfg.hint_plays)]
    plain = [PlayTask(env_id=key, seed=cfg.base_seed + i, hint=False, max_turns=cfg.max_turns, source=source,
                      kwargs=dict(kw)) for i in range(cfg.plain_plays)]
    return hinted + plain


def score_sources(agent: Any, items: list[tuple], config: PlayBudget | None = None,
                  *, progress: bool = False) -> list[RegretEstimate]:
    """Estimates for ``items`` = ``(key, plain source, hinted source)`` or, for a
    variant, ``(key, plain source, hinted source, kwargs)``, aligned with them.
    ``agent`` is a :class:`spade_envs.agents.Agent`. Raises ``ValueError`` when
    ``hint_plays`` or ``plain_plays`` is below 1."""
    cfg = config or PlayBudget()
    if cfg.hint_plays < 1 or cfg.plain_plays < 1:
        raise ValueError("scoring needs hint_plays >= 1 and plain_plays >= 1")
    if not items:
        return []
    tasks = [t for item in items for t in _tasks(*item[:3], cfg, *item[3:4])]
    episodes = agent.play(tasks, progress=progress)
    if len(episodes) != len(tasks):
        raise ValueError(f"the agent returned {len(episodes)} episodes for {len(tasks)} tasks")
    per = cfg.hint_plays + cfg.plain_plays
    out = []
    for k in range(len(items)):
        eps = episodes[k * per:(k + 1) * per]
        hinted, plain = eps[:cfg.hint_plays], eps[cfg.hint_plays:]
        errors = [e.error for e in eps if e.error]
        out.append(RegretEstimate.from_episodes(  # terminal rewards; a win: terminated, reward > 0
            hinted, plain,
            extra={"errors": len(errors), "first_error": errors[0] if errors else None,
                   "seeds": [cfg.base_seed + i for i in range(max(cfg.hint_plays, cfg.plain_plays))],
                   "mean_turns": sum(e.turns for e in eps) / len(eps)},
        ))
    return out


def scores_metadata(estimate: RegretEstimate, mode: RewardMode | str = RewardMode.REGRET) -> dict[str, Any]:
    """The ``metadata["scores"]`` record of an estimate."""
    return {**estimate.as_dict(), "reward_mode": RewardMode(mode).value,
            "designer_reward": estimate.designer_reward(mode),
            "rewards_hint": list(estimate.rewards_hint), "rewards_plain": list(estimate.rewards_plain),
            "errors": estimate.extra.get("errors", 0)}


def store_scores(registry: Any, env_id: Any, estimate: RegretEstimate, mode: RewardMode | str = RewardMode.REGRET,
                 agent_name: str | None = None) -> None:
    """Write ``estimate`` with ``env_id`` through ``Registry.update_scores``."""
    meta = {"scores": {**scores_metadata(estimate, mode), "agent": agent_name}}
    registry.update_scores(env_id, regret=estimate.regret, win_rate_hint=estimate.win_rate_hint,
                           win_rate_plain=estimate.win_rate_plain, metadata=meta)
