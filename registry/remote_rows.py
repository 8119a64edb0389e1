"""Rows of a pulled dataset, judged before anything is written (DESIGN.md sections 5, 7).

A remote row is data, never trusted: :func:`row_id` refuses rows without int ids,
source and sha256; :func:`untrusted_values` turns a row into store column values
(acceptance verdicts dropped, generation at least 1, malformed numbers or metadata one
:class:`~spade_envs.errors.RegistryError`); :func:`vet` runs both on every row a pull
may write and, for a variant, :func:`parent_problem`: its parent must be a program (not
a variant) in this store, the seed suite or the same pull, with the variant's source,
and its params must pass that program's ``PARAMETERS`` (params naming ``SpadeEnv``'s own
keywords never get this far: :func:`.rows.canonical_params` refuses them).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import RegistryError, SpadeError
from ..program import source_sha256
from .ids import EnvId, parse_env_id
from .migrations import FIRST_STORE_SEQ
from .rows import content_key, row_values


def remote_key(r: dict[str, Any]) -> str:
    return content_key(r["sha256"], r.get("parent"), r.get("params"))


def untrusted_values(row: dict[str, Any], origin: str, published: str) -> dict[str, Any]:
    keep = {k: v for k, v in row.items() if k not in ("seq", "version", "acceptance", "id", "env_id", "sha256",
                                                      "class_name", "parameters", "tool_specs_vary_by_seed",
                                                      "published_in")}
    meta = keep.get("metadata")
    try:
        meta = json.loads(meta) if isinstance(meta, str) and meta else dict(meta or {})
    except (ValueError, TypeError, RecursionError):
        raise RegistryError("its metadata is not a JSON object") from None
    if not isinstance(meta, dict):
        raise RegistryError("its metadata is not a JSON object")
    if row.get("tool_specs_vary_by_seed"):
        meta["tool_specs_vary_by_seed"] = True
    if row.get("published_in"):
        meta["published_in"] = str(row["published_in"])
    keep["metadata"] = meta
    gen = keep.get("generation")
    if gen is not None and (isinstance(gen, bool) or not isinstance(gen, int)):
        raise RegistryError(f"its generation is not an int ({str(gen)[:40]!r})")
    keep["generation"] = max(1, gen) if gen is not None else 1  # generation 0 is the shipped seeds only
    keep.update(origin=origin, published=published, acceptance=[])
    return row_values(**keep)


def row_id(r: Any) -> tuple[int, int] | None:
    """``(seq, version)`` of a dataset row (None when they are not ints, or no source/sha256)."""
    if not isinstance(r, dict) or not isinstance(r.get("source"), str) or not isinstance(r.get("sha256"), str):
        return None
    seq, version = r.get("seq"), r.get("version")
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in (seq, version)):
        return None
    return seq, version


def parent_problem(r: dict[str, Any], remote: dict[tuple[int, int], dict[str, Any]],
                    local: dict[tuple[int, int], tuple[str, str | None]]) -> str | None:
    """Why a remote variant row cannot be taken (None when it can): its parent must be a
    program (not a variant) that exists here or in the pull, with the same source, and its
    params must be valid under that program's ``PARAMETERS``."""
    from ..parameters import schema_of, validate_kwargs
    from .catalog import seed_records

    try:
        pid = parse_env_id(str(r["parent"]))
    except SpadeError:
        return f"its parent {str(r['parent'])[:40]!r} is not an environment id"
    if pid.version is None:
        return f"its parent {pid} names no version"
    key = (pid.seq, pid.version)
    if pid.seq < FIRST_STORE_SEQ:
        parent_sha = next((source_sha256(s.source) for s in seed_records() if s.env_id == pid), None)
    elif key in remote:
        parent_sha = None if remote[key].get("parent") else remote[key]["sha256"]
    elif key in local and "|" not in local[key][0]:  # a program, not a variant (see rows.content_key)
        parent_sha = local[key][0]
    else:
        parent_sha = None
    if parent_sha is None:
        return f"its parent {pid} is not a program in this store or the pull"
    if parent_sha != r["sha256"]:
        return f"its source is not its parent's ({pid})"
    try:
        schema = schema_of(r["source"], str(pid))
        if schema is None:
            return f"its parent {pid} declares no PARAMETERS"
        validate_kwargs(schema, json.loads(r.get("params") or "{}") if isinstance(r.get("params"), str)
                        else dict(r.get("params") or {}), str(pid))
    except (SpadeError, ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as exc:
        return str(exc) or type(exc).__name__
    return None


def vet(remote: dict[tuple[int, int], dict[str, Any]], local: dict[tuple[int, int], tuple[str, str | None]],
         origin: str, published: str, res: Any) -> dict[tuple[int, int], dict[str, Any]]:
    """Column values of every remote row this pull may write (those already stored alike
    need none); a row that is malformed, or a variant whose parent does not check out,
    is dropped from ``remote`` and reported in ``res.skipped`` (whatever fails while
    judging one row skips that row with the reason, never the pull). Programs first, so a
    variant of a dropped program is dropped too."""
    prepared: dict[tuple[int, int], dict[str, Any]] = {}
    for key in sorted(remote, key=lambda k: (bool(remote[k].get("parent")), k)):
        r = remote[key]
        if key in local and local[key][0] == remote_key(r):
            continue  # stored already: nothing from it is written
        try:
            problem = parent_problem(r, remote, local) if r.get("parent") else None
            if problem is None:
                prepared[key] = untrusted_values(r, origin, published)
        except SpadeError as exc:
            problem = str(exc)
        except Exception as exc:  # noqa: BLE001 - one row of others' data never ends the pull
            problem = f"the row cannot be judged ({type(exc).__name__}: {str(exc)[:200]})"
        if problem is not None:
            res.skipped.append({"id": str(EnvId(*key)), "reason": f"refused: {problem}"[:500]})
            del remote[key]
    return prepared
