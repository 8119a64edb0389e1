"""What a self-play run did, in plain words, and the held-out split before and after.

:func:`heldout_compare` plays the held-out split (:func:`.learning_bench.heldout_tasks`:
held-out seeds at their easiest level, fixed seeds) with the base model and with the
run's checkpoint, same tasks and sampling seed, and returns both results per
environment. :func:`plain_summary` turns a run summary (and that comparison) into
sentences a new user can read: how many candidates the designer proposed, how many
were accepted and registered with which regret, whether the agent earned reward,
whether both roles got non-zero GRPO advantages, and the before/after table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def heldout_compare(base_model: str, trained_model: str, *, episodes: int, max_turns: int,
                    max_new_tokens: int, seed: int = 0, before: list[bool] | None = None) -> dict[str, Any]:
    from .learning_bench import _play, _rate, heldout_tasks

    tasks, envs = heldout_tasks(episodes, max_turns)
    if before is None:
        before = _play(base_model, tasks, max_new_tokens=max_new_tokens, seed=seed + 1)
    after = _play(trained_model, tasks, max_new_tokens=max_new_tokens, seed=seed + 1)
    rows = []
    for env in envs:
        idx = [i for i, t in enumerate(tasks) if t.env_id == env["id"]]
        rows.append({"id": env["id"], "kwargs": env["kwargs"], "episodes": len(idx),
                     "wins_before": sum(before[i] for i in idx), "wins_after": sum(after[i] for i in idx)})
    return {"episodes": len(tasks), "before": _rate(before), "after": _rate(after), "envs": rows}


def heldout_before(base_model: str, *, episodes: int, max_turns: int, max_new_tokens: int, seed: int = 0) -> list[bool]:
    from .learning_bench import _play, heldout_tasks

    tasks, _ = heldout_tasks(episodes, max_turns)
    return _play(base_model, tasks, max_new_tokens=max_new_tokens, seed=seed + 1)


def _nonzero(values: Any) -> int:
    return sum(1 for v in (values or []) if abs(float(v)) > 1e-9)


def plain_summary(summary: dict[str, Any], rows: list[dict[str, Any]], compare: dict[str, Any] | None = None) -> str:
    """Sentences (one per line) describing the run; see the module docstring."""
    proposed = sum(r.get("proposed", 0) for r in rows)
    valid = sum(r.get("valid", 0) for r in rows)
    params = sum(r.get("proposed_params", 0) for r in rows)
    registered = summary.get("registered", 0)
    regrets = [r.get("designer_trained_regret") for r in rows if r.get("designer_trained_regret") is not None]
    agent_adv = [a for r in rows for a in (r.get("agent_advantages") or [])]
    des_adv = [a for r in rows for a in (r.get("designer_advantages") or [])]
    rewards = [r.get("agent_reward") for r in rows if r.get("agent_reward") is not None]
    plays = sum(r.get("envs_played", 0) for r in rows)
    lines = [
        f"In {len(rows)} round(s) the designer proposed {proposed} environment(s) ({params} as parameter variants, "
        f"{proposed - params} as programs); {valid} passed acceptance and {registered} were registered as new "
        f"registry entries (generation(s) {', '.join(map(str, summary.get('generations') or [])) or 'none'}).",
    ]
    played = [r.get("mean_regret") for r in rows if r.get("mean_regret") is not None]
    if regrets:
        lines.append(f"The accepted ones' measured regret (hinted minus plain reward of the agent) averaged "
                     f"{sum(regrets) / len(regrets):.3f}"
                     + (f"; over every environment played it averaged {sum(played) / len(played):.3f}." if played
                        else "."))
    elif registered:
        lines.append("Their regret was measured from the agent's plays and stored with them in the registry.")
    lines.append(f"The agent played {plays} environment(s) per round in total and earned a mean reward of "
                 f"{(sum(rewards) / len(rewards)) if rewards else 0.0:.3f} on its training plays.")
    lines.append(f"GRPO advantages: {_nonzero(agent_adv)} of {len(agent_adv)} agent rows and {_nonzero(des_adv)} of "
                 f"{len(des_adv)} designer rows were non-zero, so "
                 + ("both roles received a learning signal." if _nonzero(agent_adv) and _nonzero(des_adv) else
                    "not every role received a learning signal this run."))
    if compare:
        b, a = compare["before"], compare["after"]
        lines.append(f"On the held-out split ({compare['episodes']} episodes on environments never trained on, "
                     f"easiest levels) the agent won {b['wins']} before and {a['wins']} after training "
                     f"({b['rate']:.1%} -> {a['rate']:.1%}; 95% intervals {b['ci95']} and {a['ci95']}).")
    return "\n".join(lines)


def compare_table(compare: dict[str, Any]) -> str:
    """The before/after table, side by side, one line per held-out environment."""
    head = f" {'held-out environment':<34} {'episodes':>8} {'won before':>11} {'won after':>10}"
    lines = [head, " " + "-" * (len(head) - 1)]
    for r in compare["envs"]:
        name = r["id"] + (" " + ",".join(f"{k}={v}" for k, v in r["kwargs"].items()) if r["kwargs"] else "")
        lines.append(f" {name:<34} {r['episodes']:>8} {r['wins_before']:>11} {r['wins_after']:>10}")
    b, a = compare["before"], compare["after"]
    lines.append(f" {'total':<34} {compare['episodes']:>8} {b['wins']:>11} {a['wins']:>10}")
    lines.append(f" {'success rate':<34} {'':>8} {b['rate']:>11.1%} {a['rate']:>10.1%}")
    return "\n".join(lines)


def trained_model_folder(summary: dict[str, Any]) -> str:
    return str(Path(summary["checkpoint"]) / "model")
