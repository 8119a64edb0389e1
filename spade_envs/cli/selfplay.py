"""``spade selfplay [--preset P] [--config FILE.yaml] [--rounds N] [--out DIR] [--resume]
[--push-to-hub REPO] [--set KEY=VALUE ...] [--heldout N] [--time-budget S] [--plan [--gpu NAME:N]]
[--json]``: regret-driven self-play training.

``--plan`` prints the per-device memory of the run (weights, gradients, optimizer,
activations, logits, vLLM; :mod:`~spade_envs.selfplay.plan`) for ``--gpu`` (default
``h200:1``) and exits 0 when it fits, 1 when it does not; a run started on GPUs is
refused, before anything loads, when its plan does not fit the visible devices.
Ctrl-C ends a run with one line naming the last checkpoint (written every round) and
the metrics file, exit status 130; ``--resume`` continues from there.

Progress goes to stderr as plain flushed lines (each phase of a round, then one
summary line per round), so it shows in a terminal, a pipe or a log file alike; at the end a summary table is printed, or
with ``--json`` exactly one JSON object: ``{"out_dir", "rounds", "generations",
"registered", "proposed", "valid", "rejected_at", "metrics", "plot", "checkpoint", ...}``.
Accepted environments go to a registry of the run's own, ``<out>/registry.sqlite3``
(``--set registry_path=FILE`` picks another file; ``--user-registry`` uses your own
registry, ``$SPADE_HOME``); the first progress line says which.
Any setting of :class:`~spade_envs.selfplay.config.SelfPlayConfig` can be given with
``--set key=value`` (lists as JSON). ``--heldout N`` also plays N held-out episodes
(held-out seeds at their easiest level) with the base model before and with the trained
checkpoint after, and prints them side by side; ``--time-budget S`` starts no new round
after S seconds. The end of the output says in plain words what happened
(``plain_summary`` in the JSON).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer


def _parse_sets(items: list[str]) -> dict[str, Any]:
    from .main import fail

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise fail(f"--set expects KEY=VALUE, got {item!r}", 2)
        out[key.strip().replace("-", "_")] = value
    return out


def _progress_line(row: dict) -> str:
    def f(key: str) -> str:
        v = row.get(key)
        return "-" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))

    return (f"round {row['round']}: proposed {f('proposed')} valid {f('valid')} regret {f('mean_regret')} "
            f"win {f('win_rate_plain')}/{f('win_rate_hint')} (plain/hint) registered {row.get('registered_new', 0)} "
            f"[{f('round_s')} s]")


def _table(summary: dict) -> str:
    last = summary.get("last") or {}
    rows = [
        ("rounds", summary["rounds"]), ("candidates proposed", summary["proposed"]),
        ("candidates valid", summary["valid"]), ("rejected at", json.dumps(summary["rejected_at"]) or "-"),
        ("new environments registered", summary["registered"]),
        ("generations", ", ".join(map(str, summary["generations"])) or "none"),
        ("last round: mean regret of plays", last.get("mean_regret")),
        ("last win rate plain", last.get("win_rate_plain")),
        ("last win rate hint", last.get("win_rate_hint")), ("registry", summary["registry"]),
        ("metrics", summary["metrics"]), ("plot", summary["plot"]), ("tensorboard", summary["tensorboard"]),
        ("checkpoint", summary["checkpoint"]), ("seconds", summary["seconds"]),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{'-' * (width + 2)}+{'-' * 50}"]
    lines += [f" {k.ljust(width)} | {'-' if v is None else (f'{v:.3f}' if isinstance(v, float) else v)}" for k, v in rows]
    if summary.get("resume_note"):
        lines.append(f" note: {summary['resume_note']}")
    if not summary["registered"]:
        lines.append(" no new environment was accepted this run; see 'rejected at' and metrics.jsonl")
    return "\n".join(lines)


def settings_epilog() -> str:
    """The settings list under ``spade selfplay --help``, from the fields' own help
    (:func:`~spade_envs.selfplay.config.settings_help`): one paragraph per setting."""
    from ..selfplay.config import settings_help

    lines = ["Settings (--set KEY=VALUE, or a key of the --config YAML):"]
    lines += [f"{name} ({kind}, default {default}): {text}" for name, kind, default, text in settings_help()]
    return "\n\n".join(line.replace("[", "\\[") for line in lines)


def register(app: typer.Typer) -> None:
    from ..selfplay.presets import PRESETS

    @app.command("selfplay", epilog=settings_epilog())
    def selfplay(
        preset: Optional[str] = typer.Option(None, "--preset", help=", ".join(PRESETS) + " (default cpu-tiny)"),
        config: Optional[Path] = typer.Option(None, "--config", help="YAML file of settings"),
        rounds: Optional[int] = typer.Option(None, "--rounds", help="total rounds"),
        out: Optional[Path] = typer.Option(None, "--out", help="output folder"),
        model: Optional[str] = typer.Option(None, "--model", help="model: default, tiny-random or a local folder"),
        designer: Optional[str] = typer.Option(None, "--designer", help="policy, off (fixed environments) or scripted:NAME"),
        resume: bool = typer.Option(False, "--resume", help="continue from the latest checkpoint in --out"),
        push_to_hub: Optional[str] = typer.Option(None, "--push-to-hub", help="dataset repo to push each generation to"),
        sets: list[str] = typer.Option([], "--set", help="any setting, KEY=VALUE (repeatable)"),
        heldout: int = typer.Option(0, "--heldout", help="also play N held-out episodes before and after, side by side"),
        time_budget: Optional[float] = typer.Option(None, "--time-budget", help="start no new round after S seconds"),
        show_plan: bool = typer.Option(False, "--plan", help="print the per-device memory plan and exit"),
        gpu: Optional[str] = typer.Option(None, "--gpu", help="GPUs for --plan, NAME[:COUNT], e.g. h200:8"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
        user_registry: bool = typer.Option(False, "--user-registry",
                                           help="register accepted environments in your own registry ($SPADE_HOME) "
                                                "instead of the run's own (<out>/registry.sqlite3)"),
    ) -> None:
        """Regret-driven self-play: the designer proposes, the agent plays, both learn."""
        from ..errors import SpadeError
        from ..selfplay.presets import build_config
        from .main import fail

        if config is not None and not config.is_file():
            raise fail(f"{config}: no such config file", 2)
        try:
            flags = {"rounds": rounds, "out_dir": str(out) if out else None, "model": model, "push_to_hub": push_to_hub,
                     "designer": designer}
            cfg = build_config(preset, config, **{**_parse_sets(sets), **{k: v for k, v in flags.items() if v is not None}})
        except SpadeError as exc:
            raise fail(str(exc), 2) from None
        if not cfg.registry_path and not user_registry:  # a run-local registry unless told otherwise
            cfg = cfg.replace(registry_path=str(Path(cfg.out_dir) / "registry.sqlite3"))
        import os
        import sys

        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads: shared cores, no spinning
        from ..selfplay.loop import SelfPlayInterrupted, _read_rows, run

        if heldout < 0 or (time_budget is not None and time_budget < 0):
            raise fail("--heldout and --time-budget must be >= 0", 2)

        quiet = os.environ.get("RANK", "0") != "0"  # torchrun / accelerate launch: the main process speaks

        def say(text: str) -> None:  # plain lines, flushed: progress shows in logs and pipes too
            if not quiet:
                print(text, file=sys.stderr, flush=True)

        from ..selfplay.plan import PlanError, check_fits, local_gpu, plan

        try:
            if show_plan or gpu:
                pl = plan(cfg, gpu or "h200:1")
                typer.echo(json.dumps(pl.as_dict(), sort_keys=True) if as_json else pl.table())
                raise typer.Exit(0 if pl.fits else 1)
            here = local_gpu()
            if here is not None and cfg.device != "cpu":
                check_fits(cfg, here)
        except PlanError as exc:
            raise fail(str(exc), 1 if show_plan or gpu else 2) from None

        say(f"spade selfplay: preset {cfg.preset}, model {cfg.model}, {cfg.rounds} rounds -> {cfg.out_dir}")
        from ..registry.store import default_path

        say(f"accepted environments are registered in {cfg.registry_path or default_path()}"
            + (" (your registry, --user-registry)" if user_registry and not cfg.registry_path else
               " (this run's own; --user-registry registers them in yours)" if not user_registry else ""))
        before = None
        try:
            if heldout:
                from ..selfplay.report import heldout_before

                say(f"held-out split before training: {heldout} episodes ...")
                before = heldout_before(cfg.model, episodes=heldout, max_turns=cfg.max_turns,
                                        max_new_tokens=cfg.agent_max_new_tokens, seed=cfg.seed)
                say(f"held-out before: {sum(before)}/{len(before)} won")
            summary = run(cfg, resume=resume, on_round=lambda row: say(_progress_line(row)), on_phase=say,
                          time_budget_s=time_budget)
            if heldout:
                from ..selfplay.report import heldout_compare, trained_model_folder

                say("held-out split after training ...")
                summary["heldout"] = heldout_compare(cfg.model, trained_model_folder(summary), episodes=heldout,
                                                     max_turns=cfg.max_turns, max_new_tokens=cfg.agent_max_new_tokens,
                                                     seed=cfg.seed, before=before)
        except SelfPlayInterrupted as exc:
            raise fail(str(exc), 130) from None
        except KeyboardInterrupt:
            raise fail(f"interrupted before the first round: nothing was kept in {cfg.out_dir}", 130) from None
        except SpadeError as exc:
            raise fail(str(exc), 1) from None
        from ..selfplay.report import compare_table, plain_summary

        summary["plain_summary"] = plain_summary(summary, _read_rows(summary["metrics"]), summary.get("heldout"))
        if quiet:
            return
        if as_json:
            typer.echo(json.dumps(summary, default=str, sort_keys=True))
        else:
            typer.echo(_table(summary))
            if summary.get("heldout"):
                typer.echo("")
                typer.echo(compare_table(summary["heldout"]))
            typer.echo("")
            typer.echo(summary["plain_summary"])
