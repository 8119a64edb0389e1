"""Acceptance of multi-player games (the game format of :mod:`spade_envs.multiplayer`).

:class:`MultiPlayerAcceptance` runs these stages in order and stops at the first failure;
each is a named :class:`~spade_envs.designer.verdicts.StageVerdict`:

``size_syntax``   UTF-8 source within the size limit that parses.
``compile``       compiles; the game class (all methods of the format) is found and
                  constructed through the runtime (the sandbox by default).
``interface``     ``METADATA["num_players"]`` declares the player count and matches
                  ``num_players``; the fresh instance is playable WITHOUT a reset (one
                  scripted move); ``reset`` -> (str, dict); ``step`` -> (str, list of one
                  number per player, bool, bool, dict); ``observe(p)`` a str for every
                  player; ``scripted_action()`` a non-empty str; ``legal_actions()`` a
                  list of str when defined; ``hint()`` a str when defined.
``smoke``         junk actions from every player, for every seed of ``config.seeds``, end
                  the game (the turn limit) within ``config.max_steps`` steps, no errors.
``determinism``   resetting the same instance with one seed replays the same game
                  (views, rewards and end flags at every step) under seeded policies.
``random_play``   random-vs-random games (``legal_actions`` when defined) terminate or
                  truncate within ``config.max_steps`` steps.
``scripted_play`` the scripted baseline wins or draws where it applies: zero-sum and
                  general-sum games, for EACH seat, scripted vs random scores
                  (wins + draws/2) / games >= ``config.min_scripted_score``; cooperative
                  games (tag ``cooperative``), scripted self-play succeeds (reward >=
                  ``config.win_reward``) in >= ``config.min_coop_success`` of games.
``garbage``       a player sending junk never wins against scripted opponents; an
                  all-junk cooperative game never succeeds.
``information``   games tagged ``hidden-information`` (and simultaneous ones) show
                  different views to different players for some seed.
``novelty``       ``config.novelty_check(source) -> (ok, detail)``, as for single-player.

Errors of the program become a failed verdict naming the reason; :meth:`run` never
raises because of the candidate. The report is an :class:`AcceptanceReport` whose
``accepted`` is judged against :data:`MP_STAGES`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spade_envs.errors import EnvExecutionError, EnvProgramError, SpadeError
from spade_envs.multiplayer import PAYOFF_TAGS, GameInfo, inspect_game, is_multiplayer_source
from spade_envs.multiplayer_runtime import MultiPlayerSession, RandomPolicy, ScriptedPolicy, adapt_source
from spade_envs.program import parse_source, source_sha256
from spade_envs.runtime import EnvRuntime, get_runtime

from .verdicts import AcceptanceReport, StageVerdict

MP_STAGES: tuple[str, ...] = (
    "size_syntax", "compile", "interface", "smoke", "determinism", "random_play", "scripted_play",
    "garbage", "information", "novelty",
)

JUNK = ("", "pass", "\\boxed{}", "\\boxed{-1}", "\\boxed{zzz}", "I resign?", "\\boxed{999 999}", "日本語 ✓")


@dataclass(frozen=True)
class MultiPlayerConfig:
    """Knobs of the game pipeline (defaults are what ``spade validate`` would use)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    games_per_seat: int = 8
    max_steps: int = 300
    step_deadline_s: float = 2.0
    candidate_deadline_s: float = 90.0
    win_reward: float = 1.0
    min_scripted_score: float = 0.6
    min_coop_success: float = 0.8
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    novelty_check: Callable[[str], "tuple[bool, str]"] | None = None


class MultiPlayerReport(AcceptanceReport):
    """An :class:`AcceptanceReport` over :data:`MP_STAGES` (same JSON shape)."""

    @property
    def accepted(self) -> bool:
        names = [s.name for s in self.stages]
        return names == list(MP_STAGES) and all(s.ok for s in self.stages)

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "multiplayer": True}


class _Reject(Exception):
    pass


@dataclass
class _Ctx:
    source: str
    filename: str
    started: float
    info: GameInfo | None = None
    game: MultiPlayerSession | None = None
    pending: dict[str, str] = field(default_factory=dict)


@dataclass
class GameResult:
    returns: list[float]
    steps: int
    terminated: bool
    truncated: bool
    trace: list[Any]


