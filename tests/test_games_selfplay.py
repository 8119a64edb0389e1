"""Agent self-play on the games suite: fake backend, reference agent, one tiny-model run."""

from __future__ import annotations

import random
import re

import pytest

from spade_envs.agents import Backend, Generation
from spade_envs.evals import games
from spade_envs.evals.games import GameRunner, match_specs, run_games, summarize
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
    from spade_envs.evals.report import build_results

    rows, summary, extra = run_games("replay:reference", limit=3, episodes=2, opponents=("random", "scripted"))
    results = build_results("games", "replay:reference", rows, summary, **extra)  # as `spade eval --suite games`
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


def test_token_level_moves_continue_each_seats_kv_session(monkeypatch):
    """With the tiny model, each seat's conversation is kept as token ids and its KV cache
    across moves: a session per cohort of seats, built once, every later move encodes only the new
    view, and every move's logprobs equal one forward pass over the seat's whole token
    sequence (the model is conditioned on exactly the tokens it generated)."""
    torch = pytest.importorskip("torch")
    from spade_envs.agents.backend_transformers import TransformersBackend

    backend = TransformersBackend("tiny-random", device="cpu")
    calls = []
    generate = backend.generate

    def spy(prompts, **kw):
        gens = generate(prompts, **kw)
        calls.append((kw.get("keys"), kw.get("session"), [list(p) for p in prompts], gens))
        return gens

    monkeypatch.setattr(backend, "generate", spy)
    specs = match_specs(["spade/Env-00025", "spade/Env-00030"], ["self", "random"], episodes=2)
    results = GameRunner(backend, max_new_tokens=6, temperature=1.0, seed=4).play(specs)
    assert all(r.outcome in ("win", "draw", "loss") for r in results)
    assert all(keys is not None for keys, *_ in calls)  # every move went through a session
    sessions = {id(s): s for _, s, _, _ in calls}
    assert 2 <= len(sessions) <= 3  # seat 0, seat 1 of the random matches, seat 1 of the self-play ones
    assert all(s.stats["rebuilds"] == 1 for s in sessions.values())  # none encoded its rows again
    encoded = sum(s.stats["encoded_tokens"] for s in sessions.values())
    assert encoded < 0.5 * sum(len(p) for _, _, prompts, _ in calls for p in prompts)
    moves: dict = {}
    for keys, _, prompts, gens in calls:
        for key, prompt, gen in zip(keys, prompts, gens):
            moves.setdefault(key, []).append((prompt, gen))
    assert max(len(v) for v in moves.values()) >= 3
    for seq in moves.values():
        for (prompt, gen), (later, _) in zip(seq, seq[1:]):
            assert later[: len(prompt) + len(gen.token_ids)] == prompt + list(gen.token_ids)
        prompt, gen = seq[-1]
        ids = prompt + list(gen.token_ids)
        with torch.no_grad():
            logp = torch.log_softmax(backend.model(torch.tensor([ids])).logits[0].float(), dim=-1)
        for prompt, gen in seq:
            full = [float(logp[len(prompt) + i - 1, t]) for i, t in enumerate(gen.token_ids)]
            assert max(abs(a - b) for a, b in zip(full, gen.logprobs)) < 1e-4


def test_message_level_path_when_reuse_is_off(monkeypatch):
    pytest.importorskip("transformers")
    from spade_envs.agents.backend_transformers import TransformersBackend

    backend = TransformersBackend("tiny-random", device="cpu")
    chats = []
    chat = backend.chat
    monkeypatch.setattr(backend, "chat", lambda convs, **kw: chats.append(len(convs)) or chat(convs, **kw))
    runner = GameRunner(backend, max_new_tokens=4, seed=0, reuse_cache=False)
    results = runner.play(match_specs(["spade/Env-00030"], ["random"], episodes=1))
    assert chats and results[0].outcome in ("win", "draw", "loss")
