"""The seam between the environment layers and the registry: how an id becomes a record.

The Gymnasium wrapper (:mod:`spade_envs.gym_env`), the game runtime and the PettingZoo
API accept registry ids, yet sit *below* the registry in the import layers
(``docs/architecture.md``). They look ids up through :func:`resolve_record`, and the
registry plugs its resolver in when it is imported (``import spade_envs`` imports it), so
no environment module imports the registry.

A record is anything with the attributes of :class:`EnvRecordLike` (the registry's
:class:`~spade_envs.registry.catalog.EnvRecord`). Whether it is trusted comes from the
record the resolver built (seeds shipped with the package), never from the caller's data.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from .errors import SpadeError


class EnvRecordLike(Protocol):
    """What environment code reads off a registry record."""

    env_id: Any  #: the full id (``.base``, ``.version``)
    source: str
    class_name: str
    trusted: bool
    metadata: dict[str, Any]
    params: dict[str, Any]  #: a variant's fixed constructor kwargs (``{}`` otherwise)


Resolver = Callable[[str, "int | None"], EnvRecordLike]

_resolver: Resolver | None = None


def install_resolver(resolver: Resolver) -> None:
    """Make ``resolver(env_id, version)`` the way ids become records (the registry calls
    this once, when it is imported)."""
    global _resolver
    _resolver = resolver


def resolve_record(env_id: Any, version: int | None = None) -> EnvRecordLike:
    """The record of ``env_id`` (latest version unless ``env_id`` or ``version`` names one).

    Raises :class:`~spade_envs.errors.UnknownEnvironmentError` (or its
    :class:`~spade_envs.errors.QuarantinedError`) from the registry."""
    if _resolver is None:
        raise SpadeError("no registry is loaded: `import spade_envs` before making environments by id")
    return _resolver(env_id, version)
