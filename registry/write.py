"""The one write path of an accepted environment (DESIGN.md section 7).

Every caller that stores a program which passed acceptance goes through
:func:`register_accepted` (one program) or :func:`register_accepted_many` (one
transaction): ``spade registry add``, ``spade registry import-pool``, the designer
(:mod:`spade_envs.designer.designer`) and self-play (:mod:`spade_envs.selfplay.registration`).
Every accepted *variant* (a parent id plus a point of its ``PARAMETERS``) goes through
:func:`register_variant`: ``spade design --mode params``
(:func:`spade_envs.designer.params_mode.register_variants`) and self-play's params mode;
a variant runs its root's program, so it keeps the root's measured tool specs.
A pull keeps the remote's ids and merges in its own transaction
(:mod:`.sharing`); its acceptance callback measures with :func:`measure_tool_specs`, the
same measurement.

Contract:

- the tool specs are **measured** here, by opening the program in ``runtime`` and
  resetting it on seeds 0, 1, 2 (:func:`.toolspecs.collect_tool_specs`); a
  ``tool_specs`` field given by the caller is ignored (specs are never claimed), so a
  tool-use environment always stores a non-empty list;
- when the seeds show different specs, the entry's metadata gets
  ``tool_specs_vary_by_seed: true`` (the store keeps seed 0's specs);
- ``runtime`` is the caller's choice (the acceptance sandbox it already runs, or an
  in-process runtime for code it trusts); ``None`` gives a process-wide sandbox with short
  deadlines, so untrusted code never runs in the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .toolspecs import collect_tool_specs

if TYPE_CHECKING:
    from ..runtime import EnvRuntime
    from .store import AddResult, Registry

#: Deadlines of the default measuring sandbox (seconds): a reset is cheap for an accepted program.
STEP_TIMEOUT_S = 2.0
OPEN_TIMEOUT_S = 10.0

_SANDBOX: "EnvRuntime | None" = None
_LOCK = threading.Lock()


def measuring_runtime() -> "EnvRuntime":
    """The process-wide sandbox :func:`measure_tool_specs` uses when given no runtime."""
    global _SANDBOX
    with _LOCK:
        if _SANDBOX is None:
            try:
                from ..sandbox import SandboxRuntime
            except ImportError:
                from ..trust import get_runtime

                get_runtime()  # raises UntrustedCodeError with the usual advice
                raise
            _SANDBOX = SandboxRuntime(step_timeout_s=STEP_TIMEOUT_S, open_timeout_s=OPEN_TIMEOUT_S)
        return _SANDBOX


def measure_tool_specs(source: str, *, filename: str = "<env>", runtime: "EnvRuntime | None" = None) -> dict[str, Any]:
    """``{"tool_specs": [...]}`` measured in ``runtime`` (seed 0's specs; ``[]`` for a
    text-only program or a game), plus ``"tool_specs_vary_by_seed": True`` when the
    specs differ between seeds."""
    specs, vary = collect_tool_specs(source, runtime or measuring_runtime(), filename=filename)
    return {"tool_specs": specs, **({"tool_specs_vary_by_seed": True} if vary else {})}


def _with_measured_specs(item: dict[str, Any], runtime: "EnvRuntime | None") -> dict[str, Any]:
    item = {k: v for k, v in item.items() if k != "tool_specs"}
    measured = measure_tool_specs(item["source"], filename=item.get("filename") or "<env>", runtime=runtime)
    item["tool_specs"] = measured.pop("tool_specs")
    meta = {k: v for k, v in dict(item.get("metadata") or {}).items() if k != "tool_specs_vary_by_seed"}
    item["metadata"] = {**meta, **measured}
    return item


def register_accepted_many(registry: "Registry", items: Iterable[dict[str, Any]], *,
                           runtime: "EnvRuntime | None" = None) -> "list[AddResult]":
    """Store accepted programs in ONE transaction, each with its measured tool specs.

    ``items`` are :meth:`Registry.add` keyword dicts (``source`` plus the optional
    ``replaces``, ``filename``, ``generation``, ``skill``, ``metadata``, ``acceptance``...).
    Returns one :class:`~.store.AddResult` per item, in order."""
    prepared = [_with_measured_specs(dict(item), runtime) for item in items]
    return registry.add_many(prepared)


def register_accepted(registry: "Registry", source: str, *, filename: str = "<env>",
                      runtime: "EnvRuntime | None" = None, **fields: Any) -> "AddResult":
    """Store one accepted program with its measured tool specs (see the module docstring);
    ``fields`` are those of :meth:`Registry.add`."""
    return register_accepted_many(registry, [{"source": source, "filename": filename, **fields}], runtime=runtime)[0]


def register_variant(registry: "Registry", parent: str, params: dict[str, Any], **fields: Any) -> "AddResult":
    """Store one accepted variant of ``parent`` with ``params`` fixed (``fields`` are those
    of :meth:`Registry.add_variant`: ``generation``, ``metadata``, ``acceptance``, scores,
    ``designer_model``). Its tool specs are its root program's, measured when the root was
    registered (:func:`spade_envs.registry.variants.add_variant` copies them)."""
    return registry.add_variant(parent, params, **fields)
