"""Lazily built dependencies shared by the designers (code mode and params mode).

A designer class mixing in :class:`LazyDesignerDeps` sets ``config`` (with ``model``,
``agent``, ``agent_max_new_tokens`` and ``seed``) and ``_backend``/``_agent``/``_registry``
(None, or objects injected by tests). Each dependency is built on first use, so a bad
model spec fails when the run starts, and tests can pass fakes.
"""

from __future__ import annotations

from typing import Any


class LazyDesignerDeps:
    config: Any
    _backend: Any
    _agent: Any
    _registry: Any

    @property
    def backend(self) -> Any:
        if self._backend is None:
            from ..agents import load_backend

            self._backend = load_backend(self.config.model)
        return self._backend

    @property
    def registry(self) -> Any:
        if self._registry is None:
            from ..registry.store import Registry

            self._registry = Registry.open()
        return self._registry

    @property
    def agent(self) -> Any:
        """The scoring agent: the designer's own model unless ``config.agent`` names another."""
        if self._agent is None:
            cfg = self.config
            if cfg.agent is None or cfg.agent == cfg.model:
                from ..agents.rollout import LLMAgent

                self._agent = LLMAgent(self.backend, name=cfg.model, max_new_tokens=cfg.agent_max_new_tokens,
                                       seed=cfg.seed)
            else:
                from ..agents import load_agent

                self._agent = load_agent(cfg.agent, max_new_tokens=cfg.agent_max_new_tokens, seed=cfg.seed)
        return self._agent
