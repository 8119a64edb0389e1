"""Tool specs and parameters of a program, for the store and the Hub export.

``collect_tool_specs(source, runtime)`` opens the program in ``runtime`` (the sandbox for
anything untrusted), resets it on seeds 0, 1 and 2 and returns the specs of seed 0 plus
whether they differ between those seeds (SPADE's tool-use programs may declare
per-episode tools: the store keeps seed 0's and says so). ``seed_tool_specs()`` does the
same for the shipped seed suite, in-process (trusted), once per process.

``read_parameters(source)``: the module-level ``PARAMETERS`` JSON Schema read statically
(``ast.literal_eval``; never executed), or None.
"""

from __future__ import annotations

import ast
import functools
import json
from typing import Any

from ..errors import SpadeError

SPEC_SEEDS = (0, 1, 2)


def collect_tool_specs(source: str, runtime: Any, *, filename: str = "<env>",
                       seeds: tuple[int, ...] = SPEC_SEEDS) -> tuple[list[dict[str, Any]], bool]:
    """``(specs of seeds[0], specs vary by seed)``; ``([], False)`` for a text-only
    program or one that cannot be opened (acceptance reports why, not this)."""
    from ..games.format import is_multiplayer_source

    if is_multiplayer_source(source):
        return [], False
    try:
        session = runtime.open(source, filename=filename)
    except SpadeError:
        return [], False
    per_seed: list[list[dict[str, Any]]] = []
    try:
        for seed in seeds:
            session.reset(seed)
            per_seed.append(list(session.tools or []))
    except SpadeError:
        pass
    finally:
        try:
            session.close()
        except SpadeError:
            pass
    if not per_seed:
        return [], False
    distinct = {json.dumps(s, sort_keys=True) for s in per_seed}
    return per_seed[0], len(distinct) > 1


@functools.lru_cache(maxsize=None)
def _seed_specs(seq: int) -> tuple[str, bool]:
    from ..trust import get_runtime
    from .catalog import seed_records

    rec = next(r for r in seed_records() if r.env_id.seq == seq)
    specs, vary = collect_tool_specs(rec.source, get_runtime(trusted=True), filename=rec.metadata.get("file", "<env>"))
    return json.dumps(specs, sort_keys=True), vary


def seed_tool_specs(seq: int) -> tuple[list[dict[str, Any]], bool]:
    """Tool specs (seed 0) of the seed with this sequence number, and whether they vary."""
    text, vary = _seed_specs(seq)
    return json.loads(text), vary


def read_parameters(source: str) -> dict[str, Any] | None:
    """The ``PARAMETERS`` assignment at module level, read with ``ast.literal_eval``
    (None when absent or not a literal dict)."""
    try:
        from ..parameters import read_parameters as _read  # the parameters issue's reader, when merged

        found = _read(source)
        return found if isinstance(found, dict) else None
    except ImportError:
        pass
    except Exception:  # an invalid schema is acceptance's business, not the store's
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "PARAMETERS" for t in targets) and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return None
            return value if isinstance(value, dict) else None
    return None
