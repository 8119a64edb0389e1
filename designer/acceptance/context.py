"""What the stages of one candidate share: its context.

:class:`Context` holds what every pipeline needs (the source, the config and runtime of
the run, the budget, failures found early for a later stage in ``pending``);
:class:`SingleContext` adds the live session of a single-player program and what its
stages learnt (first observations, solutions, replays, garbage observations) with the
helpers that play it; :class:`GameContext` the live game of a multi-player program and
its ``play``. A stage raises :class:`Reject` with the reason when it fails.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spade_envs.errors import Stage
from spade_envs.runtime import EnvRuntime, EnvSession
from spade_envs.solutions import solution_readings

from .config import AcceptanceConfig
from .probes import BudgetExceeded, ProbeEpisode, play, smoke_actions
from .verdicts import AcceptanceReport


class Reject(Exception):
    """A stage failed; the message is the verdict's detail."""


@dataclass
class Context:
    """The candidate, the run's config and runtime, its budget and early failures."""

    source: Any
    filename: str
    config: AcceptanceConfig
    runtime_of: Callable[[], EnvRuntime]  # the runtime, made on first use (a missing sandbox fails a stage)
    started: float = field(default_factory=time.perf_counter)
    tree: Any = None
    class_name: str | None = None
    pending: dict[Stage, str] = field(default_factory=dict)  # stage -> failure found early
    max_call_s: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the loader tolerated (shown in verdicts)

    @property
    def runtime(self) -> EnvRuntime:
        """Where the program runs (:func:`spade_envs.trust.get_runtime` semantics)."""
        return self.runtime_of()

    @property
    def deadline(self) -> float:
        """``perf_counter()`` value when the candidate's budget ends (plays check it)."""
        return self.started + self.config.candidate_deadline_s

    @property
    def live(self) -> bool:
        """A program is open to check stages on."""
        return False

    def close(self) -> None:
        """Close what is open; never raises."""

    def finish(self, report: AcceptanceReport) -> None:
        """Write what the run learnt into ``report``."""
        report.class_name = self.class_name

    def budget(self) -> None:
        """Raise :class:`BudgetExceeded` once the candidate's budget is spent."""
        if time.perf_counter() > self.deadline:
            raise BudgetExceeded("the candidate's time budget ran out")

    def track(self, seconds: float, what: str) -> None:
        """Record a call's duration; one over ``config.step_deadline_s`` (stretched by the
        machine's load, :mod:`spade_envs.sandbox.load`) rejects."""
        self.max_call_s = max(self.max_call_s, seconds)
        if seconds > self.config.step_deadline_s:
            from spade_envs.sandbox.load import load_factor

            factor = load_factor()
            if seconds > self.config.step_deadline_s * factor:
                load = f", x{factor:.1f} for the machine's load" if factor > 1 else ""
                raise Reject(f"{what} took {seconds:.2f} s (deadline {self.config.step_deadline_s:g} s per call{load})")


def _close(live: Any) -> None:
    if live is None:
        return
    try:
        live.close()
    except Exception:  # noqa: BLE001 - closing must never raise into the caller
        pass


