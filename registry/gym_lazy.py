"""Lazy Gymnasium registration for very large stores (DESIGN.md section 4).

Building one ``EnvSpec`` per entry costs about a microsecond; with a million entries the
import would take seconds. Gymnasium 1.x looks ids up in a module-level ``dict``
(``gymnasium.envs.registration.registry``) and offers no lookup hook, so above
:data:`EAGER_MAX` store entries (``SPADE_EAGER_REGISTRATION_MAX``) the import installs
:class:`LazyRegistry` in that dict's place: a ``dict`` subclass holding everything
registered so far, that materializes a spade store id (all versions of its sequence
number, read through the covering index) the first time it is looked up with ``get``,
``[]`` or ``in``. ``gym.make``, ``gym.spec``, ``gym.make_vec`` and ``id in gym.registry``
therefore work for every store id; iterating the registry lists what was registered
eagerly (seeds, other packages) plus store ids used so far. Every write is mirrored into
the original dict, so code that kept a reference to it stays consistent.
This replaces a library global: a deliberate deviation, used only for stores too large
to register eagerly within the import budget.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .ids import seq_of_key

#: stores with more entries than this are registered lazily
EAGER_MAX = int(os.environ.get("SPADE_EAGER_REGISTRATION_MAX") or 50_000)

Loader = Callable[[int], list]  # seq -> [EnvSpec, ...] (every loadable version)


class LazyRegistry(dict):
    """Gymnasium's registry plus on-demand spade store entries (see the module docstring)."""

    def __init__(self, base: dict, loader: Loader) -> None:
        super().__init__(base)
        self._base = base
        self._loader = loader
        self._loaded: set[int] = set()

    def _materialize(self, key: Any) -> bool:
        seq = seq_of_key(key)
        if seq is None or seq in self._loaded:
            return False
        self._loaded.add(seq)
        specs = self._loader(seq)
        for spec in specs:
            if not dict.__contains__(self, spec.id):
                self[spec.id] = spec
        return bool(specs)

    def forget(self, seqs: Any = None) -> None:
        """Drop materialized store ids (of ``seqs``, or all) so the next lookup re-reads the store."""
        drop = set(self._loaded if seqs is None else seqs)
        self._loaded -= drop
        for key in [k for k in dict.keys(self) if seq_of_key(k) in drop]:
            self.pop(key, None)

    # -- lookups that materialize -----------------------------------------------------
    def get(self, key: Any, default: Any = None) -> Any:
        if not dict.__contains__(self, key):
            self._materialize(key)
        return dict.get(self, key, default)

    def __getitem__(self, key: Any) -> Any:
        if not dict.__contains__(self, key):
            self._materialize(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (self._materialize(key) and dict.__contains__(self, key))

    # -- writes, mirrored into the original dict ------------------------------------------
    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._base[key] = value

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self._base.pop(key, None)

    def pop(self, key: Any, *default: Any) -> Any:
        self._base.pop(key, None)
        return dict.pop(self, key, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        items = dict(*args, **kwargs)
        dict.update(self, items)
        self._base.update(items)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def clear(self) -> None:
        dict.clear(self)
        self._base.clear()


def install(loader: Loader) -> LazyRegistry:
    """Put a :class:`LazyRegistry` in place of Gymnasium's registry (idempotent: an
    installed one gets the new loader and forgets what it materialized)."""
    import gymnasium
    import gymnasium.envs
    import gymnasium.envs.registration as registration

    current = registration.registry
    if isinstance(current, LazyRegistry):
        current._loader = loader
        current.forget()
        return current
    lazy = LazyRegistry(current, loader)
    registration.registry = lazy
    for module in (gymnasium, gymnasium.envs):
        if getattr(module, "registry", None) is current:
            module.registry = lazy
    return lazy


def active() -> LazyRegistry | None:
    import gymnasium.envs.registration as registration

    current = registration.registry
    return current if isinstance(current, LazyRegistry) else None
