"""The ``reasoning-gym`` suite: the RG hard split as SPADE evaluates its games setting.

Tasks and settings come from :mod:`.reasoning_gym_tasks` (SPADE's facts as data): 100
tasks, 8 episodes each (episode ``i`` is entry ``i`` of the task's dataset), temperature
0.6, at most 2 turns (one answer ends the episode). Every episode is a
:class:`~spade_envs.agents.PlayTask` whose source is the environment program
:mod:`.reasoning_gym_env`, so any agent (``transformers:...``, ``openai:...``,
``replay:reference``) plays it through the same batched agent loop as registry
environments, with transcripts; the program runs in-process because it is this package's
own file (see its docstring).

Scoring: an episode is passed when reasoning-gym's ``score_answer`` gives 1 (SPADE's win);
rows also keep the score, the answer read from the reply and whether there was one
(``formatted``). The summary has the overall win rate (``overall``), one row per category
(``per_category``: Math / Algorithmic / Cognition / Logic, win rate = wins / episodes, as
SPADE rolls them up), ``per_task``, the format rate and the win rate given a formatted
answer, each with a Wilson 95 % interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .reasoning_gym_tasks import RGTask, category_names, extract_answer, parse_overrides, select_tasks, split_data
from .stats import mean_summary, rate_summary

SUITE_NAME = "reasoning-gym"
PROGRAM_FILE = Path(__file__).with_name("reasoning_gym_env.py")


def program_source() -> str:
    """The environment program every episode runs."""
    return PROGRAM_FILE.read_text(encoding="utf-8")


def defaults() -> dict[str, Any]:
    """SPADE's per-task settings (episodes, max_turns, temperature, ...)."""
    return dict(split_data()["defaults"])


def play_tasks(tasks: Sequence[RGTask], episodes: int, *, seed0: int = 0, max_turns: int | None = None) -> list[Any]:
    """``episodes`` play tasks per RG task (entries ``seed0 .. seed0 + episodes - 1``)."""
    from spade_envs.agents import PlayTask

    source = program_source()
    turns = int(max_turns if max_turns is not None else defaults()["max_turns"])
    return [PlayTask(env_id=t.task_id, seed=seed0 + i, max_turns=turns, source=source,
                     kwargs={"task": t.name, "config": dict(t.config), "max_turns": turns})
            for t in tasks for i in range(episodes)]


def load_rg_agent(spec: str, *, max_new_tokens: int = 256, temperature: float | None = None,
                  seed: int | None = 0, **options: Any) -> Any:
    """The agent named by ``spec`` for this suite (the program is run in-process)."""
    from spade_envs.agents import load_agent

    if spec.startswith("replay:"):
        return load_agent(spec, trust_remote_code=True)
    temp = float(defaults()["temperature"] if temperature is None else temperature)
    return load_agent(spec, trust_remote_code=True, max_new_tokens=max_new_tokens, temperature=temp, seed=seed,
                      **options)


