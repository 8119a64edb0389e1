"""Generation from the policy being trained, for both roles.

:func:`policy_backend` returns an ``agents`` :class:`~spade_envs.agents.api.Backend` that
always samples from the CURRENT weights of the GRPO trainer's model:

- no vLLM: a :class:`~spade_envs.agents.backend_transformers.TransformersBackend` wrapping
  the training model object itself (weights shared; eval mode while generating);
- ``vllm_mode="colocate"``: the ``vllm.LLM`` that TRL created inside the trainer
  (``trainer.vllm_generation.llm``), after pushing the weights when the optimizer stepped
  since the last push (``trainer.vllm_generation.sync_weights()``);
- ``vllm_mode="server"``: ``trainer.vllm_generation.vllm_client`` (a ``trl vllm-serve``
  server), token ids in, token ids and sampling logprobs out, same weight sync.
"""

from __future__ import annotations

from typing import Any

from ..agents.api import Backend, Generation


class _SyncMixin:
    trainer: Any

    def _sync(self) -> None:
        tr = self.trainer
        step = tr.state.global_step
        if getattr(tr, "_last_loaded_step", None) != step:
            tr.vllm_generation.sync_weights()
            tr._last_loaded_step = step


class TrainerTransformersBackend(Backend):
    """Samples with the trainer's (unwrapped) model through ``TransformersBackend``."""

    token_level = True

    def __init__(self, trainer: Any, *, name: str, prefix_sliding: Any = None, batch_size: int = 64) -> None:
        from ..agents.backend_transformers import TransformersBackend

        model = trainer.accelerator.unwrap_model(trainer.model)
        self._model = model
        self._inner = TransformersBackend(name, model=model, tokenizer=trainer.processing_class,
                                          prefix_sliding=prefix_sliding, batch_size=batch_size)
        self.name = f"policy:{name}"
        self.tokenizer = self._inner.tokenizer
        self.max_positions = self._inner.max_positions

    def generate(self, prompts: list[list[int]], **kw: Any) -> list[Generation]:
        was_training = self._model.training
        self._model.eval()
        try:
            return self._inner.generate(prompts, **kw)
        finally:
            self._model.train(was_training)

    def chat(self, conversations: list[list[dict]], **kw: Any) -> list[Generation]:
        was_training = self._model.training
        self._model.eval()
        try:
            return self._inner.chat(conversations, **kw)
        finally:
            self._model.train(was_training)


class TrainerVLLMColocateBackend(_SyncMixin, Backend):
    """The colocated ``vllm.LLM`` of TRL's trainer behind the Backend interface."""

    token_level = True

    def __init__(self, trainer: Any, *, name: str, max_model_len: int | None = None) -> None:
        import vllm

        from ..agents.backend_vllm import VLLMBackend

        self.trainer = trainer
        inner = VLLMBackend.__new__(VLLMBackend)  # reuse its generate() on TRL's engine
        inner.llm, inner._vllm, inner.name = trainer.vllm_generation.llm, vllm, f"vllm:{name}"
        inner.tokenizer = trainer.processing_class
        inner.max_positions = int(max_model_len or 4096)
        vocab = inner.tokenizer.get_vocab()
        stops = {inner.tokenizer.eos_token_id} | {vocab[t] for t in ("<|im_end|>", "<|eot_id|>", "<|end|>") if t in vocab}
        inner.stop_ids = sorted(int(s) for s in stops if s is not None)
        self._inner = inner
        self.name, self.tokenizer, self.max_positions = inner.name, inner.tokenizer, inner.max_positions

    def generate(self, prompts: list[list[int]], **kw: Any) -> list[Generation]:
        self._sync()
        return self._inner.generate(prompts, **kw)

    def chat(self, conversations: list[list[dict]], **kw: Any) -> list[Generation]:
        self._sync()
        return self._inner.chat(conversations, **kw)


class TrainerVLLMServerBackend(_SyncMixin, Backend):
    """``trl vllm-serve`` through TRL's ``VLLMClient`` (weights pushed by the trainer)."""

    token_level = True

    def __init__(self, trainer: Any, *, name: str, max_model_len: int | None = None) -> None:
        self.trainer = trainer
        self.client = trainer.vllm_generation.vllm_client
        self.tokenizer = trainer.processing_class
        self.name = f"vllm-server:{name}"
        self.max_positions = int(max_model_len or 4096)
        vocab = self.tokenizer.get_vocab()
        stops = {self.tokenizer.eos_token_id} | {vocab[t] for t in ("<|im_end|>", "<|eot_id|>", "<|end|>") if t in vocab}
        self.stop_ids = sorted(int(s) for s in stops if s is not None)

    def generate(self, prompts: list[list[int]], *, max_new_tokens: int = 256, temperature: float = 0.6,
                 seed: int | None = None) -> list[Generation]:
        self._sync()
        extra: dict[str, Any] = {"stop_token_ids": self.stop_ids, "skip_special_tokens": False}
        if seed is not None:
            extra["seed"] = int(seed)
        out = self.client.generate(prompts=[list(p) for p in prompts], n=1, temperature=max(temperature, 1e-5),
                                   max_tokens=int(max_new_tokens), logprobs=0, generation_kwargs=extra)
        gens = []
        for prompt, ids, lps in zip(prompts, out["completion_ids"], out["logprobs"]):
            ids = [int(t) for t in ids]
            flat = [float(x[0]) if isinstance(x, list) and x and x[0] is not None else 0.0 for x in lps]
            stopped = bool(ids) and ids[-1] in self.stop_ids
            body = ids[:-1] if stopped else ids
            gens.append(Generation(text=self.tokenizer.decode(body, skip_special_tokens=False), token_ids=ids,
                                   logprobs=flat, prompt_token_ids=list(prompt),
                                   finish_reason="stop" if stopped else "length"))
        return gens

    def chat(self, conversations: list[list[dict]], *, tools: list[list[dict]] | None = None, **kw: Any) -> list[Generation]:
        from ..agents.chat import encode, render

        prompts = [encode(self.tokenizer, render(self.tokenizer, c, tools[i] if tools else None))
                   for i, c in enumerate(conversations)]
        return self.generate(prompts, **kw)


def policy_backend(trainer: Any, config: Any) -> Backend:
    """The backend sampling from the trainer's current policy (see the module docstring)."""
    ps = tuple(config.prefix_sliding) if config.prefix_sliding else None
    if not config.use_vllm:
        return TrainerTransformersBackend(trainer, name=config.model, prefix_sliding=ps)
    if config.vllm_mode == "server":
        return TrainerVLLMServerBackend(trainer, name=config.model, max_model_len=config.vllm_max_model_length)
    return TrainerVLLMColocateBackend(trainer, name=config.model, max_model_len=config.vllm_max_model_length)
