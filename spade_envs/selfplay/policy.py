"""Generation from the policy being trained, for both roles.

:func:`policy_backend` returns an ``agents`` :class:`~spade_envs.agents.api.Backend` that
always samples from the CURRENT weights of the GRPO trainer's model:

- no vLLM: a :class:`~spade_envs.agents.backend_transformers.TransformersBackend` wrapping
  the training model object itself (weights shared; eval mode while generating);
- ``vllm_mode="colocate"``: the ``vllm.LLM`` that TRL created inside the trainer
  (``trl_bridge.vllm_engine``), after pushing the weights when the optimizer stepped
  since the last push (``trl_bridge.push_weights``);
- ``vllm_mode="server"``: TRL's ``VLLMClient`` (``trl_bridge.vllm_client``, a ``trl
  vllm-serve`` server), token ids in, token ids and sampling logprobs out, same weight sync.

Both vLLM backends take ``json_schema=`` (guided JSON decoding), as the transformers one
does, so params-mode proposals are constrained on every path. TRL's private fields are
touched only in :mod:`.trl_bridge`.
"""

from __future__ import annotations

from typing import Any

from ..agents.api import Backend, Generation
from ..agents.backend_vllm import completion_tokens, guided_json, request_seeds, schemas_for


class _SyncMixin:
    trainer: Any

    def _sync(self) -> None:
        """Weights are pushed at fixed points (``trl_bridge.sync_generation_weights``); a
        single process may still catch up lazily, several must never (a collective)."""
        from .trl_bridge import mark_synced, push_weights, weights_stale

        tr = self.trainer
        if weights_stale(tr):
            if getattr(getattr(tr, "accelerator", None), "num_processes", 1) > 1:
                raise RuntimeError("vLLM weights out of date on one rank: push them on every rank "
                                   "(trl_bridge.sync_generation_weights) after each optimizer step")
            push_weights(tr)
            mark_synced(tr)


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
        self.masked_logprobs = self._inner.masked_logprobs

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


def _stop_ids(tokenizer: Any) -> list[int]:
    vocab = tokenizer.get_vocab()
    stops = {tokenizer.eos_token_id} | {vocab[t] for t in ("<|im_end|>", "<|eot_id|>", "<|end|>") if t in vocab}
    return sorted(int(s) for s in stops if s is not None)


def _pack(tokenizer: Any, stop_ids: list[int], prompt: list[int], ids: list[int], lps: list[float]) -> Generation:
    stopped = bool(ids) and ids[-1] in stop_ids
    body = ids[:-1] if stopped else ids
    return Generation(text=tokenizer.decode(body, skip_special_tokens=False), token_ids=ids,
                      logprobs=lps if len(lps) == len(ids) else [], prompt_token_ids=list(prompt),
                      finish_reason="stop" if stopped else "length")


class TrainerVLLMColocateBackend(_SyncMixin, Backend):
    """The colocated ``vllm.LLM`` of TRL's trainer behind the Backend interface; one
    ``SamplingParams`` per request, each with its own seed (:func:`request_seeds`) and, for
    params-mode proposals, vLLM's guided JSON decoding under the request's schema."""

    token_level = True
    supports_json_schema = True

    def __init__(self, trainer: Any, *, name: str, max_model_len: int | None = None, llm: Any = None,
                 sampling_params: Any = None) -> None:
        from .trl_bridge import guided_json_without_blanks, vllm_engine

        self.trainer = trainer
        self.llm = llm if llm is not None else vllm_engine(trainer)
        guided_json_without_blanks(self.llm)  # params-mode proposals: no free whitespace (as VLLMBackend)
        if sampling_params is None:
            import vllm

            sampling_params = vllm.SamplingParams
        self._params = sampling_params
        self.tokenizer = trainer.processing_class
        self.name = f"vllm:{name}"
        self.max_positions = int(max_model_len or 4096)
        self.stop_ids = _stop_ids(self.tokenizer)

    def generate(self, prompts: list[list[int]], *, max_new_tokens: int = 256, temperature: float = 0.6,
                 seed: int | None = None, json_schema: Any = None) -> list[Generation]:
        self._sync()
        rank = getattr(getattr(self.trainer, "accelerator", None), "process_index", 0)
        schemas = schemas_for(json_schema, len(prompts))
        params = [self._params(n=1, temperature=max(0.0, float(temperature)), top_p=1.0, max_tokens=int(max_new_tokens),
                               seed=s, logprobs=0, stop_token_ids=self.stop_ids, skip_special_tokens=False,
                               **guided_json(schema))
                  for s, schema in zip(request_seeds(seed, len(prompts), rank), schemas)]
        outputs = self.llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
        gens = []
        for prompt, out in zip(prompts, outputs):
            ids, lps = completion_tokens(out)
            gens.append(_pack(self.tokenizer, self.stop_ids, prompt, ids, lps))
        return gens

    def chat(self, conversations: list[list[dict]], *, tools: list[list[dict]] | None = None, **kw: Any) -> list[Generation]:
        from ..agents.chat import encode, render

        return self.generate([encode(self.tokenizer, render(self.tokenizer, c, tools[i] if tools else None))
                              for i, c in enumerate(conversations)], **kw)


