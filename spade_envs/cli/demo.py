"""``spade demo``: the README's main job on the embedded defaults.

Replays every seed environment's reference solution through ``gym.make`` for a few
seeds and prints a table (environment, skill, wins). Later stages of the project make
the main job self-play plus evaluation.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(seeds: int = typer.Option(3, min=1, help="seeds replayed per environment")) -> None:
        """Replay the seed suite's reference solutions and print a table."""
        import gymnasium as gym
        from rich.console import Console
        from rich.progress import track
        from rich.table import Table

        import spade_envs  # noqa: F401  (registers the suite)
        from spade_envs.games import is_multiplayer
        from spade_envs.registry.catalog import seed_records

        table = Table(title="spade seed suite: reference replay")
        for col in ("id", "class", "skill", "wins", "steps"):
            table.add_column(col, no_wrap=col == "id")
        total = wins_all = 0
        games = [r for r in seed_records() if is_multiplayer(r)]
        for rec in track([r for r in seed_records() if not is_multiplayer(r)], description="replaying"):
            env = gym.make(str(rec.env_id))
            wins = steps = 0
            for seed in range(seeds):
                env.reset(seed=seed)
                for action in env.unwrapped.solution_actions():
                    _, reward, terminated, truncated, _ = env.step(action)
                    steps += 1
                    if terminated or truncated:
                        break
                wins += reward >= 1.0
            env.close()
            total += seeds
            wins_all += wins
            table.add_row(str(rec.env_id), rec.class_name, str(rec.skill), f"{wins}/{seeds}", str(steps))
        for rec in games:
            table.add_row(str(rec.env_id), rec.class_name, str(rec.skill), "-", "PettingZoo: spade_envs.make_aec")
        Console().print(table)
        typer.echo(f"reference solutions won {wins_all}/{total} episodes "
                   f"({len(games)} two-player games: `spade eval --suite games`)")
