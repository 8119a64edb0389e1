"""Agent self-play on the games suite: fake backend, reference agent, one tiny-model run."""

from __future__ import annotations

import random
import re

import pytest

from spade_envs.agents import Backend, Generation
from spade_envs.evals import games
from spade_envs.evals.games import GameRunner, match_specs, run_games, run_games_suite, summarize
from spade_envs.games import RandomPolicy, ScriptedPolicy, open_game

MOVES = ["\\boxed{1 1}", "\\boxed{3}", "\\boxed{20}", "\\boxed{N}", "\\boxed{DIG}", "\\boxed{2 5}", "\\boxed{liar}",
         "\\boxed{3 3 2}", "no idea"]


class FakeBackend(Backend):
    """Answers every conversation with a move drawn (seeded) from a fixed list; records calls."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.rng = random.Random(7)

    def chat(self, conversations, *, tools=None, max_new_tokens=256, temperature=0.6, seed=None):
        self.calls.append(len(conversations))
        out = []
        for conv in conversations:
            assert conv[0]["role"] == "system" and conv[-1]["role"] == "user"
            out.append(Generation(text=self.rng.choice(MOVES), token_ids=[1], logprobs=[0.0], prompt_token_ids=[1]))
        return out


def test_match_specs_alternate_the_agents_seat():
    specs = match_specs(["spade/Env-00025"], ["random", "self"], episodes=4)
    assert [s.model_seats for s in specs if s.opponent == "random"] == [(0,), (1,), (0,), (1,)]
    assert all(s.model_seats == (0, 1) for s in specs if s.opponent == "self")
    with pytest.raises(Exception, match="unknown games opponent"):
        match_specs(["spade/Env-00025"], ["nobody"], 1)


def test_fake_backend_self_play_batches_and_keeps_views_private():
    backend = FakeBackend()
    ids = games.game_ids()
    specs = match_specs(ids, ["random", "scripted", "self"], episodes=2)
    results = GameRunner(backend, seed=0).play(specs)
    assert len(results) == len(specs) and all(r.outcome in ("win", "draw", "loss") for r in results)
    assert max(backend.calls) > 1  # one chat call serves many live matches
    for r in results:
        for seat, msgs in r.messages.items():
            roles = [m["role"] for m in msgs[1:]]
            assert not roles or roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))  # alternating turns
            for m in msgs[1:]:
                if m["role"] == "user":
                    assert f"You are Player {seat}" in m["content"]
    duel = next(r for r in results if r.spec.env_id == "spade/Env-00027" and r.spec.opponent == "self")
    game = open_game("spade/Env-00027")
    game.reset(duel.spec.seed)
    secret_1 = re.search(r"Your secret number: (\d+)", game.observe(1)).group(1)
    assert all(f"Your secret number: {secret_1}." not in m["content"] for m in duel.messages[0])
    summary = summarize(results)
    for opp in ("random", "scripted", "self"):
        block = summary["by_opponent"][opp]
        assert block["win"]["k"] + block["draw"]["k"] + block["loss"]["k"] == block["n"]
        low, high = block["win"]["ci95"]
        assert 0.0 <= low <= block["win"]["rate"] <= high <= 1.0


def test_scripted_beats_random_and_reference_suite_shape():
    # sanity of the baselines themselves: the scripted strategy wins most zero-sum games vs random
    wins = n = 0
    for env_id in ("spade/Env-00025", "spade/Env-00026", "spade/Env-00029"):
        game = open_game(env_id)
        for seed in range(6):
            seat = seed % 2
            game.reset(seed)
            pols = [RandomPolicy(seed), RandomPolicy(seed)]
            pols[seat] = ScriptedPolicy()
            total = [0.0, 0.0]
            while True:
                _, r, term, trunc, _ = game.step(pols[game.current_player].act(game, game.current_player))
                total = [a + b for a, b in zip(total, r)]
                if term or trunc:
                    break
            wins += total[seat] > total[1 - seat]
            n += 1
        game.close()
    assert wins / n >= 0.8
    results = run_games_suite("replay:reference", limit=3, episodes=2, opponents=("random", "scripted"))
    assert results["suite"] == "games" and results["agent"] == "replay:reference"
    assert {"overall", "by_opponent", "by_game"} <= set(results["summary"])
    assert results["entries"] and all({"id", "passed", "outcome"} <= set(e) for e in results["entries"])
    assert results["summary"]["by_opponent"]["random"]["win"]["rate"] >= 0.5


def test_tiny_random_model_plays_both_seats():
    pytest.importorskip("transformers")
    rows, summary, extra = run_games("transformers:tiny-random", env_ids=["spade/Env-00030"], episodes=1,
                                     opponents=("self", "random"), max_new_tokens=8)
    assert len(rows) == 2 and summary["errors"] == 0
    selfplay = next(r for r in rows if r["opponent"] == "self")
    assert selfplay["steps"] == 3 and selfplay["outcome"] in ("win", "draw", "loss")
    assert extra["games"] == ["spade/Env-00030"]
