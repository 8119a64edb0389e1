"""The stage runner: one ordered list of stage objects, run on one context.

A stage is a :class:`StageCheck`: its ``name`` (a :class:`~spade_envs.errors.Stage`), the
:class:`~.config.AcceptanceConfig` fields it reads (``settings``) and ``check(ctx)``,
which returns the verdict's detail or raises :class:`~.context.Reject` (or a
:class:`~spade_envs.errors.SpadeError`) with the reason. :func:`run_stages` runs a list in
order and stops at the first failure. The lists themselves are
:data:`~.single_player_stages.SINGLE_PLAYER_CHECKS` and :data:`~.game_stages.GAME_CHECKS`;
adding a stage is one new :class:`StageCheck` and one entry in a list (plus its name in
:class:`~spade_envs.errors.Stage`).

Failures found early for a LATER stage of the list (an ``EnvProgramError`` whose
``stage`` names it) wait in ``ctx.pending`` and are that stage's verdict; an error whose
stage is this one, an earlier one or none of the list fails the stage that runs. The
per-candidate budget (``config.candidate_deadline_s``) is checked between stages here
and inside them by the plays; a bug in a stage becomes a failed verdict, never an
exception. Stages every list shares live here: :class:`SizeSyntax` and :class:`Novelty`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from spade_envs.errors import EnvExecutionError, EnvProgramError, SpadeError, Stage
from spade_envs.program import parse_source, source_sha256
from spade_envs.runtime import EnvRuntime
from spade_envs.trust import get_runtime

from .context import Context, Reject
from .probes import BudgetExceeded
from .verdicts import AcceptanceReport, StageVerdict


class StageCheck:
    """One acceptance stage (module docstring). Subclasses set ``name`` and ``settings``
    and define :meth:`check`; :meth:`verdict` may add to the verdict of a passed check."""

    name: ClassVar[Stage]
    #: the AcceptanceConfig fields this stage reads
    settings: ClassVar[tuple[str, ...]] = ()

    def check(self, ctx: Any) -> str:
        """The verdict's detail; raises :class:`Reject` with the reason on failure."""
        raise NotImplementedError

    def verdict(self, ctx: Any, verdict: StageVerdict) -> StageVerdict:
        """The verdict of a passed check as reported (default: unchanged)."""
        return verdict


def run_stages(checks: Sequence[StageCheck], ctx: Context, report: AcceptanceReport) -> AcceptanceReport:
    """Run ``checks`` in order on ``ctx`` into ``report`` (which names them as expected);
    stop at the first failure; close the program; never raise because of the candidate."""
    order = [c.name for c in checks]
    report.expected = tuple(order)
    try:
        for check in checks:
            verdict = _run_one(check, order, ctx)
            if verdict is None:  # a later stage's failure surfaced early: skip this one
                continue
            report.stages.append(verdict)
            if not verdict.ok:
                break
    finally:
        ctx.close()
        ctx.finish(report)
        report.sha256 = source_sha256(ctx.source) if isinstance(ctx.source, str) else ""
        report.seconds = time.perf_counter() - ctx.started
    return report


def compile_or_reject(code: Any, filename: str) -> None:
    """Compile ``code`` (source text or a parsed tree) to bytecode, or :class:`Reject` with
    the compiler's message and line: the COMPILE stage's first check, single-player or game."""
    try:
        compile(code, filename, "exec")
    except (SyntaxError, ValueError) as exc:
        raise Reject(f"does not compile: {getattr(exc, 'msg', exc)} (line {getattr(exc, 'lineno', '?')})") from None


def later_stage(exc: EnvProgramError, order: Sequence[Stage], current: Stage) -> Stage | None:
    """The stage of ``order`` after ``current`` that ``exc`` belongs to, or None (the error
    fails ``current``)."""
    stage = Stage.named(exc.stage)
    return stage if stage in order and order.index(stage) > order.index(current) else None


