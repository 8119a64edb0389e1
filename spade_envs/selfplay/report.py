"""What a self-play run did, in plain words, and the held-out split before and after.

:func:`heldout_compare` plays the sets of :func:`compare_sets` (the held-out split at
level 0 and at level 1, and an external reasoning-gym sample; fixed seeds) with the base
model and with the run's checkpoint, same tasks and sampling seed, and returns the level-0
results per environment and every set's paired figures. :func:`plain_summary` turns a run summary (and that comparison) into
sentences a new user can read: how many candidates the designer proposed, how many
were accepted and registered with which regret, whether the agent earned reward,
whether both roles got non-zero GRPO advantages, and the before/after table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class Before(list):
    """The untrained model's results: its level-0 held-out wins (a list of booleans, as
    callers count them) plus every set's outcomes in ``sets``."""

    sets: dict[str, list[Any]]


def compare_sets(episodes: int, max_turns: int) -> dict[str, list[Any]]:
    """The main job's sets: the held-out split at level 0 and at level 1 (``episodes`` each)
    and an external sample: the first ``episodes`` reasoning-gym tasks at easy settings
    that pass the external set's prompt rule (SPADE's order), one entry each (not screened:
    the bench's external set, ``spade bench learning``, is chosen by the screening rule).
    Held-out episodes get at least :data:`.learning_sets.EVAL_MAX_TURNS` turns, so every
    one of them can be won (a training run's ``max_turns`` may be shorter)."""
    from . import learning_sets as ls

    turns = max(max_turns, ls.EVAL_MAX_TURNS)
    out = {f"heldout_level{k}": ls.heldout_tasks(k, episodes, turns)[0] for k in (0, 1)}
    try:
        out["external"] = ls.rg_tasks(ls.external_candidates(screen_episodes=1)[:episodes], 1, ls.EXTERNAL_SEED0)
    except Exception as exc:  # reasoning-gym missing: the held-out sets still run
        from ..errors import SpadeError

        if not isinstance(exc, SpadeError):
            raise
        out["external"] = []
    return out


def _play_sets(model: str, sets: dict[str, list[Any]], max_new_tokens: int, seed: int) -> dict[str, list[Any]]:
    from . import learning_sets as ls

    return {name: ls.play(model, tasks, max_new_tokens=max_new_tokens, seed=seed + 1) if tasks else []
            for name, tasks in sets.items()}


def heldout_before(base_model: str, *, episodes: int, max_turns: int, max_new_tokens: int, seed: int = 0) -> Before:
    """The base model on :func:`compare_sets` (before training)."""
    sets = compare_sets(episodes, max_turns)
    res = _play_sets(base_model, sets, max_new_tokens, seed)
    before = Before(o.won for o in res["heldout_level0"])
    before.sets = res
    return before


def heldout_compare(base_model: str, trained_model: str, *, episodes: int, max_turns: int,
                    max_new_tokens: int, seed: int = 0, before: list[bool] | None = None) -> dict[str, Any]:
    """Both models on :func:`compare_sets` (same tasks, seeds, sampling seed): the level-0
    table per environment (``envs``, ``before``, ``after``) and every set's paired figures
    (``sets``: rates, McNemar p-value, format rates)."""
    from . import learning_sets as ls
    from .learning_bench import _rate

    tasks = compare_sets(episodes, max_turns)
    if not isinstance(before, Before):
        before = heldout_before(base_model, episodes=episodes, max_turns=max_turns, max_new_tokens=max_new_tokens,
                                seed=seed)
    after_sets = _play_sets(trained_model, tasks, max_new_tokens, seed)
    b0 = [o.won for o in before.sets["heldout_level0"]]
    a0 = [o.won for o in after_sets["heldout_level0"]]
    rows = []
    level0 = tasks["heldout_level0"]
    for env_id in dict.fromkeys(t.env_id for t in level0):
        idx = [i for i, t in enumerate(level0) if t.env_id == env_id]
        rows.append({"id": env_id, "kwargs": level0[idx[0]].kwargs, "episodes": len(idx),
                     "wins_before": sum(b0[i] for i in idx), "wins_after": sum(a0[i] for i in idx)})
    sets = {name: ls.set_figures(before.sets[name], after_sets[name]) for name in tasks if tasks[name]}
    return {"episodes": len(level0), "before": _rate(b0), "after": _rate(a0), "envs": rows, "sets": sets}


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
    with_props = [r for r in rows if r.get("proposed")]
    if with_props:
        def pct(key: str) -> str:
            return ", ".join("-" if r.get(key) is None else f"{r[key]:.0%}" for r in with_props)

        lines.append(f"Per round with proposals, the share accepted was {pct('accepted_share')} and the share landing "
                     f"in the frontier band (0 < plain win rate < 1 and regret > 0) was {pct('frontier_share')}.")
    trained = [r for r in rows if r.get("designer_groups_trained")]
    if trained:
        lines.append("Per round, designer groups with a non-zero advantage (not every proposal rewarded alike): "
                     + ", ".join(f"{r.get('designer_groups_nonzero_adv', 0)} of {r['designer_groups_trained']}"
                                 for r in trained)
                     + "; the designer's mean proposal regret per round: "
                     + ", ".join("-" if r.get("designer_trained_regret") is None else f"{r['designer_trained_regret']:.3f}"
                                 for r in trained)
                     + " (the agent's mean reward per round: "
                     + ", ".join("-" if r.get("agent_reward") is None else f"{r['agent_reward']:.3f}" for r in trained)
                     + ").")
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
        for name, f in (compare.get("sets") or {}).items():
            if name == "heldout_level0" or not f.get("episodes"):
                continue
            verdict = "a significant change" if f["p_value"] < 0.05 else "no significant change"
            lines.append(f"On the {SET_LABELS.get(name, name)} set ({f['episodes']} episodes) it won {f['before']:.1%} "
                         f"before and {f['after']:.1%} after (paired p = {f['p_value']:.3f}: {verdict}); it answered "
                         f"in a readable format {f['format_rate_before']:.1%} -> {f['format_rate_after']:.1%} of the time.")
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
    if compare.get("sets"):
        lines += ["", sets_table(compare["sets"])]
    return "\n".join(lines)


SET_LABELS = {"heldout_level0": "held-out, level 0", "heldout_level1": "held-out, level 1 (no answer stated)",
              "external": "external (reasoning-gym, easy)"}


def sets_table(sets: dict[str, dict[str, Any]]) -> str:
    """One line per evaluation set: episodes, win rate and format rate before and after,
    and the paired (McNemar) p-value."""
    head = (f" {'set':<38} {'episodes':>8} {'won before':>11} {'won after':>10} {'format before':>14} "
            f"{'format after':>13} {'p':>7}")
    lines = [head, " " + "-" * (len(head) - 1)]
    for name, f in sets.items():
        if not f.get("episodes"):
            lines.append(f" {SET_LABELS.get(name, name):<38} {0:>8} {'-':>11} {'-':>10} {'-':>14} {'-':>13} {'-':>7}")
            continue
        lines.append(f" {SET_LABELS.get(name, name):<38} {f['episodes']:>8} {f['before']:>11.1%} {f['after']:>10.1%} "
                     f"{f['format_rate_before']:>14.1%} {f['format_rate_after']:>13.1%} {f['p_value']:>7.3f}")
    return "\n".join(lines)


def trained_model_folder(summary: dict[str, Any]) -> str:
    return str(Path(summary["checkpoint"]) / "model")
