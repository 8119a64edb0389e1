"""The ``transformers`` backend: batched sampling on CPU or GPU with exact logprobs.

Generation is a plain decode loop over a left-padded batch (explicit ``position_ids``,
a KV cache, finished rows dropped from the batch), so every sampled token's logprob is
known exactly: ``log_softmax(logits / temperature)`` at the sampled token (raw
``log_softmax(logits)`` when ``temperature == 0``, i.e. greedy). No top-k/top-p is
applied, so the recorded logprobs are those of the distribution actually sampled from.

Options: ``device`` (default cuda if available), ``dtype`` (``float32``), ``batch_size``
(rows per forward, default 64), ``max_pad_ratio`` (split batches whose prompt lengths
differ too much; "auto" = 1.3 on CPU, off on GPU), ``prefix_sliding=(P, W)`` to decode with the Prefix
Sliding cache (``spade_envs.agents.prefix_sliding.PrefixSlidingCache``; ``P=None`` makes
the prompt the prefix), ``model=``/``tokenizer=`` to wrap objects already loaded, ``packed_linear``
(True: while generating on CPU, linear layers run on oneDNN with packed weights,
:mod:`.packed_linear`; about twice as fast as MKL for the 2-32 rows of a decode step).
``chat``/``generate`` take ``json_schema=`` (one schema, or a list aligned with the
prompts, None for a free row) to sample only JSON valid under it (:mod:`.constrained`;
``supports_json_schema`` says a backend does).

Multi-turn reuse: ``generate(prompts, session=backend.new_session(), keys=[...])`` keeps
one batched KV cache across turns (:mod:`.kv_session`): each turn only the tokens a row's
prompt adds are encoded, and the prefix every row shares is encoded once. Constrained
(``json_schema``) calls do not use a session. With ``prefix_sliding=(P, W)`` the session
applies the window across turns (P = the first prompt when None), so a row's cache stays
under ``P + W`` plus a slack over the whole episode (:mod:`.session_window`; models whose
attention takes no 4-D mask re-encode each turn under a fresh Prefix Sliding cache).

Speed: the KV cache is a :class:`~.growing_cache.GrowingCache` (in-place appends, no
per-step copy of the whole cache) in sessions, with or without Prefix Sliding, and in
session-less calls without it; while generating, a model on ``sdpa`` attention runs
:mod:`.gqa_attention` (no per-head copy of K/V) and its linear layers run on packed
oneDNN weights (:mod:`.packed_linear`), with or without a session.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from ..errors import AgentError
from .api import Backend, Generation
from .chat import prompt_ids
from .growing_cache import GrowingCache, growing_cache_for
from .kv_session import FOUR_D_ATTENTION, DecodeSession, common_prefix_len, generate_in_session
from .sampling import sample

#: shortest common prompt prefix worth encoding once for a batch (tokens)
SHARED_PREFIX_MIN = 16


def distinct_rows(prompts: list[list[int]]) -> tuple[list[int], list[int] | None]:
    """``(first, inverse)``: the first row of each distinct prompt and each row's index into
    ``first``; ``inverse`` is None when every prompt is distinct (nothing to copy)."""
    seen: dict[tuple[int, ...], int] = {}
    first: list[int] = []
    inverse = []
    for row, p in enumerate(prompts):
        key = tuple(p)
        if key not in seen:
            seen[key] = len(first)
            first.append(row)
        inverse.append(seen[key])
    return first, (inverse if len(first) < len(prompts) else None)


class TransformersBackend(Backend):
    """A Hugging Face causal LM behind the :class:`Backend` interface (token level)."""

    token_level = True
    supports_json_schema = True
    masked_logprobs = True  # the schema mask is applied before sampling and its logprob (sampling.py)

    def __init__(
        self,
        model_name: str = "default",
        *,
        device: str | None = None,
        dtype: str = "float32",
        batch_size: int = 64,
        prefix_sliding: tuple[int | None, int] | None = None,
        max_pad_ratio: float | None | str = "auto",
        model: Any = None,
        tokenizer: Any = None,
        packed_linear: bool = True,
    ) -> None:
        import torch

        if model is None or tokenizer is None:
            from .models import load_model

            model, tokenizer = load_model(model_name, device=device, dtype=dtype)
        self.model = model
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self.name = f"transformers:{model_name}"
        self.batch_size = max(1, int(batch_size))
        if max_pad_ratio == "auto":
            max_pad_ratio = 1.3 if self.device.type == "cpu" else None
        self.max_pad_ratio = max_pad_ratio
        self.prefix_sliding = tuple(prefix_sliding) if prefix_sliding is not None else None
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
        self.stop_ids = sorted(self._stop_ids())
        self._stop = torch.tensor(self.stop_ids, device=self.device, dtype=torch.long)
        self.max_positions = int(getattr(model.config, "max_position_embeddings", 0) or 0) or None
        self.packed_linear = bool(packed_linear)

    def _stop_ids(self) -> set[int]:
        ids: set[int] = set()
        eos = getattr(self.model.generation_config, "eos_token_id", None) or self.model.config.eos_token_id
        for value in eos if isinstance(eos, (list, tuple)) else [eos]:
            if value is not None:
                ids.add(int(value))
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        vocab = self.tokenizer.get_vocab()
        for token in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>"):
            if token in vocab:
                ids.add(int(vocab[token]))
        return ids

    # -- Backend ------------------------------------------------------------------
    def chat(
        self,
        conversations: list[list[dict]],
        *,
        tools: list[list[dict]] | None = None,
        max_new_tokens: int = 256,
        temperature: float = 0.6,
        seed: int | None = None,
        json_schema: dict[str, Any] | list[dict[str, Any] | None] | None = None,
    ) -> list[Generation]:
        prompts = []
        for i, messages in enumerate(conversations):
            prompts.append(prompt_ids(self.tokenizer, messages, tools[i] if tools else None))
        return self.generate(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed,
                             json_schema=json_schema)

    def new_session(self) -> DecodeSession:
        """State for reusing the KV cache across the turns of a batch of episodes (with
        this backend's Prefix Sliding window, which then bounds the cache over the whole
        episode: :mod:`.session_window`)."""
        if self.prefix_sliding is None:
            return DecodeSession()
        prefix, window = self.prefix_sliding
        return DecodeSession(window=int(window), prefix=None if prefix is None else int(prefix))

    def _session_fits(self, session: DecodeSession) -> bool:
        """Whether ``session`` can be used: made for this backend's window, and, with a
        window, a model whose cache and attention take the session's 4-D masks (the window
        lives in them)."""
        if self.prefix_sliding is None:
            return session.window is None
        prefix, window = self.prefix_sliding
        if (session.window, session.prefix) != (window, prefix):
            return False
        impl = getattr(self.model.config, "_attn_implementation", None)
        return impl in FOUR_D_ATTENTION and growing_cache_for(self.model.config) is not None

    def generate(
        self,
        prompts: list[list[int]],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.6,
        seed: int | None = None,
        json_schema: dict[str, Any] | list[dict[str, Any] | None] | None = None,
        session: DecodeSession | None = None,
        keys: list[Any] | None = None,
    ) -> list[Generation]:
        import torch

        constraints: list[Any] = [None] * len(prompts)
        if json_schema is not None:
            from .constrained import constraints_for

            constraints = constraints_for(self.tokenizer, json_schema, len(prompts), self.stop_ids)
        generator = None
        if seed is not None and temperature > 0:
            generator = torch.Generator(device=self.device).manual_seed(int(seed))
        from .gqa_attention import gqa_attention
        from .packed_linear import packed_linears

        with gqa_attention(self.model), (packed_linears(self.model) if self.packed_linear else nullcontext()):
            if (session is not None and keys is not None and len(keys) == len(prompts) and prompts
                    and json_schema is None and len(prompts) <= self.batch_size and self._session_fits(session)):
                if any(len(p) == 0 for p in prompts):
                    raise AgentError("cannot generate from an empty prompt")
                return self._generate_session(session, list(keys), prompts, max_new_tokens, temperature, generator)
            # group similar lengths together to waste less padding, keep the caller's order
            order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
            out: list[Generation | None] = [None] * len(prompts)
            for chunk in self._chunks(order, [len(p) for p in prompts]):
                gens = self._generate_batch([prompts[i] for i in chunk], max_new_tokens, temperature, generator,
                                            [constraints[i] for i in chunk])
                for i, gen in zip(chunk, gens):
                    out[i] = gen
        return [g for g in out if g is not None]

    def _chunks(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """Batches of at most ``batch_size`` prompts (sorted by length). With
        ``max_pad_ratio`` set (default on CPU, where compute is the bound), a batch also
        ends where the longest prompt would exceed ``ratio * shortest + 32`` tokens, so
        the prefill does not spend most of its work on padding."""
        chunks: list[list[int]] = []
        for i in order:
            if chunks and len(chunks[-1]) < self.batch_size and (
                self.max_pad_ratio is None or lengths[i] <= self.max_pad_ratio * lengths[chunks[-1][0]] + 32
            ):
                chunks[-1].append(i)
            else:
                chunks.append([i])
        return chunks

    # -- internals ------------------------------------------------------------------
    def _make_cache(self):
        from transformers import DynamicCache

        if self.prefix_sliding is None:
            return growing_cache_for(self.model.config) or DynamicCache(config=self.model.config)
        from .prefix_sliding import PrefixSlidingCache  # the Prefix Sliding module

        prefix_len, window = self.prefix_sliding
        return PrefixSlidingCache(window, prefix_len, config=self.model.config)

    def _generate_batch(self, prompts: list[list[int]], max_new_tokens: int, temperature: float, generator,
                        constraints: list[Any] | None = None) -> list[Generation]:
        import torch

        if any(len(p) == 0 for p in prompts):
            raise AgentError("cannot generate from an empty prompt")
        n = len(prompts)
        full_width = max(len(p) for p in prompts)
        if self.max_positions is not None:
            max_new_tokens = max(0, min(max_new_tokens, self.max_positions - full_width))
        # the prefix every prompt shares (system prompt, rules, tool specs) is encoded once
        # and copied to every row; the tails are left-padded after it: [shared | pad.. tail]
        shared = 0
        if n > 1 and self.prefix_sliding is None:
            shared = min(common_prefix_len(prompts), min(len(p) for p in prompts) - 1)
            shared = shared if shared >= SHARED_PREFIX_MIN else 0
        tails = [p[shared:] for p in prompts]
        width = max(len(t) for t in tails)
        ids = torch.full((n, width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((n, shared + width), dtype=torch.long)
        attn[:, :shared] = 1
        for row, t in enumerate(tails):
            ids[row, width - len(t) :] = torch.tensor(t, dtype=torch.long)
            attn[row, shared + width - len(t) :] = 1
        ids, attn = ids.to(self.device), attn.to(self.device)
        positions = ((attn.cumsum(-1) - 1).clamp(min=0))[:, shared:]
        tokens: list[list[int]] = [[] for _ in range(n)]
        logps: list[list[float]] = [[] for _ in range(n)]
        finish = ["length"] * n
        if max_new_tokens == 0:
            return self._pack(prompts, tokens, logps, finish)
        live = torch.arange(n, device=self.device)  # original row of each batch row
        cache = self._make_cache()
        if isinstance(cache, GrowingCache):  # room for the whole generation up front
            cache.reserve(shared + width + max_new_tokens)
        # rows with the same whole prompt (a group's samples) are prefilled once, then copied
        first, inverse = distinct_rows(prompts) if self.prefix_sliding is None else (list(range(n)), None)
        with torch.inference_mode():
            if shared:
                head = torch.tensor([prompts[0][:shared]], dtype=torch.long, device=self.device)
                self.model(input_ids=head, position_ids=torch.arange(shared, device=self.device)[None],
                           past_key_values=cache, use_cache=True, logits_to_keep=1)
                cache.batch_repeat_interleave(len(first))
            pick = torch.tensor(first, device=self.device)
            logits = self.model(
                input_ids=ids[pick], attention_mask=attn[pick], position_ids=positions[pick],
                past_key_values=cache, use_cache=True, logits_to_keep=1,
            ).logits[:, -1, :].float()
            if inverse is not None:
                back = torch.tensor(inverse, device=self.device)
                cache.batch_select_indices(back)
                logits = logits[back]
            last_pos = positions[:, -1:]
            for step in range(max_new_tokens):
                if constraints is not None and any(c is not None for c in constraints):
                    for r, row in enumerate(live.tolist()):  # sample from the schema-valid tokens only
                        if constraints[row] is not None:
                            constraints[row].mask_row(tokens[row], logits[r])
                nxt, chosen = sample(logits, temperature, generator)
                stopped = torch.isin(nxt, self._stop)
                for r, (row, tok, lp, st) in enumerate(zip(live.tolist(), nxt.tolist(), chosen.tolist(), stopped.tolist())):
                    tokens[row].append(tok)
                    logps[row].append(lp)
                    if st:
                        finish[row] = "stop"
                if step == max_new_tokens - 1:
                    break
                keep = (~stopped).nonzero().squeeze(-1)
                if keep.numel() == 0:
                    break
                if keep.numel() < live.numel():
                    live, nxt, attn, last_pos = live[keep], nxt[keep], attn[keep], last_pos[keep]
                    cache.batch_select_indices(keep)
                attn = torch.cat([attn, attn.new_ones((attn.shape[0], 1))], dim=-1)
                last_pos = last_pos + 1
                logits = self.model(
                    input_ids=nxt[:, None], attention_mask=attn, position_ids=last_pos,
                    past_key_values=cache, use_cache=True,
                ).logits[:, -1, :].float()
        return self._pack(prompts, tokens, logps, finish)

    def _generate_session(self, session: DecodeSession, keys: list[Any], prompts: list[list[int]],
                          max_new_tokens: int, temperature: float, generator) -> list[Generation]:
        tokens, logps, finish = generate_in_session(self, session, keys, prompts, max_new_tokens, temperature,
                                                    generator)
        return self._pack(prompts, tokens, logps, finish)

    def _pack(self, prompts, tokens, logps, finish) -> list[Generation]:
        out = []
        for p, toks, lps, fin in zip(prompts, tokens, logps, finish):
            body = toks[:-1] if fin == "stop" else toks  # the text leaves out the end-of-turn token
            text = self.tokenizer.decode(body, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            out.append(Generation(text=text, token_ids=toks, logprobs=lps, prompt_token_ids=list(p), finish_reason=fin))
        return out
