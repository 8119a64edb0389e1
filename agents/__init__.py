"""Agents (DESIGN.md section 8): backends, batched rollouts, Prefix Sliding.

Agents and backends are named ``BACKEND:MODEL``:

- ``transformers:default`` (the packaged SmolLM2-135M-Instruct), ``transformers:tiny-random``,
  ``transformers:PATH``;
- ``vllm:PATH`` (GPU);
- ``openai:URL#MODEL`` (any OpenAI-compatible server);
- ``replay:reference`` and ``replay:FILE.jsonl`` (scripted agents, no backend).

``load_agent(spec, **options)`` splits the options between the backend and the agent
(see :class:`~spade_envs.agents.rollout.LLMAgent` and the backend classes).
Importing this package is light; torch/transformers/vllm load with a backend.
"""

from __future__ import annotations

from typing import Any

from ..errors import AgentError
from .api import Agent, Backend, Episode, Generation, PlayTask

__all__ = [
    "Agent", "AgentError", "Backend", "Episode", "Generation", "PlayTask",
    "load_agent", "load_backend", "parse_spec",
]

BACKENDS = ("transformers", "vllm", "openai", "replay")
#: options consumed by the agent loop rather than the backend
AGENT_OPTIONS = ("max_new_tokens", "temperature", "seed", "sandbox", "trust_remote_code", "system_prompt")


def parse_spec(spec: str) -> tuple[str, str]:
    """``"transformers:default"`` -> ``("transformers", "default")``; raises
    :class:`AgentError` for a malformed spec."""
    if not isinstance(spec, str) or ":" not in spec:
        raise AgentError(f"agent spec '{spec}' must be BACKEND:MODEL with BACKEND one of {', '.join(BACKENDS)}")
    backend, model = spec.split(":", 1)
    if backend not in BACKENDS:
        raise AgentError(f"unknown backend '{backend}' in '{spec}': use one of {', '.join(BACKENDS)}")
    if not model:
        raise AgentError(f"agent spec '{spec}' names no model")
    return backend, model


def load_backend(spec: str, **options: Any) -> Backend:
    """The generation backend named by ``spec`` (not ``replay:``, which has none)."""
    kind, model = parse_spec(spec)
    if kind == "transformers":
        from .backend_transformers import TransformersBackend

        return TransformersBackend(model, **options)
    if kind == "vllm":
        from .backend_vllm import VLLMBackend

        return VLLMBackend(model, **options)
    if kind == "openai":
        from .backend_openai import OpenAIBackend

        url, sep, name = model.partition("#")
        return OpenAIBackend(url, name if sep else "default", **options)
    raise AgentError(f"'{spec}' is a scripted agent with no generation backend; use load_agent")


def load_agent(spec: str, **options: Any) -> Agent:
    """The agent named by ``spec``; ``options`` go to the agent loop (``max_new_tokens``,
    ``temperature``, ``seed``, ``sandbox``, ``trust_remote_code``, ``system_prompt``) or
    to the backend (everything else)."""
    kind, model = parse_spec(spec)
    agent_opts = {k: options.pop(k) for k in list(options) if k in AGENT_OPTIONS}
    if kind == "replay":
        from .replay import ReplayAgent

        return ReplayAgent(model, **agent_opts)
    from .rollout import LLMAgent

    return LLMAgent(load_backend(spec, **options), name=spec, **agent_opts)
