"""Games eval with each seat's KV cache kept across its moves, against re-rendering every move.

    .venv/bin/python benchmarks/games_reuse.py [GAMES] [EPISODES]     # defaults 3, 2

Plays the same matches (the first GAMES multi-player games of the registry, against the
scripted baseline and in self-play, EPISODES each, 32 new tokens a move, greedy) with the
packaged model twice per round, two rounds, alternating: ``GameRunner(reuse_cache=True)``
(:mod:`spade_envs.evals.game_sessions`) and ``reuse_cache=False`` (the conversation is
re-rendered and encoded whole before every move, the message-level path). Prints one JSON
object: wall seconds of each run, the medians, ``ratio_rerender_vs_reuse`` (how many
times faster reuse is) and the moves played. Greedy moves can differ between the two
paths after the first one (re-rendering re-tokenizes the model's own text), so the model's
move counts are printed too.
"""

from __future__ import annotations

import json
import statistics
import sys
import time


def main(n_games: int, episodes: int) -> dict:
    from spade_envs.agents import load_backend
    from spade_envs.evals.games import GameRunner, game_ids, match_specs

    backend = load_backend("transformers:default")
    specs = match_specs(game_ids(n_games), ["scripted", "self"], episodes)
    figures: dict = {"bench": "games_reuse", "games": n_games, "episodes": episodes, "matches": len(specs)}
    walls: dict[str, list[float]] = {"reuse": [], "rerender": []}
    for rnd in range(2):
        for name in ("reuse", "rerender"):
            runner = GameRunner(backend, max_new_tokens=32, temperature=0.0, seed=0, reuse_cache=name == "reuse")
            t = time.perf_counter()
            results = runner.play(specs)
            walls[name].append(round(time.perf_counter() - t, 2))
            figures[f"model_moves_{name}"] = sum(p in r.spec.model_seats for r in results for p, _ in r.actions)
            print(f"games_reuse: round {rnd} {name}: {walls[name][-1]} s", file=sys.stderr, flush=True)
    for name, ws in walls.items():
        figures[f"wall_s_{name}"] = ws
        figures[f"median_wall_s_{name}"] = statistics.median(ws)
    figures["ratio_rerender_vs_reuse"] = round(figures["median_wall_s_rerender"] / figures["median_wall_s_reuse"], 3)
    return figures


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    print(json.dumps(main(*(args + [3, 2][len(args):]))))
