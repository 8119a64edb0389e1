r"""The ``games`` suite: an agent plays multi-player games against fixed baselines and itself.

For every game (registry entries with ``METADATA["num_players"] > 1``) and every opponent:

- ``random``: the other seats play uniformly among ``legal_actions()``;
- ``scripted``: the other seats play the game's own baseline (``scripted_action``);
- ``self``: the same model plays every seat (self-play; each seat has its own conversation
  and sees only its own view).

Against a baseline the agent alternates seats (match ``i`` puts it in seat ``i % n``),
so it moves first in half the matches. Outcomes are from the agent's seat: zero-sum and
general-sum games compare its return with the best other return (win / draw / loss);
cooperative games count a win when its return reaches 1.0 (success), else a loss. A game
failure is an ``error`` (not counted in the rates). Rates carry Wilson 95% intervals
(:func:`spade_envs.evals.stats.wilson_interval`). Self-play reports the first player's
win / draw / loss rates (seat 0 of each match; the first player alternates through
``reset`` per game's rules, seat 0 moves first in turn-based seed games).

Agents: a :class:`~spade_envs.agents.Backend` (batched over all live matches: one
``chat`` call per round), any ``BACKEND:MODEL`` spec that ``load_backend`` accepts, or
``replay:reference`` (plays the game's scripted strategy: checks the harness itself).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from spade_envs.errors import SpadeError
from spade_envs.games import is_multiplayer
from spade_envs.games import MultiPlayerSession, RandomPolicy, ScriptedPolicy, open_game

from .game_sessions import SeatSessions, supports_sessions
from .stats import rate_summary, wilson_interval

OPPONENTS = ("random", "scripted", "self")

GAME_SYSTEM_PROMPT = (
    "You are Player {player} in a {n}-player game against other players. Each of your replies is ONE move; "
    "the game then shows you the new situation. Think briefly, then give your move in exactly the format the "
    "game asks for, for example \\boxed{{...}}. Invalid moves are penalised."
)


@dataclass
class MatchSpec:
    env_id: str
    seed: int
    opponent: str  # random | scripted | self
    model_seats: tuple[int, ...]


@dataclass
class MatchResult:
    spec: MatchSpec
    returns: list[float] = field(default_factory=list)
    outcome: str = "error"  # win | draw | loss | error (from model_seats[0])
    steps: int = 0
    terminated: bool = False
    truncated: bool = False
    error: str | None = None
    messages: dict[int, list[dict]] = field(default_factory=dict)  # model seat -> conversation
    actions: list[tuple[int, str]] = field(default_factory=list)  # (player, action) in order

    def row(self) -> dict[str, Any]:
        s = self.spec
        return {
            "id": s.env_id, "opponent": s.opponent, "seed": s.seed, "model_seat": s.model_seats[0],
            "outcome": self.outcome, "passed": self.outcome == "win", "returns": self.returns,
            "steps": self.steps, "truncated": self.truncated, "error": self.error,
        }


class _Live:
    def __init__(self, spec: MatchSpec, game: MultiPlayerSession, cooperative: bool, baselines: dict[int, Any]) -> None:
        self.spec, self.game, self.cooperative, self.baselines = spec, game, cooperative, baselines
        self.result = MatchResult(spec)
        self.done = False


def game_ids(limit: int | None = None) -> list[str]:
    """The multi-player games of the active registry (seeds, then the store), in id order."""
    from spade_envs.registry.catalog import seed_records

    ids = [r.env_id.base for r in seed_records() if is_multiplayer(r)]
    try:
        from spade_envs.evals.registry_suite import active_records

        ids += [r.env_id.base for r in active_records(multiplayer=True) if r.env_id.base not in ids]
    except (ImportError, SpadeError):
        pass
    return ids[:limit] if limit else ids


def match_specs(env_ids: Sequence[str], opponents: Sequence[str], episodes: int, num_players: int = 2,
                seed0: int = 0) -> list[MatchSpec]:
    """``episodes`` matches per (game, opponent); the agent's seat alternates."""
    out = []
    for env_id in env_ids:
        for opp in opponents:
            if opp not in OPPONENTS:
                raise SpadeError(f"unknown games opponent '{opp}': use {', '.join(OPPONENTS)}")
            for i in range(episodes):
                seats = tuple(range(num_players)) if opp == "self" else (i % num_players,)
                out.append(MatchSpec(env_id, seed0 + i, opp, seats))
    return out


def _outcome(returns: list[float], seat: int, cooperative: bool) -> str:
    if cooperative:
        return "win" if returns[seat] >= 1.0 else "loss"
    best_other = max(v for p, v in enumerate(returns) if p != seat)
    return "win" if returns[seat] > best_other else "draw" if returns[seat] == best_other else "loss"


