r"""The evaluation sets of ``spade bench learning``, and how one model is scored on them.

Every set is a fixed list of :class:`~spade_envs.agents.PlayTask` objects (environment,
parameters, episode seed), so a set played twice with the same sampling seed differs only
by the weights; each episode gives two booleans, ``won`` and ``formatted`` (its reply
carried an answer in a form the environment reads: ``\boxed{}``, ``<answer>`` or a tool
call), so learning the answer format is told apart from solving.

- **held-out registry split at level k** (:func:`heldout_tasks`): every single-agent seed
  environment of the held-out split (:func:`spade_envs.evals.splits.is_heldout`) that has
  a level ``k`` (``levels_of(source)[k]``: level 0 is the easiest ``difficulty``; an
  environment without a ladder has level 0 only), episodes from seed 70000;
  :func:`winnable` counts the episodes whose reference plan fits the turn budget (a
  harness check: a set of episodes no agent can win within its turns measures nothing);
- **external** (:func:`select_external`): reasoning-gym tasks at their easy settings
  (reasoning-gym's defaults), chosen by a rule applied here, never by hand: among the
  tasks of the RG split whose prompts fit :data:`EXTERNAL_PROMPT_CHARS` characters, those
  on which the untrained model wins between :data:`EXTERNAL_BAND` (5 % and 60 %) of
  :data:`SCREEN_EPISODES` screening episodes (entries 10000 on); the set then plays
  entries from 20000 on (never the screening ones), at least :data:`EXTERNAL_EPISODES`
  episodes spread evenly over the chosen tasks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

EPISODE_SEED0 = 70_000  #: held-out episode seeds start here (away from acceptance/training seeds)
SCREEN_SEED0 = 10_000  #: reasoning-gym entries of the screening pass
EXTERNAL_SEED0 = 20_000  #: reasoning-gym entries of the external set (never screened)
EXTERNAL_BAND = (0.05, 0.60)
EXTERNAL_PROMPT_CHARS = 1000  #: the prompt (SPADE's wrapper included) of every screened entry fits this
SCREEN_EPISODES = 4
EXTERNAL_EPISODES = 400
#: turns per held-out episode when a model is evaluated (the bench, the main job's table):
#: every reference plan of the held-out split at levels 0 and 1 fits (the longest takes 4)
EVAL_MAX_TURNS = 4


@dataclass
class Outcome:
    won: bool
    formatted: bool


def formatted_reply(actions: list[str]) -> bool:
    r"""Whether any action holds an answer in a readable form (``\boxed{}``, ``<answer>``,
    a well-formed ``<tool_call>``)."""
    from ..actions import answer_blocks, extract_all_boxed, parse_tool_calls

    return any(extract_all_boxed(a) or answer_blocks(a) or any(not c.error for c in parse_tool_calls(a))
               for a in actions)


def heldout_tasks(level: int, n_episodes: int, max_turns: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """The held-out tasks at ``level`` (module docstring) and a description per environment."""
    from ..agents.api import PlayTask
    from ..games import is_multiplayer
    from ..registry.catalog import seed_records
    from .levels import levels_of
    from .splits import is_heldout

    records = [r for r in seed_records() if is_heldout(str(r.env_id)) and not is_multiplayer(r)]
    records = [r for r in records if len(levels_of(r.source)) > level]
    if not records:
        return [], []
    per_env = max(1, math.ceil(n_episodes / len(records)))
    tasks, envs = [], []
    for rec in sorted(records, key=lambda r: str(r.env_id)):
        kw = levels_of(rec.source)[level]
        envs.append({"id": str(rec.env_id), "skill": rec.skill, "kwargs": kw, "episodes": per_env})
        tasks += [PlayTask(env_id=str(rec.env_id), seed=EPISODE_SEED0 + i, max_turns=max_turns, kwargs=dict(kw))
                  for i in range(per_env)]
    return tasks, envs


def reference_turns(task: Any) -> int | None:
    """Turns the reference solution of ``task`` takes (``solution_actions()`` after reset;
    None when the environment publishes none)."""
    import gymnasium as gym

    env = gym.make(task.env_id, env_kwargs=dict(task.kwargs or {}))
    try:
        env.reset(seed=task.seed)
        return len(env.unwrapped.solution_actions())
    except Exception:  # an environment without a reference plan
        return None
    finally:
        env.close()


def winnable(tasks: list[Any]) -> dict[str, Any]:
    """How many of ``tasks`` have a reference plan within their ``max_turns``, and the
    longest plan seen (unknown plans are counted apart)."""
    turns = [reference_turns(t) for t in tasks]
    known = [(n, t.max_turns) for n, t in zip(turns, tasks) if n is not None]
    return {"episodes": len(tasks), "winnable": sum(n <= m for n, m in known),
            "unknown": len(tasks) - len(known), "longest_plan": max((n for n, _ in known), default=None)}


def external_candidates(prompt_chars: int = EXTERNAL_PROMPT_CHARS, screen_episodes: int = SCREEN_EPISODES) -> list[Any]:
    """The RG split's tasks at easy settings whose screening prompts all fit ``prompt_chars``."""
    from ..evals import reasoning_gym_tasks as rgt

    out = []
    for t in rgt.select_tasks("easy"):
        sizes = [len(rgt.question_text(rgt.entry(t.name, t.config, SCREEN_SEED0 + i))) for i in range(screen_episodes)]
        if max(sizes) <= prompt_chars:
            out.append(t)
    return out