def _run_one(check: StageCheck, order: list[Stage], ctx: Context) -> StageVerdict | None:
    name, budget = check.name, ctx.config.candidate_deadline_s
    t0 = time.perf_counter()
    if name in ctx.pending:
        return StageVerdict(name, False, ctx.pending[name], 0.0)
    if not ctx.live and ctx.pending and min(order.index(s) for s in ctx.pending) > order.index(name):
        return None  # no live program to check this stage on; a later stage holds the failure
    if time.perf_counter() - ctx.started > budget:
        return StageVerdict(name, False, f"candidate exceeded its {budget:g} s budget", 0.0)
    try:
        detail = check.check(ctx)
    except Reject as exc:
        return StageVerdict(name, False, str(exc), time.perf_counter() - t0)
    except BudgetExceeded:
        detail = f"candidate exceeded its {budget:g} s budget (during this stage)"
    except EnvProgramError as exc:
        later = later_stage(exc, order, name)
        if later is not None:
            ctx.pending[later] = str(exc)
            return None
        detail = str(exc)
    except EnvExecutionError as exc:
        detail = f"{exc.kind}: {exc}"
    except SpadeError as exc:
        detail = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a runtime or pipeline bug must not take the caller down
        detail = f"internal error while checking: {type(exc).__name__}: {exc}"
    else:
        return check.verdict(ctx, StageVerdict(name, True, detail, time.perf_counter() - t0))
    return StageVerdict(name, False, detail, time.perf_counter() - t0)


class SizeSyntax(StageCheck):
    """UTF-8 text within :data:`~spade_envs.program.MAX_SOURCE_BYTES` that parses."""

    name = Stage.SIZE_SYNTAX

    def check(self, ctx: Context) -> str:
        tree = parse_source(ctx.source, ctx.filename)
        if isinstance(ctx.source, bytes):
            ctx.source = ctx.source.decode("utf-8")
        ctx.tree = tree
        return f"{len(ctx.source.encode('utf-8'))} bytes, {len(ctx.source.splitlines())} lines, parses"


class Novelty(StageCheck):
    """``config.novelty_check(source) -> (ok, detail)``; "no memory given" without one."""

    name = Stage.NOVELTY
    settings = ("novelty_check",)

    def check(self, ctx: Context) -> str:
        check = ctx.config.novelty_check
        if check is None:
            return "no memory given"
        try:
            ok, detail = check(ctx.source)
        except Exception as exc:  # a plug-in's bug is a failed verdict, not a crash
            raise Reject(f"novelty check raised {type(exc).__name__}: {exc}") from None
        if not ok:
            raise Reject(str(detail) or "near-duplicate of a known environment")
        return str(detail) or "novel"


_SANDBOXES: dict[tuple[float, int], EnvRuntime] = {}
_SANDBOX_LOCK = threading.Lock()


def sandbox_runtime(step_deadline_s: float, lane: int = 0) -> EnvRuntime:
    """A process-wide sandbox for acceptance with this per-call deadline. ``lane`` 0 is
    the shared one (default worker count); lanes 1.. hold one worker each, for
    :meth:`~spade_envs.designer.acceptance.AcceptancePipeline.run_many`."""
    key = (float(step_deadline_s), lane)
    with _SANDBOX_LOCK:
        runtime = _SANDBOXES.get(key)
        if runtime is None:
            try:
                from spade_envs.sandbox import SandboxRuntime
            except ImportError:
                get_runtime()  # raises UntrustedCodeError with the usual advice
                raise
            # construction compiles and runs reset(): allow more than a step, far less than
            # the runtime's default 30 s, so a hanging constructor is judged quickly
            kwargs: dict[str, Any] = {"step_timeout_s": float(step_deadline_s),
                                      "open_timeout_s": max(10.0, 5 * float(step_deadline_s))}
            if lane:
                kwargs["max_workers"] = 1
            runtime = _SANDBOXES[key] = SandboxRuntime(**kwargs)
        return runtime