class GameRunner:
    """Plays matches, batching the model's moves over every live match.

    ``agent``: a Backend, or None for the scripted reference agent (``replay:reference``).
    ``reuse_cache`` (True): a token-level backend with sessions keeps each seat's KV cache
    from move to move (:mod:`.game_sessions`); False, or any other backend, re-renders
    the conversation for every move through ``chat``."""

    def __init__(self, agent: Any | None, *, max_new_tokens: int = 64, temperature: float = 0.6,
                 seed: int | None = 0, hint: bool = False, max_steps: int = 200,
                 system_prompt: str = GAME_SYSTEM_PROMPT, reuse_cache: bool = True) -> None:
        self.backend = agent
        self.max_new_tokens, self.temperature, self.seed = max_new_tokens, temperature, seed
        self.hint, self.max_steps, self.system_prompt = hint, max_steps, system_prompt
        self.reuse_cache = reuse_cache and agent is not None and supports_sessions(agent)

    def _open(self, spec: MatchSpec) -> _Live | MatchResult:
        try:
            game = open_game(spec.env_id)
            game.reset(spec.seed)
        except SpadeError as exc:
            return MatchResult(spec, error=str(exc))
        baselines = {p: (RandomPolicy(1000 * spec.seed + p) if spec.opponent == "random" else ScriptedPolicy())
                     for p in range(game.num_players) if p not in spec.model_seats}
        live = _Live(spec, game, game.info.cooperative, baselines)
        for p in spec.model_seats:
            system = self.system_prompt.format(player=p, n=game.num_players)
            live.result.messages[p] = [{"role": "system", "content": system}]
        return live

    def _to_move(self, lv: _Live) -> list[int]:
        g = lv.game
        return list(range(g.num_players)) if g.simultaneous else [g.current_player]

    def _prompt(self, lv: _Live, seat: int) -> list[dict]:
        msgs = lv.result.messages[seat]
        view = lv.game.observe(seat)
        if len(msgs) == 1 and self.hint:
            h = lv.game.hint(seat)
            view = f"{view}\n\nHint: {h}" if h else view
        msgs.append({"role": "user", "content": view})
        return msgs

    def _model_moves(self, asks: list[tuple[_Live, int]], round_no: int, seats: SeatSessions | None) -> list[str]:
        if not asks:
            return []
        if self.backend is None:  # the reference agent: the game's scripted strategy
            return [ScriptedPolicy().act(lv.game, seat) for lv, seat in asks]
        convs = [self._prompt(lv, seat) for lv, seat in asks]
        seed = None if self.seed is None else self.seed + round_no
        if seats is not None:
            gens = seats.generate([(id(lv), seat) for lv, seat in asks], convs, round_no,
                                  max_new_tokens=self.max_new_tokens, temperature=self.temperature, seed=seed)
        else:
            gens = self.backend.chat(convs, max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                     seed=seed)
        texts = [g.text for g in gens]
        for conv, text in zip(convs, texts):
            conv.append({"role": "assistant", "content": text})
        return texts

    def play(self, specs: Sequence[MatchSpec], progress: Callable[[int], Any] | None = None) -> list[MatchResult]:
        results: list[MatchResult | None] = [None] * len(specs)
        lives: list[tuple[int, _Live]] = []
        for i, spec in enumerate(specs):
            opened = self._open(spec)
            if isinstance(opened, MatchResult):
                results[i] = opened
                if progress:
                    progress(1)
            else:
                lives.append((i, opened))
        round_no = 0
        seats = SeatSessions(self.backend) if self.reuse_cache else None  # freed when play returns
        while lives:
            asks = [(lv, p) for _, lv in lives for p in self._to_move(lv) if p in lv.spec.model_seats]
            texts = iter(self._model_moves(asks, round_no, seats))
            model_actions = {(id(lv), p): next(texts) for lv, p in asks}
            for _, lv in lives:
                self._advance(lv, model_actions)
            for i, lv in [x for x in lives if x[1].done]:
                results[i] = lv.result
                lv.game.close()
                if progress:
                    progress(1)
            lives = [x for x in lives if not x[1].done]
            round_no += 1
        return [r for r in results if r is not None]

    def _advance(self, lv: _Live, model_actions: dict[tuple[int, int], str]) -> None:
        """One move (turn-based) or one joint move (simultaneous) of a live match, then
        baseline moves until a model seat is to move again or the game ends."""
        g, res = lv.game, lv.result
        try:
            while True:
                movers = self._to_move(lv)
                acts = []
                for p in movers:
                    if p in lv.spec.model_seats:
                        key = (id(lv), p)
                        if key not in model_actions:
                            return  # wait for the next generation round
                        acts.append(model_actions.pop(key))
                    else:
                        acts.append(lv.baselines[p].act(g, p))
                res.actions.extend(zip(movers, acts))
                _, rewards, terminated, truncated, _ = g.step(acts if g.simultaneous else acts[0])
                res.returns = [a + b for a, b in zip(res.returns or [0.0] * g.num_players, rewards)]
                res.steps += 1
                if terminated or truncated or res.steps >= self.max_steps:
                    res.terminated, res.truncated = terminated, truncated or not terminated
                    res.outcome = _outcome(res.returns, lv.spec.model_seats[0], lv.cooperative)
                    lv.done = True
                    return
        except SpadeError as exc:
            res.error, res.outcome, lv.done = str(exc), "error", True


