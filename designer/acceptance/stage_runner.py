"""The stage runner shared by every acceptance pipeline (single-player and games).

:class:`StageRunner` runs a class's ``stage_names`` in order, one ``_stage_<name>`` method
each, and stops at the first failure. A stage returns its verdict's detail or raises
:class:`Reject` (or a :class:`~spade_envs.errors.SpadeError`) with the reason; a program
error that belongs to a LATER stage (``EnvProgramError.stage``) is held in
``Context.pending`` and reported when that stage comes. The per-candidate budget
(``config.candidate_deadline_s``, checked between stages here and inside them through
``Context.deadline``, which plays honour by raising ``probes.BudgetExceeded``) and the
per-call deadline (``config.step_deadline_s``) are enforced here; a bug in a stage becomes a failed verdict, never an exception.

Stages every pipeline shares live here too: ``size_syntax`` and ``novelty``. The
single-player stages are :class:`~spade_envs.designer.acceptance.stages.StageChecks`, the game stages
:class:`~spade_envs.designer.acceptance.game_stages.GameAcceptance`; :mod:`.acceptance` picks one per
source. Imports run one way: ``stage_runner`` <- ``stages``/``game_stages`` <- ``acceptance``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from spade_envs.errors import EnvExecutionError, EnvProgramError, SpadeError
from spade_envs.program import parse_source, source_sha256
from spade_envs.runtime import EnvRuntime, EnvSession
from spade_envs.trust import get_runtime

from .probes import BudgetExceeded
from .verdicts import STAGES, AcceptanceReport, StageVerdict

NoveltyCheck = Callable[[str], "tuple[bool, str]"]


@dataclass(frozen=True)
class AcceptanceConfig:
    """Knobs of the pipeline; the defaults are what ``spade validate`` uses.

    - ``seeds``: smoke, solution replay and leak checks run on each (default 3 seeds);
    - ``determinism_seeds``: how many of ``seeds`` are replayed twice step by step
      (default 1; every seed's first observation and solution are compared anyway);
    - ``variety_seeds``: extra seeds whose ``solution()`` joins the variety check (3);
    - ``min_distinct_solutions``: distinct solutions needed over all those seeds (2);
    - ``max_garbage_probes``: cap on garbage probes, 0 = all (13 to 16; default 0);
    - ``step_deadline_s``: wall-clock limit of one call (default 2 s; the sandbox
      enforces it, in-process runs check it after the fact);
    - ``candidate_deadline_s``: total budget of one candidate (default 60 s);
    - ``win_reward``: reward that counts as a win (1.0);
    - ``max_solution_actions``: longest accepted solution (200 actions);
    - ``leak_min_digits`` / ``leak_min_chars``: the specificity rule of the leak check;
    - ``env_kwargs``: constructor arguments;
    - ``novelty_check``: ``source -> (ok, detail)``, e.g. the designer memory's MinHash;
    - games only: ``games_per_seat`` (scripted-vs-random games per seat, 8),
      ``max_game_steps`` (a game must end within this many steps, 300),
      ``min_scripted_score`` (the baseline's (wins + draws/2) / games in every seat, 0.6),
      ``min_coop_success`` (cooperative scripted self-play success rate, 0.8).
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    determinism_seeds: int = 1
    variety_seeds: tuple[int, ...] = (3, 4, 5)
    min_distinct_solutions: int = 2
    max_garbage_probes: int = 0
    step_deadline_s: float = 2.0
    candidate_deadline_s: float = 60.0
    win_reward: float = 1.0
    max_solution_actions: int = 200
    leak_min_digits: int = 3
    leak_min_chars: int = 4
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    novelty_check: NoveltyCheck | None = None
    games_per_seat: int = 8
    max_game_steps: int = 300
    min_scripted_score: float = 0.6
    min_coop_success: float = 0.8


class Reject(Exception):
    """A stage failed; the message is the verdict's detail."""


@dataclass
class Context:
    """What the stages of one candidate share: the live session and what earlier stages
    learnt (single-player: first observations, solutions, replays, garbage observations;
    games: the game info and session)."""

    source: str
    filename: str
    started: float
    tree: Any = None
    session: EnvSession | None = None
    class_name: str | None = None
    pending: dict[str, str] = field(default_factory=dict)  # stage -> failure found early
    max_call_s: float = 0.0
    resets: dict[Any, str] = field(default_factory=dict)  # seed -> first observation
    solutions: dict[Any, str] = field(default_factory=dict)  # seed -> solution() text
    replays: dict[Any, Any] = field(default_factory=dict)  # seed -> solution play (probes.Episode)
    smoke_plays: list[Any] = field(default_factory=list)
    junk_tried: set[str] = field(default_factory=set)
    garbage_obs: list[tuple[Any, str]] = field(default_factory=list)  # (seed, obs), episode not over
    game_info: Any = None  # games: spade_envs.games.GameInfo
    game: Any = None  # games: spade_envs.games.MultiPlayerSession
    # single-player replay (issue 14): programs without solution(), the reading that won
    no_solution: bool = False  # the program defines no solution()
    solution_form: int = 0  # index into spade_envs.solutions.solution_plans() of the winning replay
    snapshots: dict[Any, str] = field(default_factory=dict)  # seed -> JSON state after reset (task comparison)
    deadline: float | None = None  # perf_counter() value when the candidate's budget ends
    # issue 29: SPADE never replays solution(); a text no reader turns into a win is unverified
    replay: Any = None  # stages.ReplayOutcome, once the solution's readings were tried
    verified: bool = True  # False: no solution(), or no reading of it replays a win
    notes: list[str] = field(default_factory=list)  # what the loader tolerated (shown in verdicts)
    defines_hint: bool = False  # the class defines hint() (a None from it is then a tolerated failure)


class StageRunner:
    """Runs ``stage_names`` on a candidate (see the module docstring). Subclasses define
    the ``_stage_<name>`` methods and may override :meth:`new_report`."""

    stage_names: tuple[str, ...] = STAGES

    def __init__(
        self,
        config: AcceptanceConfig | None = None,
        *,
        runtime: EnvRuntime | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        self.config = config or AcceptanceConfig()
        self._runtime = runtime
        self._trust = trust_remote_code

    @property
    def runtime(self) -> EnvRuntime:
        """The runtime in use: the one given, else in-process with ``trust_remote_code``,
        else a sandbox whose per-call deadline is ``config.step_deadline_s`` (raises
        :class:`~spade_envs.errors.UntrustedCodeError` when no sandbox is available)."""
        if self._runtime is None:
            if self._trust:
                self._runtime = get_runtime(trust_remote_code=True)
            else:
                self._runtime = sandbox_runtime(self.config.step_deadline_s)
        return self._runtime

    def new_report(self, filename: str) -> AcceptanceReport:
        return AcceptanceReport(filename=filename)

    def run(self, source: Any, filename: str = "<env>") -> AcceptanceReport:
        """Run every stage on ``source``; the report lists the stages that ran."""
        ctx = Context(source=source, filename=filename, started=time.perf_counter())
        ctx.deadline = ctx.started + self.config.candidate_deadline_s  # plays check it inside stages
        report = self.new_report(filename)
        try:
            for name in self.stage_names:
                verdict = self._run_stage(name, ctx)
                if verdict is None:  # a later stage's failure surfaced early: skip this one
                    continue
                if name == "solution_replay" and verdict.ok:  # the flag, not the detail text, says it
                    verdict = replace(verdict, verified=ctx.verified and not ctx.no_solution)
                report.stages.append(verdict)
                if not verdict.ok:
                    break
        finally:
            self._close(ctx)
            report.class_name = ctx.class_name
            report.sha256 = source_sha256(source) if isinstance(source, str) else ""
            report.seconds = time.perf_counter() - ctx.started
            report.verified = ctx.verified and not ctx.no_solution
            report.solution_form = ctx.solution_form
        return report

    def _run_stage(self, name: str, ctx: Context) -> StageVerdict | None:
        order = self.stage_names
        t0 = time.perf_counter()
        if name in ctx.pending:
            return StageVerdict(name, False, ctx.pending[name], 0.0)
        live = ctx.session is not None or ctx.game is not None
        if not live and ctx.pending and order.index(min(ctx.pending, key=order.index)) > order.index(name):
            return None  # no live program to check this stage on; a later stage holds the failure
        if time.perf_counter() - ctx.started > self.config.candidate_deadline_s:
            return StageVerdict(name, False, f"candidate exceeded its {self.config.candidate_deadline_s:g} s budget", 0.0)
        try:
            ok, detail = True, getattr(self, f"_stage_{name}")(ctx)
        except Reject as exc:
            ok, detail = False, str(exc)
        except BudgetExceeded:
            ok, detail = False, f"candidate exceeded its {self.config.candidate_deadline_s:g} s budget (during this stage)"
        except EnvProgramError as exc:
            if exc.stage in order and order.index(exc.stage) > order.index(name):
                ctx.pending[exc.stage] = str(exc)
                return None
            ok, detail = False, str(exc)
        except EnvExecutionError as exc:
            ok, detail = False, f"{exc.kind}: {exc}"
        except SpadeError as exc:
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a runtime or pipeline bug must not take the caller down
            ok, detail = False, f"internal error while checking: {type(exc).__name__}: {exc}"
        return StageVerdict(name, ok, detail, time.perf_counter() - t0)

    def _close(self, ctx: Context) -> None:
        for live in (ctx.game, ctx.session):
            if live is None:
                continue
            try:
                live.close()
            except Exception:  # noqa: BLE001 - closing must never raise into the caller
                pass
        ctx.game = ctx.session = None

    def _track(self, ctx: Context, seconds: float, what: str) -> None:
        ctx.max_call_s = max(ctx.max_call_s, seconds)
        if seconds > self.config.step_deadline_s:
            raise Reject(f"{what} took {seconds:.2f} s (deadline {self.config.step_deadline_s:g} s per call)")

    # -- stages every pipeline shares ----------------------------------------------------
    def _stage_size_syntax(self, ctx: Context) -> str:
        tree = parse_source(ctx.source, ctx.filename)
        if isinstance(ctx.source, bytes):
            ctx.source = ctx.source.decode("utf-8")
        ctx.tree = tree
        return f"{len(ctx.source.encode('utf-8'))} bytes, {len(ctx.source.splitlines())} lines, parses"

    def _stage_novelty(self, ctx: Context) -> str:
        check = self.config.novelty_check
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