def rg_tasks(tasks: list[Any], episodes: int, seed0: int, max_turns: int = 2) -> list[Any]:
    from ..evals.reasoning_gym import play_tasks

    return play_tasks(tasks, episodes, seed0=seed0, max_turns=max_turns)


def play(model: str, tasks: list[Any], *, max_new_tokens: int, seed: int, batch_size: int = 32,
         say: Callable[[str], None] = lambda s: None) -> list[Outcome]:
    """Play ``tasks`` with ``transformers:<model>`` (temperature 0.6, sampling seed ``seed``)
    in fixed batches (consecutive tasks, at most ``batch_size``, a new batch at each change
    of registry environment so a batch shares its prompt prefix), so two calls with equal
    arguments sample identically but for the weights."""
    from ..agents import load_agent

    agent = load_agent(f"transformers:{model}", max_new_tokens=max_new_tokens, temperature=0.6, seed=seed,
                       trust_remote_code=True)  # the only task sources are the shipped reasoning-gym program
    out: list[Outcome] = []
    try:
        batches: list[list[Any]] = []
        for t in tasks:
            key = "rg" if t.source is not None else t.env_id
            if batches and len(batches[-1]) < batch_size and batches[-1][0][0] == key:
                batches[-1].append((key, t))
            else:
                batches.append([(key, t)])
        step = max(1, len(tasks) // 5)
        for batch in batches:
            for ep in agent.play([t for _, t in batch]):
                out.append(Outcome(bool(ep.won) and ep.error is None, formatted_reply(list(ep.actions))))
            if len(out) // step != (len(out) - len(batch)) // step or len(out) == len(tasks):
                say(f"  {len(out)}/{len(tasks)} episodes")
    finally:
        agent.close()
    return out


def select_external(model: str, *, max_new_tokens: int, seed: int, screen_episodes: int = SCREEN_EPISODES,
                    band: tuple[float, float] = EXTERNAL_BAND, prompt_chars: int = EXTERNAL_PROMPT_CHARS,
                    say: Callable[[str], None] = lambda s: None) -> tuple[list[Any], list[dict[str, Any]]]:
    """The external set's tasks (the rule of the module docstring) and the screening table."""
    candidates = external_candidates(prompt_chars, screen_episodes)
    say(f"external set: screening {len(candidates)} reasoning-gym tasks x {screen_episodes} episodes")
    plays = rg_tasks(candidates, screen_episodes, SCREEN_SEED0)
    results = play(model, plays, max_new_tokens=max_new_tokens, seed=seed, say=say)
    table, chosen = [], []
    for k, t in enumerate(candidates):
        outs = results[k * screen_episodes:(k + 1) * screen_episodes]
        wins = sum(o.won for o in outs)
        rate = wins / screen_episodes
        keep = band[0] <= rate <= band[1]
        table.append({"task": t.task_id, "wins": wins, "formatted": sum(o.formatted for o in outs),
                      "episodes": screen_episodes, "rate": rate, "chosen": keep})
        if keep:
            chosen.append(t)
    return chosen, table


def external_tasks(chosen: list[Any], n_episodes: int = EXTERNAL_EPISODES, max_turns: int = 2) -> list[Any]:
    """At least ``n_episodes`` episodes over ``chosen`` (entries from :data:`EXTERNAL_SEED0`)."""
    if not chosen:
        return []
    return rg_tasks(chosen, max(1, math.ceil(n_episodes / len(chosen))), EXTERNAL_SEED0, max_turns)


def set_figures(before: list[Outcome], after: list[Outcome]) -> dict[str, Any]:
    """The paired figures of one set: rates with Wilson intervals, exact McNemar p-value,
    format rates and accuracy given format, before and after."""
    from ..evals.stats import paired_summary, rate_summary

    out = paired_summary([o.won for o in before], [o.won for o in after])
    for name, outs in (("before", before), ("after", after)):
        out[f"format_rate_{name}"] = rate_summary(o.formatted for o in outs)["rate"]
        out[f"accuracy_given_format_{name}"] = rate_summary(o.won for o in outs if o.formatted)["rate"]
    out["format_p_value"] = paired_summary([o.formatted for o in before], [o.formatted for o in after])["p_value"]
    return out
