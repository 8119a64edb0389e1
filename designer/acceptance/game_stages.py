"""Acceptance of multi-player games (the game format of :mod:`spade_envs.games.format`).

:class:`MultiPlayerAcceptance` runs these stages in order and stops at the first failure;
each is a named :class:`~spade_envs.designer.acceptance.verdicts.StageVerdict`:

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
                  the game (the turn limit) within ``config.max_game_steps`` steps, no errors.
``determinism``   resetting the same instance with one seed replays the same game
                  (views, rewards and end flags at every step) under seeded policies.
``random_play``   random-vs-random games (``legal_actions`` when defined) terminate or
                  truncate within ``config.max_game_steps`` steps.
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
``accepted`` is judged against :data:`GAME_STAGES` (``to_json`` adds ``"multiplayer": true``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spade_envs.errors import EnvProgramError
from spade_envs.games import MultiPlayerSession, RandomPolicy, ScriptedPolicy, inspect_game
from spade_envs.games.format import PAYOFF_TAGS
from spade_envs.games.runtime import adapt_source

from .probes import smoke_actions
from .stage_runner import AcceptanceConfig, Context, Reject, StageRunner
from .verdicts import GAME_STAGES, AcceptanceReport

#: kept for callers of the first game pipeline
MP_STAGES = GAME_STAGES


@dataclass
class GameResult:
    returns: list[float]
    steps: int
    terminated: bool
    truncated: bool
    trace: list[Any]


#: illegal moves in game form, played after the single-player smoke actions
GAME_JUNK = ("\\boxed{-1}", "\\boxed{zzz}", "I resign?", "\\boxed{999 999}", "日本語 ✓")


class _Junk:
    """Cycles through the single-player smoke actions (empty, unicode, huge, ...) and
    :data:`GAME_JUNK`."""

    def __init__(self) -> None:
        self.i = 0
        self.moves = smoke_actions() + list(GAME_JUNK)

    def act(self, game: MultiPlayerSession, player: int) -> str:
        self.i += 1
        return self.moves[self.i % len(self.moves)]


class GameAcceptance(StageRunner):
    """Runs the game stages (module docstring) with an :class:`AcceptanceConfig`;
    ``runtime`` defaults to the acceptance sandbox (in-process with ``trust_remote_code=True``)."""

    stage_names = GAME_STAGES

    def new_report(self, filename: str) -> AcceptanceReport:
        return AcceptanceReport(filename=filename, expected=GAME_STAGES)

    # -- playing -------------------------------------------------------------------------
    def _timed(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*args)
        seconds = time.perf_counter() - t0
        if seconds > self.config.step_deadline_s:
            raise Reject(f"{what} took {seconds:.2f} s (deadline {self.config.step_deadline_s:g} s per call)")
        return out

    def play(self, game: MultiPlayerSession, seed: int | None, policies: list[Any]) -> GameResult:
        """One game from ``reset(seed)``; ``policies[p].act(game, p)`` gives p's move."""
        self._timed("reset()", game.reset, seed)
        returns = [0.0] * game.num_players
        trace: list[Any] = [game.views()]
        for steps in range(1, self.config.max_game_steps + 1):
            if game.simultaneous:
                action: Any = [policies[p].act(game, p) for p in range(game.num_players)]
            else:
                action = policies[game.current_player].act(game, game.current_player)
            _, rewards, terminated, truncated, _ = self._timed("step()", game.step, action)
            returns = [a + b for a, b in zip(returns, rewards)]
            trace.append((game.views(), rewards, terminated, truncated))
            if terminated or truncated:
                return GameResult(returns, steps, terminated, truncated, trace)
        raise Reject(f"the game did not end within {self.config.max_game_steps} steps (seed {seed}); "
                      "every step must count towards the turn limit")

    # -- stages --------------------------------------------------------------------------
    def _stage_compile(self, ctx: Context) -> str:
        try:
            compile(ctx.source, ctx.filename, "exec")
        except (SyntaxError, ValueError) as exc:
            raise Reject(f"does not compile: {exc}") from None
        try:
            ctx.game_info = inspect_game(ctx.source, ctx.filename)
        except EnvProgramError as exc:
            ctx.pending["interface"] = str(exc)
            return "compiles to bytecode"
        ctx.class_name = ctx.game_info.class_name
        session = self.runtime.open(adapt_source(ctx.source, ctx.game_info), kwargs=dict(self.config.env_kwargs),
                                    filename=ctx.filename)
        try:
            ctx.game = MultiPlayerSession(session, self.runtime, ctx.game_info)
        except EnvProgramError as exc:
            session.close()
            ctx.pending["interface"] = f"{exc} (a freshly constructed {ctx.game_info.class_name})"
            return "compiled; the class constructs"
        return f"compiled; {ctx.game_info.class_name}() constructed"

    def _stage_interface(self, ctx: Context) -> str:
        game, info = ctx.game, ctx.game_info
        assert game is not None and info is not None
        declared = info.num_players
        if declared is None:
            raise Reject("METADATA['num_players'] must declare the player count (the registry routes games by it)")
        if declared != game.num_players:
            raise Reject(f"METADATA['num_players'] is {declared} but the game has num_players={game.num_players}")
        first = ScriptedPolicy().act(game, game.current_player)
        if not first.strip():
            raise Reject("scripted_action() returned an empty string")
        self._timed("step() on a fresh instance", game.step, [first] * game.num_players if game.simultaneous else first)
        obs, _ = self._timed("reset()", game.reset, self.config.seeds[0])
        if not obs.strip():
            raise Reject("reset() returned an empty observation")
        legal = game.legal_actions(0 if game.simultaneous else None)
        hint = game.hint()
        payoff = [t for t in info.tags if t in PAYOFF_TAGS]
        return (f"{info.class_name}: {game.num_players} players, {'simultaneous' if game.simultaneous else 'turn-based'}"
                f"{', ' + payoff[0] if payoff else ''}; legal_actions() "
                f"{'-> %d moves' % len(legal) if legal is not None else 'not defined'}"
                + (", hint() -> str" if hint is not None else ""))

    def _junk_policy(self) -> Any:
        return _Junk()

    def _stage_smoke(self, ctx: Context) -> str:
        game = ctx.game
        assert game is not None
        longest = 0
        for seed in (*self.config.seeds, None):
            result = self.play(game, seed, [self._junk_policy() for _ in range(game.num_players)])
            longest = max(longest, result.steps)
        return f"junk-only games end within {longest} steps for seeds {list(self.config.seeds)} and None"

    def _stage_determinism(self, ctx: Context) -> str:
        game = ctx.game
        assert game is not None
        for seed in self.config.seeds[:2]:
            runs = [self.play(game, seed, [ScriptedPolicy()] + [RandomPolicy(seed + p) for p in range(1, game.num_players)])
                    for _ in range(2)]
            if runs[0].trace != runs[1].trace:
                step = next(i for i, (a, b) in enumerate(zip(runs[0].trace, runs[1].trace)) if a != b)
                raise Reject(f"reset(seed={seed}) twice gave different games (first difference at step {step})")
        return f"same seed, same game (seeds {list(self.config.seeds[:2])}, scripted vs random)"

    def _stage_random_play(self, ctx: Context) -> str:
        game = ctx.game
        assert game is not None
        results = [self.play(game, seed, [RandomPolicy(seed * 10 + p) for p in range(game.num_players)])
                   for seed in self.config.seeds for _ in range(2)]
        ended = sum(r.terminated for r in results)
        return (f"{len(results)} random-vs-random games ended within {max(r.steps for r in results)} steps "
                f"({ended} terminated, {len(results) - ended} truncated at the turn limit)")

    def _stage_scripted_play(self, ctx: Context) -> str:
        game, info = ctx.game, ctx.game_info
        assert game is not None and info is not None
        n = self.config.games_per_seat
        if info.cooperative:
            results = [self.play(game, s, [ScriptedPolicy() for _ in range(game.num_players)]) for s in range(n)]
            ok = sum(min(r.returns) >= self.config.win_reward for r in results) / n
            if ok < self.config.min_coop_success:
                raise Reject(f"cooperative: scripted self-play succeeds in {ok:.0%} of {n} games "
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
            raise Reject(f"the scripted baseline does not beat random in every seat (score = (wins + draws/2) / "
                          f"games over {n} games: {detail}; need {self.config.min_scripted_score:g})")
        return f"scripted vs random, score per seat over {n} games: {detail}"

    def _stage_garbage(self, ctx: Context) -> str:
        game, info = ctx.game, ctx.game_info
        assert game is not None and info is not None
        if info.cooperative:
            for seed in self.config.seeds:
                r = self.play(game, seed, [self._junk_policy() for _ in range(game.num_players)]).returns
                if max(r) >= self.config.win_reward:
                    raise Reject(f"an all-junk cooperative game succeeds (seed {seed}, returns {r})")
            return "junk never succeeds"
        for seat in range(game.num_players):
            for seed in self.config.seeds:
                policies: list[Any] = [ScriptedPolicy() for _ in range(game.num_players)]
                policies[seat] = self._junk_policy()
                r = self.play(game, seed, policies).returns
                if r[seat] > max(v for p, v in enumerate(r) if p != seat):
                    raise Reject(f"a junk player in seat {seat} beats the scripted players (seed {seed}, returns {r})")
        return "a junk player never beats the scripted players, in any seat"

    def _stage_information(self, ctx: Context) -> str:
        game, info = ctx.game, ctx.game_info
        assert game is not None and info is not None
        if "hidden-information" not in info.tags and not game.simultaneous:
            return "perfect information: no hidden state to check"
        for seed in self.config.seeds:
            game.reset(seed)
            views = game.views()
            if len(set(views)) == len(views):
                return f"players see different views (seed {seed})"
        raise Reject("a hidden-information game shows every player the same view: nothing is hidden")


def validate_game(source: Any, filename: str = "<game>", *, config: AcceptanceConfig | None = None,
                  runtime: Any = None, trust_remote_code: bool = False) -> AcceptanceReport:
    """One-shot acceptance of a game source."""
    return GameAcceptance(config, runtime=runtime, trust_remote_code=trust_remote_code).run(source, filename)
