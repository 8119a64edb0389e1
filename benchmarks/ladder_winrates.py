"""Win rate of an agent at each difficulty level of the seed environments' ladders.

Every seed declares ``PARAMETERS`` with a ``difficulty`` level (spade_envs/seeds). This
plays the real agent loop (``spade_envs.agents.load_agent``; default
``transformers:default``, the packaged SmolLM2-135M, sampling as the agents default) on
each level: ``--episodes`` episodes at the easiest level, ``--episodes-other`` at the
others, all batched together. To fit a 2-core CPU, single-player episodes get
``--max-turns`` agent turns (default 1: the first answer decides) and replies
``--max-new-tokens`` tokens (default 128; the agents' default is 256). Two-player games are played through the games
suite's runner (``spade_envs.evals.games``) against the ``random`` baseline, the agent's
seat alternating. Prints a table (id, level, level description, episodes, wins, rate);
``--json`` prints one JSON object instead; ``--out FILE`` also appends one JSON line per
row as rows finish.

    nice -n 10 .venv/bin/python benchmarks/ladder_winrates.py --ids 1 2 3 --levels 0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

SEED0 = 10_000  # episode seeds SEED0.. (away from the seeds acceptance uses)


def ladders(ids: list[int] | None) -> list[tuple[Any, dict[str, Any]]]:
    from spade_envs.parameters import schema_of
    from spade_envs.registry.catalog import seed_records

    out = []
    for rec in seed_records():
        if ids and rec.env_id.seq not in ids:
            continue
        schema = schema_of(rec.source, rec.metadata.get("file", "<env>"))
        if schema and "difficulty" in schema["properties"]:
            out.append((rec, schema["properties"]["difficulty"]))
    return out


def level_text(spec: dict[str, Any], level: int) -> str:
    """The part of the difficulty description about ``level`` ("3: ...; 4: ...")."""
    text = str(spec.get("description", ""))
    marker = f"{level}:"
    start = text.find(marker)
    if start < 0:
        return ""
    end = text.find(f"{level + 1}:", start)
    return text[start + len(marker): end if end > 0 else None].strip(" ;,")


def play_single(agent: Any, jobs: list[tuple[str, int, int]], max_turns: int) -> dict[tuple[str, int], list[bool]]:
    from spade_envs.agents import PlayTask

    wins: dict[tuple[str, int], list[bool]] = {}
    for env_id, level, n in jobs:  # one batch per level: its rows share the prompt prefix (tool specs), encoded once
        tasks = [PlayTask(env_id=env_id, seed=SEED0 + i, kwargs={"difficulty": level}, max_turns=max_turns)
                 for i in range(n)]
        t = time.perf_counter()
        wins[(env_id, level)] = [bool(ep.won) for ep in agent.play(tasks)]
        print(f"{env_id} level {level}: {sum(wins[(env_id, level)])}/{n} in {time.perf_counter() - t:.0f} s",
              file=sys.stderr, flush=True)
    return wins


def play_games(backend: Any, jobs: list[tuple[str, int, int]], max_new_tokens: int) -> dict[tuple[str, int], list[bool]]:
    from spade_envs.evals.games import GameRunner, MatchSpec
    from spade_envs.games import open_game

    levels: dict[int, int] = {}

    class LevelRunner(GameRunner):
        def _open(self, spec: MatchSpec):  # the suite's runner, with the level's kwargs
            import spade_envs.evals.games as games

            original = games.open_game
            games.open_game = lambda env_id, **kw: open_game(env_id, kwargs={"difficulty": levels[id(spec)]}, **kw)
            try:
                return super()._open(spec)
            finally:
                games.open_game = original

    wins: dict[tuple[str, int], list[bool]] = {}
    for env_id, level, n in jobs:  # one batch per level: its prompts share the rules, encoded once
        specs = [MatchSpec(env_id, SEED0 + i, "random", (i % 2,)) for i in range(n)]
        for spec in specs:
            levels[id(spec)] = level
        t = time.perf_counter()
        results = LevelRunner(backend, max_new_tokens=max_new_tokens).play(specs)
        wins[(env_id, level)] = [res.outcome == "win" for res in results]
        print(f"{env_id} level {level}: {sum(wins[(env_id, level)])}/{n} vs random in {time.perf_counter() - t:.0f} s",
              file=sys.stderr, flush=True)
    return wins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="transformers:default")
    parser.add_argument("--ids", type=int, nargs="*", help="seed sequence numbers (default: all)")
    parser.add_argument("--levels", type=int, nargs="*", help="levels to play (default: all)")
    parser.add_argument("--episodes", type=int, default=50, help="episodes at the easiest level")
    parser.add_argument("--episodes-other", type=int, default=8, help="episodes at the other levels")
    parser.add_argument("--max-turns", type=int, default=1,
                        help="agent turns per single-player episode (1: the first answer counts)")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="tokens per reply")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", help="append one JSON line per row to this file")
    args = parser.parse_args(argv)

    from spade_envs.agents import load_agent
    from spade_envs.games import is_multiplayer

    agent = load_agent(args.agent, max_new_tokens=args.max_new_tokens)
    rows = []
    t0 = time.perf_counter()
    found = ladders(args.ids)
    single = [(r, s) for r, s in found if not is_multiplayer(r)]
    games = [(r, s) for r, s in found if is_multiplayer(r)]
    for group, player in ((single, "single"), (games, "games")):
        jobs = []
        for rec, spec in group:
            for level in range(spec["minimum"], spec["maximum"] + 1):
                if args.levels is None or level in args.levels:
                    n = args.episodes if level == spec["minimum"] else args.episodes_other
                    jobs.append((rec.env_id.base, level, n))
        if not jobs:
            continue
        t = time.perf_counter()
        wins = play_single(agent, jobs, args.max_turns) if player == "single" else play_games(
            agent.backend, jobs, args.max_new_tokens)
        spent = time.perf_counter() - t
        descr = {rec.env_id.base: spec for rec, spec in group}
        for env_id, level, n in jobs:
            got = wins.get((env_id, level), [])
            row = {"id": env_id, "level": level, "knobs": level_text(descr[env_id], level), "episodes": len(got),
                   "wins": sum(got), "win_rate": round(sum(got) / len(got), 3) if got else None,
                   "opponent": "random" if player == "games" else None, "batch_s": round(spent, 1)}
            rows.append(row)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row) + "\n")
    agent.close()
    if args.json:
        print(json.dumps({"bench": "ladder_winrates", "agent": args.agent, "rows": rows,
                          "wall_s": round(time.perf_counter() - t0, 1)}))
        return 0
    print(f"| id | level | knobs | episodes | wins | 135M win rate |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        rate = "-" if r["win_rate"] is None else f"{100 * r['win_rate']:.0f} %"
        vs = " (vs random)" if r["opponent"] else ""
        print(f"| {r['id']} | {r['level']} | {r['knobs']} | {r['episodes']} | {r['wins']} | {rate}{vs} |")
    print(f"wall {time.perf_counter() - t0:.0f} s, agent {args.agent}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
