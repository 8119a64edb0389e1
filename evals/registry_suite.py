"""Registry suites: run an agent over a selection of registered environments and score it.

Selection (:func:`select_records`) by generation, skill, tags and a named split
(:mod:`.splits`). Each (environment, seed) is played once by the agent (any
``spade_envs.agents`` agent, batched through ``Agent.play``) and scored against the
environment's reference solution replayed on the same seed:

- ``passed``: the episode was won;
- ``state_ok`` (BFCL-style state check): the environment snapshot after the agent's
  episode equals the snapshot after replaying the reference;
- ``response_ok`` (BFCL-style response check): the tool results of the reference calls
  are a sub-multiset of the agent's tool results;
- ``end_state_ok`` and ``process_acc`` (ACEBench-style): end-state accuracy is the state
  check; process accuracy is the fraction of the reference's calls (milestones) matched
  in order, greedily, in the agent's calls (for text-only games the milestones are the
  reference actions).

The state, response and end-state checks apply to tool-use environments only: for a
text-only environment (its reference makes no tool call) they are ``None`` ("n/a") and
left out of the rates. Each row also says ``why`` a failed episode failed and carries
its ``transcript`` (messages, actions, per-step rewards, how it ended).

The agent's trace (its calls, their results, its final state) is recomputed by
replaying its actions on a fresh environment with the same seed (environments are
deterministic by the acceptance contract), so scoring does not depend on how an agent
formats its messages; ``Episode.final_state`` is used when present.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from spade_envs.actions import parse_tool_calls
from spade_envs.errors import SpadeError

from .bfcl_exec import missing_results
from .splits import in_split, split_of
from .stats import mean_summary, rate_summary

SUITE_NAME = "registry"


@dataclass
class Trace:
    """Replay of a list of actions: calls (canonical keys), their results, final state."""

    actions: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    milestones: list[str] = field(default_factory=list)
    final_state: Any = None
    won: bool = False
    episode_return: float = 0.0
    error: str | None = None
    rewards: list[float] = field(default_factory=list)


# -- selection ------------------------------------------------------------------------
def active_records(multiplayer: bool | None = False, include_unverified: bool = False) -> list[Any]:
    """The latest active version of every environment of the active registry.

    ``multiplayer``: False (default) leaves games out — they have their own suite,
    ``spade eval --suite games`` — True keeps only games, None keeps everything.
    Entries without a replayed win (no ``solution()``: unverified) are left out unless
    ``include_unverified``: a suite scores only environments known to be solvable."""
    from spade_envs.registry import catalog

    records = list(catalog.seed_records())
    try:  # the local store, when it exists (read-only: an eval never writes the registry)
        from spade_envs.registry.store import Registry, default_path

        if default_path().exists():
            with Registry.open(readonly=True) as reg:
                records += list(reg.list())
    except ImportError:
        pass
    from spade_envs.games import is_multiplayer

    latest: dict[int, Any] = {}
    for rec in records:
        if getattr(rec, "status", "active") != "active":
            continue
        if multiplayer is not None and is_multiplayer(rec) != multiplayer:
            continue
        cur = latest.get(rec.env_id.seq)
        if cur is None or rec.env_id.version > cur.env_id.version:
            latest[rec.env_id.seq] = rec
    from spade_envs.registry.verification import verified_only

    return verified_only([latest[k] for k in sorted(latest)], include_unverified)


def select_records(records: Iterable[Any], *, generation: int | None = None, skill: str | None = None,
                   tags: Sequence[str] | None = None, split: str | None = None, limit: int | None = None) -> list[Any]:
    """Records matching every given filter (skill case-insensitive; all ``tags`` present)."""
    out = []
    for rec in records:
        meta = rec.metadata or {}
        if generation is not None and rec.generation != generation:
            continue
        if skill is not None and str(meta.get("skill", "")).lower() != skill.lower():
            continue
        if tags and not set(tags) <= set(meta.get("tags", []) or []):
            continue
        if not in_split(rec.env_id, split):
            continue
        out.append(rec)
    return stratified(out, limit) if limit is not None else out


def stratified(records: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` records, taken round-robin over skills (so that ``--limit`` keeps
    the skill mix), each skill's in id order; the result is in id order."""
    by_skill: dict[str, list[Any]] = {}
    for rec in records:
        by_skill.setdefault(str((rec.metadata or {}).get("skill", "")).lower(), []).append(rec)
    queues = [list(v) for v in by_skill.values()]
    picked: list[Any] = []
    while len(picked) < limit and any(queues):
        for q in queues:
            if q and len(picked) < limit:
                picked.append(q.pop(0))
    order = {id(r): i for i, r in enumerate(records)}
    return sorted(picked, key=lambda r: order[id(r)])