class TrainerVLLMServerBackend(_SyncMixin, Backend):
    """``trl vllm-serve`` through TRL's ``VLLMClient`` (weights pushed by the trainer).

    The server applies ONE set of sampling parameters to a request, so identical prompts
    (the rows of a group at their first turn) are sent once with ``n`` = their count:
    vLLM samples the ``n`` children independently (child seeds differ).

    Every rank has its own client (the main process TRL's, which also owns the weight
    communicator; the others a plain HTTP ``VLLMClient``): generation is never a
    collective, so ranks whose episodes need different numbers of turns cannot deadlock.
    Weights are pushed at fixed points on every rank (``trl_bridge.sync_generation_weights``
    after each optimizer step, followed by a barrier), so no rank samples from stale weights.
    Params-mode proposals are decoded under their JSON schema by the server's structured
    outputs (``generation_kwargs={"structured_outputs": {"json": schema}}``, one call per
    distinct schema).
    """

    token_level = True
    supports_json_schema = True

    def __init__(self, trainer: Any, *, name: str, max_model_len: int | None = None, client: Any = None) -> None:
        from .trl_bridge import vllm_client

        self.trainer = trainer
        self.client = client if client is not None else vllm_client(trainer)
        if self.client is None:  # not the main process: a client of our own, HTTP only
            from trl.generation.vllm_client import VLLMClient

            args = trainer.args
            self.client = VLLMClient(base_url=args.vllm_server_base_url or
                                     f"http://{args.vllm_server_host}:{args.vllm_server_port}",
                                     connection_timeout=args.vllm_server_timeout)
        self.tokenizer = trainer.processing_class
        self.name = f"vllm-server:{name}"
        self.max_positions = int(max_model_len or 4096)
        self.stop_ids = _stop_ids(self.tokenizer)

    def _serve(self, prompts: list[list[int]], max_new_tokens: int, temperature: float,
               seed: int | None, schemas: list[Any] | None = None) -> list[tuple[list[int], list[float]]]:
        import json

        schemas = schemas or [None] * len(prompts)
        keyed: dict[str, list[int]] = {}
        for i, schema in enumerate(schemas):
            keyed.setdefault(json.dumps(schema, sort_keys=True), []).append(i)
        out: list[Any] = [None] * len(prompts)
        for g, rows in enumerate(keyed.values()):
            sub = self._serve_one([prompts[i] for i in rows], max_new_tokens, temperature,
                                  None if seed is None else (int(seed) + 7919 * g) % 2**31, schemas[rows[0]])
            for i, res in zip(rows, sub):
                out[i] = res
        return out

    def _serve_one(self, prompts: list[list[int]], max_new_tokens: int, temperature: float,
                   seed: int | None, schema: Any) -> list[tuple[list[int], list[float]]]:
        order: dict[tuple[int, ...], list[int]] = {}
        for i, p in enumerate(prompts):
            order.setdefault(tuple(p), []).append(i)
        by_n: dict[int, list[tuple[int, ...]]] = {}
        for key, rows in order.items():
            by_n.setdefault(len(rows), []).append(key)
        out: list[Any] = [None] * len(prompts)
        for call, (n, keys) in enumerate(sorted(by_n.items())):
            extra: dict[str, Any] = {"stop_token_ids": self.stop_ids, "skip_special_tokens": False}
            if schema is not None:
                extra["structured_outputs"] = {"json": schema, "disable_any_whitespace": True}
            if seed is not None:
                extra["seed"] = (int(seed) + call) % 2**31
            res = self.client.generate(prompts=[list(k) for k in keys], n=n, temperature=max(temperature, 1e-5),
                                       max_tokens=int(max_new_tokens), logprobs=0, generation_kwargs=extra)
            for j, key in enumerate(keys):
                for c, row in enumerate(order[key]):
                    ids = [int(t) for t in res["completion_ids"][j * n + c]]
                    lps = [float(x[0]) if isinstance(x, list) and x and x[0] is not None else 0.0
                           for x in res["logprobs"][j * n + c]]
                    out[row] = (ids, lps)
        return out

    def generate(self, prompts: list[list[int]], *, max_new_tokens: int = 256, temperature: float = 0.6,
                 seed: int | None = None, json_schema: Any = None) -> list[Generation]:
        self._sync()
        prompts = [list(p) for p in prompts]
        schemas = schemas_for(json_schema, len(prompts))
        if not prompts:
            return []
        rank = getattr(getattr(self.trainer, "accelerator", None), "process_index", 0)
        if seed is not None:  # ranks must not repeat each other's samples
            seed = (int(seed) + rank * 1_000_003) % 2**31
        rows = self._serve(prompts, max_new_tokens, temperature, seed, schemas)
        return [_pack(self.tokenizer, self.stop_ids, p, ids, lps) for p, (ids, lps) in zip(prompts, rows)]

    def chat(self, conversations: list[list[dict]], *, tools: list[list[dict]] | None = None, **kw: Any) -> list[Generation]:
        from ..agents.chat import encode, render

        return self.generate([encode(self.tokenizer, render(self.tokenizer, c, tools[i] if tools else None))
                              for i, c in enumerate(conversations)], **kw)


def policy_backend(trainer: Any, config: Any) -> Backend:
    """The backend sampling from the trainer's current policy (see the module docstring)."""
    ps = tuple(config.prefix_sliding) if config.prefix_sliding else None
    if not config.use_vllm:
        return TrainerTransformersBackend(trainer, name=config.model, prefix_sliding=ps)
    if config.vllm_mode == "server":
        return TrainerVLLMServerBackend(trainer, name=config.model, max_model_len=config.max_context)
    return TrainerVLLMColocateBackend(trainer, name=config.model, max_model_len=config.max_context)