@dataclass
class SingleContext(Context):
    """A single-player candidate: its session and what earlier stages learnt."""

    session: EnvSession | None = None
    resets: dict[Any, str] = field(default_factory=dict)  # seed -> first observation
    solutions: dict[Any, str] = field(default_factory=dict)  # seed -> solution() text
    replays: dict[Any, Any] = field(default_factory=dict)  # seed -> solution play (probes.ProbeEpisode)
    smoke_plays: list[Any] = field(default_factory=list)
    junk_tried: set[str] = field(default_factory=set)
    garbage_obs: list[tuple[Any, str]] = field(default_factory=list)  # (seed, obs), episode not over
    no_solution: bool = False  # the program defines no solution()
    solution_form: int = 0  # index into spade_envs.solutions.solution_plans() of the winning replay
    snapshots: dict[Any, str] = field(default_factory=dict)  # seed -> JSON state after reset (task comparison)
    replay: Any = None  # single_player_stages.ReplayOutcome, once the solution's readings were tried
    verified: bool = True  # False: no solution(), or no reading of it replays a win
    defines_hint: bool = False  # the class defines hint() (a None from it is then a tolerated failure)

    @property
    def live(self) -> bool:
        return self.session is not None

    def close(self) -> None:
        _close(self.session)
        self.session = None

    def finish(self, report: AcceptanceReport) -> None:
        super().finish(report)
        report.verified = self.verified and not self.no_solution
        report.solution_form = self.solution_form

    def reopen(self) -> None:
        """A new session on the same program (after a call killed the old one)."""
        self.close()
        self.session = self.runtime.open(self.source, kwargs=dict(self.config.env_kwargs), filename=self.filename)

    def play(self, seed: Any, actions: list[str] | tuple[str, ...], *, want_solution: bool = False) -> ProbeEpisode:
        """One episode from ``reset(seed)`` (:func:`.probes.play`), within the budget."""
        assert self.session is not None
        episode = play(self.runtime, self.session, seed, actions, want_solution=want_solution, deadline=self.deadline)
        self.track(episode.max_call_s, f"a call with seed {seed}")
        if episode.no_solution:
            self.no_solution = True
        return episode

    def smoke_play(self, seed: Any, index: int) -> ProbeEpisode:
        """Reset with ``seed`` and step the junk actions (rotated by ``index``)."""
        junk = smoke_actions()
        actions = junk[index % len(junk) :] + junk[: index % len(junk)]
        episode = self.play(seed, actions, want_solution=True)
        self.smoke_plays.append(episode)
        tried = len(episode.steps) + (episode.error is not None)
        self.junk_tried.update(actions[:tried])
        if seed is not None:
            self.resets.setdefault(seed, episode.obs0)
            self.solutions.setdefault(seed, episode.solution or "")
        return episode

    def actions(self, seed: Any) -> list[str]:
        """The replay of ``seed``'s solution (the form that won, once known); [] without one."""
        if self.no_solution:
            return []
        tools = self.session.tools if self.session is not None else []
        readings = solution_readings(self.solutions.get(seed) or "", tools, self.resets.get(seed))
        reader = self.replay.reader if self.replay is not None else ""
        won = next((actions for name, actions in readings if reader and name == reader), None)
        return won if won is not None else readings[min(self.solution_form, len(readings) - 1)][1]

    def solution(self, seed: Any) -> str:
        """``solution()`` after ``reset(seed)`` (remembered; "" without one)."""
        if seed not in self.solutions:
            self.budget()
            obs, _ = self.session.reset(seed)  # type: ignore[union-attr]
            self.resets.setdefault(seed, obs)
            if self.no_solution:
                self.solutions[seed] = ""
                self.snapshots[seed] = json.dumps(self.session.snapshot(), sort_keys=True, default=repr)  # type: ignore[union-attr]
            else:
                self.solutions[seed] = self.session.solution()  # type: ignore[union-attr]
        return self.solutions[seed]


@dataclass
class GameResult:
    """One game: each player's return, its length, how it ended and its trace."""

    returns: list[float]
    steps: int
    terminated: bool
    truncated: bool
    trace: list[Any]


@dataclass
class GameContext(Context):
    """A multi-player candidate: its game info and live game."""

    game_info: Any = None  # spade_envs.games.GameInfo
    game: Any = None  # spade_envs.games.MultiPlayerSession

    @property
    def live(self) -> bool:
        return self.game is not None

    def close(self) -> None:
        _close(self.game)
        self.game = None

    def timed(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, rejected when it overruns ``config.step_deadline_s``."""
        t0 = time.perf_counter()
        out = fn(*args)
        seconds = time.perf_counter() - t0
        if seconds > self.config.step_deadline_s:
            raise Reject(f"{what} took {seconds:.2f} s (deadline {self.config.step_deadline_s:g} s per call)")
        return out

    def play(self, seed: int | None, policies: list[Any]) -> GameResult:
        """One game from ``reset(seed)``; ``policies[p].act(game, p)`` gives p's move."""
        game = self.game
        self.timed("reset()", game.reset, seed)
        returns = [0.0] * game.num_players
        trace: list[Any] = [game.views()]
        for steps in range(1, self.config.max_game_steps + 1):
            if game.simultaneous:
                action: Any = [policies[p].act(game, p) for p in range(game.num_players)]
            else:
                action = policies[game.current_player].act(game, game.current_player)
            _, rewards, terminated, truncated, _ = self.timed("step()", game.step, action)
            returns = [a + b for a, b in zip(returns, rewards)]
            trace.append((game.views(), rewards, terminated, truncated))
            if terminated or truncated:
                return GameResult(returns, steps, terminated, truncated, trace)
        raise Reject(f"the game did not end within {self.config.max_game_steps} steps (seed {seed}); "
                      "every step must count towards the turn limit")
