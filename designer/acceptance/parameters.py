"""Parameter sampling: a wrapper around a pipeline for programs that declare ``PARAMETERS``.

For a source that declares ``PARAMETERS`` (:mod:`spade_envs.parameters`),
:class:`ParameterSampling` around a pipeline

1. checks the schema itself (meta-schema, object of properties with defaults, defaults
   valid, no reserved names); a bad schema is a report with one failed ``parameters``
   verdict and nothing else runs;
2. runs the wrapped pipeline at the defaults (``config.env_kwargs`` on top of them,
   validated against the schema);
3. when that passes, runs it again at :data:`POINTS` sampled valid points
   (:func:`~spade_envs.parameters.sample_points`, deterministic; novelty is judged once,
   at the defaults) and appends a ``parameters`` verdict naming the points, or the first
   point that failed and the stage it failed at.

Sources without ``PARAMETERS`` get the wrapped pipeline's report unchanged (no extra
stage). With the verdict, ``parameters`` joins the report's ``expected`` stages, so the
report is accepted only when the ordinary stages AND the ``parameters`` verdict pass. The
wrapped pipeline is the same object at every point (its runtime and stage lists are
reused); only the run's config differs.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any, Protocol

from spade_envs.errors import SpadeError, Stage
from spade_envs.parameters import check_schema, defaults, read_parameters, sample_points, validate_kwargs

from .config import AcceptanceConfig
from .verdicts import AcceptanceReport, StageVerdict

#: sampled valid points checked besides the defaults
POINTS = 2


class Pipeline(Protocol):
    """What the wrapper needs of a pipeline: its config and one run under a given config."""

    config: AcceptanceConfig

    def run(self, source: Any, filename: str = "<env>", config: AcceptanceConfig | None = None) -> AcceptanceReport: ...


def _short(point: dict[str, Any]) -> str:
    return json.dumps(point, sort_keys=True, separators=(",", ":"))


class ParameterSampling:
    """``pipeline`` judged at its defaults and at sampled valid points (module docstring)."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    def run(self, source: Any, filename: str = "<env>") -> AcceptanceReport:
        """The report of ``source`` with its parameters judged."""
        config, inner = self.pipeline.config, self.pipeline
        t0 = time.perf_counter()
        try:
            schema = read_parameters(source, filename) if isinstance(source, str) else None
        except SpadeError as exc:
            if Stage.named(getattr(exc, "stage", None)) is Stage.SIZE_SYNTAX:
                return inner.run(source, filename)  # the ordinary stages name the problem
            schema, problem = None, str(exc)
        else:
            problem = None
        if schema is None and problem is None:
            return inner.run(source, filename)
        if problem is None:
            try:
                check_schema(schema, filename)
                point0 = validate_kwargs(schema, {**defaults(schema), **dict(config.env_kwargs)}, filename)
            except SpadeError as exc:
                problem = str(exc)
        if problem is not None:
            return AcceptanceReport(filename=filename, expected=(Stage.PARAMETERS,),
                                    stages=[StageVerdict(Stage.PARAMETERS, False, problem, time.perf_counter() - t0)])
        report = inner.run(source, filename, dataclasses.replace(config, env_kwargs=point0))
        report.expected = (*report.expected, Stage.PARAMETERS)
        if report.failure is not None or not report.stages:
            return report
        t1 = time.perf_counter()
        try:
            points = sample_points(schema, POINTS, seed=0)  # all its validations under one budget
        except SpadeError as exc:  # too slow to judge: the stage's verdict, never accepted
            report.stages.append(StageVerdict(Stage.PARAMETERS, False, str(exc), time.perf_counter() - t1))
            return report
        for point in points:
            sub = inner.run(source, filename, dataclasses.replace(config, env_kwargs=point, novelty_check=None))
            bad = sub.failure
            if bad is not None or not sub.accepted:
                where = bad.name if bad is not None else "incomplete"
                detail = bad.detail if bad is not None else "not every stage ran"
                report.stages.append(StageVerdict(
                    Stage.PARAMETERS, False, f"at {_short(point)}: rejected at {where}: {detail}", time.perf_counter() - t1))
                return report
        names = ", ".join(sorted(schema["properties"]))
        report.stages.append(StageVerdict(
            Stage.PARAMETERS, True,
            f"schema valid ({names}); accepted at the defaults {_short(point0)} and at "
            + "; ".join(_short(p) for p in points) if points else f"schema valid ({names}); no other valid point to sample",
            time.perf_counter() - t1,
        ))
        return report
