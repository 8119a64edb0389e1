"""``spade eval --suite registry|bfcl-v4-multi-turn|acebench-agent|games --agent BACKEND:MODEL``.

Runs a suite, shows a progress bar on stderr, writes ``results.json``, ``leaderboard.md``
and ``report.html`` under ``--out`` (default ``./spade-eval/<suite>__<agent>``) and prints
a summary, or with ``--json`` exactly one JSON object: ``{"suite", "agent", "summary",
"entries": [{"id", "passed", ...}], ...}``. For ``bfcl-v4-multi-turn`` each verdict is
also checked against BFCL's own checker (``summary.agreement``) unless ``--no-agreement``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer

SUITES = ("registry", "bfcl-v4-multi-turn", "acebench-agent", "acebench", "games")


def _bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False, dynamic_ncols=True)


def _registry_agent(spec: str, **options: Any) -> Any:
    from spade_envs.agents import load_agent

    return load_agent(spec, **options)


def _run_registry(agent: str, split: str | None, limit: int | None, seeds: int, generation: int | None,
                  skill: str | None, tags: list[str], show: bool, max_new_tokens: int, max_turns: int) -> tuple[list, dict, dict]:
    from spade_envs.evals import registry_suite as rs

    records = rs.select_records(rs.active_records(), generation=generation, skill=skill, tags=tags or None,
                                split=split, limit=limit)
    if not records:
        from spade_envs.errors import SpadeError

        raise SpadeError("no environment matches the selection (see `spade registry list`)")
    bar = _bar(len(records) * seeds, "scoring", show)
    try:
        opts = {} if agent.startswith("replay:") else {"max_new_tokens": max_new_tokens}
        tasks = rs.make_tasks(records, range(seeds), max_turns=max_turns)
        rows, summary = rs.run_registry_suite(_registry_agent(agent, **opts), records, tasks=tasks, progress=show,
                                              on_scored=bar.update)
    finally:
        bar.close()
    return rows, summary, {"registry_revision": summary.get("registry_revision")}


def _run_bfcl(agent: str, categories: list[str] | None, limit: int | None, agreement: bool, show: bool,
              max_new_tokens: int) -> tuple[list, dict, dict]:
    from spade_envs.evals import bfcl
    from spade_envs.evals.bfcl_agents import make_bfcl_agent

    entries = bfcl.load_entries(categories, limit)
    bar = _bar(len(entries), "bfcl", show)
    try:
        opts = {} if agent.startswith("replay:") else {"max_new_tokens": max_new_tokens, "progress": bar.update}
        runner = make_bfcl_agent(agent, **opts)
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


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_cmd(
        suite: str = typer.Option(..., "--suite", help=f"one of: {', '.join(SUITES)}"),
        agent: str = typer.Option(..., "--agent", help="BACKEND:MODEL, e.g. transformers:default or replay:reference"),
        category: list[str] = typer.Option([], "--category", help="BFCL/ACEBench category (repeatable)"),
        limit: int | None = typer.Option(None, "--limit", min=1, help="at most N entries / environments"),
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
        progress: bool = typer.Option(True, "--progress/--no-progress", help="progress bar on stderr"),
    ) -> None:
        """Evaluate an agent on a registry, BFCL-v4 multi-turn or ACEBench agent suite."""
        from spade_envs.evals.report import build_results, headline, write_report

        from .main import fail

        if suite not in SUITES:
            raise fail(f"unknown suite '{suite}'; choose one of: {', '.join(SUITES)}", 2)
        cats = [c for item in category for c in item.split(",") if c] or None
        if suite == "registry":
            rows, summary, extra = _run_registry(agent, split, limit, seeds, generation, skill, tag, progress,
                                                 max_new_tokens, max_turns)
        elif suite == "games":
            from spade_envs.evals.games import run_games

            rows, summary, extra = run_games(agent, limit=limit, episodes=max(2, seeds), max_new_tokens=max_new_tokens)
        elif suite == "bfcl-v4-multi-turn":
            rows, summary, extra = _run_bfcl(agent, cats, limit, agreement, progress, max_new_tokens)
        else:
            rows, summary, extra = _run_acebench(suite, agent, cats, limit, data, trust_remote_code, progress,
                                                 max_new_tokens, agreement)
        options = {"category": cats, "limit": limit, "split": split, "seeds": seeds, "generation": generation,
                   "skill": skill, "tags": tag}
        results = build_results(suite, agent, rows, summary, options=options, **extra)
        folder = out or Path("spade-eval") / re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{suite}__{agent}")
        paths = write_report(results, folder)
        if suite.startswith("acebench"):
            from spade_envs.evals.acebench import write_acebench_layout

            paths["acebench_results"] = str(write_acebench_layout(rows, folder))
        if as_json:
            typer.echo(json.dumps({**results, "report": paths}, default=str))
            return
        h = headline(results)
        typer.echo(f"{suite} / {agent}: success {100 * h['rate']:.1f}% "
                   f"[{100 * h['ci95'][0]:.1f}, {100 * h['ci95'][1]:.1f}] over {h['n']}")
        if "agreement" in summary:
            a = summary["agreement"]
            if "entries" in a:
                typer.echo(f"agreement with ACEBench's evaluation: entries {a['entries']['agree']}/{a['entries']['n']}, "
                           f"perturbed {a['perturbed']['agree']}/{a['perturbed']['n']}")
            elif "agree" in a:
                typer.echo(f"agreement with BFCL's checker: {a['agree']}/{a['n']}")
        typer.echo(f"report: {paths['html']}\nleaderboard: {paths['markdown']}\nresults: {paths['json']}")
