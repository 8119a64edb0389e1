"""What the ``spade registry`` command modules share: the ``registry`` command group
(:data:`registry_app`), opening the store, the acceptance runner that ``add``, ``import``
and ``pull`` judge candidates with, and the usage checks of the filters.

The command modules (:mod:`.registry_cmd`, :mod:`.registry_import`,
:mod:`.registry_sharing`, :mod:`.registry_pool`, :mod:`.pool_import`) import from here and
never from each other's command code, so the CLI package has no import cycles. Callers
look the runner up as ``registry_common.acceptance_runner`` at call time (tests swap it).
"""

from __future__ import annotations

import json
from typing import Any, Callable

import typer

registry_app = typer.Typer(help="The environment registry: local store and Hugging Face dataset.",
                           no_args_is_help=True)


def open_store(create: bool = True):
    """The default store (None when there is none and ``create`` is False)."""
    from ..registry.store import Registry, default_path

    if not create and not default_path().exists():
        return None
    return Registry.open(create=create)


def records(**filters: Any) -> list:
    from ..registry.catalog import seed_records

    reg = open_store(create=False)
    if reg is None:
        gen, skill, status, tags = (filters.get(k) for k in ("generation", "skill", "status", "tags"))
        return [r for r in seed_records() if gen in (None, 0) and skill in (None, r.skill) and status in (None, r.status)
                and (not tags or set(tags) & set(r.metadata.get("tags") or []))]
    with reg:
        return reg.list(seeds=True, **filters)


def echo_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, default=str))


# -- acceptance -------------------------------------------------------------------------
def verdicts(report: Any) -> list[dict[str, Any]]:
    return [{"name": str(getattr(s, "name", s.get("name") if isinstance(s, dict) else s)),
             "ok": bool(getattr(s, "ok", s.get("ok") if isinstance(s, dict) else False)),
             "detail": str(getattr(s, "detail", s.get("detail", "") if isinstance(s, dict) else "")),
             **_verified_flag(s)}
            for s in (getattr(report, "stages", None) or [])]


def _verified_flag(stage: Any) -> dict[str, bool]:
    """The ``solution_replay`` stage's ``verified`` flag, stored with the verdict (issue 29)."""
    flag = stage.get("verified") if isinstance(stage, dict) else getattr(stage, "verified", None)
    return {} if flag is None else {"verified": bool(flag)}


def acceptance_runner(reg: Any, replaces: str | None = None) -> Callable[[str, str], dict[str, Any]]:
    """``run(source, filename) -> {"accepted", "rejected_at", "stages"}``: the acceptance
    pipeline, with novelty judged against the seeds and the store ``reg``."""
    from ..designer.acceptance import AcceptanceConfig, AcceptancePipeline
    from ..designer.memory import DesignerMemory

    memory = DesignerMemory(reg)
    pipeline = AcceptancePipeline(AcceptanceConfig(novelty_check=memory.import_novelty_check(replaces)))

    def run(source: str, filename: str) -> dict[str, Any]:
        report = pipeline.run(source, filename=filename)
        if report.accepted:  # later candidates of this batch must be novel against it too
            memory.novelty_index().add(f"{filename} (this batch)", source)
        return {"accepted": bool(report.accepted), "rejected_at": getattr(report, "rejected_at", None),
                "stages": verdicts(report), "verified": bool(getattr(report, "verified", True)),
                "solution_form": int(getattr(report, "solution_form", 0) or 0)}

    return run


def spec_runtime() -> Any:
    """The runtime in which ``registry add`` reads an accepted program's tool specs:
    the acceptance sandbox (the program is untrusted)."""
    from ..designer.acceptance import sandbox_runtime

    return sandbox_runtime(2.0)


def tool_spec_fields(source: str, filename: str, runtime: Any) -> dict[str, Any]:
    """``tool_specs`` (seed 0's) and, when they vary by seed, a metadata flag saying so."""
    from ..registry.write import measure_tool_specs

    return measure_tool_specs(source, filename=filename, runtime=runtime)


def verdict_metadata(verdict: dict[str, Any]) -> dict[str, Any]:
    """What an acceptance verdict adds to an entry's metadata: ``verified: False`` for a
    program without solution(), the winning ``solution_form`` when it is not the primary."""
    out: dict[str, Any] = {}
    if verdict.get("verified") is False:
        out["verified"] = False
    if verdict.get("solution_form"):
        out["solution_form"] = int(verdict["solution_form"])
    return out


def check_filters(generation: int | None = None, status: str | None = None) -> None:
    """Usage errors (exit 2) for a negative generation or an unknown status."""
    from ..registry.rows import STATUSES
    from .main import fail

    if generation is not None and generation < 0:
        raise fail(f"--generation must be 0 or more (0 = the seed suite), got {generation}", 2)
    if status is not None and status not in STATUSES:
        raise fail(f"--status must be one of {', '.join(STATUSES)}, got '{status}'", 2)
