"""Acceptance of multi-player games (the game format of :mod:`spade_envs.games.format`).

:data:`GAME_CHECKS` are these stages, in order (run by :func:`~.runner.run_stages` on a
:class:`~.context.GameContext`, stopping at the first failure); each gives a named
:class:`~spade_envs.designer.acceptance.verdicts.StageVerdict`:

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

Errors of the program become a failed verdict naming the reason; acceptance never
raises because of the candidate. The report is an :class:`AcceptanceReport` whose
``accepted`` is judged against :data:`GAME_STAGES` (``to_json`` adds ``"multiplayer": true``).
"""

from __future__ import annotations

from typing import Any

from spade_envs.errors import EnvProgramError, Stage
from spade_envs.games import MultiPlayerSession, RandomPolicy, ScriptedPolicy, inspect_game
from spade_envs.games.format import PAYOFF_TAGS
from spade_envs.games.runtime import adapt_source

from .context import GameContext, Reject
from .probes import smoke_actions
from .runner import Novelty, SizeSyntax, StageCheck, compile_or_reject

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


class GameCompile(StageCheck):
    """Compiles; the game class is found and constructed through the runtime."""

    name = Stage.COMPILE
    settings = ("env_kwargs",)

    def check(self, ctx: GameContext) -> str:
        compile_or_reject(ctx.source, ctx.filename)
        try:
            ctx.game_info = inspect_game(ctx.source, ctx.filename)
        except EnvProgramError as exc:
            ctx.pending[Stage.INTERFACE] = str(exc)
            return "compiles to bytecode"
        ctx.class_name = ctx.game_info.class_name
        session = ctx.runtime.open(adapt_source(ctx.source, ctx.game_info), kwargs=dict(ctx.config.env_kwargs),
                                   filename=ctx.filename)
        try:
            ctx.game = MultiPlayerSession(session, ctx.runtime, ctx.game_info)
        except EnvProgramError as exc:
            session.close()
            ctx.pending[Stage.INTERFACE] = f"{exc} (a freshly constructed {ctx.game_info.class_name})"
            return "compiled; the class constructs"
        return f"compiled; {ctx.game_info.class_name}() constructed"


class GameInterface(StageCheck):
    """Player count declared and right; playable without a reset; the methods' types."""

    name = Stage.INTERFACE
    settings = ("seeds", "step_deadline_s")

    def check(self, ctx: GameContext) -> str:
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
        ctx.timed("step() on a fresh instance", game.step, [first] * game.num_players if game.simultaneous else first)
        obs, _ = ctx.timed("reset()", game.reset, ctx.config.seeds[0])
        if not obs.strip():
            raise Reject("reset() returned an empty observation")
        legal = game.legal_actions(0 if game.simultaneous else None)
        hint = game.hint()
        payoff = [t for t in info.tags if t in PAYOFF_TAGS]
        return (f"{info.class_name}: {game.num_players} players, {'simultaneous' if game.simultaneous else 'turn-based'}"
                f"{', ' + payoff[0] if payoff else ''}; legal_actions() "
                f"{'-> %d moves' % len(legal) if legal is not None else 'not defined'}"
                + (", hint() -> str" if hint is not None else ""))


class GameSmoke(StageCheck):
    """Junk from every player, for every seed and None, ends the game within the limit."""

    name = Stage.SMOKE
    settings = ("seeds", "max_game_steps", "step_deadline_s")

    def check(self, ctx: GameContext) -> str:
        game = ctx.game
        assert game is not None
        longest = 0
        for seed in (*ctx.config.seeds, None):
            result = ctx.play(seed, [_Junk() for _ in range(game.num_players)])
            longest = max(longest, result.steps)
        return f"junk-only games end within {longest} steps for seeds {list(ctx.config.seeds)} and None"


class GameDeterminism(StageCheck):
    """Resetting the same instance with one seed replays the same game."""

    name = Stage.DETERMINISM
    settings = ("seeds",)

    def check(self, ctx: GameContext) -> str:
        game = ctx.game
        assert game is not None
        for seed in ctx.config.seeds[:2]:
            runs = [ctx.play(seed, [ScriptedPolicy()] + [RandomPolicy(seed + p) for p in range(1, game.num_players)])
                    for _ in range(2)]
            if runs[0].trace != runs[1].trace:
                step = next(i for i, (a, b) in enumerate(zip(runs[0].trace, runs[1].trace)) if a != b)
                raise Reject(f"reset(seed={seed}) twice gave different games (first difference at step {step})")
        return f"same seed, same game (seeds {list(ctx.config.seeds[:2])}, scripted vs random)"