class MultiPlayerAcceptance:
    """Runs the game stages (module docstring). ``runtime`` defaults to the acceptance
    sandbox (in-process with ``trust_remote_code=True``)."""

    def __init__(self, config: MultiPlayerConfig | None = None, *, runtime: EnvRuntime | None = None,
                 trust_remote_code: bool = False) -> None:
        self.config = config or MultiPlayerConfig()
        self._runtime = runtime
        self._trust = trust_remote_code

    @property
    def runtime(self) -> EnvRuntime:
        if self._runtime is None:
            if self._trust:
                self._runtime = get_runtime(trust_remote_code=True)
            else:
                from .acceptance import sandbox_runtime

                self._runtime = sandbox_runtime(self.config.step_deadline_s)
        return self._runtime

    @staticmethod
    def applies_to(source: Any) -> bool:
        """True when ``source`` is a multi-player game (what the single-player pipeline
        dispatches on)."""
        return is_multiplayer_source(source)

    def run(self, source: Any, filename: str = "<game>") -> MultiPlayerReport:
        ctx = _Ctx(source=source, filename=filename, started=time.perf_counter())
        report = MultiPlayerReport(filename=filename)
        try:
            for name in MP_STAGES:
                verdict = self._stage(name, ctx)
                report.stages.append(verdict)
                if not verdict.ok:
                    break
        finally:
            if ctx.game is not None:
                ctx.game.close()
            report.class_name = ctx.info.class_name if ctx.info else None
            report.sha256 = source_sha256(source) if isinstance(source, str) else ""
            report.seconds = time.perf_counter() - ctx.started
        return report

    def _stage(self, name: str, ctx: _Ctx) -> StageVerdict:
        t0 = time.perf_counter()
        if name in ctx.pending:
            return StageVerdict(name, False, ctx.pending[name], 0.0)
        if t0 - ctx.started > self.config.candidate_deadline_s:
            return StageVerdict(name, False, f"candidate exceeded its {self.config.candidate_deadline_s:g} s budget")
        try:
            ok, detail = True, getattr(self, f"_stage_{name}")(ctx)
        except _Reject as exc:
            ok, detail = False, str(exc)
        except EnvProgramError as exc:
            ok, detail = False, str(exc)
        except EnvExecutionError as exc:
            ok, detail = False, f"{exc.kind}: {exc}"
        except SpadeError as exc:
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a pipeline bug must not take the caller down
            ok, detail = False, f"internal error while checking: {type(exc).__name__}: {exc}"
        return StageVerdict(name, ok, detail, time.perf_counter() - t0)

    # -- playing -------------------------------------------------------------------------
    def _timed(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*args)
        seconds = time.perf_counter() - t0
        if seconds > self.config.step_deadline_s:
            raise _Reject(f"{what} took {seconds:.2f} s (deadline {self.config.step_deadline_s:g} s per call)")
        return out

    def play(self, game: MultiPlayerSession, seed: int | None, policies: list[Any]) -> GameResult:
        """One game from ``reset(seed)``; ``policies[p].act(game, p)`` gives p's move."""
        self._timed("reset()", game.reset, seed)
        returns = [0.0] * game.num_players
        trace: list[Any] = [game.views()]
        for steps in range(1, self.config.max_steps + 1):
            if game.simultaneous:
                action: Any = [policies[p].act(game, p) for p in range(game.num_players)]
            else:
                action = policies[game.current_player].act(game, game.current_player)
            _, rewards, terminated, truncated, _ = self._timed("step()", game.step, action)
            returns = [a + b for a, b in zip(returns, rewards)]
            trace.append((game.views(), rewards, terminated, truncated))
            if terminated or truncated:
                return GameResult(returns, steps, terminated, truncated, trace)
        raise _Reject(f"the game did not end within {self.config.max_steps} steps (seed {seed}); "
                      "every step must count towards the turn limit")

    # -- stages --------------------------------------------------------------------------
    def _stage_size_syntax(self, ctx: _Ctx) -> str:
        parse_source(ctx.source, ctx.filename)
        if isinstance(ctx.source, bytes):
            ctx.source = ctx.source.decode("utf-8")
        return f"{len(ctx.source.encode('utf-8'))} bytes, parses"

    def _stage_compile(self, ctx: _Ctx) -> str:
        try:
            compile(ctx.source, ctx.filename, "exec")
        except (SyntaxError, ValueError) as exc:
            raise _Reject(f"does not compile: {exc}") from None
        try:
            ctx.info = inspect_game(ctx.source, ctx.filename)
        except EnvProgramError as exc:
            ctx.pending["interface"] = str(exc)
            return "compiles to bytecode"
        session = self.runtime.open(adapt_source(ctx.source, ctx.info), kwargs=dict(self.config.env_kwargs),
                                    filename=ctx.filename)
        try:
            ctx.game = MultiPlayerSession(session, self.runtime, ctx.info)
        except EnvProgramError as exc:
            session.close()
            ctx.pending["interface"] = f"{exc} (a freshly constructed {ctx.info.class_name})"
            return "compiled; the class constructs"
        return f"compiled; {ctx.info.class_name}() constructed"

    def _stage_interface(self, ctx: _Ctx) -> str:
        game, info = ctx.game, ctx.info
        assert game is not None and info is not None
        declared = info.num_players
        if declared is None:
            raise _Reject("METADATA['num_players'] must declare the player count (the registry routes games by it)")
        if declared != game.num_players:
            raise _Reject(f"METADATA['num_players'] is {declared} but the game has num_players={game.num_players}")
        first = ScriptedPolicy().act(game, game.current_player)
        if not first.strip():
            raise _Reject("scripted_action() returned an empty string")
        self._timed("step() on a fresh instance", game.step, [first] * game.num_players if game.simultaneous else first)
        obs, _ = self._timed("reset()", game.reset, self.config.seeds[0])
        if not obs.strip():
            raise _Reject("reset() returned an empty observation")
        legal = game.legal_actions(0 if game.simultaneous else None)
        hint = game.hint()
        payoff = [t for t in info.tags if t in PAYOFF_TAGS]
        return (f"{info.class_name}: {game.num_players} players, {'simultaneous' if game.simultaneous else 'turn-based'}"
                f"{', ' + payoff[0] if payoff else ''}; legal_actions() "
                f"{'-> %d moves' % len(legal) if legal is not None else 'not defined'}"
                + (", hint() -> str" if hint is not None else ""))

    def _junk_policy(self) -> Any:
        class Junk:
            def __init__(self) -> None:
                self.i = 0

            def act(self, game: MultiPlayerSession, player: int) -> str:
                self.i += 1
                return JUNK[self.i % len(JUNK)]

        return Junk()

    def _stage_smoke(self, ctx: _Ctx) -> str:
        game = ctx.game
        assert game is not None
        longest = 0
        for seed in (*self.config.seeds, None):
            result = self.play(game, seed, [self._junk_policy() for _ in range(game.num_players)])
            longest = max(longest, result.steps)
        return f"junk-only games end within {longest} steps for seeds {list(self.config.seeds)} and None"

    def _stage_determinism(self, ctx: _Ctx) -> str:
        game = ctx.game
        assert game is not None
        for seed in self.config.seeds[:2]:
            runs = [self.play(game, seed, [ScriptedPolicy()] + [RandomPolicy(seed + p) for p in range(1, game.num_players)])
                    for _ in range(2)]
            if runs[0].trace != runs[1].trace:
                step = next(i for i, (a, b) in enumerate(zip(runs[0].trace, runs[1].trace)) if a != b)
                raise _Reject(f"reset(seed={seed}) twice gave different games (first difference at step {step})")
        return f"same seed, same game (seeds {list(self.config.seeds[:2])}, scripted vs random)"

    def _stage_random_play(self, ctx: _Ctx) -> str:
        game = ctx.game
        assert game is not None
        results = [self.play(game, seed, [RandomPolicy(seed * 10 + p) for p in range(game.num_players)])
                   for seed in self.config.seeds for _ in range(2)]
        ended = sum(r.terminated for r in results)
        return (f"{len(results)} random-vs-random games ended within {max(r.steps for r in results)} steps "
                f"({ended} terminated, {len(results) - ended} truncated at the turn limit)")

    def _stage_scripted_play(self, ctx: _Ctx) -> str:
        game, info = ctx.game, ctx.info
        assert game is not None and info is not None
        n = self.config.games_per_seat
        if info.cooperative:
            results = [self.play(game, s, [ScriptedPolicy() for _ in range(game.num_players)]) for s in range(n)]
            ok = sum(min(r.returns) >= self.config.win_reward for r in results) / n
            if ok < self.config.min_coop_success:
                raise _Reject(f"cooperative: scripted self-play succeeds in {ok:.0%} of {n} games "
                              f"(need {self.config.min_coop_success:.0%})")
            return f"cooperative: scripted self-play succeeds in {ok:.0%} of {n} games"
        scores = []
        for seat in range(game.num_players):
            total = 0.0
            for s in range(n):
                policies = [RandomPolicy(1000 * seat + 10 * s + p) for p in range(game.num_players)]
                policies[seat] = ScriptedPolicy()
                r = self.play(game, s, policies).returns
                best_other = max(v for p, v in enumerate(r) if p != seat)
                total += 1.0 if r[seat] > best_other else 0.5 if r[seat] == best_other else 0.0
            scores.append(total / n)
        detail = ", ".join(f"seat {p}: {sc:.2f}" for p, sc in enumerate(scores))
        if min(scores) < self.config.min_scripted_score:
            raise _Reject(f"the scripted baseline does not beat random in every seat (score = (wins + draws/2) / "
                          f"games over {n} games: {detail}; need {self.config.min_scripted_score:g})")
        return f"scripted vs random, score per seat over {n} games: {detail}"

    def _stage_garbage(self, ctx: _Ctx) -> str:
        game, info = ctx.game, ctx.info
        assert game is not None and info is not None
        if info.cooperative:
            for seed in self.config.seeds:
                r = self.play(game, seed, [self._junk_policy() for _ in range(game.num_players)]).returns
                if max(r) >= self.config.win_reward:
                    raise _Reject(f"an all-junk cooperative game succeeds (seed {seed}, returns {r})")
            return "junk never succeeds"
        for seat in range(game.num_players):
            for seed in self.config.seeds:
                policies: list[Any] = [ScriptedPolicy() for _ in range(game.num_players)]
                policies[seat] = self._junk_policy()
                r = self.play(game, seed, policies).returns
                if r[seat] > max(v for p, v in enumerate(r) if p != seat):
                    raise _Reject(f"a junk player in seat {seat} beats the scripted players (seed {seed}, returns {r})")
        return "a junk player never beats the scripted players, in any seat"

    def _stage_information(self, ctx: _Ctx) -> str:
        game, info = ctx.game, ctx.info
        assert game is not None and info is not None
        if "hidden-information" not in info.tags and not game.simultaneous:
            return "perfect information: no hidden state to check"
        for seed in self.config.seeds:
            game.reset(seed)
            views = game.views()
            if len(set(views)) == len(views):
                return f"players see different views (seed {seed})"
        raise _Reject("a hidden-information game shows every player the same view: nothing is hidden")

    def _stage_novelty(self, ctx: _Ctx) -> str:
        check = self.config.novelty_check
        if check is None:
            return "no memory given"
        ok, detail = check(ctx.source)
        if not ok:
            raise _Reject(str(detail) or "near-duplicate of a known environment")
        return str(detail) or "novel"


