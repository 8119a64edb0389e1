"""``SelfPlayGRPOTrainer``: TRL's ``GRPOTrainer`` with the self-play hooks (the package
docstring lists them: inert and zero-std rows out of the loss, behaviour logprobs, the
Prefix Sliding mask, shared-prompt and schema-constrained scoring), and the helpers that
cut a step's rows into ranks and micro-batches.
"""

from __future__ import annotations

from typing import Any, Sequence

from trl import GRPOTrainer


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
    """``GRPOTrainer`` with the self-play hooks of the package docstring (:mod:`spade_envs.selfplay.trl_bridge`)."""

    def __init__(self, *args: Any, prefix_sliding: Sequence[Any] | None = None, filter_zero_std: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spade_behaviour = False  #: the current step replays rows sampled by an older policy
        self.filter_zero_std = bool(filter_zero_std)
        self.spade_rows_filtered = 0  #: rows taken out of the loss in the last generation batch (this rank)
        #: score rows that share a prompt with one forward of it (:mod:`~spade_envs.selfplay.shared_prompt`); False: TRL's path
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

        from ...agents.prefix_sliding_mask import prefix_sliding_attention_mask

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
            from ..shared_prompt import score_in_chunks

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
        from ..constrained_scoring import constrained_logps
        from ..shared_prompt import plan

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
        from .. import shared_prompt

        extra = {k: v for k, v in kwargs.items()
                 if v is not None and v is not False and k not in ("batch_size", "compute_entropy")}
        if (self.spade_share_prompts is False or self._sliding or args or extra or self.accelerator.num_processes != 1
                or self.is_deepspeed_enabled or not shared_prompt.caches_in_training(model)):
            return None
        return shared_prompt.plan(input_ids, attention_mask, logits_to_keep)

