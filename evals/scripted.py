"""Scripted agents for checking the harness: they play actions decided by a policy that
sees the environment's reference solution, so every metric has a known answer.

``ReferenceAgent`` plays the reference; ``ScriptedAgent(policy)`` plays ``policy(task, reference_actions)``.
Episodes are ``spade_envs.agents.Episode`` objects without token-level fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spade_envs.agents.api import Episode
from spade_envs.errors import SpadeError


def _episode(task: Any, actions: list[str], rewards: list[float], ret: float, won: bool, terminated: bool,
             truncated: bool, messages: list[dict[str, Any]], error: str | None, final_state: Any) -> Episode:
    """An :class:`Episode` without token-level fields (scripted agents generate no tokens)."""
    return Episode(task=task, messages=messages, actions=actions, rewards=rewards, episode_return=ret, won=won,
                   turns=len(actions), terminated=terminated, truncated=truncated, token_ids=[], logprobs=[],
                   mask=[], error=error, final_state=final_state)


Policy = Callable[[Any, Sequence[str]], Sequence[str]]


class ScriptedAgent:
    """Plays ``policy(task, reference_actions)`` on each task, stopping when the episode ends."""

    def __init__(self, policy: Policy, name: str = "scripted") -> None:
        self.policy, self.name = policy, name

    def play(self, tasks: list[Any], *, progress: bool = False) -> list[Episode]:
        from spade_envs.gym_env import SpadeEnv

        out = []
        for task in tasks:
            env = SpadeEnv(task.env_id) if task.source is None else SpadeEnv(source=task.source)
            try:
                obs, _ = env.reset(seed=task.seed)
                messages = [{"role": "user", "content": obs}]
                actions, rewards, term, trunc, error = [], [], False, False, None
                for action in self.policy(task, env.solution_actions()):
                    obs, r, term, trunc, info = env.step(action)
                    actions.append(action)
                    rewards.append(float(r))
                    messages += [{"role": "assistant", "content": action}, {"role": "user", "content": obs}]
                    error = info.get("error") or error
                    if term or trunc:
                        break
                ret = max(-1.0, min(1.0, rewards[-1])) if rewards else 0.0
                out.append(_episode(task, actions, rewards, ret, bool(term and ret >= 1.0), term, trunc,
                                    messages, error, env.snapshot()))
            except SpadeError as exc:
                out.append(_episode(task, [], [], 0.0, False, False, True, [], str(exc), None))
            finally:
                env.close()
        return out


class ReferenceAgent(ScriptedAgent):
    def __init__(self) -> None:
        super().__init__(lambda task, ref: list(ref), name="replay:reference")