def validate_game(source: Any, filename: str = "<game>", *, config: MultiPlayerConfig | None = None,
                  runtime: EnvRuntime | None = None, trust_remote_code: bool = False) -> MultiPlayerReport:
    """One-shot acceptance of a game source."""
    return MultiPlayerAcceptance(config, runtime=runtime, trust_remote_code=trust_remote_code).run(source, filename)


def config_from_single(config: Any | None) -> MultiPlayerConfig:
    """The game config matching a single-player ``AcceptanceConfig`` (seeds, deadlines,
    constructor kwargs and the novelty check carry over)."""
    if config is None:
        return MultiPlayerConfig()
    return MultiPlayerConfig(
        seeds=tuple(config.seeds), step_deadline_s=config.step_deadline_s,
        candidate_deadline_s=max(config.candidate_deadline_s, MultiPlayerConfig.candidate_deadline_s),
        win_reward=config.win_reward, env_kwargs=dict(config.env_kwargs), novelty_check=config.novelty_check,
    )


def dispatch(source: Any, filename: str, config: Any | None, runtime: EnvRuntime | None,
             trust_remote_code: bool) -> MultiPlayerReport | None:
    """The game report when ``source`` is a multi-player game, else None: the one call the
    single-player ``AcceptancePipeline.run`` makes first so games take their own path."""
    if not is_multiplayer_source(source):
        return None
    pipeline = MultiPlayerAcceptance(config_from_single(config), runtime=runtime, trust_remote_code=trust_remote_code)
    return pipeline.run(source, filename)