class RandomPlay(StageCheck):
    """Random-vs-random games end within ``config.max_game_steps`` steps."""

    name = Stage.RANDOM_PLAY
    settings = ("seeds", "max_game_steps")

    def check(self, ctx: GameContext) -> str:
        game = ctx.game
        assert game is not None
        results = [ctx.play(seed, [RandomPolicy(seed * 10 + p) for p in range(game.num_players)])
                   for seed in ctx.config.seeds for _ in range(2)]
        ended = sum(r.terminated for r in results)
        return (f"{len(results)} random-vs-random games ended within {max(r.steps for r in results)} steps "
                f"({ended} terminated, {len(results) - ended} truncated at the turn limit)")


class ScriptedPlay(StageCheck):
    """The scripted baseline beats random in every seat (cooperative: succeeds together)."""

    name = Stage.SCRIPTED_PLAY
    settings = ("games_per_seat", "min_scripted_score", "min_coop_success", "win_reward")

    def check(self, ctx: GameContext) -> str:
        game, info, cfg = ctx.game, ctx.game_info, ctx.config
        assert game is not None and info is not None
        n = cfg.games_per_seat
        if info.cooperative:
            results = [ctx.play(s, [ScriptedPolicy() for _ in range(game.num_players)]) for s in range(n)]
            ok = sum(min(r.returns) >= cfg.win_reward for r in results) / n
            if ok < cfg.min_coop_success:
                raise Reject(f"cooperative: scripted self-play succeeds in {ok:.0%} of {n} games "
                             f"(need {cfg.min_coop_success:.0%})")
            return f"cooperative: scripted self-play succeeds in {ok:.0%} of {n} games"
        scores = []
        for seat in range(game.num_players):
            total = 0.0
            for s in range(n):
                policies: list[Any] = [RandomPolicy(1000 * seat + 10 * s + p) for p in range(game.num_players)]
                policies[seat] = ScriptedPolicy()
                r = ctx.play(s, policies).returns
                best_other = max(v for p, v in enumerate(r) if p != seat)
                total += 1.0 if r[seat] > best_other else 0.5 if r[seat] == best_other else 0.0
            scores.append(total / n)
        detail = ", ".join(f"seat {p}: {sc:.2f}" for p, sc in enumerate(scores))
        if min(scores) < cfg.min_scripted_score:
            raise Reject(f"the scripted baseline does not beat random in every seat (score = (wins + draws/2) / "
                         f"games over {n} games: {detail}; need {cfg.min_scripted_score:g})")
        return f"scripted vs random, score per seat over {n} games: {detail}"


class GameGarbage(StageCheck):
    """A junk player never beats scripted ones; an all-junk cooperative game never succeeds."""

    name = Stage.GARBAGE
    settings = ("seeds", "win_reward")

    def check(self, ctx: GameContext) -> str:
        game, info = ctx.game, ctx.game_info
        assert game is not None and info is not None
        if info.cooperative:
            for seed in ctx.config.seeds:
                r = ctx.play(seed, [_Junk() for _ in range(game.num_players)]).returns
                if max(r) >= ctx.config.win_reward:
                    raise Reject(f"an all-junk cooperative game succeeds (seed {seed}, returns {r})")
            return "junk never succeeds"
        for seat in range(game.num_players):
            for seed in ctx.config.seeds:
                policies: list[Any] = [ScriptedPolicy() for _ in range(game.num_players)]
                policies[seat] = _Junk()
                r = ctx.play(seed, policies).returns
                if r[seat] > max(v for p, v in enumerate(r) if p != seat):
                    raise Reject(f"a junk player in seat {seat} beats the scripted players (seed {seed}, returns {r})")
        return "a junk player never beats the scripted players, in any seat"


class Information(StageCheck):
    """A hidden-information (or simultaneous) game shows players different views."""

    name = Stage.INFORMATION
    settings = ("seeds",)

    def check(self, ctx: GameContext) -> str:
        game, info = ctx.game, ctx.game_info
        assert game is not None and info is not None
        if "hidden-information" not in info.tags and not game.simultaneous:
            return "perfect information: no hidden state to check"
        for seed in ctx.config.seeds:
            game.reset(seed)
            views = game.views()
            if len(set(views)) == len(views):
                return f"players see different views (seed {seed})"
        raise Reject("a hidden-information game shows every player the same view: nothing is hidden")


#: The stages of a multi-player game, in order.
GAME_CHECKS: tuple[StageCheck, ...] = (
    SizeSyntax(),
    GameCompile(),
    GameInterface(),
    GameSmoke(),
    GameDeterminism(),
    RandomPlay(),
    ScriptedPlay(),
    GameGarbage(),
    Information(),
    Novelty(),
)
#: their names
GAME_STAGES: tuple[Stage, ...] = tuple(c.name for c in GAME_CHECKS)
