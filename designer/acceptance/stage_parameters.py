"""The ``parameters`` acceptance stage: a program's ``PARAMETERS`` and its valid points.

For a source that declares ``PARAMETERS`` (:mod:`spade_envs.parameters`), acceptance

1. checks the schema itself (meta-schema, object of properties with defaults, defaults
   valid, no reserved names); a bad schema is a report with one failed ``parameters``
   verdict and nothing else runs;
2. runs every ordinary stage at the defaults (``config.env_kwargs`` on top of them,
   validated against the schema);
3. when that passes, runs the stages again at :data:`POINTS` sampled valid points
   (:func:`~spade_envs.parameters.sample_points`, deterministic; novelty is judged once,
   at the defaults) and appends a ``parameters`` verdict naming the points, or the first
   point that failed and the stage it failed at.

Sources without ``PARAMETERS`` get their report unchanged (no extra stage). Reports
with the verdict are :class:`ParametricReport` (or its multi-player twin), whose
``accepted`` requires the ordinary stages AND the ``parameters`` verdict.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

from spade_envs.errors import SpadeError
from spade_envs.parameters import check_schema, defaults, read_parameters, sample_points, validate_kwargs

from .verdicts import AcceptanceReport, StageVerdict

#: sampled valid points checked besides the defaults
POINTS = 2
STAGE = "parameters"


class ParametricReport(AcceptanceReport):
    """A report whose last verdict is ``parameters``: accepted when that verdict is ok
    and the ordinary stages (single-player or game) all ran and passed."""

    @property
    def accepted(self) -> bool:  # type: ignore[override]
        inner = [s for s in self.stages if s.name != STAGE]
        own = [s for s in self.stages if s.name == STAGE]
        return (bool(own) and all(s.ok for s in own) and [s.name for s in inner] == list(self.expected)
                and all(s.ok for s in inner))


def _as_parametric(report: AcceptanceReport) -> AcceptanceReport:
    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}
    return ParametricReport(**fields)


def _short(point: dict[str, Any]) -> str:
    return json.dumps(point, sort_keys=True, separators=(",", ":"))


def check_parameters(
    config: Any, source: Any, filename: str, run_once: Callable[[Any, Any, str], AcceptanceReport]
) -> AcceptanceReport:
    """The acceptance report of ``source`` with its parameters judged (module docstring).

    ``run_once(config, source, filename)`` runs the ordinary stages under ``config``."""
    t0 = time.perf_counter()
    try:
        schema = read_parameters(source, filename) if isinstance(source, str) else None
    except SpadeError as exc:
        if getattr(exc, "stage", None) == "syntax":
            return run_once(config, source, filename)  # the ordinary stages name the problem
        schema, problem = None, str(exc)
    else:
        problem = None
    if schema is None and problem is None:
        return run_once(config, source, filename)
    if problem is None:
        try:
            check_schema(schema, filename)
            point0 = validate_kwargs(schema, {**defaults(schema), **dict(config.env_kwargs)}, filename)
        except SpadeError as exc:
            problem = str(exc)
    if problem is not None:
        return ParametricReport(filename=filename, stages=[StageVerdict(STAGE, False, problem, time.perf_counter() - t0)])
    report = _as_parametric(run_once(dataclasses.replace(config, env_kwargs=point0), source, filename))
    if report.failure is not None or not report.stages:
        return report
    t1 = time.perf_counter()
    points = sample_points(schema, POINTS, seed=0)
    for point in points:
        sub = run_once(dataclasses.replace(config, env_kwargs=point, novelty_check=None), source, filename)
        bad = sub.failure
        if bad is not None or not sub.accepted:
            where = bad.name if bad is not None else "incomplete"
            detail = bad.detail if bad is not None else "not every stage ran"
            report.stages.append(StageVerdict(
                STAGE, False, f"at {_short(point)}: rejected at {where}: {detail}", time.perf_counter() - t1))
            return report
    names = ", ".join(sorted(schema["properties"]))
    report.stages.append(StageVerdict(
        STAGE, True,
        f"schema valid ({names}); accepted at the defaults {_short(point0)} and at "
        + "; ".join(_short(p) for p in points) if points else f"schema valid ({names}); no other valid point to sample",
        time.perf_counter() - t1,
    ))
    return report
