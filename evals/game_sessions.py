"""Game moves through a token-level backend, each seat's KV cache kept across its moves.

A match is many short moves in one conversation per model seat, so re-encoding the
whole conversation before every move makes a long game quadratic. With a backend that
is token level and offers ``new_session()`` (``transformers``), :class:`SeatSessions`
keeps each seat's conversation as token ids: the first move's prompt is the rendered
conversation; after a move, the ids are extended with the tokens the model generated
and the text the chat template writes for the new view plus the generation prompt
(:func:`~spade_envs.agents.chat.continuation_ids`, as the rollout loop does), so each move encodes only what is
new and the model is conditioned on exactly what it generated.

Asks are grouped into cohorts, one backend call and one session per cohort: the seat,
and the round in which that (match, seat) first moved. A session can only continue the
rows it was built with (a new row would make it encode every row again), so a seat that
joins later, e.g. the second seat of a self-play match, starts a cohort of its own
instead of rebuilding one; matches that end simply leave theirs. Each group of a round
samples with its own seed (``seed`` plus a per-group offset), so two seats of a
simultaneous game do not draw the same stream.
"""

from __future__ import annotations

from typing import Any

from spade_envs.agents import chat

__all__ = ["SeatSessions", "supports_sessions"]

GROUP_SEED_STRIDE = 1_000_003  # seeds of two groups in one round never coincide


def supports_sessions(backend: Any) -> bool:
    """Whether ``backend`` can play game moves through :class:`SeatSessions`."""
    return bool(getattr(backend, "token_level", False)) and hasattr(backend, "new_session") \
        and getattr(backend, "tokenizer", None) is not None


class SeatSessions:
    """Token ids per (match, seat) and a KV session per cohort, for one
    :meth:`GameRunner.play` call (see the module docstring)."""

    def __init__(self, backend: Any) -> None:
        self.backend, self.tokenizer = backend, backend.tokenizer
        self.sessions: dict[tuple[int, int], Any] = {}  # (seat, first round) -> session
        self.cohort: dict[tuple[int, int], tuple[int, int]] = {}  # (match, seat) -> its session's key
        self.ids: dict[tuple[int, int], list[int]] = {}  # (match, seat) -> the conversation's token ids
        self.last: dict[tuple[int, int], list[int]] = {}  # (match, seat) -> the tokens of its last move

    def _prompt(self, key: tuple[int, int], conversation: list[dict]) -> list[int]:
        if key not in self.ids:
            return chat.prompt_ids(self.tokenizer, conversation)
        # the conversation now ends with the last move (assistant) and the new view (user)
        return self.ids[key] + chat.continuation_ids(self.tokenizer, conversation, None, self.last[key],
                                                     conversation[-2]["content"])

    def generate(self, asks: list[tuple[int, int]], conversations: list[list[dict]], round_no: int, *,
                 max_new_tokens: int, temperature: float, seed: int | None) -> list[Any]:
        """One generation per ask (``(match key, seat)``, conversation ending with the seat's
        new view) of round ``round_no``, in the order asked."""
        out: list[Any] = [None] * len(asks)
        groups: dict[tuple[int, int], list[int]] = {}
        for i, key in enumerate(asks):
            groups.setdefault(self.cohort.setdefault(key, (key[1], round_no)), []).append(i)
        for g, (cohort, idx) in enumerate(sorted(groups.items())):
            keys = [asks[i] for i in idx]
            prompts = [self._prompt(k, conversations[i]) for k, i in zip(keys, idx)]
            if cohort not in self.sessions:
                self.sessions[cohort] = self.backend.new_session()
            session = self.sessions[cohort]
            gens = self.backend.generate(prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                                         seed=None if seed is None else seed + GROUP_SEED_STRIDE * g,
                                         session=session, keys=keys)
            for i, key, prompt, gen in zip(idx, keys, prompts, gens):
                self.last[key] = list(gen.token_ids)
                self.ids[key] = prompt + self.last[key]
                out[i] = gen
        return out
