"""Running a self-play job: rounds, metrics, plot, checkpoints, exact resume.

:func:`run` builds a :class:`~.trainer.SelfPlayTrainer`, optionally restores the latest
checkpoint of ``config.out_dir`` (weights, optimizer, RNG states, replay buffer, ledger,
stored designer completions, pending registrations, round and step counters; the memory
is the registry itself), runs the remaining rounds, and returns a summary. Resume is exact
(same metrics, same next batch as an uninterrupted run) when the registry store is in the
state the checkpoint saw; if its generation moved on since, the summary says so
(``resume_note``). ``resume`` without any checkpoint yet (a run stopped in its first
round) starts from round 0 and says so.

A checkpoint is written after every ``checkpoint_every`` rounds (1: every round). Ctrl-C
(``KeyboardInterrupt``) ends the run between two writes: :class:`SelfPlayInterrupted`
then names the last checkpoint and the metrics file, and ``--resume`` continues from it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from ..errors import SpadeError
from . import checkpoint
from .config import SelfPlayConfig
from .metrics import MetricsLogger


class SelfPlayInterrupted(SpadeError):
    """The run was interrupted (Ctrl-C); ``checkpoint``/``metrics`` say what was kept."""

    def __init__(self, out_dir: Path, ckpt: Path | None, metrics: Path) -> None:
        self.out_dir, self.checkpoint, self.metrics = out_dir, ckpt, metrics
        where = (f"last checkpoint {ckpt} (after round {int(ckpt.name.split('-')[-1])})" if ckpt is not None
                 else "no checkpoint yet (interrupted in the first round)")
        super().__init__(f"interrupted: {where}; metrics so far in {metrics}; "
                         f"continue with the same command plus --resume (--out {out_dir})")


def run(config: SelfPlayConfig, *, resume: bool = False, registry: Any = None, designer_backend: Any = None,
        runtime: Any = None, on_round: Callable[[dict], None] | None = None,
        on_start: Callable[[Any], None] | None = None, on_phase: Callable[[str], None] | None = None,
        time_budget_s: float | None = None) -> dict[str, Any]:
    """Run ``config.rounds`` rounds in total (continuing a checkpoint with ``resume``).
    With several processes (``accelerate launch``) only the main one writes metrics,
    TensorBoard, the plot and checkpoints; registry writes go through :mod:`.dist`.
    ``time_budget_s``: start no new round that, at the mean round length so far, would end
    past this many seconds (at least one round runs); the summary's ``stopped_by_budget``
    says whether it cut the run short."""
    from . import dist
    from .trainer import SelfPlayTrainer

    t0 = time.perf_counter()
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer = SelfPlayTrainer(config, registry=registry, designer_backend=designer_backend, runtime=runtime,
                              on_phase=on_phase)
    main = dist.is_main(trainer.acc)
    logger = MetricsLogger(out, tensorboard=config.tensorboard and main, write=main)
    note = None
    ck = checkpoint.latest(out) if resume else None
    if resume and ck is None:
        note = f"--resume: no checkpoint under {out / 'checkpoints'} yet: started from round 0"
        logger.truncate(-1)
    elif resume:
        from .trl_bridge import sync_generation_weights

        state = checkpoint.load_state(ck)
        checkpoint.load_into(ck, model=trainer.grpo.model_wrapped, optimizer=trainer.grpo.optimizer,
                             rng=trainer.rng, accelerator=trainer.acc)
        trainer.load_state_dict(state)
        sync_generation_weights(trainer.grpo)  # vLLM still holds the weights it loaded from disk
        logger.truncate(int(state["round"]))
        if trainer.registry.next_generation() != state["registry_next_generation"]:
            note = (f"the registry moved on since the checkpoint (next generation "
                    f"{trainer.registry.next_generation()} vs {state['registry_next_generation']}): not an exact resume")
    else:
        logger.truncate(-1)
    if main:
        (out / "config.json").write_text(json.dumps(config.to_dict(), indent=2, sort_keys=True), encoding="utf-8")
    if on_start is not None:
        on_start(trainer)
    rows = []
    stopped = False
    try:
        while trainer.round < config.rounds:
            spent = time.perf_counter() - t0
            # wall clock differs per rank: the main process decides for all
            if dist.from_main(trainer.acc, time_budget_s is not None and bool(rows)
                              and spent + spent / len(rows) > time_budget_s):
                stopped = True  # another round of the mean length so far would overrun the budget
                break
            row = trainer.run_round()
            logger.log(row)
            rows.append(row)
            if config.plot and main:
                logger.plot()
            done = trainer.round
            out_of_time = dist.from_main(trainer.acc, time_budget_s is not None
                                         and time.perf_counter() - t0 >= time_budget_s)
            if done % config.checkpoint_every == 0 or done == config.rounds or out_of_time:
                checkpoint.save(out, done - 1, model=trainer.grpo.model_wrapped, tokenizer=trainer.tokenizer,
                                optimizer=trainer.grpo.optimizer, rng=trainer.rng, state=trainer.state_dict(),
                                keep=config.keep_checkpoints, accelerator=trainer.acc)  # every rank
            if on_round is not None:
                on_round(row)
    except KeyboardInterrupt:
        raise SelfPlayInterrupted(out, checkpoint.latest(out), logger.path) from None
    finally:
        logger.close()
        try:
            trainer.agent.close()
        except Exception:
            pass
    all_rows = logger.read() if main else rows
    ck = checkpoint.latest(out)
    return {
        "out_dir": str(out), "rounds": len(all_rows), "rounds_this_run": len(rows),
        "generations": trainer.generations, "registry": str(trainer.registry.path),
        "registered": sum(r.get("registered_new", 0) for r in all_rows),
        "proposed": sum(r.get("proposed", 0) for r in all_rows),
        "valid": sum(r.get("valid", 0) for r in all_rows),
        "rejected_at": _merge([r.get("rejected_at") or {} for r in all_rows]),
        "metrics": str(logger.path), "plot": str(out / "metrics.png") if (out / "metrics.png").exists() else None,
        "tensorboard": logger.tensorboard_note, "checkpoint": str(ck) if ck else None,
        "last": all_rows[-1] if all_rows else None, "resume_note": note, "stopped_by_budget": stopped,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def _merge(dicts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + int(v)
    return out


def _read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a ``metrics.jsonl`` (empty when missing)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
