"""Scoring designer completions under the JSON-schema mask they were sampled from.

A params-mode proposal is decoded under its JSON schema (``agents.constrained``: at each
step the logits of every token that would break the schema are set to ``-inf`` and the
rest renormalised), so the policy that generated it is the *masked* policy
``pi_A(a | s) = pi(a | s) / Z_A(s)`` over the allowed set ``A(s)``. Scoring the same
tokens under the unmasked ``pi`` (what TRL's forward does) is a different objective: its
gradient adds ``-A * grad log Z_A(s)`` at every position, and most positions of a
params answer are forced (the parent id, the key names: one allowed token, where the
masked logprob is exactly 0 and carries no signal). Measured on the designer bench: the
unmasked step moved probability off the allowed sets (the mean gap between the sampled,
masked logprobs and the scored ones grew from 1.6 to 9.6 nats/token over 30 steps) while
the valid rate fell from 0.48 to 0.21. Here every scored forward of such a row (the
behaviour logprobs, the loss, the reference) uses the masked, renormalised distribution
at the loss temperature, so the gradient is the masked policy's own.

Contract:

- :class:`TokenConstraints` is a table keyed by a row's content ``(prompt ids,
  completion ids)`` (TRL shuffles and pads rows; the content survives both): ``add``
  registers a completion with the schema it was decoded under, ``discard`` forgets it,
  ``masks`` returns for a padded TRL batch the ``(N, K, V)`` boolean tensor of allowed
  tokens, or None when no row of the batch is registered (TRL's own forward runs).
- The allowed sets are recomputed from the schema and the completion's prefix with the
  same lm-format-enforcer parser that decoded it (deterministic); the sampled token is
  always allowed, so a completion decoded by another grammar engine (vLLM's guided
  decoding) is scored under the parser's sets without an infinite logprob.
- :func:`constrained_logps` is the forward: full-vocabulary logits of the completion
  positions (prompt once per distinct prompt where the caller planned it), divided by
  the temperature, masked, log-softmaxed; entropies of the masked distribution.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any, Callable, Sequence

from .shared_prompt import SharedPlan, prompt_cache

Key = tuple[tuple[int, ...], tuple[int, ...]]


class TokenConstraints:
    """Registered completions and the allowed tokens at each of their positions."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._schemas: dict[Key, str] = {}
        self._allowed: dict[Key, list[list[int]]] = {}
        self._constraints: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._schemas)

    @staticmethod
    def key(prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> Key:
        return tuple(int(t) for t in prompt_ids), tuple(int(t) for t in completion_ids)

    def add(self, prompt_ids: Sequence[int], completion_ids: Sequence[int], schema: dict[str, Any] | None) -> None:
        """Register a completion decoded under ``schema`` (None: unconstrained, ignored)."""
        if schema is not None and completion_ids:
            text = json.dumps(schema, sort_keys=True)
            self._constraint(text)  # a schema the parser refuses fails here, at registration
            self._schemas[self.key(prompt_ids, completion_ids)] = text

    def discard(self, prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> None:
        k = self.key(prompt_ids, completion_ids)
        self._schemas.pop(k, None)
        self._allowed.pop(k, None)

    def allowed(self, prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> list[list[int]] | None:
        """The allowed token ids at each completion position (the sampled one included), or
        None for a completion that was not registered."""
        k = self.key(prompt_ids, completion_ids)
        schema = self._schemas.get(k)
        if schema is None:
            return None
        if k not in self._allowed:
            constraint = self._constraint(schema)
            comp = list(k[1])
            self._allowed[k] = [sorted(set(constraint.allowed(comp[:t])) | {comp[t]}) for t in range(len(comp))]
        return self._allowed[k]

    def _constraint(self, schema: str) -> Any:
        if schema not in self._constraints:
            from ..agents.constrained import JsonSchemaConstraint

            try:
                self._constraints[schema] = JsonSchemaConstraint(self.tokenizer, json.loads(schema))
            except Exception as exc:  # lm-format-enforcer refuses it: no mask to score under
                raise ValueError(f"cannot score a completion under its decoding schema: {exc}") from exc
        return self._constraints[schema]

    def masks(self, input_ids: Any, attention_mask: Any, logits_to_keep: int, width: int) -> Any:
        """``(N, K, width)`` bool (True: allowed) for a batch laid out as TRL lays it out
        (prompt left-padded, completion right-padded, the last ``K`` columns scored), or
        None when no row is registered. Unregistered rows and padding allow everything."""
        import torch

        if not self._schemas:
            return None
        keep = int(logits_to_keep)
        ids, mask = input_ids.tolist(), attention_mask.tolist()
        rows = []
        for r in range(len(ids)):
            prompt = [t for t, m in zip(ids[r][:-keep], mask[r][:-keep]) if m]
            completion = [t for t, m in zip(ids[r][-keep:], mask[r][-keep:]) if m]
            rows.append(self.allowed(prompt, completion))
        if all(a is None for a in rows):
            return None
        out = torch.ones((len(ids), keep, int(width)), dtype=torch.bool, device=input_ids.device)
        for r, lists in enumerate(rows):
            for t, allowed in enumerate(lists or []):
                out[r, t] = False
                out[r, t, torch.tensor([a for a in allowed if a < width], dtype=torch.long,
                                       device=input_ids.device)] = True
        return out


def masked_token_logps(logits: Any, labels: Any, allowed: Any, compute_entropy: bool = False) -> tuple[Any, Any]:
    """Logprobs of ``labels`` (N, K) under ``logits`` (N, K, V, temperature-scaled) with
    the tokens outside ``allowed`` (N, K, V bool) removed and the rest renormalised; and
    the masked distribution's entropies (or None)."""
    import torch

    logp = torch.log_softmax(logits.float().masked_fill(~allowed, float("-inf")), dim=-1)
    picked = logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    entropy = None
    if compute_entropy:
        entropy = -torch.where(allowed, logp.exp() * logp, torch.zeros_like(logp)).sum(-1)
    return picked, entropy


def constrained_logps(model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, allowed: Any, *,
                      temperature: float, autocast: Callable[[], AbstractContextManager],
                      split: SharedPlan | None = None, compute_entropy: bool = False) -> tuple[Any, Any]:
    """``(logps, entropies or None)``, each ``(N, logits_to_keep)``, of the completion
    columns under the masked distribution (module docstring). With ``split``
    (:func:`~.shared_prompt.plan` of this batch) each distinct prompt runs once."""
    keep = int(logits_to_keep)
    with autocast():
        if split is not None:
            cache, tail = prompt_cache(model, input_ids, attention_mask, split, autocast=autocast)
            logits = model(input_ids=tail, attention_mask=attention_mask, past_key_values=cache).logits
        else:
            logits = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=keep + 1).logits
    logits = logits[:, -keep - 1:-1].float() / max(float(temperature), 1e-6)
    return masked_token_logps(logits, input_ids[:, -keep:], allowed, compute_entropy)