def score_row(task: RGTask, episode: Any) -> dict[str, Any]:
    """The result row of one episode."""
    from spade_envs.evals.registry_suite import transcript

    from . import reasoning_gym_tasks as rgt

    reply = episode.actions[-1] if episode.actions else ""
    answer = extract_answer(reply)
    error = getattr(episode, "error", None)
    value = 0.0
    if error is None and episode.actions:
        value = rgt.score(task.name, task.config, rgt.entry(task.name, task.config, episode.task.seed), answer)
    passed = bool(episode.won) and error is None
    if error is not None:
        why = f"error: {error}"[:300]
    elif passed:
        why = ""
    elif answer is None:
        why = "no <answer>...</answer> or \\boxed{} in the reply"
    else:
        why = f"score {value:g} for answer {answer[:120]!r}"
    return {
        "id": task.task_id, "task": task.name, "category": task.category, "level": task.level,
        "seed": int(episode.task.seed), "passed": passed, "score": value, "formatted": answer is not None,
        "answer": None if answer is None else answer[:2000], "turns": int(episode.turns),
        "error": None if error is None else str(error), "why": why, "transcript": transcript(episode),
    }


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall, per-category (SPADE's four rows) and per-task win rates, format figures."""
    names = category_names()
    formatted = [r for r in rows if r["formatted"]]
    out: dict[str, Any] = {
        "overall": rate_summary(r["passed"] for r in rows),
        "format_rate": rate_summary(r["formatted"] for r in rows),
        "accuracy_given_format": rate_summary(r["passed"] for r in formatted),
        "mean_score": round(mean_summary(r["score"] for r in rows)["mean"], 6),
        "errors": sum(1 for r in rows if r["error"]),
        "per_category": {label: rate_summary(r["passed"] for r in rows if r["category"] == key)
                         for key, label in names.items() if any(r["category"] == key for r in rows)},
        "per_task": {tid: rate_summary(r["passed"] for r in rows if r["id"] == tid)
                     for tid in dict.fromkeys(r["id"] for r in rows)},
    }
    return out


#: Episodes per ``Agent.play`` call: small enough that the progress bar (one step per
#: scored episode) moves every few episodes on a CPU, large enough to batch generation.
BATCH_SIZE = 8


def row_key(task_id: str, seed: int) -> str:
    """The key of an episode's row in an interrupted run's partial results."""
    return f"{task_id}#{seed}"


def run_reasoning_gym(agent: Any, tasks: Sequence[RGTask], *, episodes: int = 8, seed0: int = 0,
                      max_turns: int | None = None, batch_size: int = BATCH_SIZE, progress: bool = False,
                      on_scored: Callable[[int], None] | None = None,
                      finished: dict[str, dict[str, Any]] | None = None,
                      on_row: Callable[[str, dict[str, Any]], None] | None = None
                      ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play ``episodes`` episodes of every task with ``agent`` (batches of ``batch_size``
    episodes, one ``Agent.play`` call each) and score them. ``finished`` rows (by
    :func:`row_key`, from an interrupted run) are kept, not played again; ``on_row(key,
    row)`` is called as each episode is scored (the CLI writes it down at once)."""
    done = dict(finished or {})
    plays = play_tasks(tasks, episodes, seed0=seed0, max_turns=max_turns)
    by_id = {t.task_id: t for t in tasks}
    keys = [row_key(p.env_id, p.seed) for p in plays]
    if on_scored is not None and done:
        on_scored(sum(1 for k in keys if k in done))
    todo = [p for p, k in zip(plays, keys) if k not in done]
    for start in range(0, len(todo), max(1, batch_size)):
        chunk = todo[start:start + max(1, batch_size)]
        for play, ep in zip(chunk, agent.play(chunk, progress=progress)):
            key = row_key(play.env_id, play.seed)
            done[key] = score_row(by_id[play.env_id], ep)
            if on_row is not None:
                on_row(key, done[key])
            if on_scored is not None:
                on_scored(1)
    rows = [done[k] for k in keys]
    return rows, summarize(rows)


def run_suite(agent: str, *, level: str = "hard", task_names: list[str] | None = None,
              config_items: list[str] | None = None, episodes: int | None = None, limit: int | None = None,
              max_new_tokens: int = 256, show: bool = False,
              finished: dict[str, dict[str, Any]] | None = None,
              on_row: Callable[[str, dict[str, Any]], None] | None = None
              ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """``spade eval --suite reasoning-gym``: rows, summary and the run's settings
    (``show``: a progress bar on stderr, one step per scored episode). ``limit`` counts
    TASKS (each plays ``episodes`` episodes); ``finished``/``on_row``: partial results."""
    tasks = select_tasks(level, task_names or None, parse_overrides(list(config_items or [])))
    if limit is not None:
        tasks = tasks[:limit]
    n = int(episodes if episodes is not None else defaults()["episodes"])
    runner = load_rg_agent(agent, max_new_tokens=max_new_tokens)  # a bad agent fails before the bar
    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks) * n, desc=f"reasoning-gym ({len(tasks)} tasks x {n} episodes)", unit="ep",
               disable=not show, leave=False, dynamic_ncols=True)
    try:
        rows, summary = run_reasoning_gym(runner, tasks, episodes=n, on_scored=bar.update, finished=finished,
                                          on_row=on_row)
    finally:
        bar.close()
        runner.close()
    from .reasoning_gym_tasks import rg_module

    extra = {"level": level, "episodes_per_task": n, "tasks": [t.task_id for t in tasks],
             "configs": {t.task_id: t.config for t in tasks}, "settings": defaults(),
             "reasoning_gym_version": getattr(rg_module(), "__version__", None),
             "data_revision": split_data()["source"]["commit"]}
    return rows, summary, extra
