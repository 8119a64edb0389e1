"""``spade eval --suite registry|bfcl-v4-multi-turn|acebench-agent|games --agent BACKEND:MODEL``.

Runs a suite, shows a progress bar on stderr, writes ``results.json``, ``leaderboard.md``
and ``report.html`` under ``--out`` (default ``./spade-eval/<suite>__<agent>``) and prints
the suite's headline (:func:`spade_envs.evals.report.headline_text`), or with ``--json`` exactly one JSON object: ``{"suite", "agent", "summary",
"entries": [{"id", "passed", ...}], ...}``. For ``bfcl-v4-multi-turn`` each verdict is
also checked against BFCL's own checker (``summary.agreement``) unless ``--no-agreement``.

Interruptions: the registry, games and reasoning-gym suites write each finished entry to
``<out>/entries.partial.jsonl`` as it finishes (:mod:`spade_envs.evals.partial_results`);
Ctrl-C prints where they are and exits with status 130 (no traceback); ``--resume``
completes the run without replaying finished entries. Results carry the run's name
(``--name``, default the ``--out`` folder's name).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer

SUITES = ("registry", "bfcl-v4-multi-turn", "acebench-agent", "acebench", "games", "reasoning-gym")


def _bar(total: int | None, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False, dynamic_ncols=True)


def _registry_agent(spec: str, **options: Any) -> Any:
    from spade_envs.agents import load_agent

    return load_agent(spec, **options)


#: Registry episodes per ``play`` call for model agents (batched within a chunk; each
#: chunk's rows are written down as soon as it is scored). Replay agents play one by one.
CHUNK = 16


def _run_registry(agent: str, split: str | None, limit: int | None, seeds: int, generation: int | None,
                  skill: str | None, tags: list[str], show: bool, max_new_tokens: int, max_turns: int,
                  include_unverified: bool = False, partial: Any = None) -> tuple[list, dict, dict]:
    from spade_envs.evals import registry_suite as rs

    records = rs.select_records(rs.active_records(include_unverified=include_unverified), generation=generation,
                                skill=skill, tags=tags or None,
                                split=split, limit=limit)
    if not records:
        from spade_envs.errors import SpadeError

        raise SpadeError("no environment matches the selection (see `spade registry list`)")
    opts = {} if agent.startswith("replay:") else {"max_new_tokens": max_new_tokens}
    runner = _registry_agent(agent, **opts)  # a bad agent fails here, before the progress bar
    tasks = rs.make_tasks(records, range(seeds), max_turns=max_turns)
    key = lambda t: f"{t.env_id}#{t.seed}"  # noqa: E731
    done = _resumed("registry", partial, records)
    todo = [t for t in tasks if key(t) not in done]
    chunk = 1 if agent.startswith("replay:") else CHUNK
    bar = _bar(len(tasks), "scoring", show)
    bar.update(len(tasks) - len(todo))
    try:
        for start in range(0, len(todo), chunk):
            part = todo[start:start + chunk]
            rows, _ = rs.run_registry_suite(runner, records, tasks=part, progress=False, on_scored=bar.update)
            for task, row in zip(part, rows):
                done[key(task)] = row
                if partial is not None:
                    partial.add(key(task), row)
    finally:
        bar.close()
    rows = [done[key(t)] for t in tasks]
    summary = rs.summarize(rows)
    summary["registry_revision"] = rs.registry_revision(records)
    return rows, summary, {"registry_revision": summary["registry_revision"]}


def _run_bfcl(agent: str, categories: list[str] | None, limit: int | None, agreement: bool, show: bool,
              max_new_tokens: int) -> tuple[list, dict, dict]:
    from spade_envs.evals import bfcl
    from spade_envs.evals.bfcl_agents import make_bfcl_agent

    entries = bfcl.load_entries(categories, limit)
    bars: list[Any] = []
    opts = {} if agent.startswith("replay:") else {"max_new_tokens": max_new_tokens,
                                                   "progress": lambda n=1: bars[0].update(n)}
    runner = make_bfcl_agent(agent, **opts)  # a bad agent fails here, before the progress bar
    bar = _bar(len(entries), "bfcl", show)
    bars.append(bar)
    try:
        if agent.startswith("replay:"):
            rows, summary = bfcl.run_suite(runner, entries, agreement=agreement, progress=bar.update)
        else:
            rows, summary = bfcl.run_suite(runner, entries, agreement=agreement)
    finally:
        bar.close()
    return rows, summary, {"categories": categories or list(bfcl.CATEGORIES)}


def _run_acebench(suite: str, agent: str, categories: list[str] | None, limit: int | None, data: str | None,
                  trust: bool, show: bool, max_new_tokens: int, agreement: bool) -> tuple[list, dict, dict]:
    import os

    from spade_envs.errors import SpadeError
    from spade_envs.evals import acebench

    root = data or os.environ.get("ACEBENCH_ROOT")
    if categories is None:
        categories = list(acebench.AGENT if suite == "acebench-agent" else acebench.CATEGORIES)
    elif suite == "acebench-agent" and any(c not in acebench.AGENT for c in categories):
        raise SpadeError(f"acebench-agent runs {', '.join(acebench.AGENT)}; use --suite acebench for the others")
    if not trust and any(c in acebench.NORMAL for c in categories):
        raise SpadeError("the normal categories are scored by ACEBench's checker code from the checkout, which "
                         "runs in-process: pass --trust-remote-code, or choose agent_*/special_* categories")
    entries = acebench.load_acebench(root, categories, limit=limit)
    backend = user_backend = None
    if agent != "replay:reference":
        from spade_envs.agents import load_backend

        backend = load_backend(agent)
    from spade_envs.trust import get_runtime

    runtime = get_runtime(trust_remote_code=trust)
    bar = _bar(len(entries), "acebench", show)
    try:
        rows, summary = acebench.run_acebench(root, entries, backend=backend, user_backend=user_backend,
                                              trust_remote_code=trust, runtime=runtime, progress=bar.update,
                                              max_new_tokens=max_new_tokens)
        if agreement and trust:
            from spade_envs.evals.acebench_agreement import check_agreement

            summary["agreement"] = check_agreement(root, entries, rows, runtime=runtime, trust_remote_code=True,
                                                   perturbations=backend is None)
        elif agreement:
            summary["agreement"] = {"skipped": "ACEBench's own evaluator is code from the checkout; pass "
                                               "--trust-remote-code to score this run with it as well"}
    finally:
        bar.close()
        runtime.close()
    return rows, summary, {"data": str(root), "categories": categories,
                           "runtime": "in-process (--trust-remote-code)" if trust else "sandbox"}


RESUMABLE = ("registry", "games", "reasoning-gym")


def _open_partial(folder: Path, run: dict[str, Any], resume: bool, force: bool, *, enabled: bool) -> Any:
    """The run's finished-entries file (:mod:`spade_envs.evals.partial_results`), or None
    for a suite scored all at once."""
    if not enabled:
        return None
    from spade_envs.evals.partial_results import PartialResults

    partial = PartialResults(folder)
    if resume and not force:
        partial.resume(run)
    else:
        partial.start(run, force=force)
    return partial


def _resumed(suite: str, partial: Any, records: Any = ()) -> dict[str, Any]:
    """The interrupted run's rows, validated and recomputed or refused
    (:mod:`spade_envs.evals.resume_rows`); each refusal is one line on stderr."""
    if partial is None or not partial.rows:
        return {}
    from spade_envs.evals.resume_rows import checked
    from spade_envs.textsafe import safe_text

    def refused(key: str, reason: str) -> None:
        typer.echo(safe_text(f"spade: --resume: the finished row {key[:120]!r} is refused ({reason}); "
                             "it is played again"), err=True)

    return checked(suite, dict(partial.rows), records=records, refused=refused)


def _interrupted(partial: Any, suite: str) -> typer.Exit:
    """Ctrl-C: one message saying where the finished entries are, exit status 130."""
    if partial is None:
        typer.echo(f"spade: interrupted; the {suite} suite keeps no partial results (it scores all entries "
                   "at the end): run it again", err=True)
        return typer.Exit(130)
    partial.close()
    typer.echo(f"spade: interrupted: {len(partial.rows)} finished entries are in {partial.path}; "
               "run the same command with --resume to complete the run", err=True)
    return typer.Exit(130)


def output_problem(folder: Path) -> str | None:
    """Why the report cannot be written under ``folder`` (None when it can): the folder
    must be a directory or creatable, under a writable existing ancestor."""
    import os

    if folder.exists() and not folder.is_dir():
        return f"--out {folder} is a file; give a folder for the report"
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        return f"--out {folder}: {probe} is a file, so the report folder cannot be created"
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        return f"--out {folder}: {probe} is not writable"
    return None


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_cmd(
        suite: str = typer.Option(..., "--suite", help=f"one of: {', '.join(SUITES)}"),
        agent: str = typer.Option(..., "--agent", help="BACKEND:MODEL, e.g. transformers:default or replay:reference"),
        category: list[str] = typer.Option([], "--category", help="BFCL/ACEBench category (repeatable)"),
        limit: int | None = typer.Option(None, "--limit", min=1,
                                         help="at most N entries / environments; reasoning-gym: N tasks "
                                              "(each plays --episodes episodes)"),
        split: str | None = typer.Option(None, "--split", help="registry split: all, train or heldout"),
        out: Path | None = typer.Option(None, "--out", help="report folder (default ./spade-eval/<suite>__<agent>)"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
        seeds: int = typer.Option(1, "--seeds", min=1, help="registry: seeds per environment (0..N-1)"),
        generation: int | None = typer.Option(None, "--generation", help="registry: only this generation"),
        skill: str | None = typer.Option(None, "--skill", help="registry: only this skill"),
        tag: list[str] = typer.Option([], "--tag", help="registry: required tag (repeatable)"),
        data: str | None = typer.Option(None, "--data", help="acebench: the ACEBench checkout (or ACEBENCH_ROOT)"),
        trust_remote_code: bool = typer.Option(False, "--trust-remote-code",
                                               help="acebench: run the checkout's code in-process (scenarios, checker)"),
        agreement: bool = typer.Option(True, "--agreement/--no-agreement",
                                       help="bfcl/acebench: check verdicts with the benchmark's own evaluator"),
        max_new_tokens: int = typer.Option(256, "--max-new-tokens", min=1, help="model agents: tokens per step"),
        max_turns: int = typer.Option(10, "--max-turns", min=1, help="registry: turn limit per episode"),
        include_unverified: bool = typer.Option(False, "--include-unverified",
                                                help="registry: also score entries without a reference solution"),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="progress bar on stderr"),
        name: str | None = typer.Option(None, "--name", help="the run's name in results and leaderboards "
                                                            "(default: the --out folder's name)"),
        resume: bool = typer.Option(False, "--resume", help="complete the interrupted run in --out "
                                                            "(registry, games and reasoning-gym suites)"),
        force: bool = typer.Option(False, "--force", help="start over even if --out holds an interrupted run"),
        level: str = typer.Option("hard", "--level", help="reasoning-gym: easy or hard (default hard: SPADE's "
                                                          "RG hard split)"),
        rg_task: list[str] = typer.Option([], "--task", help="reasoning-gym: only this task (repeatable)"),
        rg_config: list[str] = typer.Option([], "--config", help="reasoning-gym: KEY=VALUE or TASK.KEY=VALUE (repeatable)"),
        episodes: int | None = typer.Option(None, "--episodes", min=1, help="reasoning-gym: episodes per task (8)"),
    ) -> None:
        """Evaluate an agent on a registry, BFCL-v4 multi-turn or ACEBench agent suite."""
        from spade_envs.evals.report import build_results, headline_text, write_report

        from .main import fail

        if suite not in SUITES:
            raise fail(f"unknown suite '{suite}'; choose one of: {', '.join(SUITES)}", 2)
        # checked before any work: a bad output folder is one line; every suite builds its
        # agent before it draws a progress bar, so a bad --agent is one line too
        folder = out or Path("spade-eval") / re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{suite}__{agent}")
        problem = output_problem(folder)
        if problem:
            raise fail(problem, 2)
        cats = [c for item in category for c in item.split(",") if c] or None
        options = {"category": cats, "limit": limit, "split": split, "seeds": seeds, "generation": generation,
                   "skill": skill, "tags": tag}
        if suite == "reasoning-gym":
            options.update(level=level, tasks=rg_task, config=rg_config, episodes=episodes)
        if suite in RESUMABLE:
            options.update(max_turns=max_turns, include_unverified=include_unverified, max_new_tokens=max_new_tokens)
        elif resume:
            raise fail(f"--resume: the {suite} suite scores its entries all at once; "
                       f"runs of {', '.join(RESUMABLE)} can be resumed", 2)
        partial = _open_partial(folder, {"suite": suite, "agent": agent, "options": options}, resume, force,
                                enabled=suite in RESUMABLE)
        resumed = len(partial.rows) if partial is not None else 0
        try:
            if suite == "registry":
                rows, summary, extra = _run_registry(agent, split, limit, seeds, generation, skill, tag, progress,
                                                     max_new_tokens, max_turns, include_unverified, partial)
            elif suite == "games":
                from spade_envs.evals.games import run_games

                bar = _bar(None, "matches", progress)
                try:
                    rows, summary, extra = run_games(agent, limit=limit, episodes=max(2, seeds),
                                                     max_new_tokens=max_new_tokens,
                                                     finished=_resumed("games", partial),
                                                     on_row=partial.add, progress=bar.update)
                finally:
                    bar.close()
            elif suite == "reasoning-gym":
                from spade_envs.evals.reasoning_gym import run_suite

                rows, summary, extra = run_suite(agent, level=level, task_names=rg_task, config_items=rg_config,
                                                 episodes=episodes, limit=limit, max_new_tokens=max_new_tokens,
                                                 show=progress, finished=dict(partial.rows), on_row=partial.add)
            elif suite == "bfcl-v4-multi-turn":
                rows, summary, extra = _run_bfcl(agent, cats, limit, agreement, progress, max_new_tokens)
            else:
                rows, summary, extra = _run_acebench(suite, agent, cats, limit, data, trust_remote_code, progress,
                                                     max_new_tokens, agreement)
        except KeyboardInterrupt:
            raise _interrupted(partial, suite) from None
        finally:
            if partial is not None:
                partial.close()
        if resume and partial is not None:
            extra["resumed_entries"] = resumed  # finished before the interruption, not played again
        results = build_results(suite, agent, rows, summary, run=name or folder.name, options=options, **extra)
        paths = write_report(results, folder)
        if partial is not None:
            partial.finish()
        if suite.startswith("acebench"):
            from spade_envs.evals.acebench import write_acebench_layout

            paths["acebench_results"] = str(write_acebench_layout(rows, folder))
        if as_json:
            typer.echo(json.dumps({**results, "report": paths}, default=str))
            return
        typer.echo(f"{suite} / {agent}: {headline_text(results)}")
        if "agreement" in summary:
            a = summary["agreement"]
            if "entries" in a:
                from spade_envs.evals.acebench_agreement import agreement_line

                typer.echo(agreement_line(a))
            elif "agree" in a:
                typer.echo(f"agreement with BFCL's checker: {a['agree']}/{a['n']}")
        typer.echo(f"report: {paths['html']}\nleaderboard: {paths['markdown']}\nresults: {paths['json']}")
