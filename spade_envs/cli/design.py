"""``spade design --n N [--skill S] [--mode game|tool|puzzle|multiplayer|params] [--model M] [--corpus C] [--json]``.

Proposes N environments with the designer model, runs each through the acceptance
pipeline (with repairs), registers the accepted ones as a new generation of the local
registry (``SPADE_HOME``) and scores them (hinted and plain plays). Shows a progress bar
per stage on stderr (propose and repair move per generated answer with a local
transformers model) and a summary table (proposed, accepted, rejected per stage, mean
regret, win rates); ``--json`` prints exactly one JSON object on stdout instead:
``{"generation", "proposed", "attempts", "accepted", "registered", "rejected": {stage: n},
"rejected_attempts": {stage: n},
"scored", "mean_regret", "mean_win_rate_hint", "mean_win_rate_plain", "seconds",
"candidates": [...]}``. Exit status 0 when the run completed (whatever was accepted),
1 on an error, 2 on bad options.

``--mode params`` (:mod:`spade_envs.designer.params_design`) proposes *variants* of
registry environments that declare ``PARAMETERS`` (``--parent ID`` restricts which) as
JSON, under constrained decoding where the backend offers it, and registers the
accepted ones with ``Registry.add_variant``; the summary and ``--json`` have the same
keys, plus ``mode`` and ``constrained``, and each candidate its parent and point.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

#: designer tokens per answer for ``--model transformers:tiny-random`` (its answers are
#: random text: a smoke run of the pipeline, which must finish in well under a minute)
SMOKE_MAX_NEW_TOKENS = 48


def _progress(enabled: bool) -> tuple[Any, Any]:
    """A rich Progress on stderr with one bar per designer stage, and its update function."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..designer.designer import DESIGN_STAGES

    progress = Progress(TextColumn("{task.description:>9}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=Console(stderr=True), disable=not enabled, transient=False)
    tasks = {stage: progress.add_task(stage, total=None, start=False) for stage in DESIGN_STAGES}

    def update(stage: str, done: int, total: int) -> None:
        task = tasks.get(stage)
        if task is not None:
            progress.start_task(task)
            progress.update(task, completed=done, total=max(total, done))

    return progress, update


def _print_summary(run: Any) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    s = run.summary()
    console = Console()
    table = Table(title=f"spade design: generation {s['generation'] if s['generation'] is not None else '-'}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    fmt = (lambda v: "-" if v is None else f"{v:.3f}")
    rows = [("proposed", s["proposed"]), ("attempts (with repairs)", s["attempts"]), ("accepted", s["accepted"]),
            ("registered (new)", s["registered"])]
    rows += [(f"rejected at {stage}", n) for stage, n in sorted(s["rejected"].items())]
    rows += [(f"  attempts failing {stage}", n) for stage, n in sorted(s["rejected_attempts"].items())]
    rows += [("scored", s["scored"]), ("mean regret", fmt(s["mean_regret"])),
             ("mean win rate (hint)", fmt(s["mean_win_rate_hint"])),
             ("mean win rate (plain)", fmt(s["mean_win_rate_plain"]))]
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)
    cands = Table(title="candidates")
    for col in ("#", "skill", "mode", "document", "result", "repairs", "env id", "regret"):
        cands.add_column(col, overflow="fold", no_wrap=col == "env id", min_width=18 if col == "env id" else None)
    for c in run.candidates:
        bad = c.attempts[-1].failure if c.attempts else None
        result = "[green]accepted[/green]" if c.accepted else (
            f"[red]{c.rejected_at}[/red]: {escape((bad.detail if bad else '')[:120])}")
        cands.add_row(str(c.index), c.skill, c.mode, escape(c.document.ref), result, str(c.repairs),
                      c.env_id or "-", fmt(c.estimate.regret) if c.estimate else "-")
    console.print(cands)


def register(app: typer.Typer) -> None:
    @app.command("design")
    def design(
        n: int = typer.Option(1, "--n", min=1, help="number of environments to propose"),
        skill: Optional[str] = typer.Option(None, "--skill", help="one of the six skills (default: random per candidate)"),
        mode: Optional[str] = typer.Option(None, "--mode", help="puzzle, game, tool or multiplayer (default: puzzle/game/tool at random), or params: variants of registry environments"),
        parent: Optional[list[str]] = typer.Option(None, "--parent", help="--mode params: offer only this parent (repeatable)"),
        model: str = typer.Option("transformers:default", "--model", help="designer model, BACKEND:MODEL"),
        corpus: str = typer.Option("stdlib", "--corpus", help="grounding corpus: stdlib, FILE.jsonl, FILE.parquet, hf:NAME"),
        agent: Optional[str] = typer.Option(None, "--agent", help="agent that plays for the regret (default: the designer model)"),
        max_repairs: int = typer.Option(2, "--max-repairs", min=0, help="repair attempts per candidate"),
        hint_plays: int = typer.Option(2, "--hint-plays", "--n-hint", min=1,
                                       help="hinted plays per accepted environment"),
        plain_plays: int = typer.Option(4, "--plain-plays", "--n-plain", min=1,
                                        help="plain plays per accepted environment"),
        max_turns: int = typer.Option(6, "--max-turns", min=1, help="turns per play"),
        max_new_tokens: Optional[int] = typer.Option(
            None, "--max-new-tokens", min=16,
            help=f"designer tokens per answer (default 1536; {SMOKE_MAX_NEW_TOKENS} for the tiny random model, "
                 "a smoke run)"),
        temperature: float = typer.Option(0.7, "--temperature", min=0.0, help="designer sampling temperature"),
        reward_mode: str = typer.Option("regret", "--reward-mode", help="regret, blend or solve_rate"),
        seed: int = typer.Option(0, "--seed", help="sampling seed (skills, modes, documents, generation)"),
        no_score: bool = typer.Option(False, "--no-score", help="register without playing for the regret"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
        no_progress: bool = typer.Option(False, "--no-progress", help="no progress bars"),
    ) -> None:
        """Propose, validate, score and register new environments (a new generation)."""
        from ..designer.corpus import Corpus
        from ..designer.designer import DesignConfig, EnvironmentDesigner
        from ..designer.prompts import SKILLS
        from .main import fail

        if skill is not None and skill not in SKILLS:
            raise fail(f"--skill must be one of: {', '.join(SKILLS)} (got {skill!r})", 2)
        if mode == "params":
            _design_params(n=n, model=model, agent=agent, parents=parent, seed=seed, temperature=temperature,
                           hint_plays=hint_plays, plain_plays=plain_plays, max_turns=max_turns, reward_mode=reward_mode,
                           score=not no_score, as_json=as_json, progress_on=not no_progress)
            return
        if parent:
            raise fail("--parent goes with --mode params", 2)
        if max_new_tokens is None:
            max_new_tokens = SMOKE_MAX_NEW_TOKENS if model.endswith(":tiny-random") else 1536
        try:
            config = DesignConfig(
                n=n, model=model, skill=skill, mode=mode, corpus=corpus, seed=seed, max_repairs=max_repairs,
                max_new_tokens=max_new_tokens, temperature=temperature, score=not no_score, agent=agent,
                hint_plays=hint_plays, plain_plays=plain_plays, max_turns=max_turns, reward_mode=reward_mode,
            )
        except ValueError as exc:
            raise fail(str(exc), 2) from None
        corpus_obj = Corpus(corpus)
        progress, update = _progress(not no_progress)
        with progress:
            run = EnvironmentDesigner(config, corpus=corpus_obj, progress=update).run()
        if as_json:
            typer.echo(json.dumps(run.to_json(), default=str))
        else:
            _print_summary(run)


def _design_params(*, n: int, model: str, agent: str | None, parents: list[str] | None, seed: int,
                   temperature: float, hint_plays: int, plain_plays: int, max_turns: int, reward_mode: str, score: bool,
                   as_json: bool, progress_on: bool) -> None:
    """``spade design --mode params``: see the module docstring."""
    from ..designer.params_design import ParamsConfig, ParamsDesigner
    from ..designer.params_mode import NoParentsError
    from ..errors import InvalidEnvIdError
    from .main import fail

    from ..registry.ids import parse_env_id

    try:
        for pid in parents or []:
            parse_env_id(pid)
    except InvalidEnvIdError as exc:
        raise fail(f"--parent: {exc}", 2) from None
    try:
        config = ParamsConfig(n=n, model=model, agent=agent, parents=list(parents or []) or None, seed=seed,
                              temperature=temperature, hint_plays=hint_plays, plain_plays=plain_plays, max_turns=max_turns,
                              reward_mode=reward_mode, score=score)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    progress, update = _progress(progress_on)
    try:
        with progress:
            run = ParamsDesigner(config, progress=update).run()
    except NoParentsError as exc:
        raise fail(str(exc), 1) from None
    if run.error:
        raise fail(run.error, 1)
    if as_json:
        typer.echo(json.dumps(run.to_json(), default=str))
        return
    _print_params_summary(run)


def _print_params_summary(run: Any) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    s = run.summary()
    fmt = (lambda v: "-" if v is None else f"{v:.3f}")
    console = Console()
    table = Table(title=f"spade design --mode params: generation {s['generation'] if s['generation'] is not None else '-'}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [("proposed", s["proposed"]), ("constrained decoding", "yes" if s["constrained"] else "no"),
            ("accepted", s["accepted"]), ("registered (new)", s["registered"])]
    rows += [(f"rejected at {stage}", k) for stage, k in sorted(s["rejected"].items())]
    rows += [("scored", s["scored"]), ("mean regret", fmt(s["mean_regret"])),
             ("mean win rate (hint)", fmt(s["mean_win_rate_hint"])), ("mean win rate (plain)", fmt(s["mean_win_rate_plain"]))]
    if s.get("error"):
        rows.append(("error", s["error"]))
    for name, value in rows:
        table.add_row(name, escape(str(value)))
    console.print(table)
    cands = Table(title="variants")
    for col in ("#", "parent", "point", "result", "env id", "regret"):
        whole = col in ("parent", "env id")  # ids are never cut or folded
        cands.add_column(col, overflow="fold", no_wrap=whole, min_width=18 if whole else None)
    for p in run.proposals:
        bad = next((v for v in p.verdicts if not v.ok), None)
        result = "[green]accepted[/green]" if p.valid else (
            f"[red]{p.rejected_at}[/red]: {escape((bad.detail if bad else '')[:120])}")
        point = json.dumps(p.point if p.point is not None else p.kwargs, sort_keys=True) if (p.point or p.kwargs) else escape(p.text[:60])
        cands.add_row(p.cid, p.parent or "-", escape(point), result, p.env_id or "-",
                      fmt(p.estimate.regret) if p.estimate is not None else "-")
    console.print(cands)