def registry_revision(records: Iterable[Any]) -> str:
    """A short hash of (id, version, source) of ``records``: equal revision, equal suite."""
    h = hashlib.sha256()
    for rec in sorted(records, key=lambda r: (r.env_id.seq, r.env_id.version)):
        h.update(f"{rec.env_id}\0{hashlib.sha256(rec.source.encode()).hexdigest()}\n".encode())
    return h.hexdigest()[:16]


# -- traces ---------------------------------------------------------------------------
def _call_key(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": arguments}, sort_keys=True, ensure_ascii=False)


def split_results(observation: str, n_calls: int) -> list[str]:
    """Per-call results of one step's observation (``ToolUseBaseEnv`` joins them as
    ``Tool result:\\n...`` blocks); the whole observation when it cannot be split."""
    marker = "Tool result:\n"
    if n_calls > 1 and observation.startswith(marker) and observation.count(marker) == n_calls:
        return [part.rstrip("\n") for part in observation[len(marker):].split("\n" + marker)]
    if n_calls == 1 and observation.startswith(marker) and observation.count(marker) == 1:
        return [observation[len(marker):]]
    return [observation]


def open_env(record: Any) -> Any:
    from spade_envs.gym_env import SpadeEnv

    return SpadeEnv(record.env_id.base, record.env_id.version)


def replay_trace(record: Any, seed: int, actions: Sequence[str] | None = None) -> Trace:
    """Replay ``actions`` (the reference solution when None) from ``reset(seed)``."""
    env = open_env(record)
    trace = Trace()
    try:
        env.reset(seed=seed)
        acts = list(env.solution_actions()) if actions is None else list(actions)
        for action in acts:
            calls = [c for c in parse_tool_calls(action) if not c.error]
            obs, reward, terminated, truncated, info = env.step(action)
            trace.actions.append(action)
            trace.episode_return = max(-1.0, min(1.0, float(reward)))
            trace.rewards.append(float(reward))
            if calls:
                keys = [_call_key(c.name, c.arguments) for c in calls]
                trace.calls.extend(keys)
                trace.milestones.extend(keys)
                trace.results.extend(split_results(obs, len(calls)))
            else:
                trace.milestones.append(action.strip())
            if info.get("error"):
                trace.error = str(info["error"])
            if terminated or truncated:
                trace.won = terminated and reward >= 1.0
                break
        trace.final_state = env.snapshot()
    except SpadeError as exc:
        trace.error = str(exc)
    finally:
        env.close()
    return trace


def process_accuracy(milestones: Sequence[str], observed: Sequence[str]) -> float:
    """Fraction of ``milestones`` found in order, greedily, in ``observed`` (1.0 if none)."""
    if not milestones:
        return 1.0
    pos, hit = 0, 0
    for stone in milestones:  # a milestone that is never reached does not consume the rest
        for j in range(pos, len(observed)):
            if observed[j].strip() == stone.strip():
                hit, pos = hit + 1, j + 1
                break
    return hit / len(milestones)


def why_failed(episode: Any, mine: Trace) -> str:
    """A plain reason for a lost episode ("" for a win)."""
    if episode.won:
        return ""
    error = getattr(episode, "error", None) or mine.error
    if error:
        return f"error: {error}"[:300]
    end = "terminated" if episode.terminated else ("truncated (turn limit)" if episode.truncated else "unfinished")
    last = mine.actions[-1][:120] if mine.actions else "(no action)"
    return f"not won: return {float(episode.episode_return):g} after {int(episode.turns)} turn(s), {end}; last action: {last}"


def transcript(episode: Any) -> dict[str, Any]:
    return {"messages": list(getattr(episode, "messages", []) or []), "actions": list(episode.actions),
            "rewards": [float(r) for r in (getattr(episode, "rewards", []) or [])],
            "terminated": bool(getattr(episode, "terminated", False)), "truncated": bool(getattr(episode, "truncated", False))}


def score_episode(record: Any, episode: Any, reference: Trace | None = None) -> dict[str, Any]:
    """The result row of one episode (see the module docstring for each check)."""
    seed = episode.task.seed
    ref = reference or replay_trace(record, seed)
    mine = replay_trace(record, seed, list(episode.actions))
    final_state = episode.final_state if getattr(episode, "final_state", None) is not None else mine.final_state
    tool_use = bool(ref.calls)
    state_ok = (ref.error is None and final_state == ref.final_state) if tool_use else None
    meta = record.metadata or {}
    return {
        "id": str(record.env_id), "seed": seed, "passed": bool(episode.won),
        "return": float(episode.episode_return), "turns": int(episode.turns),
        "state_ok": state_ok, "response_ok": (not missing_results(ref.results, mine.results)) if tool_use else None,
        "end_state_ok": state_ok, "process_acc": process_accuracy(ref.milestones, mine.milestones),
        "skill": meta.get("skill"), "generation": record.generation, "version": record.env_id.version,
        "split": split_of(record.env_id), "regret": meta.get("regret"),
        "error": getattr(episode, "error", None) or mine.error, "reference_error": ref.error,
        "why": why_failed(episode, mine), "transcript": transcript(episode),
    }


def _applicable(block: dict[str, Any]) -> dict[str, Any] | None:
    """None ("n/a") when no row of the group had the check."""
    return block if block["n"] else None


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Aggregates: success rate (Wilson 95% CI), mean terminal reward, state/response/end-state
    rates, mean process accuracy, and per-skill / per-generation breakdowns."""

    def block(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {
            "success": rate_summary(r["passed"] for r in rs),
            # SPADE's episode reward (a time-shaped 0.64 win counts 0.64) beside success (reward >= 1)
            "mean_terminal_reward": mean_summary(r["return"] for r in rs)["mean"],
            "state_ok": _applicable(rate_summary(r["state_ok"] for r in rs)),
            "response_ok": _applicable(rate_summary(r["response_ok"] for r in rs)),
            "end_state_acc": (rate_summary(r["end_state_ok"] for r in rs)["rate"]
                              if any(r["end_state_ok"] is not None for r in rs) else None),
            "process_acc": mean_summary(r["process_acc"] for r in rs)["mean"],
        }

    out = block(rows)
    out["per_skill"] = {str(s): block([r for r in rows if r["skill"] == s]) for s in dict.fromkeys(r["skill"] for r in rows)}
    out["per_generation"] = {
        str(g): block([r for r in rows if r["generation"] == g]) for g in sorted(dict.fromkeys(r["generation"] for r in rows))
    }
    out["env_versions"] = sorted(dict.fromkeys(r["id"] for r in rows))
    return out


def make_tasks(records: Sequence[Any], seeds: Sequence[int], max_turns: int = 10) -> list[Any]:
    """One task per (record, seed), in that order (``run_registry_suite`` relies on it)."""
    from spade_envs.agents import PlayTask

    return [PlayTask(env_id=str(rec.env_id), seed=int(s), max_turns=max_turns) for rec in records for s in seeds]


def run_registry_suite(agent: Any, records: Sequence[Any], *, seeds: Sequence[int] = (0,), tasks: list[Any] | None = None,
                       progress: bool = False, on_scored: Callable[[int], None] | None = None
                       ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play every (record, seed) with ``agent`` (one batched ``play`` call) and score it."""
    tasks = tasks if tasks is not None else make_tasks(records, seeds)
    episodes = agent.play(tasks, progress=progress)
    by_id = {str(r.env_id): r for r in records}
    rows = []
    for task, ep in zip(tasks, episodes):
        rec = by_id.get(task.env_id) or _match(records, task.env_id)
        rows.append(score_episode(rec, ep))
        if on_scored:
            on_scored(1)
    summary = summarize(rows)
    summary["registry_revision"] = registry_revision(records)
    return rows, summary


def _match(records: Sequence[Any], env_id: str) -> Any:
    from spade_envs.registry.ids import parse_env_id

    eid = parse_env_id(env_id)
    for rec in records:
        if rec.env_id.seq == eid.seq and (eid.version is None or eid.version == rec.env_id.version):
            return rec
    raise SpadeError(f"episode for {env_id}, which is not in the suite")
