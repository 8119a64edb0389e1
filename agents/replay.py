"""Scripted agents that check the harness itself (DESIGN.md section 10).

- ``replay:reference`` plays each task's reference solution,
  ``env.unwrapped.solution_actions()`` of the episode after reset.
- ``replay:FILE.jsonl`` replays given trajectories: one JSON object per line,
  ``{"id": ..., "turns": [[action, ...], ...]}`` (``"seed"`` optional), the turns'
  actions flattened in order. A line applies to tasks whose env id (with or without
  version) equals its ``id``, and whose seed equals its ``seed`` when it has one.

Both step all tasks together through ``envloop.step_batch`` and play their whole
(finite) plan: ``PlayTask.max_turns`` does not cut a scripted plan short, the
environment's own turn limit still applies. Their episodes carry no token ids.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..errors import AgentError, EnvFailure, FailureKind, SpadeError
from . import envloop
from .api import Agent, Episode, PlayTask


def _id_keys(env_id: str) -> set[str]:
    keys = {env_id}
    try:
        from ..registry.ids import parse_env_id

        eid = parse_env_id(env_id)
        keys |= {eid.base, str(eid)}
    except SpadeError:
        pass
    return keys


def load_trajectories(path: str | Path) -> list[dict[str, Any]]:
    """Parse a replay JSONL file (raises :class:`AgentError` naming the bad line)."""
    path = Path(path)
    if not path.is_file():
        raise AgentError(f"replay file {path} does not exist")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AgentError(f"{path}:{n}: not JSON ({exc.msg})") from None
        turns = row.get("turns") if isinstance(row, dict) else None
        if not isinstance(row, dict) or "id" not in row or not isinstance(turns, list):
            raise AgentError(f'{path}:{n}: expected {{"id": ..., "turns": [[action, ...], ...]}}')
        actions = []
        for turn in turns:
            actions.extend([str(a) for a in turn] if isinstance(turn, list) else [str(turn)])
        rows.append({"id": str(row["id"]), "seed": row.get("seed"), "actions": actions})
    return rows


class ReplayAgent(Agent):
    """Replays reference solutions (``source="reference"``) or a JSONL file."""

    def __init__(self, source: str = "reference", *, sandbox: bool = False, trust_remote_code: bool = False,
                 **_: Any) -> None:
        self.name = f"replay:{source}"
        self.rows = None if source == "reference" else load_trajectories(source)
        self.env_options = {"sandbox": sandbox, "trust_remote_code": trust_remote_code}
        self.last_timings: dict[str, float] = {}

    def _actions_for(self, task: PlayTask, env: Any) -> list[str] | str:
        if self.rows is None:
            try:
                return list(env.unwrapped.solution_actions())
            except SpadeError as exc:
                return f"solution() failed: {exc}"
        keys = _id_keys(task.env_id)
        for row in self.rows:
            if row["id"] in keys or _id_keys(row["id"]) & keys:
                if row["seed"] is None or int(row["seed"]) == task.seed:
                    return row["actions"]
        return f"no trajectory for {task.env_id} (seed {task.seed}) in the replay file"

    def play(self, tasks: list[PlayTask], *, progress: bool = False) -> list[Episode]:
        t0 = time.perf_counter()
        states: list[dict[str, Any]] = []
        for task in tasks:
            env, obs, info, error = envloop.start(task, **self.env_options)
            st = {"task": task, "env": env, "messages": [], "actions": [], "rewards": [], "error": error,
                  "terminated": False, "truncated": error is not None, "plan": []}
            if env is not None:
                plan = self._actions_for(task, env)
                if isinstance(plan, str):
                    st["error"], st["truncated"] = EnvFailure(FailureKind.ERROR, plan), True
                else:
                    st["plan"] = plan
                st["messages"] = [{"role": "user", "content": obs}]
            states.append(st)
        while True:
            live = [s for s in states if s["env"] is not None and not (s["terminated"] or s["truncated"])
                    and len(s["actions"]) < len(s["plan"])]
            if not live:
                break
            actions = [s["plan"][len(s["actions"])] for s in live]
            for s, action, out in zip(live, actions, envloop.step_batch([s["env"] for s in live], actions)):
                s["actions"].append(action)
                s["rewards"].append(out.reward)
                s["messages"] += [{"role": "assistant", "content": action}, {"role": "user", "content": out.observation}]
                s["terminated"], s["truncated"] = out.terminated, out.truncated
                if out.error:
                    s["error"], s["truncated"] = out.error, True
        episodes = []
        for s in states:
            state = envloop.finish(s["env"])
            ret = envloop.episode_return(s["rewards"])
            episodes.append(Episode(
                task=s["task"], messages=s["messages"], actions=s["actions"], rewards=s["rewards"],
                episode_return=ret, won=ret >= 1.0, turns=len(s["actions"]), terminated=s["terminated"],
                truncated=bool(s["truncated"] or (not s["terminated"] and s["env"] is not None)),
                token_ids=[], logprobs=[], mask=[], error=s["error"], final_state=state,
            ))
        self.last_timings = {"wall_s": time.perf_counter() - t0}
        return episodes
