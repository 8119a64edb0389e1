"""JSON-Schema-constrained sampling for the token-level ``transformers`` backend.

:class:`JsonSchemaConstraint` masks, at every decode step, the logits of the tokens that
could not continue a JSON document valid under a schema, so even a 135M model emits
parseable JSON of the right shape. The character-level JSON-Schema parser and the token
prefix tree are lm-format-enforcer's (``lmformatenforcer.TokenEnforcer``,
``JsonSchemaParser``); only its ``transformers`` integration module is not used, because it
imports ``transformers.tokenization_utils``, which transformers 5 removed — the small
tokenizer-vocabulary table it builds is built here instead (:func:`tokenizer_data`).

What lm-format-enforcer enforces: JSON syntax, object keys, ``required``,
``additionalProperties: false``, types, ``enum``/``const`` and ``anyOf``; it does NOT
enforce numeric bounds (``minimum``/``maximum``), so callers that need a bounded integer
should give it as an ``enum`` (see ``designer.params_mode.decoding_schema``) and validate
the result anyway. Sampling logprobs recorded under a constraint are those of the masked
(renormalised) distribution actually sampled from.

vLLM has its own guided decoding (structured outputs); ``backend_vllm`` uses that.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

_CACHE: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _eos_ids(tokenizer: Any, stop_ids: list[int] | None) -> list[int]:
    ids = set(int(i) for i in (stop_ids or []))
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return sorted(ids)


def tokenizer_data(tokenizer: Any, stop_ids: list[int] | None = None) -> Any:
    """lm-format-enforcer's per-tokenizer table (built once per tokenizer, ~seconds):
    every regular token's decoded text, with its leading space when it starts a word."""
    from lmformatenforcer import TokenEnforcerTokenizerData

    with _LOCK:
        hit = _CACHE.get(tokenizer)
        if hit is not None:
            return hit
        special = set(int(i) for i in tokenizer.all_special_ids)
        anchor = tokenizer.encode("0", add_special_tokens=False)[-1]
        vocab_size = len(tokenizer)
        regular = []
        for idx in range(vocab_size):
            if idx in special:
                continue
            # decode after a plain token so a word-initial space is not stripped
            with_space = tokenizer.decode([anchor, idx])[1:]
            alone = tokenizer.decode([idx])
            regular.append((idx, with_space, len(with_space) > len(alone)))

        def decode(ids: list[int]) -> str:
            return tokenizer.decode(ids).rstrip("\ufffd")

        data = TokenEnforcerTokenizerData(regular, decode, _eos_ids(tokenizer, stop_ids), False, vocab_size)
        _CACHE[tokenizer] = data
        return data


class JsonSchemaConstraint:
    """Allowed next tokens for rows of generated ids, under one JSON schema.

    ``mask(rows_tokens, logits)`` sets to ``-inf`` every logit that would break the
    schema, in place, for each row given its generated tokens so far (prompt excluded).
    One instance serves a whole batch (states are keyed by the token sequence)."""

    def __init__(self, tokenizer: Any, schema: dict[str, Any], stop_ids: list[int] | None = None, *,
                 compact: bool = True) -> None:
        from lmformatenforcer import JsonSchemaParser, TokenEnforcer

        self.schema = schema
        parser = JsonSchemaParser(schema)
        self._enforcer = TokenEnforcer(tokenizer_data(tokenizer, stop_ids), parser)
        if compact:
            # TokenEnforcer installs a fresh config on the parser (shared by every state
            # derived from it): no whitespace between tokens, keys in 'required' order, so
            # a small model spends its tokens on values rather than on layout
            parser.config.max_consecutive_whitespaces = 0
            parser.config.force_json_field_order = True

    def allowed(self, generated: list[int]) -> list[int]:
        return list(self._enforcer.get_allowed_tokens(list(generated)).allowed_tokens)

    def mask_row(self, generated: list[int], logits: Any) -> Any:
        """Set, in place, the logits (1-D, one row) of every token that breaks the schema
        after ``generated`` to ``-inf``."""
        import torch

        width = logits.shape[-1]
        ids = [i for i in self.allowed(generated) if i < width]
        keep = torch.full((width,), float("-inf"), dtype=logits.dtype, device=logits.device)
        if ids:
            keep[torch.tensor(ids, dtype=torch.long, device=logits.device)] = 0.0
        logits += keep
        return logits

    def mask(self, rows_tokens: list[list[int]], logits: Any) -> Any:
        """:meth:`mask_row` for each row of a 2-D ``logits``."""
        for r, toks in enumerate(rows_tokens):
            self.mask_row(toks, logits[r])
        return logits


def constraints_for(tokenizer: Any, json_schema: Any, n: int, stop_ids: list[int] | None = None) -> list[Any]:
    """One :class:`JsonSchemaConstraint` (or None) per prompt: ``json_schema`` is one
    schema for all, or a list aligned with the prompts. Rows with equal schemas share
    one constraint (and its cache of parser states)."""
    import json

    schemas = list(json_schema) if isinstance(json_schema, (list, tuple)) else [json_schema] * n
    if len(schemas) != n:
        raise ValueError(f"json_schema: {len(schemas)} schemas for {n} prompts")
    shared: dict[str, JsonSchemaConstraint] = {}
    out: list[Any] = []
    for schema in schemas:
        if schema is None:
            out.append(None)
            continue
        key = json.dumps(schema, sort_keys=True)
        if key not in shared:
            shared[key] = JsonSchemaConstraint(tokenizer, schema, stop_ids)
        out.append(shared[key])
    return out
