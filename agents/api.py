"""The agents API (DESIGN.md section 8): data classes and the two abstract interfaces.

- :class:`Backend` turns chat conversations (or, for token-level backends, prompt token
  ids) into :class:`Generation` objects, batched.
- :class:`Agent` plays :class:`PlayTask` objects and returns :class:`Episode` objects,
  which carry everything a trainer needs: the whole conversation as token ids, the
  sampling logprob of every model token and a mask of model vs. environment tokens.

This module imports nothing heavy; torch and transformers are imported by the backends.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import AgentError, EnvFailure

__all__ = ["Agent", "AgentError", "Backend", "Episode", "Generation", "PlayTask"]


@dataclass
class Generation:
    """One completion. ``logprobs[i]`` is the sampling logprob of ``token_ids[i]``
    (empty when the backend cannot report them)."""

    text: str
    token_ids: list[int]
    logprobs: list[float]
    prompt_token_ids: list[int]
    finish_reason: str = "stop"  # "stop" (end-of-turn token or stop string) or "length"


@dataclass
class PlayTask:
    """One episode to play: an environment id (or an untrusted ``source``) and a seed;
    ``kwargs`` are the environment's parameters (validated against its ``PARAMETERS``)."""

    env_id: str
    seed: int
    hint: bool = False
    max_turns: int = 10
    source: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Episode:
    """A played episode. ``token_ids``, ``logprobs`` and ``mask`` are aligned; ``mask``
    is 1 on model-generated tokens (whose ``logprobs`` are the sampling logprobs) and 0
    on prompt/environment tokens (whose ``logprobs`` are 0.0)."""

    task: PlayTask
    messages: list[dict]
    actions: list[str]
    rewards: list[float]
    episode_return: float
    won: bool
    turns: int
    terminated: bool
    truncated: bool
    token_ids: list[int]
    logprobs: list[float]
    mask: list[int]
    #: why the episode failed (an :class:`~spade_envs.errors.EnvFailure`: its message, and a
    #: ``kind`` to branch on); None when the environment never failed
    error: EnvFailure | None = None
    final_state: Any = None
    timings: dict[str, float] = field(default_factory=dict)


class Backend(ABC):
    """Batched text generation. Subclasses set ``name`` and ``tokenizer`` (None when the
    backend has no local tokenizer, e.g. an HTTP server)."""

    name: str = "backend"
    tokenizer: Any | None = None
    #: True when :meth:`generate` accepts prompt token ids (exact token-level trajectories)
    token_level: bool = False
    #: True when, under ``json_schema=``, ``Generation.logprobs`` are those of the distribution
    #: each token was drawn from: the logits at the sampling temperature with the tokens the
    #: schema forbids removed, renormalised (what a trainer scores under the same mask).
    #: False: they may be of the unmasked distribution (a trainer must recompute them).
    masked_logprobs: ClassVar[bool] = False

    @abstractmethod
    def chat(
        self,
        conversations: list[list[dict]],
        *,
        tools: list[list[dict]] | None = None,
        max_new_tokens: int = 256,
        temperature: float = 0.6,
        seed: int | None = None,
    ) -> list[Generation]:
        """One completion per conversation (``tools[i]`` are the OpenAI function specs
        offered in conversation ``i``). ``temperature=0`` means greedy."""

    def generate(
        self,
        prompts: list[list[int]],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.6,
        seed: int | None = None,
    ) -> list[Generation]:
        """One completion per prompt given as token ids (token-level backends only)."""
        raise AgentError(f"backend {self.name} does not generate from token ids")

    def close(self) -> None:
        """Release resources (engines, sockets)."""


class Agent(ABC):
    """Plays tasks, batched. ``name`` is the ``BACKEND:MODEL`` spec it was loaded from."""

    name: str = "agent"

    @abstractmethod
    def play(self, tasks: list[PlayTask], *, progress: bool = False) -> list[Episode]:
        """Play every task; the result is aligned with ``tasks``. Environment failures
        end that episode (``error`` set), never the batch."""

    def close(self) -> None:
        """Release resources."""