def _rates(outcomes: Sequence[str]) -> dict[str, Any]:
    played = [o for o in outcomes if o != "error"]
    n = len(played)
    out: dict[str, Any] = {"n": n, "errors": len(outcomes) - n}
    for name in ("win", "draw", "loss"):
        k = sum(o == name for o in played)
        low, high = wilson_interval(k, n)
        out[name] = {"k": k, "rate": k / n if n else 0.0, "ci95": [round(low, 6), round(high, 6)]}
    return out


def _facts(r: MatchResult | dict[str, Any]) -> tuple[str, str, str]:
    """``(game id, opponent, outcome)`` of a match result or of its row."""
    if isinstance(r, MatchResult):
        return r.spec.env_id, r.spec.opponent, r.outcome
    return str(r["id"]), str(r["opponent"]), str(r["outcome"])


def summarize(results: Sequence[MatchResult | dict[str, Any]]) -> dict[str, Any]:
    """Win/draw/loss rates with Wilson 95% intervals, overall, per opponent and per game,
    from match results or their rows. ``overall`` is the agent's win rate against the fixed
    baselines (``rate_summary`` shape) over ``vs_baselines`` matches; self-play matches
    (``self_play``) and matches that ended in a game error (``errors``) are not in it, so
    ``overall.n + self_play + errors == matches``."""
    facts = [_facts(r) for r in results]
    vs_baselines = [f for f in facts if f[1] != "self" and f[2] != "error"]
    summary: dict[str, Any] = {"overall": rate_summary(f[2] == "win" for f in vs_baselines)}
    by_opp: dict[str, Any] = {}
    by_game: dict[str, dict[str, Any]] = {}
    for opp in OPPONENTS:
        chosen = [f[2] for f in facts if f[1] == opp]
        if chosen:
            by_opp[opp] = _rates(chosen)
            if opp == "self":
                by_opp[opp]["note"] = "outcomes of seat 0 (the first player in turn-based seed games)"
    for env_id, _, _ in facts:
        by_game.setdefault(env_id, {})
    for env_id in by_game:
        for opp in OPPONENTS:
            chosen = [f[2] for f in facts if f[0] == env_id and f[1] == opp]
            if chosen:
                by_game[env_id][opp] = _rates(chosen)
    summary.update(by_opponent=by_opp, by_game=by_game, matches=len(facts), vs_baselines=len(vs_baselines),
                   self_play=sum(f[1] == "self" for f in facts),
                   errors=sum(f[1] != "self" and f[2] == "error" for f in facts),
                   self_play_errors=sum(f[1] == "self" and f[2] == "error" for f in facts))
    return summary


def match_key(spec: MatchSpec) -> str:
    """The key of a match in an interrupted run's finished entries."""
    return f"{spec.env_id}|{spec.opponent}|{spec.seed}|{','.join(map(str, spec.model_seats))}"


#: Matches played per ``GameRunner.play`` call: the model's moves are batched over a chunk,
#: and each chunk's rows are handed to ``on_row`` as soon as it ends.
CHUNK = 16


def run_games(agent: str | Any, *, env_ids: Sequence[str] | None = None, limit: int | None = None,
              episodes: int = 4, opponents: Sequence[str] = OPPONENTS, max_new_tokens: int = 64,
              temperature: float = 0.6, seed: int | None = 0, hint: bool = False,
              progress: Callable[[int], Any] | None = None, finished: dict[str, dict] | None = None,
              on_row: Callable[[str, dict], Any] | None = None) -> tuple[list[dict], dict, dict]:
    """``(rows, summary, extra)`` like the other suites' runners in ``spade eval``.

    ``agent``: a Backend, a ``BACKEND:MODEL`` spec, or ``replay:reference``. Matches are
    played in chunks of :data:`CHUNK`; ``on_row(key, row)`` is called for each finished
    match (``spade eval`` writes it down), and matches whose key is in ``finished`` (an
    interrupted run's rows) are not played again: their rows are used as they are."""
    ids = list(env_ids) if env_ids else game_ids(limit)
    if not ids:
        raise SpadeError("no multi-player game in the active registry")
    backend = agent
    if isinstance(agent, str):
        backend = None
        if agent != "replay:reference":
            from spade_envs.agents import load_backend

            backend = load_backend(agent)
    runner = GameRunner(backend, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, hint=hint)
    specs = match_specs(ids, opponents, episodes)
    done = dict(finished or {})
    if progress and done:
        progress(sum(match_key(s) in done for s in specs))
    todo = [s for s in specs if match_key(s) not in done]
    for start in range(0, len(todo), CHUNK):
        for result in runner.play(todo[start:start + CHUNK], progress=progress):
            key = match_key(result.spec)
            done[key] = result.row()
            if on_row:
                on_row(key, done[key])
    rows = [done[match_key(s)] for s in specs]
    return rows, summarize(rows), {"games": ids, "opponents": list(opponents), "episodes": episodes}
