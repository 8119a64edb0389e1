"""Checkpoints of a self-play run: ``OUT/checkpoints/round-NNNNN/``.

Layout: ``model/`` (``save_pretrained``: weights + tokenizer), ``optimizer.pt`` (the
optimizer's state dict), ``rng.pt`` (python ``random`` module, the run's own
``random.Random``, numpy, torch CPU and CUDA generator states), ``state.json`` (round,
global step, replay buffer, designer ledger, stored designer completions, candidate
sources, pending registrations, registry generation, config); under DeepSpeed also
``deepspeed/`` (the engine's own, partitioned, checkpoint) instead of ``optimizer.pt``.
A checkpoint is written to a temporary folder and renamed into place, so a crash (or
Ctrl-C) never leaves a half checkpoint; ``latest`` resolves to the highest complete round.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..errors import SpadeError


class CheckpointError(SpadeError):
    """No usable checkpoint where one was expected."""


def rng_state(rng: random.Random) -> dict[str, Any]:
    import numpy as np
    import torch

    state = {"run": rng.getstate(), "python": random.getstate(), "numpy": np.random.get_state(),
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any], rng: random.Random) -> None:
    import numpy as np
    import torch

    rng.setstate(state["run"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def checkpoint_root(out_dir: str | Path) -> Path:
    return Path(out_dir) / "checkpoints"


def save(out_dir: str | Path, round_no: int, *, model: Any, tokenizer: Any, optimizer: Any,
         rng: random.Random, state: dict[str, Any], keep: int = 2, accelerator: Any = None) -> Path:
    """Write the checkpoint of ``round_no`` (the last completed round); prune old ones.

    With an ``accelerator`` (``model`` = the prepared model) call it on EVERY rank: the full
    weights are gathered with ``accelerator.get_state_dict`` (a collective under ZeRO-3),
    DeepSpeed saves its partitioned optimizer state from every rank
    (``engine.save_checkpoint``), and only the main process writes the rest."""
    import torch

    root = checkpoint_root(out_dir)
    main = accelerator is None or accelerator.is_main_process
    deepspeed = accelerator is not None and _is_deepspeed(accelerator)
    tmp = root / f".partial-{round_no:05d}"  # the same path on every rank
    if main:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    _barrier(accelerator)
    if accelerator is not None:
        weights = accelerator.get_state_dict(model)
        unwrapped = accelerator.unwrap_model(model)
    else:
        weights, unwrapped = None, model
    if deepspeed:
        model.save_checkpoint(str(tmp / "deepspeed"))
    final = root / f"round-{round_no:05d}"
    if main:
        unwrapped.save_pretrained(tmp / "model", state_dict=weights)
        tokenizer.save_pretrained(tmp / "model")
        if not deepspeed:
            torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
        torch.save(rng_state(rng), tmp / "rng.pt")
        (tmp / "state.json").write_text(json.dumps({**state, "round": round_no}, sort_keys=True), encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        for old in sorted(root.glob("round-*"))[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    _barrier(accelerator)
    return final


def _is_deepspeed(accelerator: Any) -> bool:
    from accelerate.utils import DistributedType

    return accelerator.distributed_type == DistributedType.DEEPSPEED


def _barrier(accelerator: Any) -> None:
    if accelerator is not None and accelerator.num_processes > 1:
        accelerator.wait_for_everyone()


def latest(out_dir: str | Path) -> Path | None:
    done = [p for p in sorted(checkpoint_root(out_dir).glob("round-*")) if (p / "state.json").is_file()]
    return done[-1] if done else None


def load_state(path: Path) -> dict[str, Any]:
    try:
        return json.loads((path / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: unreadable checkpoint ({exc})") from None


def load_into(path: Path, *, model: Any, optimizer: Any, rng: random.Random, accelerator: Any = None) -> None:
    """Load weights, optimizer and RNG states of the checkpoint at ``path`` in place (on
    every rank; ``model`` = the prepared model when an ``accelerator`` is given)."""
    import torch
    from safetensors.torch import load_file

    if accelerator is not None and _is_deepspeed(accelerator):
        model.load_checkpoint(str(path / "deepspeed"))  # weights and partitioned optimizer state
        restore_rng(torch.load(path / "rng.pt", weights_only=False), rng)
        return
    if accelerator is not None:
        model = accelerator.unwrap_model(model)
    weights: dict[str, Any] = {}
    for f in sorted((path / "model").glob("*.safetensors")):
        weights.update(load_file(str(f)))
    if not weights:
        raise CheckpointError(f"{path}: no model weights")
    reference = next(iter(model.parameters()))
    weights = {k: v.to(reference.dtype) for k, v in weights.items()}  # float32 masters
    missing, unexpected = model.load_state_dict(weights, strict=False)
    tied = {k for k in missing if "lm_head" in k}
    if set(missing) - tied or unexpected:
        raise CheckpointError(f"{path}: weights do not match the model (missing {sorted(missing)[:3]}, "
                              f"unexpected {sorted(unexpected)[:3]})")
    if getattr(model.config, "tie_word_embeddings", False):
        model.tie_weights()
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=False))
    restore_rng(torch.load(path / "rng.pt", weights_only=False), rng)
